"""Worker processes that die with the sweep, and whose own death fails only their own job.

    pool = WorkerPool(n_workers)
    outcomes = pool.run({num: (fn, args), ...})   # num -> Outcome; a dead worker's job too
    pool.close()

Each worker is a fresh interpreter (``spawn``) running one job at a time. It ends when the
process that started it ends, however that ends (SIGKILL included: attnsvm/lifeline.py), and
its job records itself ``interrupted``. A worker that dies mid-job (killed, out of memory)
fails that job only: the pool starts a new worker for the jobs still to run.
concurrent.futures' pool cannot do this: a dead worker breaks it and it terminates every other
job in flight. A sweep's first workers may start with the command, before the sweep is planned
(``start_early``), the second and later ones forked from the first once it is warm
(attnsvm/adopted.py).
"""

from __future__ import annotations

import atexit
import functools
import logging
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import warnings
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import cloudpickle

from attnsvm import adopted
from attnsvm.interrupt import exit_now
from attnsvm.lifeline import GRACE_S, watch_parent
from attnsvm.warm import import_frozen

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What came back for one job: ``value`` if the function returned, else ``error``."""

    value: Any = None
    error: str | None = None  # repr of the exception, or how the worker died
    traceback: str | None = None
    exitcode: int | None = None  # set when the worker died without answering
    raw: bytes | None = None  # the answer as it came, until ``_unpickled``


def _unpickled(outcome: Outcome) -> Outcome:
    """``outcome`` with its answer's (value, error, traceback) unpickled from ``raw``."""
    if outcome.raw is not None:
        try:
            outcome.value, outcome.error, outcome.traceback = pickle.loads(outcome.raw)
        except Exception as exc:  # noqa: BLE001  (an answer that does not unpickle here)
            outcome.error = f"the job's answer could not be read: {exc!r}"
        outcome.raw = None
    return outcome


def _quiet_exit(signum, frame) -> None:
    """Between jobs, SIGTERM / SIGINT end a worker without a traceback."""
    raise SystemExit(128 + signum)


def _worker_main(
    conn, parent_pid: int, warm: tuple[str, ...] = (), parents_ends=(), siblings=()
) -> None:
    """One job at a time from ``conn``: (fn, args) in, (value, error, traceback) out; EOF
    ends the worker. ``warm``: modules imported first, while the sweep prepares the job.
    ``parents_ends``: a forked worker's copies of the sweep's ends of its own pipe and of the
    early workers' forked before it, closed so that the sweep's close of each is that worker's
    EOF. ``siblings``: the workers this one forks once warm (attnsvm/adopted.py)."""
    for end in parents_ends:
        end.close()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _quiet_exit)
    watch_parent(parent_pid)
    import_frozen(warm, missing_ok=True)  # attnsvm/warm.py
    adopted.fork_siblings(functools.partial(_worker_main, parent_pid=parent_pid), conn, siblings)
    logging.raiseExceptions = False  # a full disk must not print logging's own tracebacks
    while True:
        try:
            fn, args = cloudpickle.loads(conn.recv_bytes())
        except EOFError:
            exit_now()
        try:
            answer = (fn(*args), None, None)
        except BaseException as exc:  # noqa: B036  (SystemExit of the job included)
            answer = (None, repr(exc), traceback.format_exc())
        try:
            _send(conn, answer)
        except OSError:  # the sweep's process is gone: nobody to answer
            return


def _send(conn, answer: tuple) -> None:
    """A plain tuple: the sweep's process need not import anything to read it."""
    try:
        conn.send(answer)
    except OSError:
        raise
    except Exception as exc:  # the value does not pickle
        conn.send((None, f"result could not be sent back: {exc!r}", None))


class _Worker:
    def __init__(self, conn, process) -> None:
        self.conn, self.process = conn, process  # process: multiprocessing's, or Adopted

    @classmethod
    def start(cls, ctx, warm=(), before: tuple = (), forks: tuple = ()) -> _Worker:
        """``before``: the workers forked before this one, whose pipes a fork inherits;
        ``forks``: the siblings this one forks once warm (attnsvm/adopted.py)."""
        conn, child = ctx.Pipe()
        args = (child, os.getpid(), warm)
        if ctx.get_start_method() == "fork":
            theirs = [end for s in forks for end in s.sweeps_ends()]
            args += ((conn, *(w.conn for w in before), *theirs), forks)
        process = ctx.Process(target=_worker_main, args=args, name="attnsvm-worker")
        process.start()
        for end in (child, *(end for s in forks for end in s.workers_ends())):
            end.close()
        return cls(conn, process)


def _early_context():
    """``fork`` where it is safe (Linux, no thread of Python's started yet: the command has
    only imported what starts it, and the idle pool threads numpy's BLAS made at import are
    reset in the child by BLAS's own fork handlers), so that the worker begins with what is
    already imported here (Hydra, the config, attnsvm.run); else ``spawn``, as the pool's
    other workers."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return mp.get_context("fork")
    return mp.get_context("spawn")


def _reraise(exc: BaseException, tb: str):
    """In the worker: the error that preparing the job raised in the sweep's process."""
    raise exc


