"""A sweep's later workers forked from its first once that one is warm, and adopted by the sweep.

A worker's start is an interpreter importing torch and pandas: 1.1-1.5 s of CPU on a
2-core Xeon. A sweep's second worker importing beside the first and beside the sweep's own
start-up ran three processes on two cores, so both workers came late. Forked from the first
once its imports are done, the second costs a fork (milliseconds), and both are ready when the
first alone would be (docs/benchmarks_sweep.txt). The fork comes right after the imports,
before the first worker runs any job: nothing it forks from holds a CUDA context or a thread
pool a job started.

It must still be the sweep's worker, not the first worker's: the first one's death (killed, out
of memory) fails only its own job. So the first worker forks twice and the middle process exits
at once: the sweep's process, a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), adopts the
grandchild, reaps it (its exit code says how it died) and sees it end through a pidfd. Only
once adopted does the worker ask for the signal that ends it with the sweep
(``PR_SET_PDEATHSIG`` fires at every change of parent), and it tells the sweep its pid on a pipe
of its own: EOF there means it was never born (the first worker died before forking it, or the
sweep closed that pipe first: it needs no such worker), and the pool starts a fresh one instead.
Where the kernel gives no pidfd (before 5.3, some seccomp profiles) no worker is forked from
another; one refused after its birth is killed and counts as never born.

Left to the sweep's exit: a middle process whose parent was killed between its fork and its
reaping, or a worker that exits unborn, stays a zombie child of the sweep until the sweep ends.

    sibling = Sibling.make(ctx)          # in the sweep, before forking the first worker
    ...                                  # the first worker, warm: fork_adopted(run, ...)
    handle = Adopted(sibling.birth_r)    # the sweep's view, as multiprocessing.Process's
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from attnsvm.interrupt import flush_output
from attnsvm.lifeline import prctl

PR_SET_CHILD_SUBREAPER = 36
ADOPTION_POLL_S = 0.0005  # the grandchild's wait for its middle parent's exit


@functools.cache
def available() -> bool:
    """Linux with pidfds (5.3+, allowed by the sandbox if any): where a later worker can be
    forked from a warm one."""
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # ENOSYS on older kernels, EPERM under some seccomp profiles
        return False
    return True


def subreaper() -> bool:
    """This process made one that adopts its descendants' orphans (the forked workers); False
    where the kernel refuses, and then no worker is forked from another."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


@dataclass
class Sibling:
    """The pipes of a worker the first one will fork: its job pipe (``conn`` the sweep's end,
    ``child`` its own) and ``birth``, on which it sends its pid once adopted."""

    conn: object
    child: object
    birth_r: object
    birth_w: object

    @classmethod
    def make(cls, ctx) -> Sibling:
        conn, child = ctx.Pipe()
        birth_r, birth_w = ctx.Pipe(duplex=False)
        return cls(conn, child, birth_r, birth_w)

    def sweeps_ends(self) -> tuple:
        return (self.conn, self.birth_r)

    def workers_ends(self) -> tuple:
        return (self.child, self.birth_w)


def siblings(ctx, count: int) -> tuple[Sibling, ...]:
    """The pipes of ``count`` workers a forked worker will fork once warm, where this process
    can adopt them; else none (each worker then starts on its own)."""
    if count < 1 or ctx.get_start_method() != "fork" or not available():
        return ()
    return tuple(Sibling.make(ctx) for _ in range(count)) if subreaper() else ()


def fork_siblings(worker_main: Callable, conn, forks: Sequence[Sibling]) -> None:
    """In the warm worker whose pipe is ``conn``: ``worker_main(pipe)`` in each of ``forks``."""
    for num, sibling in enumerate(forks):
        others = [end for s in forks[num + 1 :] for end in s.workers_ends()]
        run = functools.partial(worker_main, sibling.child)
        fork_adopted(run, sibling, [conn, *others])


def fork_adopted(run: Callable[[], None], sibling: Sibling, closing: Sequence) -> None:
    """In the warm worker: ``run()`` in a grandchild the sweep (this process's parent, a child
    subreaper) adopts (module doc). ``closing``: the ends the grandchild must not hold (the
    warm worker's own pipe, the other siblings'), so that each closes where its owner dies.
    Not forked where the sweep has closed its birth pipe already (it needs no such worker)."""
    sweep = os.getppid()
    flush_output()
    if not _reader_gone(sibling.birth_w):
        middle = os.fork()
        if middle == 0:
            _middle(run, sibling, closing, sweep)
        os.waitpid(middle, 0)
    for end in sibling.workers_ends():
        end.close()


