"""The sweep report's content: command and grid, jobs that failed, did not finish or never
started (with reasons), the summary and convergence tables against summary.parquet, embedded
figures, timings, versions; self-contained; the CLI aggregates a stale sweep first."""

from __future__ import annotations

import base64
import json
import os
import re
from html.parser import HTMLParser

import pandas as pd
import pytest
import yaml

from attnsvm import report
from attnsvm.results.aggregate import aggregate
from attnsvm.results.aggregate import main as aggregate_main
from attnsvm.results.sweep_report import read_grid, write_report
from sweep_dirs import make_sweep, make_troubled_sweep


class Page(HTMLParser):
    """Every tag's attributes, and each section's tables as rows of (text, data-v) cells."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.tables: dict[str, list[list[list[tuple[str, str]]]]] = {}
        self.text: dict[str, str] = {}
        self._section, self._cell = "", None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "section":
            self._section = attrs["id"]
        elif tag == "table":
            self.tables.setdefault(self._section, []).append([])
        elif tag == "tr":
            self.tables[self._section][-1].append([])
        elif tag in ("td", "th"):
            self._cell = ["", attrs.get("data-v")]

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._section][-1][-1].append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data
        self.text[self._section] = self.text.get(self._section, "") + data

    def frame(self, section: str, k: int = 0) -> pd.DataFrame:
        """Table ``k`` of ``section``: the shown texts, one column per header."""
        head, *rows = self.tables[section][k]
        return pd.DataFrame([[c[0] for c in r] for r in rows], columns=[c[0] for c in head])

    def values(self, section: str, column: str, k: int = 0) -> list[str]:
        head, *rows = self.tables[section][k]
        i = [c[0] for c in head].index(column)
        return [r[i][1] for r in rows]


@pytest.fixture(scope="module")
def troubled(tmp_path_factory):
    sweep = tmp_path_factory.mktemp("report") / "troubled"
    jobs = make_troubled_sweep(sweep)
    _, summary, written = aggregate(sweep)
    page = write_report(sweep)
    return sweep, jobs, summary, written, Page(page.read_text())


def test_command_and_grid(troubled):
    sweep, _, _, _, page = troubled
    text = page.text["grid"]
    assert "python -m attnsvm.run -m dataset.d=2,4,8 parameterization=w,kq seeds=3 " in text
    assert f"optimizer.steps=60 hydra.sweep.dir={sweep}" in text and "hydra.mode" not in text
    assert "6 grid points" in text


def test_failed_unfinished_and_never_started_jobs_with_reasons(troubled):
    _, _, _, _, page = troubled
    assert "2 finished, 1 failed, 1 running; 2 never started of 6 grid points" in page.text["jobs"]
    failed, running, missing = (page.frame("jobs", k) for k in range(3))
    assert list(failed.job) == ["2"] and failed.error[0] == "RuntimeError('boom')"
    assert list(running.job) == ["3"] and list(running.status) == ["running"]
    assert list(missing.overrides) == [
        "dataset.d=8 optimizer.steps=60 parameterization=w seeds=3",
        "dataset.d=8 optimizer.steps=60 parameterization=kq seeds=3",
    ]
    assert "4 has no job.json" in missing.reason[0]
    assert "run.log ends: attnsvm: invalid config: no such key" in missing.reason[0]
    assert "no job directory" in missing.reason[1]


def test_summary_table_is_summary_parquet_and_sortable(troubled):
    _, _, summary, _, page = troubled
    shown = page.frame("summary")
    assert len(shown) == len(summary) == 2
    assert list(shown.columns[:4]) == ["n", "T", "d", "parameterization"]
    for col in ("corr_fro_mean", "softmax_max_mean", "w_norm_mean"):
        got = [float(v) for v in page.values("summary", col.removesuffix("_mean"))]
        assert got == pytest.approx(list(summary[col]), rel=1e-12)
    assert list(shown.parameterization) == list(summary.parameterization)
    assert any(a.get("class") == "sortable" for t, a in page.tags if t == "table")


def test_convergence_mix_per_point(troubled):
    _, _, summary, _, page = troubled
    mix = page.frame("convergence")
    kinds = ["global", "local", "other", "not_converged"]
    for kind in kinds:
        assert [int(v) for v in mix[kind]] == list(summary[kind])
    titles = [a["title"] for t, a in page.tags if t == "span" and "title" in a]
    for _, row in summary.iterrows():  # one bar segment per type present in the point
        for kind in kinds:
            assert (f"{kind}: {row[kind]}" in titles) == (row[kind] > 0)


def test_figures_are_embedded_images_of_the_summary_pngs(troubled):
    sweep, _, _, written, page = troubled
    pngs = sorted(p for p in written if p.suffix == ".png")
    srcs = [a["src"] for t, a in page.tags if t == "img"]
    assert len(pngs) >= 1 and len(srcs) == len(pngs)
    for src, png in zip(srcs, pngs, strict=True):
        head, data = src.split(",", 1)
        assert head == "data:image/png;base64" and base64.b64decode(data) == png.read_bytes()


def test_timings_and_versions(troubled):
    _, jobs, _, _, page = troubled
    timings = page.frame("timings")
    assert list(timings.job) == ["0", "1", "2", "3"]
    recorded = [json.loads((jobs[k] / "job.json").read_text()) for k in ("2-w", "2-kq")]
    got = [float(v) for v in page.values("timings", "seconds")[:2]]
    assert got == pytest.approx([r["seconds"] for r in recorded], rel=1e-12)
    versions = page.frame("versions").set_index("package")
    assert versions.loc["torch", "version"] == recorded[0]["versions"]["torch"]
    assert versions.loc["torch", "jobs"] == "2"


def test_the_page_is_self_contained(troubled):
    _, _, _, _, page = troubled
    for tag, attrs in page.tags:
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert not re.match(r"(https?:)?//", value), (tag, attrs)
        assert not (tag == "script" and "src" in attrs)
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")


def test_explicit_figures_replace_the_summary_pngs(troubled, tmp_path):
    sweep, _, _, written, _ = troubled
    png = next(p for p in written if p.suffix == ".png")
    page = Page(write_report(sweep, figures=[png], out=tmp_path / "r.html").read_text())
    assert [a["alt"] for t, a in page.tags if t == "img"] == [png.stem]


def test_grid_of_a_sweep_file(tmp_path):
    hydra = {
        "sweeper": {
            "_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
            "params": {"+sweeps/rank_shape": "n5_T5,n10_T5", "dataset.d": "1,2,3"},
        },
        "overrides": {"hydra": ["hydra.mode=MULTIRUN"], "task": ["+sweeps=rank", "seeds=5"]},
    }
    (tmp_path / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra}))
    grid = read_grid(tmp_path)
    assert grid.command == "python -m attnsvm.run -m +sweeps=rank seeds=5"
    assert len(grid.points) == 6
    assert frozenset(["+sweeps/rank_shape=n10_T5", "dataset.d=3", "+sweeps=rank", "seeds=5"]) in (
        grid.points
    )
    hydra["sweeper"]["_target_"] = "hydra_plugins.hydra_optuna_sweeper.OptunaSweeper"
    (tmp_path / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra}))
    assert read_grid(tmp_path).points == [] and "chooses its points" in read_grid(tmp_path).note
    assert read_grid(tmp_path / "nothing") is None
    hydra["sweeper"]["_target_"] = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
    hydra["overrides"]["task"] = ["optimizer.lr=interval(0.1,1)"]
    (tmp_path / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra}))
    assert "do not expand to a grid" in read_grid(tmp_path).note


def test_the_grid_shown_is_the_commands_over_the_sweep_files(tmp_path):
    """``-m +sweeps=multitoken dataset.d=4,6 optimizer.lr=1e300,0.1``: d = 4,6 (not the sweep
    file's 4,6,8,10) and lr, as multirun.yaml records the command."""
    from golden_sweeps import sweep_params

    task = ["+sweeps=multitoken", "dataset.d=4,6", "optimizer.lr=1e300,0.1"]
    hydra = {
        "sweeper": {
            "_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
            "params": sweep_params("multitoken"),
        },
        "overrides": {"hydra": ["hydra.mode=MULTIRUN"], "task": task},
    }
    assert hydra["sweeper"]["params"] == {"dataset.d": "4,6,8,10"}
    (tmp_path / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra}))
    assert len(read_grid(tmp_path).points) == 4
    grid = Page(write_report(tmp_path).read_text()).frame("grid")
    assert grid.to_dict("records") == [
        {"key": "dataset.d", "values": "4,6", "from": "command (sweep file: 4,6,8,10)"},
        {"key": "+sweeps", "values": "multitoken", "from": "command"},
        {"key": "optimizer.lr", "values": "1e300,0.1", "from": "command"},
    ]


