"""A local sweep's worker processes: one job at a time each; they die with the sweep, and a
worker that dies fails only its own job.

    pool = WorkerPool(2, warm=("attnsvm.job",), setup=(fn, args))
    pool.start(2)                             # spawned now: their imports run beside planning
    outcomes = pool.run(nums, prepare, done)  # prepare(num) -> (fn, args); done(num, Outcome)
    pool.close()

Each worker is a fresh interpreter (``spawn``): it imports ``warm``, runs ``setup`` once, then
answers one job at a time. It ends when the process that started it ends, however that ends
(SIGKILL included: attnsvm/lifeline.py), and its job records itself ``interrupted``. A worker
that dies mid-job (killed, out of memory) fails that job only: the next job gets a new worker.
Why a pool of our own and not concurrent.futures, loky or pebble: docs/scaling.md.

This is an entry point of its own (the worker's ``main``): the process-wide settings a job
wants (malloc's thresholds, signal handlers, a hard exit) are set here, never by library code.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import multiprocessing as mp
import os
import pickle
import signal
import time
import traceback
import weakref
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import cloudpickle

from attnsvm.interrupt import exit_now
from attnsvm.lifeline import GRACE_S, watch_parent

log = logging.getLogger(__name__)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


@dataclass
class Outcome:
    """What came back for one job: ``value`` if the function returned, else ``error``."""

    value: Any = None
    error: str | None = None  # repr of the exception, or how the worker died
    traceback: str | None = None
    exitcode: int | None = None  # set when the worker died without answering


def keep_freed_memory() -> bool:
    """Blocks up to 32 MiB come from the heap and up to 64 MiB of freed heap stays mapped, for
    the rest of this process. glibc's defaults hand a multi-MB block back to the kernel when it
    is freed, and the next one is fresh pages, each zeroed on first touch: the interior point of
    a large nuclear-norm SVM allocates such temporaries in a loop (docs/benchmarks.md). Called
    by entry points only (a worker, ``python -m attnsvm.run``); False where there is no glibc."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(M_TRIM_THRESHOLD, 64 << 20))


def _quiet_exit(signum, frame) -> None:
    """Between jobs, SIGTERM / SIGINT end a worker without a traceback."""
    raise SystemExit(128 + signum)


def _worker_main(conn, parent_pid: int, warm: tuple[str, ...], setup: bytes | None) -> None:
    """One job at a time from ``conn``: (fn, args) in, (value, error, traceback) out; EOF
    ends the worker. ``warm``: modules imported first; ``setup``: a pickled (fn, args) run
    once before the first job (its error, if any, is every job's answer)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _quiet_exit)
    watch_parent(parent_pid)
    keep_freed_memory()
    for module in warm:
        try:
            importlib.import_module(module)
        except ImportError:  # the job that needs it fails, not the worker
            pass
    broken = None
    try:
        if setup is not None:
            fn, args = cloudpickle.loads(setup)
            fn(*args)
    except Exception as exc:  # noqa: BLE001  (reported as each job's error)
        broken = (None, f"the worker's setup failed: {exc!r}", traceback.format_exc())
    logging.raiseExceptions = False  # a full disk must not print logging's own tracebacks
    while True:
        try:
            message = conn.recv_bytes()
        except EOFError:
            break
        answer = broken
        if answer is None:
            try:
                fn, args = cloudpickle.loads(message)
                answer = (fn(*args), None, None)
            except BaseException as exc:  # noqa: B036  (SystemExit of the job included)
                answer = (None, repr(exc), traceback.format_exc())
        try:
            _send(conn, answer)
        except OSError:  # the sweep's process is gone: nobody to answer
            break
    exit_now()  # every answer is sent: no interpreter teardown (torch's takes a second)


def _send(conn, answer: tuple) -> None:
    """A plain tuple: the sweep's process need not import anything to read it."""
    try:
        conn.send(answer)
    except OSError:
        raise
    except Exception as exc:  # the value does not pickle
        conn.send((None, f"result could not be sent back: {exc!r}", None))


def _reraise(exc: BaseException):
    """In the worker: the error that preparing the job raised in the sweep's process."""
    raise exc


def _message(prepare, num: int) -> bytes:
    """Job ``num``'s (fn, args) pickled; where preparing it fails, a job that raises that
    error, so that it fails as a job, not the sweep."""
    try:
        return cloudpickle.dumps(prepare(num))
    except Exception as exc:  # noqa: BLE001  (any error of one job's preparation)
        try:
            return cloudpickle.dumps((_reraise, (exc,)))
        except Exception:  # an error that does not pickle: its text does
            return cloudpickle.dumps((_reraise, (RuntimeError(repr(exc)),)))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a Slurm allocation, ``taskset``),
    not the machine's: how many workers a sweep starts by default."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def died(exitcode: int | None) -> str:
    """'killed by SIGKILL', 'exited with code 1'."""
    if exitcode is not None and exitcode < 0:
        return f"killed by {signal.Signals(-exitcode).name}"
    return f"exited with code {exitcode}"


class _Worker:
    def __init__(self, conn, process) -> None:
        self.conn, self.process = conn, process


def _end(workers: list[_Worker], grace: float = 0.0) -> None:
    """Every worker ended: its pipe closed (EOF: it exits), killed after ``grace`` seconds."""
    for w in workers:
        w.conn.close()
    for w in workers:
        w.process.join(timeout=grace)
        if w.process.is_alive():
            w.process.kill()
            w.process.join()