def _pickled(prepare, num: int) -> bytes:
    """The message of job ``num``: its (fn, args); where preparing it fails (a full disk), a
    job that raises that error, so that it fails as a job, not the sweep."""
    try:
        job = prepare(num)
    except Exception as exc:  # noqa: BLE001  (any error of one job's preparation)
        job = (_reraise, (exc, traceback.format_exc()))
        try:
            return cloudpickle.dumps(job)
        except Exception:  # an error that does not pickle: its text does
            job = (_reraise, (RuntimeError(repr(exc)), traceback.format_exc()))
    return cloudpickle.dumps(job)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a Slurm allocation, ``taskset``),
    not the machine's: how many workers a sweep starts and whether a core is left for it."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def died(exitcode: int | None) -> str:
    """'killed by SIGKILL', 'exited with code 1'."""
    if exitcode is not None and exitcode < 0:
        return f"killed by {signal.Signals(-exitcode).name}"
    return f"exited with code {exitcode}"


_EARLY: dict[tuple[str, ...], list[_Worker]] = {}  # warm -> workers started before any pool


def start_early(warm: tuple[str, ...], count: int = 1) -> None:
    """``count`` workers started now, before the sweep is composed and planned: their start
    (``warm``'s imports: seconds) runs on other cores beside Hydra's start-up, and the first
    ``WorkerPool`` with the same ``warm`` takes them. Not taken (nothing left to run, a failed
    config), they are killed when this process exits; taken by a pool of fewer workers, the
    rest at once. Where it can (Linux, ``fork``), only the first starts an interpreter's
    imports: it forks the others once warm (attnsvm/adopted.py)."""
    if not _EARLY:
        atexit.register(_drop_early)
    started = _EARLY.setdefault(warm, [])
    ctx = _early_context()
    with warnings.catch_warnings():  # Python >= 3.12 counts BLAS's idle pool threads
        warnings.filterwarnings("ignore", ".*multi-threaded.*fork", DeprecationWarning)
        while len(started) < count:
            # the rest are forked from this one once it is warm (attnsvm/adopted.py)
            forks = adopted.siblings(ctx, count - len(started) - 1)
            started.append(_Worker.start(ctx, warm, tuple(started), forks))
            started += [_Worker(s.conn, adopted.Adopted(s.birth_r)) for s in forks]


def _drop_early() -> None:
    """The early workers no pool took: killed, not left to finish their imports."""
    while _EARLY:
        _end(_EARLY.popitem()[1])


def _unborn(w: _Worker):
    """What to wait on for the birth of a worker another forks (attnsvm/adopted.py); None for
    one that is born or never will be, and for every other worker."""
    return getattr(w.process, "unborn", None)


def _end(workers: list[_Worker]) -> None:
    for w in workers:
        w.conn.close()
        w.process.kill()
        w.process.join()


