"""Progress of long jobs (attnsvm/progress.py): rate-limited lines with an ETA, fed by the
pipeline's stages; the same bits with and without it; the lines reach run.log."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import attnsvm.kernel as kernel
from attnsvm.composition import RunConfig
from attnsvm.config import Engine
from attnsvm.job import run_job
from attnsvm.progress import Progress, duration
from attnsvm.train import fused
from cli_helpers import SMALL, run_cli, timing_columns


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_rate_limited_and_carry_an_eta():
    clock, lines = FakeClock(), []
    report = Progress(interval=5, emit=lines.append, clock=clock)
    report.start_job(8)
    report.start_batch(0, 8)
    report.start_training(2000)
    for _ in range(10):  # 2 s of work, 8 seeds x 100 steps: nothing yet
        clock.now += 0.2
        report.trained(8, 10)
    assert lines == []
    clock.now += 3.0  # 5 s in: one line, step 100 of 2000 after 5 s -> 95 s left
    report.trained(8, 0)
    assert lines == [
        "progress: 5.0 s elapsed, seeds 0/8 done; training seeds 1-8: step 100/2000; ETA 1 min 35 s"
    ]
    report.trained(8, 100)  # within the interval again: no line
    assert len(lines) == 1


def test_svm_eta_comes_from_the_norms_timed_before():
    clock, lines = FakeClock(), []
    report = Progress(interval=0, emit=lines.append, clock=clock)
    report.start_job(4)
    report.start_batch(0, 4)
    report.start_svms("at opt", {"fro": 4, "nuc": 4})
    assert "ETA" not in lines[-1]  # no norm timed yet
    clock.now += 1
    report.solved("fro", 4, 1.0)
    assert lines[-1].endswith("SVMs at opt of seeds 1-4, 1.0 s so far: fro 4/4, nuc 0/4")
    report.solved("nuc", 4, 8.0)  # 2 s per nuclear SVM
    report.start_svms("at the selected tokens", {"fro": 2, "nuc": 2})
    assert lines[-1].endswith("fro 0/2, nuc 0/2; ETA 4.5 s")  # 2 x 0.25 s + 2 x 2 s
    clock.now += 3
    report.solved("fro", 2, 0.5)  # the nuclear call runs: its time is taken off
    assert lines[-1].endswith("fro 2/2, nuc 0/2; ETA 4.0 s")
    clock.now += 3
    report.trained(0, 0)
    assert lines[-1].endswith("fro 2/2, nuc 0/2; ETA 1.0 s")


def test_the_seeds_done_callback_keeps_its_contract():
    """Experiments call progress(done, total) (regpath, multitoken, nexttoken): a line at once,
    with the pace of the finished seeds as ETA."""
    clock, lines = FakeClock(), []
    report = Progress(interval=1e9, emit=lines.append, clock=clock)
    clock.now += 30
    report(3, 9)
    clock.now += 60
    report(9, 9)
    assert lines == [
        "seeds done: 3/9 (30 s elapsed, ETA 1 min 00 s)",
        "seeds done: 9/9 (1 min 30 s elapsed)",
    ]


def test_duration():
    assert [duration(s) for s in (0.04, 9.4, 59.6, 200, 7500)] == [
        "0.0 s",
        "9.4 s",
        "1 min 00 s",
        "3 min 20 s",
        "2 h 05 min",
    ]


ENGINES = [Engine.torch] + ([Engine.fused] if kernel.library() is not None else [])


@pytest.mark.parametrize("engine", ENGINES)
def test_results_are_the_same_bits_with_progress(engine, monkeypatch):
    """Progress at every event, the fused kernel called every few steps: same tables."""
    monkeypatch.setattr(fused, "FIRST_CALL_STEPS", 3)
    monkeypatch.setattr(fused, "CALL_SECONDS", 1e-9)
    cfg = RunConfig(seeds=6, batch_size=4, threads=2, engine=engine)
    cfg.optimizer.steps, cfg.optimizer.checkpoint_every = 150, 10
    plain = run_job(cfg)
    lines = []
    reported = run_job(cfg, progress=Progress(interval=0, emit=lines.append))
    for a, b in ((plain.runs, reported.runs), (plain.trajectory, reported.trajectory)):
        cols = [c for c in a.columns if c not in timing_columns(a)]
        pd.testing.assert_frame_equal(a[cols], b[cols], check_exact=True)
    text = "\n".join(lines)
    assert "training seeds 1-4: step 150/150" in text and "training seeds 5-6" in text
    where = "SVMs at opt and at the selected tokens of seeds 1-4"  # one call for both sets
    done = re.findall(re.escape(where) + r".*fro (\d+)/(\d+)", text)
    assert any(a == b and int(a) >= 4 for a, b in done), text
    assert "seeds done: 4/6" in text and "seeds done: 6/6" in text


def test_a_plain_callback_still_hears_of_batches():
    calls = []
    run_job(RunConfig(seeds=3, batch_size=2), progress=lambda k, n: calls.append((k, n)))
    assert calls == [(2, 3), (3, 3)]


@pytest.mark.slow
def test_progress_lines_reach_run_log(tmp_path):
    out = tmp_path / "job"
    proc = run_cli(*SMALL, "progress_interval=0", f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stdout
    log = (out / "run.log").read_text()
    assert "progress: " in log and "training seeds 1-3: step 60/60" in log
    assert "SVMs at opt and at the selected tokens of seeds 1-3" in log and "seeds done: 3/3" in log
    assert "progress: " in proc.stdout  # and on the console


def test_benign_reports_its_training_steps_and_svms():
    """benign trained all its seeds in one loop that said nothing: its lines now give the step
    of the batch (with an ETA) and its max-margin SVMs."""
    from hydra import compose, initialize_config_dir

    from attnsvm.composition import register_configs, to_run_config
    from attnsvm.experiments.benign.job import run_job as benign_job
    from cli_helpers import REPO

    register_configs()
    with initialize_config_dir(str(REPO / "conf"), version_base=None):
        cfg = compose("config", ["experiment=benign", "seeds=2", "benign.steps=30"])
    lines = []
    benign_job(to_run_config(cfg), progress=Progress(interval=0, emit=lines.append))
    training = [line for line in lines if "training seeds 1-2: step" in line]
    assert training and training[-1].split("step ")[1].startswith("30/30")
    assert any("ETA" in line for line in training)
    assert any("SVMs max-margin of seeds 1-2" in line and "v-SVM 2/2" in line for line in lines)
