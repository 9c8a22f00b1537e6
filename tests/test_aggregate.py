"""The aggregator: summary math, de-duplication, failed jobs, clear errors, figures; and one
slow end-to-end sweep with the joblib launcher in a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import OptimizerConfig
from attnsvm.config.checks import plain
from attnsvm.job import run_job
from attnsvm.results.aggregate import (
    AggregateError,
    aggregate,
    load_sweep,
    main,
    newest_finished,
    summarize,
)
from attnsvm.results.store import JOB, RUNS, TRAJECTORY, write_json, write_table

REPO = Path(__file__).resolve().parents[1]


def _runs(**cols) -> pd.DataFrame:
    base = {"status": "ok", "config_hash": "h0", "n": 3, "T": 4, "d": 2}
    n = len(next(iter(cols.values())))
    return pd.DataFrame({**{k: [v] * n for k, v in base.items()}, **cols})


def test_summary_counts_infeasible_apart_and_ranks_over_feasible_only():
    runs = _runs(
        seed=[0, 1, 2, 3],
        status=["ok", "infeasible", "ok", "ok"],
        feasible=[True, False, True, True],
        rank_fro=[2.0, np.nan, 3.0, 3.0],
        rank_nuc=[1.0, 1.0, 2.0, 2.0],  # an infeasible seed's value must not count
        corr_fro=[0.5, 0.7, 0.9, 1.0],
    )
    (row,) = summarize(runs, ["d"]).to_dict("records")
    assert (row["seeds"], row["ok"], row["feasible"]) == (4, 3, 3)
    assert row["feasible_rate"] == 0.75
    assert row["rank_fro_mean"] == pytest.approx(8 / 3) and row["rank_fro_count"] == 3
    assert row["rank_nuc_mean"] == pytest.approx(5 / 3) and row["rank_nuc_count"] == 3
    assert row["rank_fro_std"] == pytest.approx(np.std([2, 3, 3], ddof=1))
    assert row["corr_fro_mean"] == pytest.approx(0.775) and row["corr_fro_count"] == 4


def test_summary_convergence_shares_per_config_point():
    runs = pd.concat(
        [
            _runs(seed=[0, 1, 2, 3], conv_type=["global", "global", "local", "other"], d=2),
            _runs(seed=[0, 1], conv_type=["global", "not converged"], d=8, config_hash="h1"),
        ]
    ).assign(feasible=True)
    s = summarize(runs, ["d"]).set_index("d")
    assert list(s.index) == [2, 8]
    assert (s.loc[2, "global"], s.loc[2, "local"], s.loc[2, "other"]) == (2, 1, 1)
    assert (s.loc[2, "not_converged"], s.loc[8, "not_converged"]) == (0, 1)
    assert s.loc[2, "global_share"] == 0.5 and s.loc[8, "global_share"] == 0.5
    shares = ["global_share", "local_share", "other_share", "not_converged_share"]
    assert (s[shares].sum(axis=1) == 1).all()


def test_newest_finished_job_wins_per_config_hash():
    jobs = pd.DataFrame(
        {
            "dir": ["a", "b", "c", "d"],
            "config_hash": ["h", "h", "h", "g"],
            "status": ["finished", "finished", "running", "failed"],
            "started": [1.0, 2.0, 3.0, 4.0],
        }
    )
    assert list(newest_finished(jobs).dir) == ["b"]


def _write_job(path: Path, cfg: RunConfig, status: str = "finished", started=None) -> None:
    """A job directory as attnsvm.run writes it (tables, then job.json)."""
    path.mkdir(parents=True)
    result = run_job(cfg)
    if status == "finished":
        write_table(result.runs, path / RUNS)
        write_table(result.trajectory, path / TRAJECTORY)
        for name, table in result.extra.items():
            write_table(table, path / f"{name}.parquet")
    job = {"config_hash": result.config_hash, "config": plain(cfg), "status": status}
    job["started"] = time.time() if started is None else started
    if status == "failed":
        job["error"] = "RuntimeError('boom')"
    write_json(job, path / JOB)


def _svm_cfg(d: int) -> RunConfig:
    return RunConfig(train=False, seeds=4, dataset=DatasetConfig(n=3, T=3, d=d))


def test_sweep_dir_with_duplicates_and_a_failed_job(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    _write_job(sweep / "0", _svm_cfg(1))
    _write_job(sweep / "nested" / "1", _svm_cfg(3), started=1.0)
    _write_job(sweep / "1b", _svm_cfg(3))  # the same config again, newer: this one is used
    _write_job(sweep / "2", _svm_cfg(5), status="failed")
    (sweep / "not_a_job").mkdir()
    loaded = load_sweep(sweep)
    assert loaded.swept == ["d"]
    assert len(loaded.runs) == 8 and sorted(loaded.runs.d.unique()) == [1, 3]
    assert set(loaded.jobs[loaded.jobs.used].dir) == {str(sweep / "0"), str(sweep / "1b")}
    assert list(loaded.failed.dir) == [str(sweep / "2")]

    assert main([str(sweep), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "FAILED" in printed and "boom" in printed and "rank_fro_mean" in printed
    summary = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    assert len(summary) == 2 and {"d", "seeds", "feasible", "rank_nuc_mean"} <= set(summary)
    assert list(summary.seeds) == [4, 4]
    csv = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert list(csv.columns) == list(summary.columns)
    assert len(pd.read_parquet(tmp_path / "out" / "all_runs.parquet")) == 8
    for ext in ("png", "pdf"):
        assert (tmp_path / "out" / f"rank.{ext}").stat().st_size > 0


def test_empty_or_foreign_directory_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(AggregateError, match="no job.json"):
        load_sweep(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    assert main([str(tmp_path)]) == 2
    assert "not an attnsvm sweep" in capsys.readouterr().err
    with pytest.raises(AggregateError, match="not a directory"):
        load_sweep(tmp_path / "missing")


def test_paths_job_gives_path_figures(tmp_path):
    for k, T in enumerate((3, 5)):
        cfg = RunConfig(
            seeds=1,
            dataset=DatasetConfig(generator="paths", n=2, T=T, d=2),
            optimizer=OptimizerConfig(steps=40, checkpoint_every=1),
        )
        _write_job(tmp_path / "sweep" / str(k), cfg)
    loaded, summary, written = aggregate(tmp_path / "sweep", tmp_path / "out")
    paths = loaded.extra["paths"]
    assert set(paths.kind) == {"gd", "w_mm", "w_mm_nuc"}
    assert len(paths[paths.kind == "gd"]) == 2 * 2 * 41  # data sets x sequences x checkpoints
    assert len(loaded.extra["tokens"]) == 2 * 3 + 2 * 5 and "T" in loaded.extra["tokens"]
    assert {p.name for p in written} >= {"paths_T3.png", "paths_T5.png", "paths_T3.pdf"}
    assert len(summary) == 2


@pytest.mark.slow
def test_tiny_multirun_with_joblib_then_aggregate(tmp_path):
    sweep = tmp_path / "sweep"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnsvm.run",
            "-m",
            "+sweeps=overparam",
            "dataset.d=2,4",
            "parameterization=w,kq",
            "seeds=3",
            "optimizer.steps=40",
            "optimizer.checkpoint_every=10",
            f"hydra.sweep.dir={sweep}",
            "hydra.launcher.n_jobs=2",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    log = run.stdout + run.stderr  # the local launcher planned and ran the jobs on its workers
    assert "4 jobs in" in log and "4 run, 0 skipped, 0 failed, 0 not started" in log
    out = tmp_path / "out"
    agg = subprocess.run(
        [sys.executable, "-m", "attnsvm.results.aggregate", str(sweep), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert agg.returncode == 0, agg.stderr[-3000:]
    assert "jobs: 4 found, 4 used, 4 finished" in agg.stdout
    summary = pd.read_parquet(out / "summary.parquet")
    assert len(summary) == 4 and set(summary.d) == {2, 4}
    kinds = ["global", "local", "other", "not_converged"]
    for col in ("d", "parameterization", "seeds", "feasible", *kinds):
        assert col in summary
    assert (summary[kinds].sum(axis=1) == 3).all()
    assert (summary.not_converged == 3).all()  # 60 steps: no seed has saturated
    runs = pd.read_parquet(out / "all_runs.parquet")
    assert len(runs) == 4 * 3
    for name in ("convergence", "curves"):
        assert (out / f"{name}.png").stat().st_size > 0 and (out / f"{name}.pdf").exists()


def test_convergence_counts_are_blank_where_the_classification_does_not_apply():
    """A regularization path's rows (no conv_type) beside GD rows: no 'global 0, local 0'."""
    runs = pd.concat(
        [
            _runs(seed=[0, 1], conv_type=["global", "local"], experiment="gd"),
            _runs(seed=[0, 1], conv_type=[None, None], experiment="regpath", config_hash="h1"),
        ]
    ).assign(feasible=True)
    s = summarize(runs, ["experiment"]).set_index("experiment")
    assert (s.loc["gd", "global"], s.loc["gd", "local"]) == (1, 1)
    assert s.loc["regpath", ["global", "local", "other", "global_share"]].isna().all()


