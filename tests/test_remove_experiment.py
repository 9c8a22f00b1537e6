"""An experiment is a package the registry finds, not a part of the core: delete one (gd, icl,
rankdyn in turn) from a copy of the tree and the others still compose, run and write their
results. Each case copies attnsvm/, conf/ and hydra_plugins/ into tmp_path, removes
attnsvm/experiments/<name>/ and runs ``python -m attnsvm.run`` in a subprocess whose
PYTHONPATH is the copy (checked: the copy's attnsvm is the one imported)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cli_helpers import REPO, cli_env

TINY = {  # a job of a few seconds per experiment
    "gd": ["experiment=gd", "seeds=2", "optimizer.steps=20", "optimizer.checkpoint_every=10",
           "dataset.n=3", "dataset.T=3", "dataset.d=3"],
    "icl": ["experiment=icl", "seeds=2", "icl.steps=10", "icl.checkpoint_every=5",
            "icl.batch=20", "icl.test_prompts=20", "icl.fit_prompts=40"],
    "rankdyn": ["experiment=rankdyn", "seeds=2", "rankdyn.steps=20", "rankdyn.checkpoints=4"],
}  # fmt: skip
REMOVED = ("gd", "icl", "rankdyn")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "build")


def _copy_without(tmp: Path, name: str | None) -> Path:
    """attnsvm/, conf/ and hydra_plugins/ under ``tmp/tree``, without experiment ``name``
    (None: all of them)."""
    tree = tmp / "tree"
    for part in ("attnsvm", "conf", "hydra_plugins"):
        shutil.copytree(REPO / part, tree / part, ignore=IGNORE)
    for so in (REPO / "attnsvm").rglob("*.so"):  # a built fused kernel, where there is one
        shutil.copy2(so, tree / so.relative_to(REPO))
    if name is not None:
        shutil.rmtree(tree / "attnsvm" / "experiments" / name)
    return tree


def _run(tree: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = cli_env()
    env["PYTHONPATH"] = str(tree)  # the copy only, not this checkout
    return subprocess.run(
        [sys.executable, *args],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("removed", REMOVED)
def test_the_other_experiments_run_without_one(tmp_path, removed):
    tree = _copy_without(tmp_path, removed)
    probe = "import attnsvm.experiments as e; print(e.__file__); print(*e.builtin_names())"
    proc = _run(tree, "-c", probe)
    assert proc.returncode == 0, proc.stdout
    where, names = proc.stdout.splitlines()[-2:]
    assert Path(where).is_relative_to(tree), where  # the copy, not the installed checkout
    assert removed not in names.split() and names.split(), names
    for other in [n for n in REMOVED if n != removed]:
        out = tmp_path / other
        proc = _run(tree, "-m", "attnsvm.run", *TINY[other], f"hydra.run.dir={out}")
        assert proc.returncode == 0, f"experiment={other} without {removed}:\n{proc.stdout}"
        runs = pd.read_parquet(out / "runs.parquet")
        assert len(runs) == 2 and set(runs.experiment) == {other}
        assert (out / "job.json").is_file()


@pytest.mark.parametrize(
    "removed,overrides",
    [
        ("rankdyn", ["experiment=rankdyn", "seeds=2"]),
        ("gd", ["seeds=2"]),
    ],  # asked for; the default experiment
    ids=["asked", "default"],
)
def test_a_removed_experiment_is_refused_clearly(tmp_path, removed, overrides):
    """Asking for the deleted one, or leaving the default experiment when it is the deleted
    one, names what is accepted instead of failing deep inside."""
    tree = _copy_without(tmp_path, removed)
    proc = _run(tree, "-m", "attnsvm.run", *overrides, f"hydra.run.dir={tmp_path / 'x'}")
    assert proc.returncode != 0
    refused = (
        f"experiment='{removed}' is invalid"
        if "experiment=" in overrides[0]
        else ("experiment is not set and no built-in experiment is the default")
    )
    assert refused in proc.stdout, proc.stdout
    assert "accepted values are" in proc.stdout and "icl" in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stdout, proc.stdout