class WorkerPool:
    """At most ``n`` workers; started on demand, replaced when one dies (module doc)."""

    def __init__(self, n: int, warm: tuple[str, ...] = ()) -> None:
        self.n = max(1, n)
        self.warm = warm  # modules a worker imports as it starts (the jobs' heavy imports)
        self.ctx = mp.get_context("spawn")
        self.idle: list[_Worker] = []
        self.busy: dict[int, _Worker] = {}  # job -> worker
        self.ended: dict[int, Outcome] = {}  # jobs that ended, their ``done`` not yet called
        early = _EARLY.pop(warm, [])  # started with the command (start_early)
        _end(early[self.n :])
        self.idle += early[: self.n]
        self.started = list(self.idle)  # every worker it had (tests look for survivors)

    def _worker(self) -> _Worker | None:
        """An idle worker that is alive (dead ones dropped), else a new one; None while the idle
        ones left are yet to be born (attnsvm/adopted.py): the run waits for their birth."""
        coming = [w for w in self.idle if _unborn(w) is not None and not w.process.settled()]
        for w in [w for w in self.idle if w not in coming][::-1]:
            self.idle.remove(w)
            if w.process.is_alive():
                return w
            w.conn.close()  # dead, or never born
        return None if coming else self._new()

    def _new(self) -> _Worker:
        w = _Worker.start(self.ctx, self.warm)
        self.started.append(w)
        return w

    @property
    def pids(self) -> list[int]:
        """Every worker's pid (one forked by another: once it is born)."""
        return [w.process.pid for w in self.started if w.process.pid is not None]

    def start(self, count: int) -> None:
        """``count`` workers started now, before the first job is prepared: their start (spawn,
        imports: seconds) runs beside that preparation."""
        while len(self.idle) + len(self.busy) < min(count, self.n):
            self.idle.append(self._new())

    def _dispatch(self, pending: deque, ready: dict, prepare) -> None:
        while pending and len(self.busy) < self.n:
            w = self._worker()
            if w is None:
                return
            num = pending.popleft()
            payload = ready.pop(num) if num in ready else _pickled(prepare, num)
            self.busy[num] = w  # first: an interrupted sweep interrupts every job it sent
            try:
                w.conn.send_bytes(payload)
            except (BrokenPipeError, OSError):  # it died between the check and the send
                del self.busy[num]
                pending.appendleft(num)
                ready[num] = payload

    def _busy_waitables(self) -> list:
        return [x for w in self.busy.values() for x in (w.conn, w.process.sentinel)]

    def _waitables(self) -> list:
        """The busy workers' pipes and sentinels, and the births not read yet (``_worker`` reads
        them: a birth wakes the run, which sends the new worker its job)."""
        births = [birth for w in self.idle if (birth := _unborn(w)) is not None]
        return self._busy_waitables() + births

    def _prepare_ahead(self, pending: deque, ready: dict, prepare) -> None:
        """The next ``n`` jobs' messages, made while the workers compute, one at a time and
        only while no worker has answered."""
        for num in list(pending)[: self.n]:
            if num not in ready:
                if self.busy and wait(self._waitables(), 0):
                    return
                ready[num] = _pickled(prepare, num)

    def _collect(self, w: _Worker, unpickle: bool = True) -> Outcome | None:
        """The worker's answer, or (dead worker) an Outcome saying how it died; None: not yet.
        ``unpickle=False``: its bytes, unpickled by ``_unpickled`` (a job's tables are the first
        DataFrames the sweep's process sees: the import of pandas must not delay the worker's
        next job)."""
        if w.conn.poll():
            try:
                data = w.conn.recv_bytes()
            except (EOFError, OSError):
                data = None
            if data is not None:
                return _unpickled(Outcome(raw=data)) if unpickle else Outcome(raw=data)
        if w.process.is_alive():
            return None
        w.process.join()
        code = w.process.exitcode
        return Outcome(error=f"worker process {w.process.pid} {died(code)}", exitcode=code)

    def run(self, jobs, done=None, prepare=None, idle=None) -> dict[int, Outcome]:
        """Run ``fn(*args)`` for every job: ``jobs`` maps num -> (fn, args), or lists the nums
        whose (fn, args) ``prepare(num)`` makes, just before they are needed (the next ``n``
        while the workers compute, so that a worker that frees up is sent its next job at
        once). ``done(num, outcome)`` is called as each ends. ``idle()``: called while the
        pool waits, as long as it returns True (it did some work and has more)."""
        if prepare is None:
            prepare = dict(jobs).__getitem__
        pending, outcomes, ready = deque(sorted(jobs)), {}, {}
        self.start(len(pending))
        while pending or self.busy:
            self._dispatch(pending, ready, prepare)
            self._prepare_ahead(pending, ready, prepare)
            while idle is not None and not wait(self._waitables(), 0) and idle():
                pass
            waitables = self._waitables()
            wait(waitables, None if waitables else 0.1)  # none: cannot be; never hang on it
            for num, w in list(self.busy.items()):
                outcome = self._collect(w, unpickle=False)
                if outcome is None:
                    continue
                del self.busy[num]
                outcomes[num] = self.ended[num] = outcome
                if w.process.is_alive():
                    self.idle.append(w)
            self._dispatch(pending, ready, prepare)  # the freed workers' next jobs, then done
            self._prepare_ahead(pending, ready, prepare)  # ... and theirs after
            self._report_ended(done)
        return outcomes

    def _report_ended(self, done) -> None:
        """``done`` for each job that ended and was not reported yet (in the order they ended)."""
        while self.ended:
            num = next(iter(self.ended))
            outcome = _unpickled(self.ended.pop(num))
            if done is not None:
                done(num, outcome)

    def interrupt(self, grace: float = GRACE_S) -> dict[int, Outcome]:
        """SIGTERM to every busy worker; their jobs' outcomes (they record themselves
        ``interrupted``) as they come within ``grace`` seconds; the rest are killed. Jobs that
        had ended but were not yet reported come first."""
        for w in self.busy.values():
            if w.process.is_alive():
                os.kill(w.process.pid, signal.SIGTERM)
        outcomes, deadline = (
            {n: _unpickled(o) for n, o in self.ended.items()},
            time.monotonic() + grace,
        )
        self.ended.clear()
        while self.busy and time.monotonic() < deadline:
            wait(self._busy_waitables(), 0.2)
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
        """End every worker: idle ones on EOF, then whatever is left is killed."""
        workers = self.idle + list(self.busy.values())
        for w in workers:
            w.conn.close()
            if _unborn(w) is not None:  # not to be born (attnsvm/adopted.py)
                w.process.kill()
        for w in workers:
            w.process.join(timeout=GRACE_S)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
        self.idle, self.busy = [], {}
