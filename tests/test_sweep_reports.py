"""Every sweep file of sweeps/ aggregates and reports: its jobs (the golden fixtures' tables,
tests/golden_sweeps.py) go through ``python -m attnsvm.aggregate``, which writes the summary,
each experiment's figures from its own jobs' rows, and the report page; the summary, console
table and report speak each experiment's own quantities (its entry's COLUMNS)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from golden_sweeps import SWEEPS, make_golden_sweep, sweep_cases
from test_report import Page

from attnsvm.experiments import entry
from attnsvm.results.aggregate import main as aggregate_main
from attnsvm.results.columns import columns_of, header

# sweep -> (headers its report's summary and its console table show, headers they must not)
SPEAKS = {
    "maxmargin": (["corr(p, p^mm)"], ["rank_fro", "rank_nuc", "corr_nuc", "corr_nuc_mean"]),
    "digits": (["corr(p, p^mm)"], ["rank_fro", "rank_nuc", "corr_nuc", "corr_nuc_mean"]),
    "icl_N": (["corr(A, Γ⁻¹)", "icl_loss", "icl.parameterization"], ["n", "T", "d", "feasible"]),
    "icl_layers": (["icl_loss at Γ⁻¹", "icl.parameterization"], ["n", "T", "d", "feasible"]),
    "multitoken": (["seeds tried", "accepted seeds"], ["feasible"]),
    "rankdyn": (["stages", "lowest rank", "final rank"], ["feasible"]),
    "sequential": (["corr(W̄_R, W^mm or W^mm_*)", "corr_fro_mean", "global"], []),
    "local": (["global", "not_converged", "corr_fro_mean"], ["corr(p, p^mm)"]),
    "rank": (["rank_fro_mean", "feasible"], ["global"]),
}
REPORT_ONLY = {"corr_fro_mean": "corr_fro"}  # the report drops "_mean" from an unlabelled mean


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    return {name: (root / name, make_golden_sweep(name, root / name)) for name in SWEEPS}


def console_header(out: str) -> str:
    """The header line of aggregate's table (the line after ``swept keys: ...``)."""
    lines = out.splitlines()
    return lines[[i for i, ln in enumerate(lines) if ln.startswith("swept keys")][0] + 1]


def in_console(head: str, name: str) -> bool:
    return re.search(rf"(^|\s){re.escape(name)}(\s|$)", head) is not None


def averaged(point: pd.DataFrame, metric: str, columns) -> bool:
    """Whether ``metric`` has a value among the seeds it is averaged over."""
    rows = point
    if metric.startswith(columns.subset_only) and columns.subset in point:
        rows = point[point[columns.subset].astype(bool)]
    return bool(rows[metric].notna().any())


@pytest.mark.parametrize("name", SWEEPS)
def test_every_sweep_file_aggregates_and_reports(name, sweeps, capsys):
    sweep, jobs = sweeps[name]
    assert jobs and len(jobs) == len(sweep_cases(name))
    assert aggregate_main([str(sweep)]) == 0
    out = capsys.readouterr().out
    summary = pd.read_parquet(sweep / "summary" / "summary.parquet")
    assert len(summary) == len(jobs)
    assert (sweep / "report.html").stat().st_size > 0 and f"report: {sweep}" in out
    runs = pd.read_parquet(sweep / "summary" / "all_runs.parquet")
    assert sorted(runs.config_hash.unique()) == sorted(summary.config_hash)
    page = Page((sweep / "report.html").read_text())
    shown = list(page.frame("summary").columns)
    console = console_header(out)
    for _, point in runs.groupby("config_hash"):  # each point under its experiment's columns
        columns = columns_of(entry(point.experiment.iloc[0]), point)
        assert set(columns.counts) <= set(summary.columns)
        assert {header(c, columns.labels) for c in columns.counts} <= set(shown)
        assert set(columns.axes) <= set(summary.columns[: list(summary).index("config_hash")])
        means = [m for m in columns.metrics if m in point and averaged(point, m, columns)]
        assert {f"{m}_mean" for m in means} <= set(summary.columns)
        assert {header(f"{m}_mean", columns.labels) for m in means} <= set(shown)
    want, never = SPEAKS.get(name, ([], []))
    for h in want:
        assert in_console(console, h) or h in shown or REPORT_ONLY.get(h) in shown, h
    assert not [h for h in never if in_console(console, h) or h in shown], (console, shown)
    assert sorted((sweep / "summary").glob("*.png")), "no figure"


def test_each_experiment_of_a_mixed_sweep_draws_from_its_own_jobs(sweeps, capsys):
    """sequential: experiment=gd,regpath; gd's curves and regpath's R curve both drawn."""
    sweep, _ = sweeps["sequential"]
    assert aggregate_main([str(sweep)]) == 0
    assert (sweep / "summary" / "regpath.png").stat().st_size > 0
    assert (sweep / "summary" / "curves.png").stat().st_size > 0
    assert "FAILED" not in capsys.readouterr().out
