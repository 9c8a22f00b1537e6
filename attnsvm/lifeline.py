"""A worker ends when the process that started it ends, however that ends (SIGKILL included).

The kernel sends it SIGTERM when its parent dies (Linux ``PR_SET_PDEATHSIG``); a watchdog thread
that polls its parent id does the same elsewhere, and covers a parent that died before the
request took effect. A hard exit follows after ``GRACE_S``, in which its job records itself
``interrupted``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

POLL_S = 0.5  # how often a worker's watchdog looks at its parent id
GRACE_S = 10.0  # after its parent's death (or a SIGTERM from it), a worker's time to record
PR_SET_PDEATHSIG = 1


def watch_parent(parent_pid: int) -> None:
    """SIGTERM to this process when ``parent_pid`` is no longer its parent; a hard exit
    ``GRACE_S`` later."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(GRACE_S)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="attnsvm-parent-watchdog", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
