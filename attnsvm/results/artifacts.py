"""A job's per-seed arrays, ``arrays.npz``: what the tables cannot hold, kept for re-analysis.

An experiment returns its arrays in ``JobResult.arrays`` (name -> array, seeds on the first
axis or, per checkpoint, the second); ``write_result`` stores them in one compressed npz,
atomically, before job.json, and records its size and SHA-256 in job.json's ``files`` like the
tables, so a re-run verifies it with them (attnsvm/results/integrity.py). ``meta`` is a JSON
string: the format, the experiment and what it needs to rebuild each seed's draw.

    arrays = read_arrays(job_dir)          # {name: np.ndarray}, verified against job.json
    meta = json.loads(str(arrays["meta"]))

The arrays gd writes are listed in docs/result-contract.md#arraysnpz.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np

# what arrays.npz keeps: never a number, so neither in a job's hash nor in its rows
ARTIFACT_KEYS = ("artifacts", "artifact_checkpoints", "artifact_max_mb")
# keys of how a job runs and what it keeps, never what it computes (out of the hash too)
NON_RESULT_KEYS = ("threads", "batch_size", "progress_interval", *ARTIFACT_KEYS)

ARRAYS = "arrays.npz"
FORMAT = 1  # the layout's version, in ``meta``


class ArtifactError(RuntimeError):
    """A job has no arrays.npz, or one that fails verification."""


def encode(arrays: dict[str, np.ndarray]) -> bytes:
    """The npz bytes of ``arrays`` (compressed; no pickled objects: strings are unicode)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    return buffer.getvalue()


def file_record(data: bytes, arrays: dict) -> dict:
    """What job.json records of the file: bytes, SHA-256 and how many arrays it holds."""
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "arrays": len(arrays)}


def meta(**fields) -> np.ndarray:
    """The ``meta`` entry: ``fields`` and the format, as one JSON string."""
    return np.array(json.dumps({"format": FORMAT, **fields}, sort_keys=True, default=str))


def read_arrays(job_dir: str | Path) -> dict[str, np.ndarray]:
    """The arrays of the finished job in ``job_dir``, loaded into memory after its bytes were
    checked against job.json's record; ``ArtifactError`` names the job and what is missing."""
    from attnsvm.results.integrity import verify_files

    job_dir = Path(job_dir)
    try:
        job = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        job = {}
    recorded = (job.get("files") or {}).get(ARRAYS) if isinstance(job, dict) else None
    if recorded is None:
        raise ArtifactError(
            f"{job_dir}: no {ARRAYS} (the job ran with artifacts=false, its arrays were over "
            "artifact_max_mb, or it ran before arrays were kept): re-run it to keep them"
        )
    problem = verify_files(job_dir, {"files": {ARRAYS: recorded}})
    if problem is not None:
        raise ArtifactError(f"{job_dir}: {problem}")
    with np.load(job_dir / ARRAYS, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def job_arrays(jobs, job) -> dict[str, np.ndarray]:
    """``read_arrays`` of the job a sweep uses (``Sweep.jobs`` rows with ``used``) named by its
    config hash or its directory; ``KeyError`` lists the config hashes it has."""
    used = jobs[jobs.used]
    match = used[(used.config_hash == str(job)) | (used.dir == str(job))]
    if match.empty:
        match = used[used.dir.map(lambda d: Path(d).resolve()) == Path(str(job)).resolve()]
    if match.empty:
        raise KeyError(f"no finished job {job!r} in the sweep; its config hashes: "
                       f"{', '.join(used.config_hash)}")  # fmt: skip
    return read_arrays(match.dir.iloc[0])


def read_meta(arrays: dict) -> dict:
    return json.loads(str(arrays["meta"]))


def draw_digest(*tensors) -> str:
    """A seed's draw in one SHA-256: its tensors' float64 bytes (X, Y, Z), so that a re-analysis
    proves the data it rebuilt from the seed is the data GD trained on."""
    h = hashlib.sha256()
    for t in tensors:
        h.update(np.ascontiguousarray(np.asarray(t, dtype=np.float64)).tobytes())
    return h.hexdigest()
