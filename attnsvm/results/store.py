"""The result contract on disk: runs.parquet, trajectory.parquet, job.json, written atomically.

A job's identity is the hash of its resolved config less the keys that cannot change a number
(threads, batch_size, progress_interval). Each file is written to a temporary name and renamed,
and job.json comes last, so a job killed at any instant leaves either complete results or none.

In a sweep, a finished job also drops a marker ``<sweep dir>/.finished/<hash>`` naming its job
directory, so a re-run finds finished work by config hash, whatever job number or directory the
launcher gives it this time:

    done = find_finished(chash, job_dir, sweep_dir)   # Path of the finished results, or None
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from attnsvm.config.constraints import plain_read
from attnsvm.results.integrity import verify_files

if TYPE_CHECKING:  # a sweep's own process plans and records without pandas
    import pandas as pd

RUNS, TRAJECTORY, JOB = "runs.parquet", "trajectory.parquet", "job.json"
FINISHED_INDEX = ".finished"  # in a sweep dir: one file per finished config hash


def _atomic(path: Path, data: bytes) -> None:
    """``data`` into a temporary file, then renamed over ``path``: readers see the old file or
    the new one. One open, one write (a sweep's worker writes four files a job).

    The temporary file is created with mode 0666 less the umask (0644 under umask 022), like
    any file the user writes; mkstemp's private 0600 would hide results from collaborators."""
    tmp = str(path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    try:
        with open(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def write_table(df: pd.DataFrame, path: Path) -> dict:
    """``df`` as parquet at ``path``, atomically; returns what job.json records of the file
    (``integrity.record_files``: bytes, SHA-256, rows), from the bytes written, not re-read."""
    buffer = io.BytesIO()
    df.to_parquet(buffer, index=False)
    data = buffer.getvalue()
    _atomic(Path(path), data)
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "rows": len(df)}


def write_json(obj: dict, path: Path) -> None:
    _atomic(Path(path), json.dumps(obj, indent=2, default=str).encode())


def read_job(job_dir: Path) -> dict | None:
    """job.json of ``job_dir``, or None when there is none or it is not JSON (invalid, or not
    UTF-8 text: a ``ValueError`` either way), so that the job is computed again."""
    path = Path(job_dir) / JOB
    try:
        with open(path, encoding="utf-8") as fh:
            job = json.load(fh)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    return job if isinstance(job, dict) else None  # e.g. `[]`: not a record of ours


def scan_jobs(sweep_dir: Path) -> Iterator[tuple[Path, dict]]:
    """(job dir, job.json record) for every job below ``sweep_dir``, in path order; a file
    that cannot be read gives status ``unreadable``, so summaries list it instead of losing it."""
    for path in sorted(Path(sweep_dir).rglob(JOB)):
        try:
            with open(path, encoding="utf-8") as fh:
                job = json.load(fh)
        except (OSError, ValueError) as exc:  # ValueError: invalid JSON or not UTF-8 text
            job = {"status": "unreadable", "error": f"{path}: {type(exc).__name__}: {exc}"}
        yield path.parent, job if isinstance(job, dict) else {"status": "unreadable"}


def claims_finished(job_dir: Path, chash: str) -> dict | None:
    """job.json of ``job_dir`` when it says config ``chash`` finished there (files unchecked)."""
    job = read_job(job_dir)
    ok = job is not None and job.get("config_hash") == chash and job.get("status") == "finished"
    return job if ok else None


def is_finished(job_dir: Path, chash: str) -> bool:
    """Complete results for this config hash exist in ``job_dir``: job.json says finished and
    every result file matches what it recorded (``attnsvm.results.integrity``)."""
    job = claims_finished(job_dir, chash)
    return job is not None and verify_files(job_dir, job, (RUNS, TRAJECTORY)) is None


def mark_finished(sweep_dir: Path, chash: str, job_dir: Path) -> None:
    """Record in the sweep's index that ``job_dir`` holds the finished results of ``chash``."""
    index = Path(sweep_dir) / FINISHED_INDEX
    index.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(Path(job_dir).resolve(), Path(sweep_dir).resolve())
    _atomic(index / chash, f"{rel}\n".encode())


def finished_index(sweep_dir: Path) -> dict[str, str]:
    """The sweep's index in one scan: config hash -> the job directory its marker names
    (relative to the sweep dir); empty where there is none."""
    index = Path(sweep_dir) / FINISHED_INDEX
    try:
        names = os.listdir(index)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out = {}
    for name in names:
        if not name.startswith("."):  # a marker being written: .<hash>.<uuid>.tmp
            try:
                out[name] = (index / name).read_text().strip()
            except OSError:
                pass
    return out


def find_finished(
    chash: str, job_dir: Path, sweep_dir: Path | None = None, index: dict | None = None
) -> Path | None:
    """Where the finished results of config ``chash`` are: ``job_dir`` itself, else the job
    directory the sweep's index names for this hash (verified, never trusted blindly);
    ``index``: the sweep's index as ``finished_index`` read it (else its marker is read)."""
    if is_finished(job_dir, chash):
        return Path(job_dir)
    if sweep_dir is None:
        return None
    if index is not None:
        rel = index.get(chash)
        if rel is None:
            return None
        target = Path(sweep_dir) / rel
        return target if is_finished(target, chash) else None
    marker = Path(sweep_dir) / FINISHED_INDEX / chash
    try:
        target = Path(sweep_dir) / marker.read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return target if is_finished(target, chash) else None


def find_broken(chash: str, job_dir: Path, sweep_dir: Path | None = None):
    """(directory, what is wrong) of a job of ``chash`` that says it finished but whose files
    fail verification: ``job_dir`` itself, else where the sweep's index points; or None."""
    places = [Path(job_dir)]
    if sweep_dir is not None:
        try:
            marker = Path(sweep_dir) / FINISHED_INDEX / chash
            places.append(Path(sweep_dir) / marker.read_text().strip())
        except (FileNotFoundError, NotADirectoryError):
            pass
    for place in places:
        job = claims_finished(place, chash)
        problem = None if job is None else verify_files(place, job, (RUNS, TRAJECTORY))
        if problem is not None:
            return place, problem
    return None


def remove_stale_temps(job_dir: Path) -> list[Path]:
    """Delete temporary files a killed writer left in ``job_dir``; returns what was removed."""
    stale = [p for p in Path(job_dir).glob(".*.tmp") if p.is_file()]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def job_record(cfg, chash: str) -> dict:
    """job.json's identity part: config hash ``chash`` (composition/identity.py), resolved
    config, package versions, start time, and the node it runs on ($ATTNSVM_NODE, which the Ray
    launcher sets; else the host name)."""
    from attnsvm.results.versions import versions

    return {
        "config_hash": chash,
        "config": plain_read(cfg),  # the keys that acted
        "versions": versions(),
        "started": time.time(),
        "node": os.environ.get("ATTNSVM_NODE") or socket.gethostname(),
    }


def write_result(out: Path, job: dict, result) -> None:
    """The result contract of a finished job (a ``pipeline.JobResult``): runs.parquet,
    trajectory.parquet, any extra tables, its arrays.npz, then job.json saying ``finished``
    (written last)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {RUNS: write_table(result.runs, out / RUNS)}  # what a re-run verifies: its files
    files[TRAJECTORY] = write_table(result.trajectory, out / TRAJECTORY)
    for name, table in result.extra.items():  # e.g. paths.parquet, tokens.parquet
        files[f"{name}.parquet"] = write_table(table, out / f"{name}.parquet")
    if result.arrays:  # arrays.npz: verified like the tables (attnsvm/results/artifacts.py)
        from attnsvm.results import artifacts

        data = artifacts.encode(result.arrays)
        _atomic(out / artifacts.ARRAYS, data)
        files[artifacts.ARRAYS] = artifacts.file_record(data, result.arrays)
    seed_status = result.runs.status.value_counts().to_dict()
    write_json(
        {**job, "status": "finished", "seconds": result.seconds, "seed_status": seed_status,
         "files": files},
        out / JOB,
    )  # fmt: skip
