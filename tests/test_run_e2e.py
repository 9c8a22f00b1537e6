"""The README's entry point end to end, in a subprocess: result contract, summary, re-run skip."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO

SMALL = ["seeds=3", "optimizer.steps=60", "optimizer.checkpoint_every=20"]


def _run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "attnsvm.run", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_run_writes_result_contract_and_skips_when_finished(tmp_path):
    out = tmp_path / "job"
    proc = _run(*SMALL, f"hydra.run.dir={out}", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "seeds by status" in proc.stdout and "convergence:" in proc.stdout
    runs = pd.read_parquet(out / "runs.parquet")
    traj = pd.read_parquet(out / "trajectory.parquet")
    job = json.loads((out / "job.json").read_text())
    assert len(runs) == 3 and list(runs.seed) == [0, 1, 2]
    for col in ("seed", "status", "n", "T", "d", "parameterization", "head", "feasible"):
        assert col in runs
    for col in ("rank_fro", "rank_nuc", "corr_fro", "corr_nuc", "softmax_max", "conv_type"):
        assert col in runs
    assert len(traj) == 3 * 4  # steps 0, 20, 40, 60
    for col in ("seed", "step", "corr_fro", "corr_nuc", "softmax_max", "w_norm", "loss"):
        assert col in traj
    assert job["status"] == "finished" and len(job["config_hash"]) == 16
    assert job["config"]["optimizer"]["steps"] == 60 and "torch" in job["versions"]
    again = _run(*SMALL, f"hydra.run.dir={out}", cwd=REPO)
    assert again.returncode == 0 and "already finished" in again.stdout + again.stderr


@pytest.mark.slow
def test_invalid_value_fails_without_output_dir(tmp_path):
    out = tmp_path / "bad"
    proc = _run("dataset.n=0", f"hydra.run.dir={out}", cwd=tmp_path)
    assert proc.returncode != 0
    assert "dataset.n" in proc.stderr and "integers >= 1" in proc.stderr
    assert not out.exists()
