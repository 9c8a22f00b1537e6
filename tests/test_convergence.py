"""Convergence diagnostics: conv_type "not converged" (unsaturated, or still moving at the end
of training) apart from "other", and the summary's advice on what to change."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnsvm
from attnsvm import metrics
from attnsvm.composition import RunConfig
from attnsvm.composition.identity import config_hash
from attnsvm.config import ConfigError, MetricsConfig
from attnsvm.experiments.gd.summary import summary_text
from attnsvm.job import run_job

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
    "overrides, column, name, solved",
    [
        ([], "fro", "W^mm", ["fro", "nuc"]),
        (["parameterization=kq"], "nuc", "W^mm_*", ["fro", "nuc"]),
        (["optimizer=md3", "solver.norms=[fro,l3]"], "l3", "l3-SVM", ["fro", "l3"]),
        # the limit resolved, not configured: the default set gets the step rule's SVM ...
        (["optimizer=md3"], "l3", "l3-SVM", ["fro", "nuc", "l3"]),
        (["optimizer=md175"], "l1p75", "l1.75-SVM", ["fro", "nuc", "l1.75"]),
        (["optimizer=md2"], "fro", "W^mm", ["fro", "nuc"]),  # the l2-SVM is W^mm
        (["optimizer=sign"], "max", "max-norm SVM", ["fro", "nuc", "max"]),
        (["optimizer=adam"], "max", "max-norm SVM", ["fro", "nuc", "max"]),
        (["optimizer=spectral"], "spectral", "spectral SVM", ["fro", "nuc", "spectral"]),
        (["optimizer=polyak"], "fro", "W^mm", ["fro", "nuc"]),
        (["parameterization=kq", "optimizer=sign"], "nuc", "W^mm_*", ["fro", "nuc"]),
        # ... and so does a set of yours that omits it; one that lists it is kept as it is
        (["optimizer=md3", "solver.norms=[fro]"], "l3", "l3-SVM", ["fro", "l3"]),
        (["optimizer=sign", "solver.norms=[fro,max,spectral]"], "max", "max-norm SVM", None),
        (["optimizer=md3", "solver.norms=[fro,l1.75,l3]"], "l3", "l3-SVM", None),
        (["optimizer=md3", "solver.norms=[fro,l3.0]"], "l3p0", "l3.0-SVM", None),
    ],
)
def test_each_seed_is_measured_against_its_own_limit_object(overrides, column, name, solved):
    from attnsvm.experiments.gd.limits import label, limit_column, solved_norms

    cfg = attnsvm.compose(overrides)
    names = solved_norms(cfg)
    assert names == (cfg.solver.norms if solved is None else solved)
    assert limit_column(cfg, {n.replace(".", "p") for n in names}) == column
    assert label(column, cfg) == name


@pytest.mark.parametrize(
    "overrides, want",
    [  # the hashes these configs had before the limit was resolved (old sweeps resume)
        (["optimizer=md3"], "3ff5f5bd8e19f638"),
        (["optimizer=sign"], "266c41e09760422e"),
        (["optimizer=adam"], "f403e2cb3f01ed08"),
        (["optimizer=spectral"], "6bfe45cedb5b0fdf"),
        (["optimizer=md175"], "3a5b446b5f978b2d"),
        (["optimizer=md3", "solver.norms=[fro]"], "f7d75756b23c30d2"),
        (["optimizer=md3", "solver.norms=[fro,nuc,l3]"], "2376c6695e7ad230"),
        (["+sweeps=mirror_joint", "optimizer=md3"], "7f94faaa05a30e9b"),
    ],
)
def test_resolving_the_limit_leaves_job_identities_alone(overrides, want):
    assert config_hash(attnsvm.compose(overrides)) == want


def test_md3_with_the_default_norms_converges_to_its_l3_svm_and_gets_no_advice():
    """optimizer=md3 at its published 20000 steps, solver.norms not set: measured against the
    l3-SVM it converges to (corr >= 0.99), not W^mm, which it is not aligned with (corr < 0.99:
    against W^mm these seeds read other / not converged, and were told to train longer)."""
    cfg = attnsvm.compose(
        ["optimizer=md3", "seeds=2", "optimizer.checkpoint_every=1000"]
        + ["dataset.n=3", "dataset.T=3", "dataset.d=4"]
    )
    runs = run_job(cfg).runs
    assert (runs.limit == "l3-SVM").all() and (runs.corr_limit == runs.corr_l3).all()
    assert (runs.conv_type == "global").all() and (runs.corr_l3 >= 0.99).all()
    assert (runs.corr_fro < 0.99).all()  # W^mm is not md3's limit
    text = summary_text(runs, 1.0)
    assert "convergence measured against: l3-SVM" in text and "advice" not in text


def test_advice_never_asks_a_seed_that_reached_its_limit_to_train_longer():
    """Only not-converged seeds are advised: converged ones, however their other columns read
    (still closing, a pace that reads many steps), are left out of the advice."""
    base = {
        "optimizer.steps": 1000, "optimizer": "md", "optimizer.lr": 0.1, "optimizer.eps": 0.0,
        "metrics.window": 0.5, "limit": "l3-SVM", "saturated": True, "tokens_switching": False,
        "still_aligning": True, "stalled": False, "steps_needed": 64000.0,
    }  # fmt: skip
    import pandas as pd

    from attnsvm.experiments.gd.summary import convergence_advice

    runs = pd.DataFrame([{**base, "conv_type": "global"}, {**base, "conv_type": "local"}])
    assert convergence_advice(runs) == []
    runs.loc[1, "conv_type"] = "not converged"
    assert any("advice: train longer" in line for line in convergence_advice(runs))


def test_a_plugin_step_rule_declares_its_limit_on_its_factory(monkeypatch):
    import optim_example

    from attnsvm.experiments.gd.limits import solved_norms

    cfg = attnsvm.compose(["optimizer.kind=optim_example.make"])
    assert solved_norms(cfg) == ["fro", "nuc"]  # undeclared: Frobenius
    monkeypatch.setattr(optim_example.make, "svm_norm", "max", raising=False)
    assert solved_norms(cfg) == ["fro", "nuc", "max"]


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


@pytest.mark.parametrize(
    "optimizer, column, name",
    [("md3", "relaxed_l3", "relaxed l3-SVM"), ("md175", "relaxed_l1p75", "relaxed l1.75-SVM"),
     ("md2", "relaxed", "relaxed SVM")],
)  # fmt: skip
def test_a_head_trained_by_mirror_descent_is_measured_against_the_relaxed_lp_svm(
    optimizer, column, name
):
    from attnsvm.experiments.gd.limits import label, limit_column

    cfg = attnsvm.compose(["+sweeps=mirror_joint", f"optimizer={optimizer}"])
    assert limit_column(cfg, set()) == column and label(column, cfg) == name


def test_the_relaxed_lp_svm_keeps_margin_one_only_where_the_head_is_tight():
    from attnsvm.config.schema import SolverConfig
    from attnsvm.svm import norms
    from attnsvm.svm import solve as svm

    rng = np.random.default_rng(0)
    X, Z, alpha = rng.normal(size=(4, 3, 3)), rng.normal(size=(4, 3)), np.zeros(4, dtype=int)
    cfg = SolverConfig()
    for name in ("l3", "max"):
        norm = norms.make_norm(name, cfg)
        full = norm.solve([(X, Z, alpha)], cfg)[0]
        all_tight = norms.relaxed_entrywise(norm, X, Z, alpha, np.ones(4, bool), cfg)
        assert full.ok and all_tight.ok  # every sequence tight: the lp-SVM itself
        assert norm.value(all_tight.W) == pytest.approx(norm.value(full.W), rel=1e-6)
        tight = np.array([True, False, True, False])
        relaxed = norms.relaxed_entrywise(norm, X, Z, alpha, tight, cfg)
        m = svm.margins_of(relaxed.W, X, Z, alpha)
        assert relaxed.ok and (m[tight] >= 1 - 1e-6).all() and (m[~tight] >= -1e-6).all()
        assert norm.value(relaxed.W) <= norm.value(full.W) * (1 + 1e-6)


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


def test_a_pace_of_never_is_advised_the_most_steps_not_a_crash():
    """A saturated seed whose gap stopped closing reads steps_needed = inf
    (metrics.steps_needed): the advice says "never", where log2(inf) raised before."""
    import pandas as pd

    from attnsvm.experiments.gd.summary import convergence_advice

    base = {
        "optimizer.steps": 200, "optimizer": "gd", "metrics.window": 0.5, "limit": "W^mm",
        "saturated": True, "tokens_switching": False, "still_aligning": True, "stalled": False,
        "conv_type": "not converged",
    }  # fmt: skip
    runs = pd.DataFrame([{**base, "steps_needed": math.inf}, {**base, "steps_needed": 400.0}])
    advice = [line for line in convergence_advice(runs) if "advice" in line]
    assert advice == [
        "  advice: train longer, e.g. optimizer.steps=12800 (64x); at its present pace "
        "1 - corr reaches epsilon in never"
    ]


def test_the_summary_reduces_columns_as_pandas_does():
    """The summary reads numpy arrays (gd/summary.py): its means, minima and counts are
    pandas' (missing values skipped), checked on the golden gd runs tables with a missing
    correlation and a failed seed's missing flags added."""
    from pathlib import Path

    import pandas as pd

    tables = sorted(Path(__file__).parent.joinpath("golden", "tables").glob("*/*.runs.parquet"))
    checked = 0
    for path in tables:
        runs = pd.read_parquet(path)
        if runs["experiment"].iat[0] != "gd" or "conv_type" not in runs or len(runs) < 2:
            continue
        runs.loc[runs.index[0], "corr_fro"] = np.nan
        runs["feasible"] = runs["feasible"].astype(object)
        runs.loc[runs.index[-1], "feasible"] = None
        text = summary_text(runs, 1.0)
        corr = runs.corr_fro
        if corr.notna().any():  # else: "none (no seed has this SVM)"
            assert f"mean {corr.mean():.4f}, min {corr.min():.4f}" in text
        assert f"SVM at opt feasible: {int(runs.feasible.sum())}/{len(runs)}" in text
        counts = runs.status.value_counts().to_dict()
        assert ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) in text
        feasible = runs.feasible.fillna(False).astype(bool)  # a missing flag: not feasible
        conv = runs[feasible].conv_type.value_counts()  # infeasible seeds: counted apart
        assert ", ".join(f"{k} {conv.get(k, 0)}" for k in metrics.CONV_TYPES) in text
        trained = runs[runs.status != "diverged"]
        if len(trained):
            assert f"(mean_i max_t s_it): mean {trained.softmax_max.mean():.6f}" in text
        checked += 1
    assert checked >= 10