def test_report_cli_aggregates_a_missing_or_stale_summary(tmp_path, capsys):
    sweep = tmp_path / "s"
    (job,) = make_sweep(sweep, ds=(2,), kinds=("w",))
    assert report.summary_is_stale(sweep)
    assert report.main([str(sweep)]) == 0
    assert capsys.readouterr().out.strip() == str(sweep / "report.html")
    assert not report.summary_is_stale(sweep)
    earlier = (job / "job.json").stat().st_mtime - 10  # as if the job ran again after it
    os.utime(sweep / "summary" / "summary.parquet", (earlier, earlier))
    assert report.summary_is_stale(sweep)
    assert report.main([str(sweep), "--out", str(tmp_path / "r.html")]) == 0
    assert not report.summary_is_stale(sweep) and (tmp_path / "r.html").is_file()


def test_a_job_that_ends_while_the_summary_is_read_leaves_it_stale(tmp_path, monkeypatch):
    """The live report's last page lacked a job (CI: 3 finished, 2 summary rows): the job's
    job.json was written while the aggregation read the sweep, before summary.parquet was
    written, so an mtime comparison called the summary current."""
    from attnsvm.results import aggregate as aggregate_module

    sweep = tmp_path / "s"
    (job,) = make_sweep(sweep, ds=(2,), kinds=("w",))
    real = aggregate_module.load_sweep

    def read_while_a_job_ends(*args, **kwargs):
        sweep_read = real(*args, **kwargs)
        (job / "job.json").write_text((job / "job.json").read_text())  # ends after the read
        return sweep_read

    monkeypatch.setattr(aggregate_module, "load_sweep", read_while_a_job_ends)
    assert report.main([str(sweep)]) == 0
    assert report.summary_is_stale(sweep)
    monkeypatch.setattr(aggregate_module, "load_sweep", real)
    assert report.main([str(sweep)]) == 0
    assert not report.summary_is_stale(sweep)


