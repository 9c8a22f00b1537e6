"""Convergence diagnostics: conv_type "not converged" (unsaturated, or still moving at the end
of training) apart from "other", and the summary's advice on what to change."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnsvm
from attnsvm import metrics
from attnsvm.config import ConfigError, MetricsConfig, RunConfig
from attnsvm.experiments.gd.summary import gd_summary_text as summary_text
from attnsvm.job import run_job
from attnsvm.results.store import config_hash

DELTA, EPS = 1e-3, 1e-2


def conv(smin, corr, is_opt=True, local=False, moving=False):
    return metrics.convergence_type(smin, corr, is_opt, local, DELTA, EPS, moving)


def test_not_converged_is_apart_from_other():
    assert conv(1.0, 0.995) == "global"
    assert conv(1.0, 0.995, is_opt=False, local=True) == "local"
    assert conv(1.0, 0.995, moving=True) == "global"  # converged: stays so
    assert conv(0.9, 0.995) == "not converged"  # unsaturated
    assert conv(1.0, 0.95, moving=True) == "not converged"
    assert conv(1.0, 0.95) == "other"  # settled, on no SVM direction
    assert conv(1.0, 0.995, is_opt=False) == "other"  # aligned, but alpha not locally optimal
    assert set(metrics.CONV_TYPES) == {"global", "local", "other", "not converged"}


def test_still_moving_reads_the_last_window():
    steps = [0, 500, 1000, 1500, 2000]
    start = metrics.window_start(steps, 0.5)
    assert start == 2
    corr = np.array([0.0, 0.5, 0.9, 0.95, 0.98])  # gap 0.1 -> 0.02 over the window
    assert metrics.gap_shrink(corr, start) == pytest.approx(0.8)
    selected = np.array([[0, 0], [1, 0], [1, 1], [1, 1], [1, 1]])
    assert metrics.still_moving(selected, corr, start, 0.1, False) == {
        "tokens_switching": False,
        "still_aligning": True,
        "stalled": False,
    }
    flat = np.array([0.0, 0.5, 0.9, 0.9, 0.9])
    switching = selected.copy()
    switching[3, 0] = 0
    assert metrics.still_moving(switching, flat, start, 0.1, True) == {
        "tokens_switching": True,
        "still_aligning": False,
        "stalled": True,
    }


def test_steps_needed_extrapolates_the_pace_of_the_gap():
    steps = [0, 1000, 2000]
    # gap halves when the steps double (slope -1): 0.04 at 2000 -> 0.01 at 8000
    assert metrics.steps_needed(steps, np.array([0.0, 0.92, 0.96]), 1, 0.01) == pytest.approx(8000)
    assert metrics.steps_needed(steps, np.array([0.0, 0.995, 0.996]), 1, 0.01) == 2000
    assert math.isinf(metrics.steps_needed(steps, np.array([0.0, 0.9, 0.9]), 1, 0.01))
    assert math.isnan(metrics.steps_needed(steps, np.array([0.0, np.nan, 0.9]), 1, 0.01))


def test_thresholds_are_validated_and_leave_old_hashes_alone():
    for key, bad in (("window", 0.0), ("window", 1.5), ("gap_shrink", 1.0), ("gap_shrink", 0)):
        with pytest.raises(ConfigError, match=f"metrics.{key}"):
            MetricsConfig(**{key: bad})
    assert config_hash(RunConfig(engine="torch")) == "17345ad0b5095551"  # test_resume_index
    cfg = RunConfig(engine="torch")
    cfg.metrics.gap_shrink = 0.2
    assert config_hash(cfg) != "17345ad0b5095551"


def test_an_under_trained_job_is_not_converged_and_says_what_to_change():
    cfg = RunConfig(seeds=4)
    cfg.optimizer.steps, cfg.optimizer.checkpoint_every = 60, 10
    runs = run_job(cfg).runs
    assert (runs.conv_type == "not converged").all()
    assert not runs.saturated.any()
    text = summary_text(runs, 1.0)
    assert (
        "not converged 4" in text
        and "not converged (against W^mm): 4/4 seeds; not saturated 4" in text
    )
    assert "advice: train longer, e.g. optimizer.steps=240 (4x)" in text


def test_the_paper_default_converges_and_gives_no_advice():
    runs = run_job(RunConfig()).runs  # n=6 T=8 d=10, 8 seeds, 2000 steps
    assert runs.conv_type.value_counts().to_dict() == {"global": 7, "local": 1}
    text = summary_text(runs, 1.0)
    assert "convergence: global 7, local 1, other 0, not converged 0" in text
    assert "advice" not in text


def test_normalized_gd_stalled_on_eps_is_told_to_lower_it():
    """A large optimizer.eps shrinks the normalized step once ||grad|| falls below it: the
    seeds stop short of the SVM direction, and the advice names optimizer.eps."""
    cfg = RunConfig(seeds=4)
    cfg.optimizer.eps = 1e-3
    runs = run_job(cfg).runs
    assert runs.stalled.all() and (runs.conv_type == "not converged").all()
    text = summary_text(runs, 1.0)
    assert "steps stalled by optimizer.eps 4" in text
    assert "advice: optimizer.eps=0: ||grad L|| fell below optimizer.eps=0.001" in text
    assert "advice: train longer" not in text  # more steps would not help


@pytest.mark.parametrize(
    "overrides, column, name",
    [
        ([], "fro", "W^mm"),
        (["parameterization=kq"], "nuc", "W^mm_*"),
        (["optimizer=md3", "solver.norms=[fro,l3]"], "l3", "l3-SVM"),
        (["optimizer=md3"], "fro", "W^mm"),  # l3 not solved: back to W^mm
        (["optimizer=sign", "solver.norms=[fro,max]"], "max", "max-norm SVM"),
        (["optimizer=spectral", "solver.norms=[fro,spectral]"], "spectral", "spectral SVM"),
    ],
)
def test_each_seed_is_measured_against_its_own_limit_object(overrides, column, name):
    from attnsvm.experiments.gd.limits import label, limit_column

    cfg = attnsvm.compose(overrides)
    solved = {n.replace(".", "p") for n in cfg.solver.norms}
    assert limit_column(cfg, solved) == column and label(column, cfg) == name


def test_a_trained_p_model_is_measured_against_the_relaxed_p_svm():
    cfg = attnsvm.compose(
        [
            "dataset=maxmargin",
            "dataset.example=joint",
            "parameterization=p",
            "head.train=true",
            "seeds=1",
        ]
    )
    from attnsvm.experiments.gd.limits import label, limit_column

    assert label(limit_column(cfg, {"fro", "nuc"}), cfg) == "relaxed p-SVM"


def test_steps_needed_beyond_float64_is_inf_without_an_overflow_warning():
    import warnings

    steps = np.array([0, 1000, 2000])
    curve = np.array([0.0, 0.5, 0.5 + 1e-12])  # closing, but at a pace of ~1e-12 per decade
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metrics.steps_needed(steps, curve, 1, 1e-6) == np.inf
    gap = 1 - np.array([0.0, 0.92, 0.96])  # a finite answer: the formula's bits, unchanged
    slope = np.log(gap[-1] / gap[1]) / np.log(2000 / 1000)
    want = float(2000.0 * (0.01 / gap[-1]) ** (1 / slope))
    assert metrics.steps_needed(steps, np.array([0.0, 0.92, 0.96]), 1, 0.01) == want
