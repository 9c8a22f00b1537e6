"""A job's per-seed work (SVMs, metrics) spread over ``threads`` cores, in forked processes.

At (6,8,10) a seed's SVM setup and metrics are hundreds of small numpy and torch calls, each
holding the interpreter lock: threads could not run them side by side (docs/benchmarks.md).
A forked child starts with the job's memory (instances, trajectory, solutions: nothing is
sent but share numbers, and only results come back), runs one share with torch and BLAS on
one thread, as ``threads=1`` does, so every seed's numbers are those of ``threads=1``.

CUDA cannot be used in a forked child: work that runs on a GPU (the SVM solvers of a
``device=cuda`` job) is spread over threads instead (``processes=False``), as it is where
``fork`` does not exist or the job runs in a daemonic process (a multiprocessing pool's).

    parts = spread(lambda share: [f(r) for r in share], shares, workers=4, done=report)
"""

from __future__ import annotations

import multiprocessing
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from attnsvm.runtime import limit_threads

_TASK: tuple | None = None  # (fn, shares) of the spread in progress, inherited by its children
_ONE_AT_A_TIME = threading.Lock()
FORK_MIN_ITEMS = 32  # seeds per worker from which the per-seed work goes to processes


def _run(k: int):
    fn, shares = _TASK
    with limit_threads(1):
        return fn(shares[k])


def worth_forking(items: int, workers: int) -> bool:
    """Whether ``items`` seeds give each of ``workers`` processes enough to repay its fork
    (a process holding torch forks slowly): else threads."""
    return items >= FORK_MIN_ITEMS * workers


def _forkable() -> bool:
    """fork exists, and this process may have children (a multiprocessing pool's daemonic
    worker may not)."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


def spread(
    fn: Callable,
    shares: Sequence,
    workers: int,
    processes: bool = True,
    done: Callable[[int], None] | None = None,
) -> list:
    """``[fn(share) for share in shares]`` on ``workers`` forked processes (threads where
    ``processes`` is False or fork is missing), in order; ``done(k)`` runs in the caller as
    share k's result arrives. An exception in a share is raised here."""
    if workers <= 1 or len(shares) <= 1:
        return [_noted(fn(share), k, done) for k, share in enumerate(shares)]
    if not (processes and _forkable()):
        with limit_threads(1), ThreadPoolExecutor(min(workers, len(shares))) as pool:
            return [_noted(r, k, done) for k, r in enumerate(pool.map(fn, shares))]
    global _TASK
    with _ONE_AT_A_TIME, warnings.catch_warnings():
        # Python >= 3.12 warns that a process with threads (torch's pool) may deadlock in a
        # forked child; the children take none of the parent's locks: numpy and torch on
        # their own data, one thread, nothing logged
        warnings.filterwarnings("ignore", ".*multi-threaded.*fork", DeprecationWarning)
        _TASK = (fn, shares)
        context = multiprocessing.get_context("fork")
        try:
            with ProcessPoolExecutor(min(workers, len(shares)), mp_context=context) as pool:
                return [
                    _noted(r, k, done) for k, r in enumerate(pool.map(_run, range(len(shares))))
                ]
        finally:
            _TASK = None


def _noted(result, k: int, done):
    if done is not None:
        done(k)
    return result


def shares_of(items: Sequence, workers: int, per_worker: int = 4) -> list[list]:
    """``items`` in contiguous shares, ``per_worker`` per worker (progress and balance), in
    order."""
    count = max(1, min(len(items), workers * per_worker))
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for k in range(count):
        stop = start + size + (k < extra)
        out.append(list(items[start:stop]))
        start = stop
    return [s for s in out if s]