def test_report_cli_errors_and_aggregate_writes_the_report(tmp_path, capsys):
    assert report.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsvm: no job.json found") and err.count("\n") == 1
    make_sweep(tmp_path / "s", ds=(2,), kinds=("w",))
    assert aggregate_main([str(tmp_path / "s"), "--no-figures"]) == 0
    assert f"report: {tmp_path / 's' / 'report.html'}" in capsys.readouterr().out
    assert (tmp_path / "s" / "report.html").stat().st_size > 0


@pytest.mark.parametrize("where", ["missing", "a_file"])
def test_report_on_a_misspelt_directory_says_so_and_writes_nothing(tmp_path, capsys, where):
    path = tmp_path / where
    if where == "a_file":
        path.write_text("x")
    assert report.main([str(path)]) == 2
    err = capsys.readouterr().err
    what = "does not exist" if where == "missing" else "is not a directory"
    assert err == f"attnsvm: {path} {what}: name a sweep directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if where == "missing" else [where])


def test_a_job_that_failed_before_hydra_wrote_its_overrides_reads_failed_everywhere(
    tmp_path, capsys
):
    """A failed job.json without .hydra/overrides.yaml (a generator that raised at preflight)
    is matched to its grid point by its job number: failed with its reason in aggregate, the
    report and query, never 'never started'."""
    import shutil

    from attnsvm.results.query import sql

    sweep = tmp_path / "s"
    jobs = make_troubled_sweep(sweep)
    shutil.rmtree(jobs["4-w"] / ".hydra")
    assert aggregate_main([str(sweep)]) == 0
    out = capsys.readouterr().out
    assert "FAILED" in out and "RuntimeError('boom')" in out
    never = [line for line in out.splitlines() if "never started" in line]
    assert len(never) == 2 and not any("dataset.d=4" in line for line in never), never
    page = Page((sweep / "report.html").read_text())
    assert "1 failed, 1 running; 2 never started of 6 grid points" in page.text["jobs"]
    assert list(page.frame("jobs", 0).job) == ["2"]
    got = sql("SELECT job, status, error FROM jobs WHERE status = 'failed'", sweep)
    assert got.values.tolist() == [["2", "failed", "RuntimeError('boom')"]]


