"""A job is computed once: its claim (attnsvm/results/claim.py) makes a second process wait,
a claim whose holder was killed (kill -9) is taken over at once, and two identical sweeps
started together on one directory compute each job once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from attnsvm.results.claim import CLAIMS, claimed
from cli_helpers import REPO, SMALL, attnsvm_cmd, cli_env, job_dirs, read_job_json

HOLD = """
import sys, time
from pathlib import Path
from attnsvm.results.claim import claimed
with claimed(Path(sys.argv[1]), "abc"):
    print("held", flush=True)
    time.sleep(600)
"""


TAKERS: list[threading.Thread] = []  # joined before a test looks for leftovers


def _try_claim(sweep_dir, seconds: float) -> bool:
    """Whether this process gets the claim of job ``abc`` within ``seconds`` (a taker that
    did not get it in time goes on waiting, in TAKERS)."""
    got = threading.Event()

    def take() -> None:
        with claimed(sweep_dir, "abc"):
            got.set()

    taker = threading.Thread(target=take, daemon=True)
    TAKERS.append(taker)
    taker.start()
    return got.wait(seconds)


def test_a_claim_makes_others_wait_and_a_killed_holders_claim_is_taken_over(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert not _try_claim(tmp_path, 1.0), "a claim held by a live process was taken"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        assert _try_claim(tmp_path, 10.0), "the claim of a killed process was not taken over"
    finally:
        if holder.poll() is None:
            holder.kill()
    for taker in TAKERS:  # both takers get the claim in turn once the holder is gone
        taker.join(10)
    assert not any(taker.is_alive() for taker in TAKERS)
    assert not list((tmp_path / CLAIMS).iterdir())  # released: nothing left behind


def test_a_released_claim_is_taken_again(tmp_path):
    for _ in range(2):
        with claimed(tmp_path, "x"):
            assert (tmp_path / CLAIMS / "x").read_text().split()[1] == str(os.getpid())


HOOK = """
import os
if os.environ.get("ATTNSVM_TEST_CALLS"):
    import attnsvm.experiments.gd.job as _pipeline
    _counted = _pipeline.run_job

    def counted_run_job(cfg, progress=None):                 # a job computed, in any process
        with open(os.environ["ATTNSVM_TEST_CALLS"], "a") as fh:
            fh.write(f"{cfg.dataset.d}\\n")
        return _counted(cfg, progress)

    _pipeline.run_job = counted_run_job
"""


@pytest.mark.slow
def test_two_identical_sweeps_at_once_compute_each_job_once(tmp_path):
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    calls, sweep = tmp_path / "calls", tmp_path / "s"
    env = cli_env(
        PYTHONPATH=os.pathsep.join([str(tmp_path / "hook"), str(REPO)]),
        ATTNSVM_TEST_CALLS=str(calls),
    )
    grid = ["dataset.d=2,3,4,5", *SMALL, "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}"]
    procs = [
        subprocess.Popen(
            attnsvm_cmd(*grid, multirun=True),
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=900)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sorted(calls.read_text().split()) == ["2", "3", "4", "5"], calls.read_text()
    lines = [out.rstrip().splitlines()[-1] for out in outs]
    counts = [(int(line.split()[2]), int(line.split()[4])) for line in lines]  # (run, skipped)
    assert sum(run for run, _ in counts) == 4, lines  # each job counted run by one sweep
    assert all(run + skipped == 4 for run, skipped in counts), lines
    assert {read_job_json(d)["status"] for d in job_dirs(sweep)} == {"finished"}
