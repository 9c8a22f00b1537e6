"""A local sweep's worker processes: one job at a time each; they die with the sweep, and a
worker that dies fails only its own job (why not loky or pebble: docs/scaling.md).

    pool = WorkerPool(2, warm=("attnsvm.job",), setup=(fn, args))  # spawned, importing now
    outcomes = pool.run(nums, prepare, done)  # prepare(num) -> (fn, args); done(num, Outcome)
    pool.close()

A worker is a fresh interpreter (``spawn``) and an entry point: the process-wide settings a job
wants are made here, never by library code. It ends with the process that started it, however
that ends, SIGKILL included (``watch_parent``).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import logging
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
import weakref
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import cloudpickle

from attnsvm.interrupt import exit_now

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
POLL_S = 0.5  # how often a worker's watchdog looks at its parent id
GRACE_S = 10.0  # after its parent's death (or a SIGTERM from it), a worker's time to record


@dataclass
class Outcome:
    """What came back for one job: ``value`` if the function returned, else ``error``."""

    value: Any = None
    error: str | None = None  # repr of the exception, or how the worker died
    traceback: str | None = None
    exitcode: int | None = None  # set when the worker died without answering


def keep_freed_memory() -> bool:
    """For the rest of this process, blocks up to 32 MiB come from malloc's heap and up to 64 MiB
    of freed heap stays mapped: a large SVM reuses its freed temporaries instead of faulting in
    fresh pages (docs/scaling.md, Large instances). Entry points only; False without glibc."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(M_TRIM_THRESHOLD, 64 << 20))


def watch_parent(parent_pid: int) -> None:
    """A watchdog thread: SIGTERM to this worker (its job records itself ``interrupted``) once
    ``parent_pid`` is no longer its parent, and a hard exit ``GRACE_S`` later."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(GRACE_S)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="attnsvm-parent-watchdog", daemon=True).start()


def _quiet_exit(signum, frame) -> None:
    """Between jobs, SIGTERM / SIGINT end a worker without a traceback."""
    raise SystemExit(128 + signum)


def _worker_main(conn, parent_pid: int, warm: tuple[str, ...], setup: bytes | None) -> None:
    """(fn, args) in, (value, error, traceback) out, until EOF; ``setup``: a pickled (fn, args)
    run once first."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _quiet_exit)
    watch_parent(parent_pid)
    keep_freed_memory()
    for module in warm:
        with contextlib.suppress(ImportError):  # the job that needs it fails, not the worker
            importlib.import_module(module)
    if setup is not None:
        fn, args = cloudpickle.loads(setup)
        fn(*args)
    logging.raiseExceptions = False  # a full disk must not print logging's own tracebacks
    while True:
        try:
            fn, args = cloudpickle.loads(conn.recv_bytes())
        except EOFError:
            break
        try:
            answer = (fn(*args), None, None)
        except BaseException as exc:  # noqa: B036  (SystemExit of the job included)
            answer = (None, repr(exc), traceback.format_exc())
        try:  # a plain tuple: the sweep's process need not import anything to read it
            conn.send(answer)
        except OSError:  # the sweep's process is gone: nobody to answer
            break
    exit_now()  # every answer is sent: no interpreter teardown (torch's is slow)


