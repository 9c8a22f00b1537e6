"""Every sweep file's figures tell each swept value apart (tests/sweep_figures.py: the grid
built from the golden fixtures, the texts read from the drawn Figure objects): in a sweep of
several experiments, each experiment's own figures tell apart every key swept among its jobs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from golden_sweeps import SWEEPS
from sweep_figures import build_sweep, draw, hidden_values


@pytest.mark.parametrize("name", SWEEPS)
def test_every_swept_value_is_told_apart_in_its_figures(name, tmp_path):
    sweep, params = build_sweep(name)
    drawn = draw(sweep, tmp_path)
    experiments = params.pop("experiment", None)
    if experiments is not None:  # each experiment draws its own figures of its own jobs
        assert set(drawn) == set(experiments), (name, sorted(drawn))
    for experiment, figures in drawn.items():
        assert figures, f"{name}: {experiment} drew no figure"
        hidden = hidden_values(params, figures)
        names = [d.name for d in figures]
        assert not hidden, f"{name}: {experiment}'s figures {names} do not tell apart {hidden}"


def test_infeasible_seeds_are_their_own_class_in_the_convergence_figure():
    """overparam: a seed whose SVM at opt is infeasible is drawn as infeasible, never as the
    red "not converged" of the feasible seeds that did not converge."""
    from attnsvm.experiments.gd.figures_sweep import convergence_figure, convergence_shares

    runs = pd.DataFrame(
        {
            "config_hash": ["a"] * 4 + ["b"] * 4,
            "d": [2] * 4 + [3] * 4,
            "parameterization": "w",
            "feasible": [False, False, True, True, False, True, True, True],
            "conv_type": ["not converged", "other", "not converged", "global"]
            + ["not converged", "global", "local", "global"],
        }
    )
    summary = runs.groupby(["d", "parameterization", "config_hash"], as_index=False).agg(
        seeds=("feasible", "size"), feasible_rate=("feasible", "mean")
    )
    fig = convergence_figure(convergence_shares(runs, summary), ["d", "parameterization"])
    bars = {c.get_label(): [b.get_height() for b in c] for c in fig.axes[0].containers}
    assert bars["not converged (feasible)"] == [0.25, 0.0]
    assert bars["infeasible (no SVM at opt)"] == [0.5, 0.25]
    assert bars["global (feasible)"] == [0.25, 0.5]
    assert np.allclose(np.sum(list(bars.values()), axis=0), 1.0)  # every seed in one class


def _nexttoken_tables(err: dict[str, np.ndarray]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """runs and trajectory of one nexttoken point: 1 - corr per curve, rows (instance, step)."""
    seeds, steps = err["corr_svm"].shape
    traj = pd.DataFrame(
        {
            "config_hash": "h",
            "seed": np.repeat(np.arange(seeds), steps),
            "step": np.tile(np.arange(steps) * 10, seeds),
            "d": 8,
            "dataset.K": 6,
            "parameterization": "w",
            "dataset.graphs": "cyclic",
            "nexttoken.loss": "nll",
            "fin_dist": 1.0,
            **{name: 1 - e.ravel() for name, e in err.items()},
        }
    )
    runs = pd.DataFrame({"config_hash": "h", "seed": np.arange(seeds), "status": "ok"})
    return runs, traj


def test_nexttoken_curves_band_stays_within_the_instances_and_equal_series_say_so(monkeypatch):
    """The band on the log axis spans the instances' own values (mean - std of 1e-3 and 5.5e-3
    is 7e-5, below both), and series equal everywhere are one line naming all of them."""
    from attnsvm.experiments.nexttoken import plots

    one = np.array([[1e-3, 1e-3, 1e-3], [5.5e-3, 5.5e-3, 5.5e-3]])  # 2 instances x 3 steps
    other = one * 0.5
    err = {"corr_svm": one, "corr_svm_fin": one, "corr_proj": one, "corr_local_svm": other}
    drawn = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path, **kw: drawn.append(fig))
    plots.curves_figure(*_nexttoken_tables(err), Path("unused.png"))
    ax = drawn[0].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 2 and labels[0].count(" = ") == 2, labels
    for band in ax.collections:  # fill_between: its polygon's y spans the band
        y = band.get_paths()[0].vertices[:, 1]
        assert y.min() >= other.min() * (1 - 1e-12), y.min()