class WorkerPool:
    """At most ``n`` workers; started on demand, replaced when one dies (module doc)."""

    def __init__(self, n: int, warm: tuple[str, ...] = (), setup: tuple | None = None) -> None:
        self.n = max(1, n)
        self.warm = warm
        self.setup = None if setup is None else cloudpickle.dumps(setup)
        self.ctx = mp.get_context("spawn")
        self.idle: list[_Worker] = []
        self.busy: dict[int, _Worker] = {}  # job -> worker
        self.started: list[_Worker] = []  # every worker it had (tests look for survivors)
        weakref.finalize(self, _end, self.started)  # a pool never closed: killed at exit

    def _new(self) -> _Worker:
        conn, child = self.ctx.Pipe()
        args = (child, os.getpid(), self.warm, self.setup)
        process = self.ctx.Process(target=_worker_main, args=args, name="attnsvm-worker")
        process.start()
        child.close()
        w = _Worker(conn, process)
        self.started.append(w)
        return w

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self.started]

    def start(self, count: int) -> None:
        """Up to ``count`` workers (at most ``n``) started now."""
        while len(self.idle) + len(self.busy) < min(count, self.n):
            self.idle.append(self._new())

    def resize(self, n: int) -> None:
        """At most ``n`` workers from now on; idle ones beyond it end now."""
        self.n = max(1, n)
        extra = len(self.idle) + len(self.busy) - self.n
        if extra > 0:
            _end(self.idle[-extra:])
            del self.idle[-extra:]

    def _worker(self) -> _Worker:
        """An idle worker that is alive (dead ones dropped), else a new one."""
        while self.idle:
            w = self.idle.pop(0)
            if w.process.is_alive():
                return w
            w.conn.close()
        return self._new()

    def _dispatch(self, pending: deque, ready: dict, prepare) -> None:
        while pending and len(self.busy) < self.n:
            num = pending.popleft()
            payload = ready.pop(num, None) or _message(prepare, num)
            w = self._worker()
            self.busy[num] = w  # first: an interrupted sweep interrupts every job it sent
            try:
                w.conn.send_bytes(payload)
            except OSError:  # it died between the check and the send: its sentinel says so
                pass

    def _collect(self, w: _Worker) -> Outcome | None:
        """The worker's answer, or (dead worker) an Outcome saying how it died; None: not yet."""
        if w.conn.poll():
            try:
                value, error, tb = pickle.loads(w.conn.recv_bytes())
                return Outcome(value=value, error=error, traceback=tb)
            except (EOFError, OSError):
                pass
            except Exception as exc:  # noqa: BLE001  (an answer that does not unpickle here)
                return Outcome(error=f"the job's answer could not be read: {exc!r}")
        if w.process.is_alive():
            return None
        w.process.join()
        code = w.process.exitcode
        return Outcome(error=f"worker process {w.process.pid} {died(code)}", exitcode=code)

    def run(self, nums, prepare, done=None) -> dict[int, Outcome]:
        """``fn(*args)`` of ``prepare(num)`` for every num of ``nums``, in order, each on a
        worker; the next ``n`` messages are made while the workers compute. ``done(num,
        outcome)`` is called as each job ends."""
        pending, ready, outcomes = deque(nums), {}, {}
        self.start(len(pending))
        while pending or self.busy:
            self._dispatch(pending, ready, prepare)
            for num in list(pending)[: self.n]:  # made while the workers compute
                if num not in ready:
                    ready[num] = _message(prepare, num)
            wait([x for w in self.busy.values() for x in (w.conn, w.process.sentinel)])
            for num, w in list(self.busy.items()):
                outcome = self._collect(w)
                if outcome is None:
                    continue
                del self.busy[num]
                outcomes[num] = outcome
                self.idle.append(w)  # a dead one is dropped by ``_worker``
                self._dispatch(pending, ready, prepare)  # its next job first, then ``done``
                if done is not None:
                    done(num, outcome)
        return outcomes

    def interrupt(self, grace: float = GRACE_S) -> dict[int, Outcome]:
        """SIGTERM to every busy worker; their jobs' outcomes (they record themselves
        ``interrupted``) as they come within ``grace`` seconds; the rest are killed."""
        for w in self.busy.values():
            if w.process.is_alive():
                os.kill(w.process.pid, signal.SIGTERM)
        outcomes, deadline = {}, time.monotonic() + grace
        while self.busy and time.monotonic() < deadline:
            wait([x for w in self.busy.values() for x in (w.conn, w.process.sentinel)], 0.2)
            for num, w in list(self.busy.items()):
                outcome = self._collect(w)
                if outcome is not None:
                    outcomes[num] = outcome
                    del self.busy[num]
        for num, w in self.busy.items():
            w.process.kill()
            w.process.join()
            outcomes[num] = Outcome(error=f"worker process {w.process.pid} killed", exitcode=-9)
        self.busy.clear()
        return outcomes

    def close(self) -> None:
        """End every worker: idle ones on EOF, whatever is left after ``GRACE_S`` killed."""
        _end(self.idle + list(self.busy.values()), GRACE_S)
        self.idle, self.busy = [], {}
