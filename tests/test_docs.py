"""Docs that cannot go stale: the README's speed table is the rendering of the bench's results
file, docs/benchmarks.json (rewrite both with ``python -m attnsvm.bench --readme README.md``);
its experiment table's wall column and its headline numbers are the rendering of the published
sweep results in docs/results/ (``python -m attnsvm.publish outputs/sweeps/<name> ...
--readme README.md``); and every ``python -m attnsvm.run`` command of the README and docs/
composes (a dry run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

from attnsvm.bench.readme import README_MARKERS, readme_table
from attnsvm.results import publish, readme
from attnsvm.results.published import Published
from cli_helpers import cli_env, run_cli
from conftest import REPO


def test_readme_speed_table_is_the_bench_results_file():
    record = json.loads((REPO / "docs" / "benchmarks.json").read_text())
    readme = (REPO / "README.md").read_text()
    start, end = README_MARKERS
    block = readme.split(start, 1)[1].split(end, 1)[0].strip()
    assert block == readme_table(record), "run: python -m attnsvm.bench --readme README.md"


# ---- the README's experiment walls and headline numbers are docs/results/ -------------------
PUBLISH = "run: python -m attnsvm.publish outputs/sweeps/<name> ... --readme README.md"
RESULTS = REPO / "docs" / "results"


def test_readme_results_blocks_are_the_published_results():
    text = (REPO / "README.md").read_text()
    walls = readme.readme_block(text, readme.WALL_MARKERS)
    assert walls == readme.experiment_table(RESULTS), PUBLISH
    headlines = readme.readme_block(text, readme.HEADLINE_MARKERS)
    assert headlines == readme.headline_table(RESULTS), PUBLISH
    assert text == readme.render_readme(text, RESULTS), PUBLISH


def test_every_published_sweep_is_in_the_readme_with_its_tables():
    """The README's rows are the sweeps the experiments publish (their entries' published()),
    each a sweep file with its figures and headline table; every timed sweep is among them,
    and a sweep without timing shows none."""
    sweeps = readme.load_sweeps(RESULTS)
    declared = readme.declared()
    walls = readme.readme_block((REPO / "README.md").read_text(), readme.WALL_MARKERS)
    rows = [ln for ln in walls.splitlines() if "+sweeps=" in ln]
    assert [re.search(r"\+sweeps=([\w-]+)", ln).group(1) for ln in rows] == [
        p.sweep for p in declared
    ], PUBLISH
    assert set(sweeps) <= {p.sweep for p in declared}, PUBLISH
    assert {"icl_N", "icl_layers", "rankdyn"} <= {p.sweep for p in declared}
    for pub, row in zip(declared, rows, strict=True):
        assert (REPO / "sweeps" / f"{pub.sweep}.yaml").exists(), pub.sweep
        for _, figure in pub.figures:
            assert (REPO / "docs" / "figures" / figure).exists(), figure
        if pub.headline is not None:
            assert (RESULTS / pub.headline[0]).exists(), pub.headline[0]
        assert row.endswith(f"| {readme.NO_WALL} |") == (pub.sweep not in sweeps), row
    for name, record in sweeps.items():
        # the wall spans every job: at least the longest one, so at least their mean
        assert record["jobs"] > 0 and record["wall"] >= record["seconds"] / record["jobs"], name
        for table in record["tables"]:
            assert (RESULTS / table).exists(), f"{table} of {name} missing; {PUBLISH}"


def test_the_headline_rows_follow_the_result_files(tmp_path):
    """Change a published number: the rendered README changes with it (and the unchanged
    README no longer passes the check above)."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    path = results / "local_summary.csv"
    rows = path.read_text().splitlines()
    header = rows[0].split(",")
    col, kind = header.index("corr_fro_mean"), header.index("parameterization")
    for i, row in enumerate(rows[1:], 1):
        cells = row.split(",")
        if cells[kind] == "w":
            cells[col] = "0.123456"
            rows[i] = ",".join(cells)
    path.write_text("\n".join(rows) + "\n")
    assert "final corr(W, W^mm_α) 0.1235," in readme.headline_table(results)
    text = (REPO / "README.md").read_text()
    assert readme.render_readme(text, results) != text

    sweeps = json.loads((results / "sweeps.json").read_text())
    sweeps["rank"]["wall"] = 1234.4
    (results / "sweeps.json").write_text(json.dumps(sweeps))
    walls = readme.readme_block(readme.render_readme(text, results), readme.WALL_MARKERS)
    (rank_row,) = [ln for ln in walls.splitlines() if "+sweeps=rank`" in ln]
    assert rank_row.endswith("| 1234 s |")


