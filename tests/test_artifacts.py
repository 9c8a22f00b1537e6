"""arrays.npz (attnsvm/results/artifacts.py, gd's: attnsvm/experiments/gd/artifacts.py): one
per job, written with the tables and verified like them; it holds each seed's final parameters,
selected tokens, SVM solutions and the identity of its draw (rebuilt and checked here); its keys
change no job's identity and add no column."""

from __future__ import annotations

import numpy as np
import pytest

import attnsvm
from attnsvm.composition.identity import config_hash
from attnsvm.results.artifacts import ARRAYS, ArtifactError, read_arrays, read_meta
from attnsvm.results.store import find_broken, is_finished, read_job

SMALL = ["seeds=3", "optimizer.steps=100", "optimizer.checkpoint_every=20", "dataset.n=4"]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("artifacts") / "job"
    result = attnsvm.run_job(SMALL, out_dir=out)
    return out, result


def test_the_job_writes_its_arrays_and_records_them_like_the_tables(job):
    out, result = job
    record = read_job(out)["files"][ARRAYS]
    assert record["bytes"] == (out / ARRAYS).stat().st_size and len(record["sha256"]) == 64
    arrays = attnsvm.load_sweep(out).arrays(result.config_hash)
    runs = result.runs
    assert arrays["seeds"].tolist() == runs.seed.tolist()
    R, d = len(runs), 10
    assert arrays["W"].shape == (R, d, d) and arrays["selected"].shape == (1, R, 4)
    assert np.linalg.norm(arrays["W"], axis=(1, 2)).tolist() == runs.w_norm.tolist()
    assert [",".join(map(str, s)) for s in arrays["selected"][-1]] == runs.selected.tolist()
    assert arrays["steps"].tolist() == [100]  # the last checkpoint: none other kept
    nuc = np.linalg.norm(arrays["svm_opt_nuc"], "nuc", axis=(1, 2))
    np.testing.assert_allclose(nuc, runs.norm_nuc, rtol=1e-12)
    assert read_meta(arrays)["dataset"]["n"] == 4 and "W_checkpoints" not in arrays


def test_each_seeds_draw_is_rebuilt_from_its_seed_and_checked(job):
    from attnsvm.experiments.gd.reanalysis import instances

    out, _ = job
    arrays = read_arrays(out)
    inst = instances(attnsvm.compose(SMALL), arrays)  # raises where the draw differs
    assert inst.seeds == arrays["seeds"].tolist()
    with pytest.raises(ArtifactError, match="differs from the draw GD trained on"):
        instances(attnsvm.compose([*SMALL, "dataset.d=9"]), arrays)


def test_a_damaged_arrays_file_fails_verification(job, tmp_path):
    import shutil

    out, result = job
    copy = tmp_path / "job"
    shutil.copytree(out, copy)
    data = bytearray((copy / ARRAYS).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / ARRAYS).write_bytes(bytes(data))
    assert not is_finished(copy, result.config_hash)
    assert find_broken(result.config_hash, copy)[1].startswith(ARRAYS)
    with pytest.raises(ArtifactError, match="SHA-256"):
        read_arrays(copy)


def test_the_keys_change_no_identity_and_no_column(tmp_path):
    base = attnsvm.compose(SMALL)
    other = attnsvm.compose([*SMALL, "artifacts=false", "artifact_checkpoints=true"])
    assert config_hash(attnsvm.compose([*SMALL, "artifact_max_mb=0"])) == config_hash(base)
    assert config_hash(base) == config_hash(other)
    off = attnsvm.run_job([*SMALL, "artifacts=false"], out_dir=tmp_path / "off")
    assert not (tmp_path / "off" / ARRAYS).exists()
    assert ARRAYS not in read_job(tmp_path / "off")["files"]
    assert not {"artifacts", "artifact_checkpoints"} & set(off.runs.columns)
    with pytest.raises(ArtifactError, match="artifacts=false"):
        read_arrays(tmp_path / "off")


def test_checkpoints_are_kept_when_asked(tmp_path):
    res = attnsvm.run_job([*SMALL, "artifact_checkpoints=true", "head.train=true"])
    a = res.arrays
    assert a["W_checkpoints"].shape == (6, 3, 10, 10) and a["v_checkpoints"].shape == (6, 3, 10)
    assert np.array_equal(a["W_checkpoints"][-1], a["W"])
    assert np.array_equal(a["v_checkpoints"][-1], a["v"])
    assert read_meta(a)["checkpoints"] is True and a["steps"].tolist() == [0, 20, 40, 60, 80, 100]
    assert a["selected"].shape == (6, 3, 4)


def test_an_svm_only_job_keeps_its_svms_and_draw():
    res = attnsvm.run_job(["seeds=2", "train=false"])
    assert set(res.arrays) == {"seeds", "opt", "draw_sha256", "svm_opt_fro", "svm_opt_nuc", "meta"}


def test_arrays_over_the_size_limit_are_not_kept(caplog):
    res = attnsvm.run_job([*SMALL, "artifact_checkpoints=true", "artifact_max_mb=0.01"])
    assert res.arrays == {}
    assert "over artifact_max_mb=0.01" in caplog.text
    assert attnsvm.run_job([*SMALL, "artifact_max_mb=0"]).arrays  # 0: no limit


def test_a_negative_size_limit_is_refused_naming_the_key():
    from attnsvm.config import ConfigError

    with pytest.raises(ConfigError, match="artifact_max_mb"):
        attnsvm.compose(["artifact_max_mb=-1"])
