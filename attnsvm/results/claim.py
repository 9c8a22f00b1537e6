"""A job of a sweep is computed once, however many sweeps run on its directory.

    with claimed(sweep_dir, chash):   # waits while another process computes the job
        ...                           # look for its results again, else compute it

The claim is ``<sweep_dir>/.claims/<hash>``, locked with ``flock`` by the process that
computes the job. A second sweep started on the same directory waits for the lock, then finds
the job finished (and counts it skipped) or, if the first gave up, computes it. A claim whose
holder died (``kill -9``, a lost node) is taken over at once: the kernel drops a dead process's
locks, so no pid or timestamp has to be guessed. A lock file whose path was replaced while a
process waited on it is opened again, so two processes never hold the same job.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

CLAIMS = ".claims"
log = logging.getLogger("attnsvm")


@contextlib.contextmanager
def claimed(sweep_dir: Path, chash: str) -> Iterator[None]:
    """Job ``chash`` of ``sweep_dir`` held by this process inside the block (module doc)."""
    path = Path(sweep_dir) / CLAIMS / chash
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _lock(path, chash)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())  # who, for a person
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # while still held: a waiter then sees a replaced path, and retries
        os.close(fd)


def _lock(path: Path, chash: str) -> int:
    """An fd of ``path`` locked by this process, the file still at ``path``."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("job %s is being computed by another process: waiting for it", chash)
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:  # unlinked by the holder we waited for
            pass
        os.close(fd)
