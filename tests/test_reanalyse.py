"""python -m attnsvm.reanalyse: new SVMs and metrics from a finished job's arrays.npz, nothing
trained. Its final-state columns are those of a fresh run with the same keys, bit for bit (and
every column, the trajectory too, where the checkpoints' W were kept); a job without arrays is
named and skipped; a key that needs training is refused, naming it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import attnsvm
from attnsvm.reanalyse import main
from attnsvm.results.store import read_job
from cli_helpers import timing_columns

SMALL = ["seeds=3", "optimizer.steps=200", "optimizer.checkpoint_every=20", "dataset.n=4"]
L3 = "solver.norms=[fro,nuc,l3]"


@pytest.fixture
def no_training(monkeypatch):
    """From when it is asked for, any training step fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a re-analysis trained")

    import attnsvm.experiments.gd.job as pipeline
    import attnsvm.train.loop as loop

    for module, name in ((pipeline, "train"), (loop, "train"), (pipeline, "run_batch")):
        monkeypatch.setattr(module, name, refuse)


def test_a_new_norm_from_the_saved_parameters_equals_a_fresh_run(tmp_path, capsys, request):
    """The issue's check: seeds=4 at the defaults, then the l3-SVM added by re-analysis."""
    attnsvm.run_job(["seeds=4"], out_dir=tmp_path / "A")
    fresh = attnsvm.run_job(["seeds=4", L3])
    request.getfixturevalue("no_training")
    assert main([str(tmp_path / "A"), L3, "--out", str(tmp_path / "B")]) == 0
    assert "1 of 1 jobs re-analysed" in capsys.readouterr().out
    B = pd.read_parquet(tmp_path / "B" / "runs.parquet")
    for col in ("corr_l3", "margin_l3", "corr_l3_opt", "norm_l3", "corr_fro", "conv_type"):
        assert B[col].tolist() == fresh.runs[col].tolist(), col
    np.testing.assert_allclose(B.margin_l3, fresh.runs.margin_l3, rtol=0, atol=1e-12)
    assert B.rate_l3.isna().all()  # a curve column: no checkpoints were kept
    assert B.rate_fro.tolist() == fresh.runs.rate_fro.tolist()  # the training run's
    job = read_job(tmp_path / "B")
    assert job["config_hash"] == fresh.config_hash and job["status"] == "finished"
    assert job["reanalysed_from"] == str((tmp_path / "A").resolve())
    assert "svm_opt_l3" in attnsvm.load_sweep(tmp_path / "B").arrays(fresh.config_hash)


def test_with_checkpoints_every_column_and_the_trajectory_are_recomputed(tmp_path, request):
    keys = [L3, "metrics.epsilon=0.05"]
    attnsvm.run_job([*SMALL, "artifact_checkpoints=true"], out_dir=tmp_path / "A")
    fresh = attnsvm.run_job([*SMALL, *keys])
    request.getfixturevalue("no_training")
    assert main([str(tmp_path / "A"), *keys, "--out", str(tmp_path / "B")]) == 0
    got = pd.read_parquet(tmp_path / "B" / "runs.parquet")
    assert list(got.columns) == list(fresh.runs.columns)
    drop = timing_columns(fresh.runs)
    pd.testing.assert_frame_equal(got.drop(columns=drop), fresh.runs.drop(columns=drop))
    assert got.rate_l3.notna().all()
    trajectory = pd.read_parquet(tmp_path / "B" / "trajectory.parquet")
    pd.testing.assert_frame_equal(trajectory, fresh.trajectory, check_exact=True)


def test_a_job_without_arrays_is_named_and_skipped(tmp_path, capsys):
    attnsvm.run_job([*SMALL, "artifacts=false"], out_dir=tmp_path / "S" / "0")
    attnsvm.run_job([*SMALL, "seed=5"], out_dir=tmp_path / "S" / "1")
    assert main([str(tmp_path / "S"), "metrics.delta=0.01", "--out", str(tmp_path / "B")]) == 0
    out = capsys.readouterr().out
    assert f"skipped {tmp_path / 'S' / '0'}: no arrays.npz" in out
    assert "1 of 2 jobs re-analysed" in out
    assert not (tmp_path / "B" / "0").exists()
    sweep = attnsvm.load_sweep(tmp_path / "B")
    assert sweep.runs.seed.tolist() == [5, 6, 7] and (sweep.runs["metrics.delta"] == 0.01).all()
    assert main([str(tmp_path / "S" / "0"), "--out", str(tmp_path / "none")]) == 2


@pytest.mark.parametrize(
    "override, says",
    [
        ("dataset.d=4", "dataset.d: a re-analysis changes only what the analysis reads"),
        ("optimizer.lr=1", "optimizer.lr needs training again"),
        ("solver.norms=[nope]", "nope"),
    ],
)
def test_a_key_that_needs_training_or_a_bad_value_is_refused(tmp_path, capsys, override, says):
    attnsvm.run_job([*SMALL, "seeds=1", "optimizer.steps=20"], out_dir=tmp_path / "A")
    assert main([str(tmp_path / "A"), override, "--out", str(tmp_path / "B")]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "B").exists()  # nothing written


def test_a_job_that_fails_is_recorded_and_the_others_go_on(tmp_path, capsys):
    import json

    attnsvm.run_job(SMALL, out_dir=tmp_path / "S" / "0")
    attnsvm.run_job([*SMALL, "seed=5"], out_dir=tmp_path / "S" / "1")
    record = json.loads((tmp_path / "S" / "0" / "job.json").read_text())
    record["config"]["dataset"]["d"] = 9  # its arrays no longer match the config it names
    (tmp_path / "S" / "0" / "job.json").write_text(json.dumps(record))
    assert main([str(tmp_path / "S"), "--out", str(tmp_path / "B")]) == 1
    assert "1 of 2 jobs re-analysed" in capsys.readouterr().out
    failed = read_job(tmp_path / "B" / "0")
    assert failed["status"] == "failed" and "differs from the draw" in failed["error"]
    assert read_job(tmp_path / "B" / "1")["status"] == "finished"
