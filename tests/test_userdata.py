"""Your own instances: dataset=file and dataset=callable give the rows the built-in generator
gives for the same instances; a bad file fails at composition naming the array and the shape."""

from __future__ import annotations

import numpy as np
import pytest

import attnsvm
from attnsvm.composition import DatasetConfig
from attnsvm.config import ConfigError
from attnsvm.data.generators import make_instances
from bits import assert_frames_identical
from cli_helpers import SMALL, run_cli

SIZES = ["dataset.n=3", "dataset.T=4", "dataset.d=5"]
SAME = [c for c in SMALL if not c.startswith("dataset.n")]


def _published(seeds, n=3, T=4, d=5) -> dict:
    inst = make_instances(DatasetConfig(n=n, T=T, d=d), seeds)
    return {k: getattr(inst, k).numpy() for k in ("X", "Y", "Z", "v")}


def _save(path, **arrays):
    np.savez(path, **arrays)
    return path


def _numbers(runs):
    return runs[[c for c in runs.columns if c.startswith(("corr", "loss", "w_norm", "selected"))]]


def test_a_file_of_the_published_instances_gives_the_published_rows(tmp_path):
    path = _save(tmp_path / "tok.npz", **_published(range(3)))
    ref = attnsvm.run_job(attnsvm.compose([*SAME, *SIZES]))
    cfg = attnsvm.compose([*SAME, "dataset=file", f"dataset.path={path}"])
    assert (cfg.dataset.n, cfg.dataset.T, cfg.dataset.d) == (3, 4, 5)  # from the file
    assert len(cfg.dataset.sha256) == 64
    got = attnsvm.run_job(cfg)
    assert_frames_identical(_numbers(got.runs), _numbers(ref.runs), "file vs generator")


def test_a_file_without_Z_is_self_attention_on_the_query_token(tmp_path):
    arrays = _published(range(3))
    del arrays["Z"]
    path = _save(tmp_path / "noz.npz", **arrays)
    ref = attnsvm.run_job(
        attnsvm.compose([*SAME, *SIZES, "dataset.attention=self", "dataset.query_index=2"])
    )
    got = attnsvm.run_job(
        attnsvm.compose([*SAME, "dataset=file", f"dataset.path={path}", "dataset.query_index=2"])
    )
    assert_frames_identical(_numbers(got.runs), _numbers(ref.runs), "no Z vs self-attention")


def test_a_callable_gives_the_generators_rows_and_its_arguments_enter_the_hash():
    ref = attnsvm.run_job(attnsvm.compose([*SAME, *SIZES]))
    base = [*SAME, *SIZES, "dataset=callable", "dataset.target=userdata_example.make"]
    got = attnsvm.run_job(attnsvm.compose(base))
    assert_frames_identical(_numbers(got.runs), _numbers(ref.runs), "callable vs generator")
    scaled = attnsvm.compose([*base, "+dataset.kwargs.scale=2.0"])
    assert attnsvm.run_job(scaled).config_hash != got.config_hash


def test_a_file_with_V_serves_the_relu_head(tmp_path):
    inst = make_instances(DatasetConfig(generator="relu", n=3, T=4, d=5), [0, 1])
    arrays = {k: getattr(inst, k).numpy() for k in ("X", "Y", "Z", "V")}
    path = _save(tmp_path / "relu.npz", **arrays)
    cfg = attnsvm.compose([*SAME, "seeds=2", "dataset=file", f"dataset.path={path}", "head=relu"])
    assert set(attnsvm.run_job(cfg).runs.status) == {"ok"}


GOOD = _published(range(3))
# (what is wrong with the file, its arrays, what the message must contain)
BAD_FILES = [
    ("no X", {k: a for k, a in GOOD.items() if k != "X"}, ["array 'X' is missing"]),
    ("no Y", {k: a for k, a in GOOD.items() if k != "Y"}, ["array 'Y' is missing"]),
    ("no head", {k: a for k, a in GOOD.items() if k != "v"}, ["'v' (R, d) or 'V' (R, d, d)"]),
    ("X 2-D", {**GOOD, "X": GOOD["X"][0, 0]}, ["'X' must be (R, n, T, d)"]),
    ("Y shape", {**GOOD, "Y": GOOD["Y"][:, :2]}, ["'Y' must have shape (R, 3)", "(3, 2)"]),
    ("Z shape", {**GOOD, "Z": GOOD["Z"][..., :4]}, ["'Z' must have shape (R, 3, 5)"]),
    ("v shape", {**GOOD, "v": GOOD["v"][:, :2]}, ["'v' must have shape (R, 5)"]),
    ("NaN", {**GOOD, "X": np.where(GOOD["X"] > 0.9, np.nan, GOOD["X"])}, ["'X' holds NaN"]),
    ("labels", {**GOOD, "Y": GOOD["Y"] * 2}, ["'Y' must hold labels -1 or +1"]),
    ("one token", {**GOOD, "X": GOOD["X"][:, :, :1]}, ["T=1 tokens", "at least 2"]),
]


@pytest.mark.parametrize(
    "arrays,expected", [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES]
)
def test_a_bad_file_fails_at_composition_naming_the_array(tmp_path, arrays, expected):
    path = _save(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ConfigError) as err:
        attnsvm.compose(["dataset=file", f"dataset.path={path}", "seeds=3"])
    for text in expected:
        assert text in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "overrides,expected",
    [
        (["seeds=4"], "seed + seeds <= 3"),
        (["seed=2", "seeds=2"], "seed + seeds <= 3"),
        (["dataset.n=4", "seeds=3"], "dataset.n=4 but dataset.path="),
        (["dataset.sha256=abc", "seeds=3"], "dataset.sha256=abc pins another file"),
        (["head=relu", "seeds=3"], "head=relu needs dataset in callable, file, relu"),
    ],
)
def test_file_rules_across_keys(tmp_path, overrides, expected):
    path = _save(tmp_path / "tok.npz", **GOOD)
    with pytest.raises(ConfigError, match=expected.replace("+", r"\+")):
        attnsvm.compose(["dataset=file", f"dataset.path={path}", *overrides])


def test_missing_file_and_unknown_callable_are_clear():
    with pytest.raises(ConfigError, match="dataset.path=/nonexistent.npz: no such file"):
        attnsvm.compose(["dataset=file", "dataset.path=/nonexistent.npz"])
    with pytest.raises(ConfigError, match="dataset.target='nomodule.make' cannot be imported"):
        attnsvm.compose([*SAME, "dataset=callable", "dataset.target=nomodule.make"])  # at once


@pytest.mark.slow
def test_cli_with_a_bad_file_exits_nonzero_and_leaves_no_output(tmp_path):
    path = _save(tmp_path / "bad.npz", **{**GOOD, "Y": GOOD["Y"] * 2})
    out = f"hydra.run.dir={tmp_path}/run"
    res = run_cli("dataset=file", f"dataset.path={path}", "seeds=3", out)
    assert res.returncode != 0 and "array 'Y' must hold labels -1 or +1" in res.stdout, res.stdout
    assert not (tmp_path / "run").exists()
