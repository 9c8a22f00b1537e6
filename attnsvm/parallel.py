"""A job's per-seed work (SVMs, metrics) spread over ``threads`` cores, in forked processes.

    parts = spread(lambda share: [f(r) for r in share], shares, workers=4, done=report)

A seed's SVM setup and metrics are hundreds of small numpy and torch calls that hold the
interpreter lock, so threads cannot run them side by side (docs/benchmarks.md). A forked child
starts with the job's memory (share numbers go in, results come back) and runs its share on one
thread, so every seed's numbers are those of ``threads=1``. Where fork cannot serve (a GPU job,
no ``fork``, a daemonic process) the shares go to threads.
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
    """Whether ``items`` seeds repay forking ``workers`` processes (torch forks slowly)."""
    return items >= FORK_MIN_ITEMS * workers


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
    n = min(workers, len(shares))
    if n <= 1:
        return _in_order(map(fn, shares), done)
    daemon = multiprocessing.current_process().daemon  # a pool's daemonic worker has no child
    if not processes or daemon or "fork" not in multiprocessing.get_all_start_methods():
        with limit_threads(1), ThreadPoolExecutor(n) as pool:
            return _in_order(pool.map(fn, shares), done)
    global _TASK
    with _ONE_AT_A_TIME, warnings.catch_warnings():
        # Python >= 3.12 warns that a process with threads (torch's pool) may deadlock in a
        # forked child; the children take none of the parent's locks: numpy and torch on
        # their own data, one thread, nothing logged
        warnings.filterwarnings("ignore", ".*multi-threaded.*fork", DeprecationWarning)
        _TASK = (fn, shares)
        try:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(n, mp_context=context) as pool:
                return _in_order(pool.map(_run, range(len(shares))), done)
        finally:
            _TASK = None


def _in_order(results, done) -> list:
    """``results`` as a list, ``done(k)`` called as result k arrives."""
    out = []
    for k, result in enumerate(results):
        out.append(result)
        if done is not None:
            done(k)
    return out


def shares_of(items: Sequence, workers: int, per_worker: int = 4) -> list[list]:
    """``items`` in order, in contiguous shares, ``per_worker`` per worker (for balance)."""
    count = max(1, min(len(items), workers * per_worker))
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for k in range(count):
        stop = start + size + (k < extra)
        out.append(list(items[start:stop]))
        start = stop
    return [s for s in out if s]