def test_curves_use_gd_trajectories_only_and_d_ticks_are_the_run_values():
    from types import SimpleNamespace

    from attnsvm.experiments.gd.figures_sweep import convergence_figure, gd_trajectory

    runs = _runs(seed=[0, 0], experiment=["gd", "regpath"], config_hash=["g", "r"])
    traj = pd.DataFrame({"config_hash": ["g", "g", "r"], "step": [0, 10, 0]})
    kept = gd_trajectory(SimpleNamespace(runs=runs, trajectory=traj))
    assert set(kept.config_hash) == {"g"}
    points = [_runs(seed=[0], conv_type=["global"], d=d, config_hash=f"h{d}") for d in (2, 4, 8)]
    summary = summarize(pd.concat(points).assign(feasible=True), ["d"])
    fig = convergence_figure(summary.assign(parameterization="w"), ["d", "parameterization"])
    assert list(fig.axes[0].get_xticks()) == [2, 4, 8]


def test_figure_commands_write_to_the_summary_folder(tmp_path):
    from attnsvm.figures.command import figure_cli

    sweep, out = figure_cli("doc", [str(tmp_path)])
    assert out == tmp_path / "summary" and out.is_dir()


def test_each_point_is_summarised_in_its_experiments_declared_columns(monkeypatch):
    """An experiment's columns (here a function of the point's runs) decide the counts, metrics,
    keys, console columns and headers; one without them gets the attention SVM's."""
    import dataclasses
    import types

    from attnsvm.experiments.experiment import Experiment
    from attnsvm.results.aggregate import Sweep, summarize_sweep, summary_table
    from attnsvm.results.columns import Columns

    plain = Columns(axes=(), counts={"kept": "kept"}, metrics=("gap",), console=("gap_mean",))

    def columns(runs):
        return dataclasses.replace(plain, labels={"gap": f"gap at lr={runs.lr.iloc[0]}"})

    def nothing(*args):
        return None

    mine, bare = types.ModuleType("mylab_cols"), types.ModuleType("mylab_bare")
    mine.EXPERIMENT = Experiment(
        name="mine", run_job=nothing, summary_text=nothing, columns=columns
    )
    bare.EXPERIMENT = Experiment(name="bare", run_job=nothing, summary_text=nothing)
    monkeypatch.setitem(sys.modules, "mylab_cols", mine)
    monkeypatch.setitem(sys.modules, "mylab_bare", bare)
    runs = pd.concat(
        [
            _runs(seed=[0, 1], kept=[True, False], gap=[1.0, 3.0], lr=0.1, experiment="mylab_cols"),
            _runs(
                seed=[0, 1], feasible=[True, True], rank_fro=[2.0, 4.0], experiment="mylab_bare"
            ).assign(config_hash="h1", lr=0.5),
        ],
        ignore_index=True,
    )
    sweep = Sweep(runs, pd.DataFrame(), {}, pd.DataFrame(), swept=["lr", "experiment"])
    s = summarize_sweep(sweep).set_index("experiment")
    assert list(s.columns[: list(s.columns).index("config_hash")]) == ["n", "T", "d", "lr"]
    assert (s.loc["mylab_cols", "kept"], s.loc["mylab_cols", "gap_mean"]) == (1, 2.0)
    assert pd.isna(s.loc["mylab_cols", "feasible"]) and pd.isna(s.loc["mylab_cols", "d"])
    assert (s.loc["mylab_bare", "feasible"], s.loc["mylab_bare", "rank_fro_mean"]) == (2, 3.0)
    assert pd.isna(s.loc["mylab_bare", "gap_mean"]) and pd.isna(s.loc["mylab_bare", "kept"])
    head = summary_table(summarize_sweep(sweep)).splitlines()[0]
    want = ["n", "T", "d", "lr", "experiment", "seeds", "feasible", "kept"]
    want += ["rank_fro_mean", "rank_fro_std", "gap at lr=0.1"]  # by experiment, where valued
    assert re.fullmatch(r"\s*" + r"\s+".join(map(re.escape, want)) + r"\s*", head), head