@dataclass
class _Worker:
    conn: Any
    process: Any
    answered: bool = False  # it has answered a job: it reads its pipe (else: still starting)


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
    """At most ``n`` workers, ``n`` started now; replaced when one dies (module doc)."""

    def __init__(self, n: int, warm: tuple[str, ...] = (), setup: tuple | None = None) -> None:
        self.n, self.warm, self.ctx = max(1, n), warm, mp.get_context("spawn")
        self.setup = None if setup is None else cloudpickle.dumps(setup)
        self.busy: dict[int, _Worker] = {}  # job -> worker
        self.started: list[_Worker] = []  # every worker it had
        weakref.finalize(self, _end, self.started)  # a pool never closed: killed at exit
        self.idle = [self._new() for _ in range(self.n)]

    def _new(self) -> _Worker:
        conn, child = self.ctx.Pipe()
        args = (child, os.getpid(), self.warm, self.setup)
        w = _Worker(conn, self.ctx.Process(target=_worker_main, args=args, name="attnsvm-worker"))
        w.process.start()
        child.close()
        self.started.append(w)
        return w

    def resize(self, n: int) -> None:
        """At most ``n`` workers from now on; idle ones beyond it end now."""
        self.n = max(1, n)
        if (extra := len(self.idle) + len(self.busy) - self.n) > 0:
            _end(self.idle[-extra:])
            del self.idle[-extra:]

    def _dispatch(self, pending: deque, ready: dict, prepare) -> None:
        """Jobs sent to idle workers (dead ones dropped, new ones started) up to ``n`` busy."""
        while pending and len(self.busy) < self.n:
            num = pending.popleft()
            payload = ready.pop(num, None) or cloudpickle.dumps(prepare(num))
            while self.idle and not self.idle[0].process.is_alive():
                self.idle.pop(0).conn.close()
            w = self.idle.pop(0) if self.idle else self._new()
            self.busy[num] = w  # first: an interrupted sweep interrupts it
            with contextlib.suppress(OSError):  # it died since: its sentinel says so
                w.conn.send_bytes(payload)

    def _ended(self, timeout: float | None = None):
        """(num, outcome) of each busy job that ends within ``timeout`` (None: the first): its
        worker's answer, or how the worker died."""
        wait([x for w in self.busy.values() for x in (w.conn, w.process.sentinel)], timeout)
        for num, w in list(self.busy.items()):
            outcome = None
            if w.conn.poll():
                with contextlib.suppress(EOFError, OSError):
                    outcome = Outcome(*w.conn.recv())
            if outcome is None and not w.process.is_alive():
                code = w.process.exitcode
                how = f"exited with code {code}"
                how = f"killed by {signal.Signals(-code).name}" if code < 0 else how
                outcome = Outcome(error=f"worker process {w.process.pid} {how}", exitcode=code)
            if outcome is not None:
                del self.busy[num]
                w.answered = True
                self.idle.append(w)  # a dead one is dropped by ``_dispatch``
                yield num, outcome

    def run(self, nums, prepare, done=None) -> dict[int, Outcome]:
        """``fn(*args)`` of ``prepare(num)`` for each of ``nums`` on a worker, the next ``n``
        messages made while the workers compute; ``done(num, outcome)`` as each job ends."""
        pending, ready, outcomes = deque(nums), {}, {}
        while pending or self.busy:
            self._dispatch(pending, ready, prepare)
            for num in list(pending)[: self.n]:  # made while the workers compute
                if num not in ready:
                    ready[num] = cloudpickle.dumps(prepare(num))
            for num, outcome in self._ended():
                outcomes[num] = outcome
                self._dispatch(pending, ready, prepare)  # its next job first, then ``done``
                if done is not None:
                    done(num, outcome)
        return outcomes

    def interrupt(self, grace: float = GRACE_S) -> dict[int, Outcome]:
        """SIGTERM to every busy worker (its job records itself ``interrupted``); those not
        done within ``grace`` seconds are killed."""
        for w in self.busy.values():
            if w.process.is_alive():
                os.kill(w.process.pid, signal.SIGTERM)
        outcomes, deadline = {}, time.monotonic() + grace
        while self.busy and time.monotonic() < deadline:
            outcomes.update(self._ended(0.2))
        for num, w in self.busy.items():
            w.process.kill()
            w.process.join()
            outcomes[num] = Outcome(error=f"worker process {w.process.pid} killed", exitcode=-9)
        self.busy.clear()
        return outcomes

    def close(self) -> None:
        """End every worker: one still starting (no job, nothing to lose) at once, the others
        on EOF, whatever is left after ``GRACE_S`` killed."""
        _end([w for w in self.idle if not w.answered])
        _end([w for w in self.idle if w.answered] + list(self.busy.values()), GRACE_S)
        self.idle, self.busy = [], {}
