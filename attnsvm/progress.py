"""Progress of a long job: seeds, training steps and SVMs done, elapsed time and an ETA.

    with Progress(interval=5.0) as report:   # python -m attnsvm.run: progress_interval
        run_job(cfg, progress=report)         # progress: 12 s elapsed, seeds 0/4 done; ...

Stage events come in (from the fused engine's threads too: each holds a lock); a line goes to
the ``attnsvm`` logger at most every ``interval`` seconds, and when no event comes for that long
(a long SVM call). It is also the ``progress(done, total)`` callback of every ``run_job``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("attnsvm")


def duration(seconds: float) -> str:
    """'0.4 s', '8 s', '3 min 20 s', '2 h 05 min'."""
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """``interval``: seconds between two lines (0: every event); ``emit``: where lines go (the
    ``attnsvm`` logger's ``info``); ``clock``: monotonic seconds (tests pass a fake one)."""

    def __init__(
        self,
        interval: float = 5.0,
        emit: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.interval = interval
        self.emit = emit or log.info
        self.clock = clock
        self.t0 = self.last = clock()
        self.lock = threading.Lock()
        self.seeds_total: int | None = None
        self.seeds_finished = 0
        self.stage = ""
        self.batch = (0, 0)  # seeds [lo, hi) of the batch in work
        self.steps = 0  # training steps per seed of the batch
        self.seed_steps = 0  # sum over the batch's seeds of the steps they have done
        self.stage_t0 = self.t0
        self.svm_where = ""
        self.svm_done: dict[str, list[int]] = {}  # norm -> [solved, total] in this stage
        self.svm_rate: dict[str, list[float]] = {}  # norm -> [seconds, problems] so far
        self.svm_t = self.t0  # when the SVM call in flight began
        self.seeds_analysed = 0
        self.search: tuple[int, int, int, float] | None = None  # tried, accepted, target, bound
        self.stopped = threading.Event()

    def __enter__(self) -> Progress:
        if 0 < self.interval < float("inf"):
            threading.Thread(target=self._heartbeat, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()

    def _heartbeat(self) -> None:
        while not self.stopped.wait(self.interval / 2):
            with self.lock:
                self._maybe_emit()

    def __call__(self, done: int, total: int) -> None:
        """The ``progress(done, total)`` contract: ``done`` of ``total`` seeds are finished."""
        with self.lock:
            self.seeds_total, self.seeds_finished, self.stage = total, done, ""
            now = self.clock()
            self.last = now
            eta = self._job_eta(now)
            tail = f", ETA {duration(eta)}" if eta is not None and done < total else ""
            self.emit(f"seeds done: {done}/{total} ({duration(now - self.t0)} elapsed{tail})")

    def start_job(self, seeds: int) -> None:
        with self.lock:
            self.seeds_total = seeds

    def start_batch(self, lo: int, hi: int) -> None:
        """The job's seeds ``lo``..``hi - 1`` (positions, from 0) are worked on."""
        with self.lock:
            self.batch, self.stage = (lo, hi), ""

    def start_training(self, steps: int) -> None:
        with self.lock:
            self.steps, self.seed_steps = steps, 0
            self._enter("training")

    def trained(self, seeds: int, steps: int) -> None:
        """``seeds`` seeds of the batch have done ``steps`` more steps (any thread)."""
        with self.lock:
            self.seed_steps += seeds * steps
            self._maybe_emit()

    def start_svms(self, where: str, counts: dict[str, int]) -> None:
        """The SVMs ``where`` (e.g. 'at opt') start: ``counts[norm]`` problems per norm."""
        with self.lock:
            self.svm_where = where
            self.svm_done = {norm: [0, k] for norm, k in counts.items()}
            self.svm_t = self.clock()
            self._enter("svms")

    def solved(self, norm: str, count: int, seconds: float) -> None:
        with self.lock:
            self.svm_done.setdefault(norm, [0, count])[0] += count
            self.svm_t = self.clock()
            rate = self.svm_rate.setdefault(norm, [0.0, 0])
            rate[0] += seconds
            rate[1] += count
            self._maybe_emit()

    def start_analysis(self) -> None:
        """Metrics of the batch's seeds (correlations per checkpoint, ...)."""
        with self.lock:
            self.seeds_analysed = 0
            self._enter("analysis")

    def analysed(self, seeds: int) -> None:
        with self.lock:
            self.seeds_analysed += seeds
            self._maybe_emit()

    def searched(self, tried: int, accepted: int, target: int, bound: float) -> None:
        """A seed search's count so far; ``bound``: the acceptance rate's upper bound."""
        with self.lock:
            self.search = (tried, accepted, target, bound)
            self._maybe_emit()

    def _enter(self, stage: str) -> None:
        self.stage, self.stage_t0 = stage, self.clock()
        self._maybe_emit()

    def _maybe_emit(self) -> None:
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        line = f"progress: {duration(now - self.t0)} elapsed"
        if self.seeds_total is not None:
            line += f", seeds {self.seeds_finished}/{self.seeds_total} done"
        what, eta = self._stage_text(now)
        if what:
            line += f"; {what}"
        if self.search is not None:
            what, eta = self._search_text(now)
            line += f"; {what}"
        job_eta = self._job_eta(now)
        eta = job_eta if job_eta is not None else eta
        if eta is not None:
            line += f"; ETA {duration(eta)}"
        self.emit(line)

    def _stage_text(self, now: float) -> tuple[str, float | None]:
        """What the batch is doing, and the seconds its stage still needs (None: unknown)."""
        lo, hi = self.batch
        seeds = f"seeds {lo + 1}-{hi}" if hi - lo > 1 else f"seed {lo + 1}"
        if self.stage == "training":
            left = (hi - lo) * self.steps - self.seed_steps
            step = self.seed_steps // max(hi - lo, 1)
            spent = now - self.stage_t0
            eta = spent / self.seed_steps * left if self.seed_steps and spent > 0 else None
            return f"training {seeds}: step {step}/{self.steps}", eta
        so_far = f", {duration(now - self.stage_t0)} so far"
        if self.stage == "svms":
            counts = ", ".join(f"{norm} {d}/{t}" for norm, (d, t) in self.svm_done.items())
            left = {n: t - d for n, (d, t) in self.svm_done.items() if d < t}
            eta = None  # until every norm left has been timed; less the call in flight's time
            if all(self.svm_rate.get(n, (0, 0))[1] for n in left):
                eta = sum(self.svm_rate[n][0] / self.svm_rate[n][1] * k for n, k in left.items())
                eta = max(eta - (now - self.svm_t), 0.0)
            return f"SVMs {self.svm_where} of {seeds}{so_far}: {counts}", eta
        if self.stage == "analysis":
            done, spent = self.seeds_analysed, now - self.stage_t0
            eta = spent / done * (hi - lo - done) if done else None
            return f"metrics of {seeds}{so_far}: {done}/{hi - lo}", eta
        return "", None

    def _search_text(self, now: float) -> tuple[str, float | None]:
        """Seeds tried and accepted, and the time to the target at the pace so far."""
        tried, accepted, target, bound = self.search
        text = f"seeds tried {tried}, accepted {accepted}/{target}"
        if bound < 1:
            text += f" (acceptance rate <= {bound:.2g} at 95% confidence)"
        left = max(target - accepted, 0)
        return text, (now - self.t0) / accepted * left if accepted else None

    def _job_eta(self, now: float) -> float | None:
        """Seconds the job still needs, from its finished seeds' pace (None before any)."""
        if not self.seeds_finished or not self.seeds_total:
            return None
        per_seed = (now - self.t0) / self.seeds_finished
        return max(per_seed * (self.seeds_total - self.seeds_finished), 0.0)


def reporter(progress) -> Progress | None:
    """The stage reporter in ``progress`` (a ``Progress``), or None for a plain callback."""
    return progress if isinstance(progress, Progress) else None
