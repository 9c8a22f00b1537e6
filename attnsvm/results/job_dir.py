"""The directories a run writes: which one a job's files go to, what a refused run or sweep
removes again (the disk as it found it), and the record of a job that died outside Python.
The run entry (attnsvm/run.py), the planning (results/plan.py), the sweeper and every launcher
(local, Ray, Slurm) ask here, so that none of them imports another's module for it.

    out = claim_job_dir(out, chash)        # out, or out-<hash> when out holds another config
    record_lost_job(run, chash, out, sweep_dir, "killed by SIGKILL", exitcode=-9)
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from attnsvm.results.store import JOB, find_finished, job_record, read_job, write_json

log = logging.getLogger("attnsvm")


def other_config_dir(out: Path, chash: str) -> Path:
    """Where config ``chash`` goes when ``out`` holds another config's job (a sweep re-run
    with other values moves job numbers): ``<out>-<hash>``."""
    return out.with_name(f"{out.name}-{chash}")


def claim_job_dir(out: Path, chash: str) -> Path:
    """``out``, unless it holds another config's job: then ``other_config_dir``, made now with
    Hydra's ``.hydra/`` files, so that no other config's result is overwritten."""
    job = read_job(out)
    if job is None or job.get("config_hash") == chash:
        return out
    alt = other_config_dir(out, chash)
    alt.mkdir(parents=True, exist_ok=True)
    if (out / ".hydra").is_dir():
        shutil.copytree(out / ".hydra", alt / ".hydra", dirs_exist_ok=True)
    log.warning("%s holds config %s; job %s writes to %s", out, job.get("config_hash"), chash, alt)
    return alt


def discard_output_dir(out: Path, top: str, parents: bool = False) -> None:
    """``out`` removed if it holds only what Hydra writes before the task (``.hydra/``, the
    ``.log``) and is not ``top``, the directory the command started in; with ``parents``, the
    empty directories between them too (Hydra made them for this run)."""
    top = os.path.abspath(top)
    if not out.is_dir() or os.path.abspath(out) == top:
        return
    if not all(p.name == ".hydra" or (p.suffix == ".log" and p.is_file()) for p in out.iterdir()):
        return
    shutil.rmtree(out, ignore_errors=True)
    # a run started in the same microseconds may find its date's directory gone between
    # Hydra's two mkdirs: it fails to start, and can be run again
    parent = os.path.dirname(os.path.abspath(out))
    while parents and parent.startswith(top + os.sep):
        try:
            os.rmdir(parent)  # fails on a non-empty directory: then its parents are not empty
        except OSError:
            return
        parent = os.path.dirname(parent)


def record_lost_job(run, chash: str, out: Path, sweep_dir: Path, error: str, **extra):
    """Record in job.json that the job of ``run`` (hash ``chash``) died outside Python (killed,
    cancelled, its worker or node lost): ``status: failed``, ``error`` and ``extra``; the node its
    ``running`` record names is kept. Returns the job directory, or None when its results are
    complete (left untouched)."""
    if find_finished(chash, out, sweep_dir) is not None:
        return None
    out = claim_job_dir(out, chash)
    out.mkdir(parents=True, exist_ok=True)
    ran = read_job(out)
    if ran is not None and ran.get("config_hash") == chash and ran.get("status") == "running":
        extra = {**extra, "node": ran.get("node") or extra.get("node")}
    write_json({**job_record(run, chash), "status": "failed", "error": error, **extra}, out / JOB)
    log.error("job %s failed: %s (recorded in %s)", chash, error, out / JOB)
    return out


class Leftovers:
    """What a sweep writes before its first job: multirun.yaml, Slurm's .submitit folder, the
    sweep directory and the folders made for it. ``undo`` after a failure removes them (an
    earlier sweep's multirun.yaml restored) when nothing else was written there: a refused
    sweep, an unreachable Slurm controller or Ray cluster leaves the disk as it found it."""

    BEFORE_JOBS = ("multirun.yaml", ".submitit")

    def __init__(self, sweep_dir: Path) -> None:
        self.sweep_dir = sweep_dir.absolute()
        self.made = [d for d in (self.sweep_dir, *self.sweep_dir.parents) if not d.exists()]
        self.entries = set(os.listdir(sweep_dir)) if sweep_dir.is_dir() else set()
        yaml = sweep_dir / "multirun.yaml"
        self.yaml = yaml.read_bytes() if yaml.is_file() else None

    def undo(self) -> None:
        try:
            new = set(os.listdir(self.sweep_dir)) - self.entries
        except OSError:
            return
        if not new <= set(self.BEFORE_JOBS):
            return  # a job ran (or something else wrote here): keep everything
        if ".submitit" in new:
            shutil.rmtree(self.sweep_dir / ".submitit", ignore_errors=True)
        yaml = self.sweep_dir / "multirun.yaml"
        try:
            if self.yaml is None:
                yaml.unlink(missing_ok=True)
            elif yaml.read_bytes() != self.yaml:
                yaml.write_bytes(self.yaml)
            for made in self.made:  # the sweep directory and the folders made for it
                made.rmdir()  # fails, leaving it, once one holds anything else
        except OSError:
            pass