def _fake_sweep(root, name, jobs, status="finished"):
    """A sweep directory as ``attnsvm.run -m`` and ``attnsvm.results.aggregate`` leave it: one
    job.json per job (started, seconds, seed_status) and summary/*.csv."""
    sweep = root / name
    for i, (started, seconds, seeds) in enumerate(jobs):
        job = {
            "config_hash": f"{i:016x}",
            "config": {"seeds": seeds},
            "started": started,
            "status": status if i == len(jobs) - 1 else "finished",
            "seconds": seconds,
            "seed_status": {"ok": seeds - 1, "infeasible": 1},
        }
        (sweep / str(i)).mkdir(parents=True)
        (sweep / str(i) / "job.json").write_text(json.dumps(job))
    (sweep / "summary").mkdir()
    (sweep / "summary" / "summary.csv").write_text(f"d,seeds\n4,{jobs[0][2]}\n")
    (sweep / "summary" / "table.csv").write_text("d,x\n4,0.5\n")
    return sweep


def test_publish_records_a_sweeps_tables_wall_and_seconds(tmp_path):
    t0 = 1_800_000_000.25
    # two workers: job 1 ends last, job 2 starts last but ends first
    jobs = [(t0, 3.0, 10), (t0 + 0.5, 7.25, 10), (t0 + 4.0, 1.0, 5)]
    sweep = _fake_sweep(tmp_path / "sweeps", "tiny", jobs)
    other = _fake_sweep(tmp_path / "sweeps", "one", [(t0 + 100, 2.5, 3)])
    results = tmp_path / "results"
    assert publish.main([str(sweep), "--results", str(results)]) == 0
    assert publish.main([str(other), "--results", str(results)]) == 0  # merged, not replaced
    record = json.loads((results / "sweeps.json").read_text())
    assert set(record) == {"tiny", "one"}
    tiny = record["tiny"]
    assert tiny["jobs"] == 3 and tiny["seeds"] == 25
    assert tiny["seconds"] == pytest.approx(3.0 + 7.25 + 1.0)
    assert tiny["wall"] == pytest.approx(7.75)  # t0 -> t0 + 0.5 + 7.25
    assert record["one"]["wall"] == pytest.approx(2.5) and record["one"]["jobs"] == 1
    assert tiny["date"] == "2027-01-15" and tiny["cores"] == os.cpu_count()
    assert tiny["tables"] == ["tiny_summary.csv", "tiny_table.csv"]
    for published, source in [("tiny_summary.csv", "summary.csv"), ("tiny_table.csv", "table.csv")]:
        assert (results / published).read_bytes() == (sweep / "summary" / source).read_bytes()
    assert readme.experiment_walls(results) == {"tiny": "7.8 s", "one": "2.5 s"}

    pubs = [Published("tiny", "tiny"), Published("one", "one", (("f", "one.png"),))]
    table = readme.experiment_table(results, pubs).splitlines()
    assert table[-2] == "| tiny | `python -m attnsvm.run -m +sweeps=tiny` | – | 7.8 s |"
    assert (
        table[-1]
        == "| one | `python -m attnsvm.run -m +sweeps=one` | [f](docs/figures/one.png) | 2.5 s |"
    )
    assert "2-core" in table[0] or f"{os.cpu_count()}-core" in table[0]
    assert "A wall of –" not in " ".join(" ".join(table).split())  # wrapped at any word
    untimed = readme.experiment_table(results, [*pubs, Published("new", "new")])
    assert untimed.endswith("| new | `python -m attnsvm.run -m +sweeps=new` | – | – |")
    assert "A wall of –" in " ".join(untimed.split())  # the CPU's name moves the line breaks
    with pytest.raises(readme.PublishError, match="no experiment publishes: one"):
        readme.experiment_table(results, pubs[:1])


def test_publish_refuses_unfinished_or_stale_sweeps(tmp_path):
    t0 = 1_800_000_000.0
    running = _fake_sweep(tmp_path, "running", [(t0, 1.0, 2), (t0, 1.0, 2)], status="running")
    with pytest.raises(publish.PublishError, match="not finished"):
        publish.publish([running], tmp_path / "results")
    stale = _fake_sweep(tmp_path, "stale", [(t0, 1.0, 2)])
    summary = stale / "summary" / "summary.csv"
    old = (stale / "0" / "job.json").stat().st_mtime - 60
    os.utime(summary, (old, old))
    with pytest.raises(publish.PublishError, match="older than the sweep's jobs"):
        publish.publish([stale], tmp_path / "results")
    assert not (tmp_path / "results").exists()  # nothing written for a refused sweep
    assert publish.main([str(running), "--results", str(tmp_path / "results")]) == 2