def _golden_gd_runs(trained: bool):
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).parent / "golden" / "tables"
    for path in sorted(root.glob("*/*.runs.parquet")):
        runs = pd.read_parquet(path)
        if runs["experiment"].iat[0] == "gd" and ("conv_type" in runs) == trained:
            yield runs


def test_the_advice_counts_flags_as_pandas_sums_them():
    """A flag missing on a not-converged seed is skipped, as pandas' sum skips it; float32
    correlations are averaged in float32, as pandas averages them."""
    checked = 0
    for runs in _golden_gd_runs(trained=True):
        if len(runs) < 2:
            continue
        runs["conv_type"] = "not converged"
        runs["still_aligning"] = runs["still_aligning"].astype(object)
        runs.loc[runs.index[0], "still_aligning"] = np.nan
        runs["corr_fro"] = runs["corr_fro"].astype(np.float32)
        text = summary_text(runs, 1.0)
        closing = int(runs[runs.feasible.astype(bool)].still_aligning.sum())  # feasible only
        assert (f"1 - corr still closing {closing}" in text) == (closing > 0)
        if runs.corr_fro.notna().any():
            assert f"mean {runs.corr_fro.mean():.4f}, min {runs.corr_fro.min():.4f}" in text
        checked += 1
    assert checked >= 10


