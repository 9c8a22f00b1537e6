"""A worker ends when the process that started it ends, however that ends (SIGKILL included).

A watchdog thread polls the worker's parent id; once the parent is gone it sends the worker
SIGTERM (its job records itself ``interrupted``) and exits hard ``GRACE_S`` later.
"""

from __future__ import annotations

import os
import signal
import threading
import time

POLL_S = 0.5  # how often a worker's watchdog looks at its parent id
GRACE_S = 10.0  # after its parent's death (or a SIGTERM from it), a worker's time to record


def watch_parent(parent_pid: int) -> None:
    """SIGTERM to this process when ``parent_pid`` is no longer its parent; a hard exit
    ``GRACE_S`` later."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(GRACE_S)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="attnsvm-parent-watchdog", daemon=True).start()
