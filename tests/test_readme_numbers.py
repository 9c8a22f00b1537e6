"""Every number in the README's tables comes from a file: the experiment table's walls and the
headline numbers from docs/results/ (``python -m attnsvm.publish``), the speed table from
docs/benchmarks.json (``python -m attnsvm.bench``); a number of any other table row says where
it was quoted from and when ("quoted: SOURCE, YYYY-MM-DD"). A rendered row's numbers follow its
file: change every measured number of the files and every such row changes."""

from __future__ import annotations

import csv
import json
import re
import shutil

from attnsvm.bench.readme import README_MARKERS, readme_table
from attnsvm.results import readme
from conftest import REPO

BLOCKS = {"walls": readme.WALL_MARKERS, "headlines": readme.HEADLINE_MARKERS}
BLOCKS["speed"] = README_MARKERS
QUOTED = re.compile(r"quoted: [^|]+?, \d{4}-\d{2}-\d{2}")
BENCH = REPO / "docs" / "benchmarks.json"
RESULTS = REPO / "docs" / "results"


def table_rows(text: str) -> list[tuple[str, str | None]]:
    """(row, the generated block it stands in or None) of every table row but separators."""
    rows, block = [], None
    for line in text.splitlines():
        for name, (start, end) in BLOCKS.items():
            block = name if start in line else None if end in line else block
        if line.startswith("|") and not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line):
            rows.append((line, block))
    return rows


def numbers(cell: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", cell)


def test_every_number_of_the_readmes_tables_is_rendered_from_a_file_or_quoted():
    text = (REPO / "README.md").read_text()
    assert text == readme.render_readme(text, RESULTS), "python -m attnsvm.publish --readme"
    speed = readme.readme_block(text, README_MARKERS)
    assert speed == readme_table(json.loads(BENCH.read_text())), "python -m attnsvm.bench"
    rows = table_rows(text)
    assert {b for _, b in rows} >= set(BLOCKS), "a generated block of the README went missing"
    loose = [r for r, b in rows if b is None and numbers(r) and not QUOTED.search(r)]
    assert not loose, f"README table rows with numbers from no file, not marked quoted: {loose}"


def _scaled(value, factor: float):
    """Every float below ``value`` times ``factor`` (ints and strings kept: counts, shapes)."""
    if isinstance(value, dict):
        return {k: _scaled(v, factor) for k, v in value.items()}
    if isinstance(value, list):
        return [_scaled(v, factor) for v in value]
    return value * factor if isinstance(value, float) else value


def _scaled_csv(path, factor: float) -> None:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for row in rows[1:]:
        for i, cell in enumerate(row):
            if re.fullmatch(r"-?\d+\.\d*[1-9]\d*(e-?\d+)?", cell):  # a measured, non-integer value
                row[i] = repr(float(cell) * factor)
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)