def _reader_gone(writer) -> bool:
    """The read end of ``writer``'s pipe is closed (poll reports an error on the write end)."""
    poller = select.poll()
    poller.register(writer.fileno(), select.POLLOUT)
    return any(event & select.POLLERR for _, event in poller.poll(0))


def _middle(run, sibling: Sibling, closing: Sequence, sweep: int) -> None:
    """The middle process: forks the worker and exits, so that the sweep adopts it."""
    try:
        me = os.getpid()
        if os.fork() == 0:
            _adopted_main(run, sibling, closing, sweep, me)
    finally:
        os._exit(0)


def _adopted_main(run, sibling: Sibling, closing: Sequence, sweep: int, middle: int) -> None:
    """The adopted worker: once its parent is the sweep, it sends its pid and runs; it never
    returns into the code it was forked from."""
    code = 1
    try:
        for end in closing:
            end.close()
        while os.getppid() == middle:
            time.sleep(ADOPTION_POLL_S)
        if os.getppid() == sweep:  # else the sweep is gone (or adopts nothing): never born
            try:
                sibling.birth_w.send_bytes(str(os.getpid()).encode())
            except OSError:  # the sweep needs it no more (Adopted.kill): never born
                code = 0
                return
            sibling.birth_w.close()
            run()
            code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:  # noqa: BLE001  (said, then the exit: never back into the fork's caller)
        traceback.print_exc()
    finally:
        flush_output()
        os._exit(code)


class Adopted:
    """The sweep's view of an adopted worker, as ``multiprocessing.Process``'s: ``pid``,
    ``sentinel``, ``is_alive``, ``join``, ``exitcode``, ``kill``. It has a pid once its birth
    message is read. The pool sends it no job before: it waits on ``unborn`` (the birth pipe,
    not read yet) beside its busy workers, and ``settled`` reads the birth when it came."""

    def __init__(self, birth_r) -> None:
        self._birth = birth_r
        self._pid: int | None = None
        self._pidfd: int | None = None
        self.exitcode: int | None = None

    def _born(self, timeout: float | None = None) -> bool:
        """Its pid, read once it came (within ``timeout``; None: however long it takes)."""
        if self._birth is not None and self._birth.poll(timeout):
            with contextlib.suppress(EOFError, OSError, ValueError):  # EOF: never born
                self._pid = int(self._birth.recv_bytes())
            self._birth.close()
            self._birth = None
            if self._pid is not None:
                self._watch()
        return self._pid is not None

    def _watch(self) -> None:
        """Its pidfd; where the kernel refuses one after all, it is killed and counts as never
        born (the pool starts a fresh worker)."""
        try:
            self._pidfd = os.pidfd_open(self._pid)
        except OSError:
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            self._pid = None

    @property
    def unborn(self):
        """While its birth is not read yet, the pipe it comes on (to wait on); else None."""
        return self._birth

    def settled(self) -> bool:
        """Its birth is read (it is born, or never will be): no waiting."""
        self._born(0)
        return self._birth is None

    @property
    def pid(self) -> int | None:
        self._born()
        return self._pid

    @property
    def sentinel(self) -> int:
        """Readable once it has exited (a pidfd): the pool waits on it with its pipe."""
        self._born()
        return self._pidfd

    def is_alive(self) -> bool:
        if not self._born() or self.exitcode is not None or self._pidfd is None:
            return False
        try:
            pid, status = os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:  # reaped here already, by a call a signal cut short
            pid, status = self._pid, None
        if pid == 0:
            return True
        if status is not None:
            self.exitcode = os.waitstatus_to_exitcode(status)
        os.close(self._pidfd)
        self._pidfd = None
        return False

    def join(self, timeout: float | None = None) -> None:
        """Waits for its exit, or for ``timeout``; an unborn worker's birth within the same."""
        if self._born(timeout) and self._pidfd is not None:
            select.select([self._pidfd], [], [], timeout)
            self.is_alive()

    def kill(self) -> None:
        """SIGKILL, if it is born by now. One not yet born never runs: its birth pipe is
        closed, so that its birth message fails and it exits."""
        if self._born(0):
            if self.is_alive():
                os.kill(self._pid, signal.SIGKILL)
        elif self._birth is not None:
            self._birth.close()
            self._birth = None
