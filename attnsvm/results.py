"""The result contract on disk: runs.parquet, trajectory.parquet, job.json, written atomically.

A job's identity is the hash of its resolved config less the keys that cannot change a number
(threads, batch_size). Each file is written to a temporary name and renamed, and job.json
comes last, so a job killed at any instant leaves either complete results or none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from enum import Enum
from pathlib import Path

import pandas as pd

RUNS, TRAJECTORY, JOB = "runs.parquet", "trajectory.parquet", "job.json"
NON_RESULT_KEYS = ("threads", "batch_size")


def plain(obj):
    """Dataclasses and enums as JSON-ready dicts and strings."""
    if dataclasses.is_dataclass(obj):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    return obj


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(flatten(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def config_hash(cfg) -> str:
    """Stable 16-hex-digit identity of a run config (results-relevant keys only)."""
    d = plain(cfg)
    for k in NON_RESULT_KEYS:
        d.pop(k, None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def _atomic(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_table(df: pd.DataFrame, path: Path) -> None:
    _atomic(Path(path), lambda tmp: df.to_parquet(tmp, index=False))


def write_json(obj: dict, path: Path) -> None:
    def dump(tmp):
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=2, default=str)

    _atomic(Path(path), dump)


def read_job(job_dir: Path) -> dict | None:
    path = Path(job_dir) / JOB
    if not path.exists():
        return None
    with open(path) as fh:
        return json.load(fh)


def is_finished(job_dir: Path, chash: str) -> bool:
    """Complete results for this config hash already exist in ``job_dir``."""
    job = read_job(job_dir)
    return (
        job is not None
        and job.get("config_hash") == chash
        and job.get("status") == "finished"
        and (Path(job_dir) / RUNS).exists()
        and (Path(job_dir) / TRAJECTORY).exists()
    )