# ---- every documented command composes (a dry run: nothing trains) --------------------------
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# the README's hypothetical plug-ins -> the runnable examples in tests/
EXAMPLES = {
    "mylab.data:make": "userdata_example:make",
    "mylab.my_experiment": "experiment_example",
    "mylab.heads:make": "head_example:make",
    "mylab.optim:make": "optim_example:make",
    "mylab.norms:make": "norm_example:make",
    "my_tokens.npz": str(REPO / "tests" / "data" / "tiny.npz"),
}
DOCUMENTED_INVALID = {"dataset.T=8,1"}  # the docs' own example of an invalid sweep point
NEEDS_CUDA = "device=cuda"  # composes where CUDA is available; elsewhere a clear config error


def documented_run_commands() -> list[str]:
    """Every ``python -m attnsvm.run`` line of the docs' code blocks (continuations joined,
    comments and chained commands dropped)."""
    commands = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("python -m attnsvm.run"):
                continue
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i].strip()
            commands.append(line.split("&&")[0].split("  #")[0].strip())
    return sorted(set(commands))


def _dry_run_args(command: str, sweep_dir) -> list[str]:
    for name, example in EXAMPLES.items():
        command = command.replace(name, example)
    args = [a for a in command.split()[3:] if a != "-m" and not a.startswith("--")]
    args = [a for a in args if not a.startswith(("hydra/launcher=", "hydra.launcher."))]
    args = [a.replace("<name>", "local") for a in args if not a.startswith("hydra.sweep.dir=")]
    return ["-m", *args, "hydra/launcher=dryrun", f"hydra.sweep.dir={sweep_dir}"]


def _distinct_dry_runs() -> dict[str, str]:
    """One documented command per distinct dry run (launcher variants of one sweep are one)."""
    runs = {}
    for command in documented_run_commands():
        runs.setdefault(" ".join(_dry_run_args(command, "DIR")), command)
    return runs


def test_the_docs_document_run_commands():
    assert len(documented_run_commands()) >= 20


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory) -> dict[str, dict]:
    """command -> its dry run's stdout and exit code, the commands in two interpreters side by
    side (tests/dry_runs.py: the CLI's entry point, the imports paid once in each): the second
    takes a core the suite leaves idle while a cluster test waits."""
    tmp = tmp_path_factory.mktemp("dry_runs")
    commands = {
        command: _dry_run_args(command, tmp / f"sweep{i}")
        for i, command in enumerate(sorted(_distinct_dry_runs().values()))
    }
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    procs, results = [], {}
    for part in range(2):  # every second command
        mine = dict(list(commands.items())[part::2])
        (tmp / f"commands{part}.json").write_text(json.dumps(mine))
        script = [
            REPO / "tests" / "dry_runs.py",
            tmp / f"commands{part}.json",
            tmp / f"out{part}.json",
        ]
        with open(tmp / f"log{part}.txt", "w") as log:  # a file: neither waits on a pipe
            procs.append(subprocess.Popen(
                [sys.executable, *map(str, script)], cwd=REPO, env={**cli_env(), **env},
                stdout=log, stderr=subprocess.STDOUT,
            ))  # fmt: skip
    for part, proc in enumerate(procs):
        proc.wait(timeout=60 * len(commands))
        assert proc.returncode == 0, (tmp / f"log{part}.txt").read_text()[-3000:]
        results.update(json.loads((tmp / f"out{part}.json").read_text()))
    assert results.keys() == commands.keys()
    return results


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(_distinct_dry_runs().values()))
def test_every_documented_run_command_composes(command, dry_runs):
    res = dry_runs[command]
    invalid = any(bad in command for bad in DOCUMENTED_INVALID) or (
        NEEDS_CUDA in command and not torch.cuda.is_available()
    )
    assert ("0 invalid" not in res["stdout"]) == invalid, res["stdout"][-3000:]
    assert "total:" in res["stdout"], res["stdout"][-3000:]


def python_blocks(doc) -> list[str]:
    return re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)


@pytest.mark.slow
def test_the_readmes_python_runs_as_written(tmp_path):
    """Each ```python block of the README, verbatim, in a fresh interpreter whose working
    directory holds the sweep it loads (outputs/sweeps/local, made small here)."""
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    sweep = [
        "+sweeps=local", "seeds=2", "optimizer.steps=40", "optimizer.checkpoint_every=20",
        f"hydra.sweep.dir={tmp_path / 'outputs' / 'sweeps' / 'local'}",
    ]  # fmt: skip
    assert run_cli(*sweep, multirun=True, **env).returncode == 0
    blocks = python_blocks(REPO / "README.md")
    assert blocks
    for code in blocks:
        res = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, code + res.stderr[-3000:]
    assert (tmp_path / "outputs" / "mine" / "runs.parquet").exists()
