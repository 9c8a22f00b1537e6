"""Run ``python -m attnsvm.run`` in a subprocess and read a sweep's tables back.

Shared by the end-to-end tests (resume, failures, launchers, bad input).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
# A small, quick job: what the end-to-end tests sweep over.
SMALL = ["seeds=3", "optimizer.steps=60", "optimizer.checkpoint_every=20", "dataset.n=4"]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess: this checkout first on the path, Hydra errors short."""
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return {**env, **extra}


# A sweep of the default launcher runs on one worker unless a test asks for more: the tests
# already keep every core busy (pytest-xdist), so a second worker would only import torch again.
ONE_WORKER = "hydra.launcher.n_jobs=1"


def attnsvm_cmd(*overrides: str, multirun: bool = False) -> list[str]:
    chosen = any(o.startswith(("hydra/launcher=", "hydra.launcher.")) for o in overrides)
    extra = [ONE_WORKER] if multirun and not chosen else []
    return [sys.executable, "-m", "attnsvm.run", *(["-m"] if multirun else []), *overrides, *extra]


def run_cli(*overrides: str, multirun: bool = False, timeout: float = 300, **env: str):
    """Run attnsvm.run to completion; returns the CompletedProcess (stdout and stderr merged)."""
    return subprocess.run(
        attnsvm_cmd(*overrides, multirun=multirun),
        cwd=REPO,
        env=cli_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


def timing_columns(df: pd.DataFrame) -> list[str]:
    """Wall-clock columns: the only ones allowed to differ between two runs of a config."""
    return [c for c in df.columns if c.endswith("seconds")]


def job_dirs(sweep_dir: Path) -> list[Path]:
    """Every directory under the sweep that holds a job.json."""
    return sorted(p.parent for p in Path(sweep_dir).rglob("job.json"))


def read_job_json(job_dir: Path) -> dict:
    return json.loads((Path(job_dir) / "job.json").read_text())


def sweep_table(sweep_dir: Path, name: str = "runs.parquet") -> pd.DataFrame:
    """All finished jobs' rows, timing columns dropped, in a canonical order."""
    frames = [
        pd.read_parquet(d / name)
        for d in job_dirs(sweep_dir)
        if read_job_json(d)["status"] == "finished"
    ]
    df = pd.concat(frames, ignore_index=True)
    df = df.drop(columns=timing_columns(df))
    keys = ["config_hash", "seed"] + (["step"] if "step" in df else [])
    return df.sort_values(keys).reset_index(drop=True)


def assert_same_tables(got_dir: Path, want_dir: Path) -> None:
    """runs and trajectory of two sweeps identical bit for bit, config hash by config hash."""
    from bits import assert_frames_identical

    for name in ("runs.parquet", "trajectory.parquet"):
        got, want = sweep_table(got_dir, name), sweep_table(want_dir, name)
        assert sorted(set(got.config_hash)) == sorted(set(want.config_hash)), name
        for chash, rows in want.groupby("config_hash"):
            mine = got[got.config_hash == chash].reset_index(drop=True)
            assert_frames_identical(mine, rows.reset_index(drop=True), f"{name} {chash}")
