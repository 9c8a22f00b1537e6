"""SIGTERM and SIGINT during a job: the job records itself ``interrupted``, no traceback.

    with interruptible():        # in attnsvm.run.execute, around training and writing
        ...                      # SIGTERM / SIGINT raise JobInterrupted here

A single run then exits with 128 + the signal's number, as a shell reports a process killed by
it. Outside the main thread (no signal handlers there) the block runs unguarded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class JobInterrupted(BaseException):
    """Raised in the job's main thread by SIGTERM or SIGINT. A BaseException, so that no
    ``except Exception`` (a seed's error handling) mistakes it for the job's own failure."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(f"interrupted by {self.name}")


def _raise(signum, frame) -> None:
    for sig in SIGNALS:  # a second signal must not cut the job's record short
        signal.signal(sig, signal.SIG_IGN)
    raise JobInterrupted(signum)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`JobInterrupted` inside the block; the handlers that
    were there before come back when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def exit_now() -> None:
    """For entry points whose results are all out: end this process, its logs and output
    flushed, without the interpreter's teardown (torch's and pandas' are slow)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or full: nothing more to keep
            stream.flush()
    os._exit(0)
