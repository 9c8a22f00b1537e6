"""Docs that cannot go stale: the README's speed table is the rendering of the bench's results
file, docs/benchmarks.json (rewrite both with ``python -m attnsvm.bench --readme README.md``),
and every ``python -m attnsvm.run`` command of the README and docs/ composes (a dry run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from attnsvm.bench import README_MARKERS, readme_table
from cli_helpers import run_cli
from conftest import REPO


def test_readme_speed_table_is_the_bench_results_file():
    record = json.loads((REPO / "docs" / "benchmarks.json").read_text())
    readme = (REPO / "README.md").read_text()
    start, end = README_MARKERS
    block = readme.split(start, 1)[1].split(end, 1)[0].strip()
    assert block == readme_table(record), "run: python -m attnsvm.bench --readme README.md"


# ---- every documented command composes (a dry run: nothing trains) --------------------------
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# the README's hypothetical plug-ins -> the runnable examples in tests/
EXAMPLES = {
    "mylab.data.make": "userdata_example.make",
    "mylab.my_experiment": "experiment_example",
    "mylab.heads.make": "head_example.make",
    "mylab.optim.make": "optim_example.make",
    "my_tokens.npz": str(REPO / "tests" / "data" / "tiny.npz"),
}
DOCUMENTED_INVALID = {"dataset.T=8,1"}  # the docs' own example of an invalid sweep point


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


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(_distinct_dry_runs().values()))
def test_every_documented_run_command_composes(command, tmp_path):
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    res = run_cli(*_dry_run_args(command, tmp_path / "sweep"), timeout=120, **env)
    invalid = any(bad in command for bad in DOCUMENTED_INVALID)
    assert ("0 invalid" not in res.stdout) == invalid, res.stdout[-3000:]
    assert "total:" in res.stdout, res.stdout[-3000:]


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
