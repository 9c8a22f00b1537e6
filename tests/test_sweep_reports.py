"""Every sweep file of sweeps/ aggregates and reports: its jobs (the golden fixtures' tables,
tests/golden_sweeps.py) go through ``python -m attnsvm.aggregate``, which writes the summary,
each experiment's figures from its own jobs' rows, and the report page."""

from __future__ import annotations

import pandas as pd
import pytest
from golden_sweeps import SWEEPS, make_golden_sweep, sweep_cases

from attnsvm.results.aggregate import main as aggregate_main


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    return {name: (root / name, make_golden_sweep(name, root / name)) for name in SWEEPS}


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
    pictures = sorted((sweep / "summary").glob("*.png"))
    assert pictures, "no figure"
