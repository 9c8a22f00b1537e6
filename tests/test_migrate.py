"""Old sweeps resume: a sweep directory written when every job config held every group (gd's
and every experiment's) is carried to each experiment's own job config (attnsvm/composition/
migrate.py) and re-runs as ``0 run, N skipped``; the old identities are recomputed exactly
(``legacy_hash``), and gd's never changed (tests/test_golden.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import attnsvm
from attnsvm.composition.identity import legacy_hash
from attnsvm.composition.migrate import migrate_sweep
from cli_helpers import job_dirs, read_job_json, run_cli

DATA = Path(__file__).parent / "data"
LEGACY = json.loads((DATA / "legacy_hashes.json").read_text())  # the golden cases' old hashes
# the commands that wrote tests/data/old_sweeps/<name> with the code before the change
OLD = {
    "rankdyn": ["experiment=rankdyn", "seeds=2", "rankdyn.steps=20", "rankdyn.checkpoints=4",
                "rankdyn.alpha=1,0.1", "rankdyn.parameterization=kq"],
    "icl": ["experiment=icl", "seeds=2", "icl.steps=10", "icl.checkpoint_every=5", "icl.batch=20",
            "icl.test_prompts=20", "icl.fit_prompts=40", "icl.N=3,5"],
    "benign": ["experiment=benign", "seeds=2", "benign.steps=10", "benign.n=10", "benign.d=40",
               "benign.test=20", "benign.snr=0.5,1"],
    "regpath": ["experiment=regpath", "seeds=2", "regpath.points=3", "regpath.steps=20",
                "dataset.d=4", "parameterization=w,kq"],
    "multitoken": ["experiment=multitoken", "dataset=relu", "head=relu", "seeds=2",
                   "optimizer.steps=40", "optimizer.checkpoint_every=10", "dataset.d=4,6"],
    "nexttoken": ["experiment=nexttoken", "dataset=nexttoken", "seeds=2", "optimizer.steps=40",
                  "optimizer.checkpoint_every=10", "dataset.K=4,6"],
}  # fmt: skip
UNREAD = ("dataset.", "optimizer.", "parameterization.", "head.", "metrics.", "regpath.")
UNREAD += ("multitoken.",)
SHORT = ("seeds=2", "optimizer.steps=40", "optimizer.checkpoint_every=10")
SHORT += ("multitoken.target_accepted=null", "regpath.steps=20", "regpath.points=3")


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_the_old_identity_is_recomputed_exactly(name):
    """Every golden case of an experiment other than gd: its hash before each experiment had
    its own job config, from the config it composes now."""
    case = LEGACY[name]
    full = [o for o in case["overrides"] if o not in SHORT]
    assert legacy_hash(attnsvm.compose(full)) == case["full_hash"]
    assert legacy_hash(attnsvm.compose(case["overrides"])) == case["hash"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OLD))
def test_an_old_sweep_resumes_with_every_job_skipped(name, tmp_path):
    sweep = tmp_path / name
    shutil.copytree(DATA / "old_sweeps" / name, sweep)
    old = {d.name: read_job_json(d)["config_hash"] for d in job_dirs(sweep)}
    res = run_cli(*OLD[name], f"hydra.sweep.dir={sweep}", multirun=True)
    assert res.returncode == 0, res.stdout
    assert "0 run, 2 skipped" in res.stdout, res.stdout
    for job in job_dirs(sweep):
        record = read_job_json(job)
        assert record["migrated_from"] == old[job.name] != record["config_hash"]
        runs = pd.read_parquet(job / "runs.parquet")
        assert set(runs.config_hash) == {record["config_hash"]}
        if name in ("rankdyn", "icl", "benign"):  # no group of gd's: none of their columns
            assert not [c for c in runs if c.startswith(UNREAD)], list(runs)
            assert "parameterization" not in runs and "optimizer" not in runs
        if name == "icl":
            assert not {"n", "T", "d"} & set(runs), list(runs)
    again = run_cli(*OLD[name], f"hydra.sweep.dir={sweep}", multirun=True)
    assert "0 run, 2 skipped" in again.stdout, again.stdout


def test_a_new_sweep_is_left_alone(tmp_path):
    assert migrate_sweep(tmp_path / "none") == []