def test_every_rendered_row_follows_its_files(tmp_path):
    """Scale every measured number of docs/results/ and docs/benchmarks.json: every row of the
    walls, headline and speed tables that shows a measured number shows another one."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    sweeps = json.loads((results / readme.SWEEPS_JSON).read_text())
    for record in sweeps.values():
        record["wall"] *= 7.3
    (results / readme.SWEEPS_JSON).write_text(json.dumps(sweeps))
    for path in results.glob("*.csv"):
        _scaled_csv(path, 0.613)
    bench = _scaled(json.loads(BENCH.read_text()), 1.37)
    text = (REPO / "README.md").read_text()
    before = {
        "walls": readme.experiment_table(RESULTS).splitlines(),
        "headlines": readme.headline_table(RESULTS).splitlines(),
        "speed": readme_table(json.loads(BENCH.read_text())).splitlines(),
    }
    after = {
        "walls": readme.experiment_table(results).splitlines(),
        "headlines": readme.headline_table(results).splitlines(),
        "speed": readme_table(bench).splitlines(),
    }
    assert before["walls"][-1] in text  # the README is these renderings (test above)
    for name in before:
        assert len(before[name]) == len(after[name]), name
        for old, new in zip(before[name], after[name], strict=True):
            if not old.startswith("|") or "---" in old:
                continue  # the walls' sentence (its dates and cores: sweeps.json's), separators
            measured = old.split("|")[-2] if name == "walls" else old.split("|", 2)[-1]
            if numbers(measured):
                assert old != new, f"{name}: a row whose numbers do not follow its file: {old}"


def test_scaling_quotes_the_large_jobs_of_the_bench_results_file():
    """docs/scaling.md's large-job numbers are docs/benchmarks.json's ``scale`` (its last run)."""
    text = " ".join((REPO / "docs" / "scaling.md").read_text().split())
    record = json.loads(BENCH.read_text())
    first, second = record["scale"]
    said = re.search(
        r"Its last run \([^,]+, (\d{4}-\d{2}-\d{2}), `scale` in docs/benchmarks.json\): "
        r"(\d+) seeds at \((\d+),(\d+),(\d+)\), .*? in (\d+) s with (\d+) MiB peak RSS "
        r"\((\d+) s without the routes, ([\d.]+)×\); (\d+) seeds at \((\d+),(\d+),(\d+)\) in "
        r"(\d+) s with (\d+) MiB \((\d+) s without, .*?, ([\d.]+)×\)",
        text,
    )
    assert said, "docs/scaling.md's sentence on the bench's large jobs is gone or reworded"

    def cells(job):
        return [
            str(job["seeds"]),
            *map(str, job["shape"]),
            f"{job['ours']['wall']:.0f}",
            f"{job['ours']['peak_mib']:.0f}",
            f"{job['before_wall_scaled']:.0f}",
            f"{job['ratio']:.1f}",
        ]

    assert list(said.groups()) == [record["date"][:10], *cells(first), *cells(second)]


def test_the_benign_bench_case_names_the_default_job_it_ran():
    """The benign case of docs/benchmarks.json is labelled with the n and d of the default
    job (benign's Config), which bench.py runs."""
    from attnsvm.experiments.benign.config import Config

    (label,) = json.loads(BENCH.read_text())["experiments"]["benign"]
    assert f"(n={Config().n}, d={Config().d})" in label, label


def test_publish_keep_timing_copies_tables_and_keeps_the_published_wall(tmp_path):
    """A sweep re-run on a shared machine: its tables are published, its wall stays the one
    timed before, and the README's sentence says which tables were made again and when."""
    from test_docs import _fake_sweep

    from attnsvm.results import publish

    results = tmp_path / "results"
    first = _fake_sweep(tmp_path / "a", "tiny", [(1_800_000_000.0, 2.0, 4)])
    assert publish.main([str(first), "--results", str(results)]) == 0
    again = _fake_sweep(tmp_path / "b", "tiny", [(1_900_000_000.0, 99.0, 4)])
    (again / "summary" / "table.csv").write_text("d,x\n4,0.75\n")
    assert publish.main([str(again), "--results", str(results), "--keep-timing"]) == 0
    record = json.loads((results / readme.SWEEPS_JSON).read_text())["tiny"]
    assert record["wall"] == 2.0 and record["date"] == "2027-01-15"
    assert record["tables_date"] == "2030-03-17"
    assert (results / "tiny_table.csv").read_text() == "d,x\n4,0.75\n"
    sentence = " ".join(readme.walls_sentence(results).split())
    assert "Tables made again since their sweep was timed" in sentence
    assert "tiny (2030-03-17)" in sentence
    unknown = _fake_sweep(tmp_path / "c", "new", [(1_800_000_000.0, 2.0, 4)])
    assert publish.main([str(unknown), "--results", str(results), "--keep-timing"]) == 2


def test_experiments_md_local_counts_are_the_published_summarys():
    """docs/experiments.md's local table: global / local / other / not converged per run are
    docs/results/local_summary.csv's counts (every convergence class, not converged too)."""
    text = (REPO / "docs" / "experiments.md").read_text()
    with open(RESULTS / "local_summary.csv", newline="") as f:
        rows = {r["parameterization"]: r for r in csv.DictReader(f)}
    assert "global / local / other / not converged |" in text
    for run, kind in (("W", "w"), ("(K,Q)", "kq")):
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"| {run} | corr(")]
        counts = line.rstrip(" |").rsplit("|", 1)[-1].split("/")
        classes = ("global", "local", "other", "not_converged")
        assert [int(c) for c in counts] == [int(rows[kind][k]) for k in classes], line


def test_experiments_md_overparam_counts_are_the_published_summarys():
    """docs/experiments.md's overparam table: per d, the feasible, global, local, other and not
    converged counts of docs/results/overparam_summary.csv."""
    text = (REPO / "docs" / "experiments.md").read_text()
    with open(RESULTS / "overparam_summary.csv", newline="") as f:
        rows = {r["d"]: r for r in csv.DictReader(f)}
    lines = text.split("## overparam", 1)[1].splitlines()
    (head,) = [ln for ln in lines if ln.startswith("| d |")]
    ds = [c.strip() for c in head.strip("|").split("|")[1:]]
    labels = {
        "W^mm at opt feasible": "feasible",
        "global": "global",
        "local": "local",
        "other": "other",
        "not converged": "not_converged",
    }
    for label, col in labels.items():
        (line,) = [ln for ln in lines if ln.startswith(f"| {label} |")]
        cells = [c.strip() for c in line.strip("|").split("|")[1:]]
        assert cells == [rows[d][col] for d in ds], label
