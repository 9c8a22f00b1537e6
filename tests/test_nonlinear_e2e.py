"""End-to-end: the new experiments through the Hydra entry point, in a subprocess (slow)."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _figure(module: str, job_dir: Path, name: str) -> None:
    """Run an experiment's figure command on a job directory; the PNG must be written to its
    summary/ folder, as the aggregator's figures are."""
    fig = subprocess.run(
        [sys.executable, "-m", module, str(job_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert fig.returncode == 0, fig.stderr[-3000:]
    assert (job_dir / "summary" / name).stat().st_size > 0


def _run(tmp_path, *overrides):
    cmd = [sys.executable, "-m", "attnsvm.run", f"hydra.run.dir={tmp_path}", *overrides]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return pd.read_parquet(tmp_path / "runs.parquet"), out.stdout


@pytest.mark.slow
def test_multitoken_command(tmp_path):
    runs, stdout = _run(
        tmp_path,
        "experiment=multitoken",
        "dataset=relu",
        "head=relu",
        "seed=1",
        "batch_size=50",
        "optimizer.steps=500",
        "optimizer.checkpoint_every=100",
        "multitoken.target_accepted=3",
    )
    assert (runs.status == "ok").sum() == 3 and "accepted 3 of" in stdout
    _figure("attnsvm.experiments.multitoken.plots", tmp_path, "multitoken.png")
    table = pd.read_csv(tmp_path / "summary" / "multitoken_table.csv")
    assert len(table) == 1  # one d


@pytest.mark.slow
def test_regpath_sequential_command(tmp_path):
    runs, stdout = _run(
        tmp_path,
        "experiment=regpath",
        "dataset.attention=sequential",
        "dataset.causal=true",
        "dataset.n=2",
        "dataset.T=3",
        "dataset.d=4",
        "seeds=2",
        "regpath.points=3",
        "regpath.steps=100",
    )
    assert len(runs) == 2 and "regpath" in stdout
    _figure("attnsvm.experiments.regpath.plots", tmp_path, "regpath.png")
