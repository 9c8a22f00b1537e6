"""Finished means verified: a job's result files are checked against what job.json recorded.

``write_result`` records each table's size, SHA-256 and row count in job.json (``files``); a
re-run skips a job only when its files still match, so a truncated or overwritten table is
recomputed instead of trusted. A job.json written before these records existed is checked by
reading each parquet file's footer (a truncated file has none).

    job["files"] = record_files(out, [RUNS, TRAJECTORY])
    problem = verify_files(out, job)      # None, or what is wrong ("runs.parquet: 1203 bytes,
                                          # job.json recorded 4711")
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq


def sha256_of(path: Path) -> str:
    """The file's SHA-256, read in blocks (trajectories can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record_files(job_dir: Path, names: list[str]) -> dict[str, dict]:
    """{file name: {"bytes", "sha256", "rows"}} of the tables just written to ``job_dir``."""
    job_dir = Path(job_dir)
    return {
        name: {
            "bytes": (job_dir / name).stat().st_size,
            "sha256": sha256_of(job_dir / name),
            "rows": pq.read_metadata(job_dir / name).num_rows,
        }
        for name in names
    }


def _check_recorded(path: Path, want: dict) -> str | None:
    size = path.stat().st_size
    if size != want.get("bytes"):
        return f"{path.name}: {size} bytes, job.json recorded {want.get('bytes')}"
    if sha256_of(path) != want.get("sha256"):
        return f"{path.name}: its SHA-256 differs from the one job.json recorded"
    return None


def _check_footer(path: Path) -> str | None:
    """A parquet file without a readable footer is truncated or not parquet at all."""
    try:
        pq.read_metadata(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for a broken file
        return f"{path.name}: unreadable parquet ({type(exc).__name__}: {exc})"
    return None


def verify_files(job_dir: Path, job: dict, required: tuple[str, ...] = ()) -> str | None:
    """None when every result file of ``job`` (its job.json record) is intact in ``job_dir``;
    else one line saying which file is missing or differs and how. ``required`` tables must
    exist even when job.json records no files (written before the records existed)."""
    job_dir = Path(job_dir)
    recorded = job.get("files")
    names = list(recorded) if isinstance(recorded, dict) else []
    names += [n for n in required if n not in names]
    for name in names:
        path = job_dir / name
        if not path.is_file():
            return f"{name} is missing"
        want = recorded.get(name) if isinstance(recorded, dict) else None
        problem = _check_recorded(path, want) if isinstance(want, dict) else _check_footer(path)
        if problem is not None:
            return problem
    return None


def verified(item: tuple[Path, dict]) -> tuple[Path, dict]:
    """(job dir, job.json record) of ``results.scan_jobs``, a finished job whose files fail
    verification marked ``broken`` with what is wrong: readers use the others, and say so."""
    job_dir, job = item
    if job.get("status") != "finished":
        return item
    problem = verify_files(job_dir, job, ("runs.parquet", "trajectory.parquet"))
    if problem is None:
        return item
    return job_dir, {**job, "status": "broken", "error": f"{problem}: re-run to recompute it"}
