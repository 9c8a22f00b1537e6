"""A computed job's results, written by whoever holds them: the job's own process, or a local
sweep's process so that its worker starts the next job at once.

Writing a job's tables (pandas to parquet for a runs table of ~125 columns) and printing its
summary cost tens of milliseconds of Python per job, as much as a small job computes. A local
sweep with a core to spare (fewer workers than cores) has its worker hand the ``Computed`` job
back instead (a ~20 kB pickle) and the sweep's own process, idle while its workers compute,
writes it: the worker's next job starts while the last one's files are written. With a worker
on every core there is no idle core, and one process writing every job's files would bound
the sweep's throughput: each worker writes its own. What is written is the same, in the same
order (tables, then job.json ``finished``, then the sweep's index), so a kill at any instant
leaves what a kill of the worker would: a job that is not ``finished`` is computed again on
resume.

    done = execute(..., hand_off=True)    # in the worker: a Computed, nothing written yet
    status = deliver(done)                # in the sweep's process: "finished"
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WRITERS = ("pandas", "attnsvm.results.parquet", "attnsvm.results.store")  # what ``write`` imports


@dataclass
class Computed:
    """One job computed, its files not yet written."""

    out: Path  # its job directory
    job: dict  # job.json's identity part (results.store.job_record)
    result: Any  # the JobResult
    sweep_dir: Path | None  # where its finished record goes (None: a single run)
    experiment: str  # whose summary_text prints it


def write(done: Computed) -> None:
    """The result contract on disk (tables, then job.json ``finished``), then the sweep's index."""
    from attnsvm.results.store import mark_finished, write_result

    write_result(done.out, done.job, done.result)
    if done.sweep_dir is not None:
        mark_finished(done.sweep_dir, done.job["config_hash"], done.out)


def report(done: Computed) -> None:
    """The experiment's summary of the job and where its results are, on stdout."""
    from attnsvm.experiments import entry

    print(entry(done.experiment).summary_text(done.result.runs, done.result.seconds))
    print(f"  results: {done.out}")


def deliver(done: Computed) -> str:
    """``write`` then ``report``: what the job's own process would have done; its status."""
    write(done)
    report(done)
    return "finished"


def import_writers() -> None:
    """Import what ``deliver`` needs (pandas, pyarrow: a second or more), in a sweep's process
    that has jobs to run, while its workers start: else the first job's tables would be
    written while the worker waits for its next job."""
    for module in WRITERS:
        importlib.import_module(module)