def test_an_svms_only_summary_reduces_the_feasible_seeds_as_pandas_does():
    checked = 0
    for runs in _golden_gd_runs(trained=False):
        text = summary_text(runs, 1.0)
        ok = runs[runs.feasible]
        assert f"SVM at opt feasible: {len(ok)}/{len(runs)}" in text
        for c, name in (("fro", "W^mm"), ("nuc", "W^mm_*")):
            if f"rank_{c}" in runs:
                assert f"{name} {ok[f'rank_{c}'].mean():.2f}" in text
        checked += 1
    assert checked >= 1


def test_a_summary_of_diverged_seeds_says_why_and_counts_them_nowhere_else():
    """Diverged seeds count in neither saturation nor the selected tokens; their reason is
    printed once per distinct reason (issue: `optimizer.lr=1e300` read "saturation 1.000000")."""
    import attnsvm

    res = attnsvm.run_job(attnsvm.compose(["optimizer.lr=1e300", "seeds=2", "optimizer.steps=40"]))
    text = summary_text(res.runs, res.seconds)
    assert set(res.runs.status) == {"diverged"}
    assert "diverged (2 seeds): " in text and "non-finite at step" in text
    assert "saturation (mean" not in text and "GD selected the optimal tokens in" not in text
    assert "no seed trained to the end (diverged seeds left out: 2)" in text


def test_a_summary_of_infeasible_seeds_gives_no_nan_and_no_advice_to_train_longer():
    import attnsvm

    res = attnsvm.run_job(attnsvm.compose(["dataset.d=1", "seeds=2", "optimizer.steps=40"]))
    text = summary_text(res.runs, res.seconds)
    assert set(res.runs.status) == {"infeasible"}
    assert "nan" not in text and "advice" not in text, text
    assert "infeasible (no SVM to converge to) 2" in text