def test_jobs_are_in_natural_order_in_the_timings(tmp_path):
    """Twelve jobs: 0, 1, 2, ..., 10, 11 (not 0, 1, 10, 11, 2)."""
    from attnsvm.results.store import write_json

    sweep = tmp_path / "s"
    make_sweep(sweep, ds=(2,), kinds=("w",))
    record = json.loads((sweep / "0" / "job.json").read_text())
    for k in range(1, 12):
        (sweep / str(k)).mkdir()
        write_json({**record, "status": "failed", "error": "x"}, sweep / str(k) / "job.json")
    page = Page(write_report(sweep).read_text())
    assert list(page.frame("timings").job) == [str(k) for k in range(12)]


def test_a_read_only_sweep_reports_elsewhere_and_writes_nothing_into_it(tmp_path, capsys):
    """No summary yet and the sweep read-only: --out FILE aggregates into a temporary folder and
    writes the page there; without --out, one attnsvm: line saying to pass it. aggregate --out
    DIR writes its page beside the summary."""
    from sweep_dirs import read_only

    sweep = tmp_path / "s"
    make_sweep(sweep, ds=(2, 4), kinds=("w",))
    before = sorted(p.relative_to(sweep) for p in sweep.rglob("*"))
    out = tmp_path / "elsewhere" / "page.html"
    out.parent.mkdir()
    with read_only(sweep):
        assert report.main([str(sweep), "--out", str(out)]) == 0
        assert report.main([str(sweep)]) == 2
        agg = tmp_path / "agg"
        assert aggregate_main([str(sweep), "--out", str(agg), "--no-figures"]) == 0
    assert (agg / "report.html").stat().st_size > 0 and (agg / "summary.csv").is_file()
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"attnsvm: {sweep} cannot be written") and "--out FILE" in err, err
    assert sorted(p.relative_to(sweep) for p in sweep.rglob("*")) == before
    page = Page(out.read_text())
    assert len(page.frame("summary")) == 2 and "2 finished" in page.text["jobs"]


def test_a_sweep_with_no_finished_job_yet_gets_its_page(tmp_path):
    """--watch's first pages: aggregation writes no summary while no job has finished, and the
    page is written all the same (the summary's dating skips a summary not written)."""
    sweep = tmp_path / "s"
    (job,) = make_sweep(sweep, ds=(2,), kinds=("w",))
    record = json.loads((job / "job.json").read_text())
    (job / "job.json").write_text(json.dumps({**record, "status": "running"}))
    for table in job.glob("*.parquet"):
        table.unlink()
    assert report.main([str(sweep)]) == 0
    assert not (sweep / "summary" / "summary.parquet").exists()
    assert "1 running" in Page((sweep / "report.html").read_text()).text["jobs"]
