"""Small sweep directories built in-process, laid out as ``python -m attnsvm.run -m`` lays them
out (job dirs with .hydra/overrides.yaml and the result contract, multirun.yaml), for the query
and report tests. The jobs are real (attnsvm.run_job); only Hydra's bookkeeping files are
written here, with the keys the report reads."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from attnsvm.api import run_job
from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import OptimizerConfig, ParameterizationConfig
from attnsvm.config.checks import plain
from attnsvm.results.store import JOB, write_json

FIXED = ["seeds=3", "optimizer.steps=60"]


def config(d: int, kind: str, train: bool = True) -> RunConfig:
    return RunConfig(
        train=train,
        seeds=3,
        dataset=DatasetConfig(n=4, T=4, d=d),
        parameterization=ParameterizationConfig(kind=kind),
        optimizer=OptimizerConfig(steps=60, checkpoint_every=20),
    )


def write_multirun(sweep: Path, task: list[str]) -> None:
    hydra = {
        "sweep": {"dir": str(sweep), "subdir": "${hydra.job.num}"},
        "sweeper": {
            "_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
            "max_batch_size": None,
            "params": None,
        },
        "overrides": {"hydra": [f"hydra.sweep.dir={sweep}", "hydra.mode=MULTIRUN"], "task": task},
    }
    sweep.mkdir(parents=True, exist_ok=True)
    (sweep / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra}))


def write_overrides(job_dir: Path, overrides: list[str]) -> None:
    (job_dir / ".hydra").mkdir(parents=True, exist_ok=True)
    (job_dir / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))


def make_sweep(sweep: Path, ds=(2, 4), kinds=("w", "kq"), train: bool = True) -> list[Path]:
    """Every grid point (d, parameterization) run and finished; returns the job dirs."""
    write_multirun(
        sweep,
        [f"dataset.d={','.join(map(str, ds))}", f"parameterization={','.join(kinds)}", *FIXED],
    )
    dirs = []
    for num, (d, kind) in enumerate(itertools.product(ds, kinds)):
        job_dir = sweep / str(num)
        write_overrides(job_dir, [f"dataset.d={d}", f"parameterization={kind}", *FIXED])
        run_job(config(d, kind, train), out_dir=job_dir)
        dirs.append(job_dir)
    return dirs


def make_troubled_sweep(sweep: Path) -> dict[str, Path]:
    """A grid d=2,4,8 x parameterization=w,kq: (2, w) and (2, kq) finished, (4, w) failed,
    (4, kq) still running, (8, w) a directory without job.json (its run.log says why) and
    (8, kq) never reached; returns the job dirs by "d-kind"."""
    write_multirun(sweep, ["dataset.d=2,4,8", "parameterization=w,kq", *FIXED])
    jobs = {}
    for num, (d, kind) in enumerate(list(itertools.product((2, 4, 8), ("w", "kq")))[:5]):
        jobs[f"{d}-{kind}"] = sweep / str(num)
        write_overrides(jobs[f"{d}-{kind}"], [f"dataset.d={d}", f"parameterization={kind}", *FIXED])
    for kind in ("w", "kq"):
        run_job(config(2, kind), out_dir=jobs[f"2-{kind}"])
    failed = {"config": plain(config(4, "w")), "status": "failed", "error": "RuntimeError('boom')"}
    write_json(failed, jobs["4-w"] / JOB)
    write_json({"config": plain(config(4, "kq")), "status": "running"}, jobs["4-kq"] / JOB)
    (jobs["8-w"] / "run.log").write_text("starting\nattnsvm: invalid config: no such key\n")
    return jobs


@contextlib.contextmanager
def read_only(root: Path):
    """``root`` and everything below it read-only while the block runs: mode a-w, and for root
    (who writes through modes) the immutable attribute too (chattr +i; skips where the file
    system has none). Restored at the end whatever happened."""
    paths = [root, *sorted(root.rglob("*"))]
    modes = {p: p.stat().st_mode for p in paths}
    for p in reversed(paths):
        p.chmod(modes[p] & ~0o222)
    immutable = os.geteuid() == 0
    if immutable:
        res = subprocess.run(["chattr", "-R", "+i", str(root)], capture_output=True, check=False)
        if res.returncode != 0:
            for p in paths:
                p.chmod(modes[p])
            pytest.skip(f"running as root and chattr +i fails here: {res.stderr.strip()}")
    try:
        yield root
    finally:
        if immutable:
            subprocess.run(["chattr", "-R", "-i", str(root)], check=False)
        for p in paths:
            p.chmod(modes[p])
