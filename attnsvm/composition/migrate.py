"""Old sweeps carried to their experiment's own job config, so that they resume.

Before each experiment had its own job config, every job's config held every group (the data
set, parameterization, optimizer, ... and every experiment's), at their defaults where the
experiment did not read them, and its hash and rows held them all. A finished job of such a
sweep is rewritten in place to what the same job writes now: job.json's config and hash, its
tables without the columns of keys its job config lacks (and ``config_hash`` the new one), and
the sweep's finished index; job.json records the old hash as ``migrated_from``. A job is
carried only when its recorded hash is the old identity of the config it becomes
(``identity.legacy_hash``), so nothing that acted is dropped; the default experiment's
identities never changed (its ``hash_legacy``).

    migrate_sweep(sweep_dir)   # the job dirs carried over; the sweep resumes

The sweeper calls it before it plans a writable sweep (hydra_plugins/attnsvm_local/sweeper.py);
``python -m attnsvm.composition.migrate DIR`` does it by hand.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from attnsvm.composition.compose import run_config_from_plain
from attnsvm.composition.identity import config_hash, legacy_hash
from attnsvm.config.checks import ConfigError, flatten, plain
from attnsvm.experiments import default_name, entry, has_key
from attnsvm.results.columns import columns_of
from attnsvm.results.integrity import verify_files
from attnsvm.results.store import (
    FINISHED_INDEX,
    JOB,
    RUNS,
    TRAJECTORY,
    finished_index,
    mark_finished,
    read_job,
    write_json,
    write_table,
)

log = logging.getLogger(__name__)
DONE = ".job-configs"  # in the finished index: every finished job was looked at once
SHORT_NAMES = ("n", "T", "d", "attention", "parameterization", "head", "optimizer")
SHORT_NAMES += ("train_engine", "loss_function")


def _new_run(config: dict):
    """The run an old job's config becomes: the keys of its experiment's job config."""
    module = entry(config.get("experiment") or default_name())
    kept = {k: v for k, v in config.items() if has_key(module, k)}
    return module, (None if kept == config else run_config_from_plain(kept))


def _dropped(table, old: dict, new_columns: set, axes: tuple) -> list[str]:
    """The columns of an old table that the old config wrote and the new one does not: its
    short names and dotted keys, less the experiment's own axes (its n, T, d)."""
    old_names = {*flatten(old), *SHORT_NAMES}
    return [c for c in table if c in old_names and c not in new_columns and c not in axes]


def migrate_job(sweep_dir: Path, job_dir: Path) -> bool:
    """Carry one finished job over (module doc); False where it is not an old job of ours."""
    import pandas as pd

    from attnsvm.experiments.config_columns import config_columns

    job = read_job(job_dir)
    if job is None or job.get("status") != "finished" or "config" not in job:
        return False
    try:
        module, run = _new_run(job["config"])
    except ConfigError:
        return False
    old_hash = job.get("config_hash")
    if run is None or legacy_hash(run) != old_hash:
        return False
    if verify_files(job_dir, job, (RUNS, TRAJECTORY)) is not None:
        return False  # broken results: the sweep recomputes them
    new_hash, new_columns = config_hash(run), set(config_columns(run))
    files = {}
    for name in job.get("files", {}) or (RUNS, TRAJECTORY):
        table = pd.read_parquet(job_dir / name)
        axes = columns_of(module, table).axes if name == RUNS else tuple(SHORT_NAMES[:3])
        table = table.drop(columns=_dropped(table, job["config"], new_columns, axes))
        if "config_hash" in table:
            table["config_hash"] = new_hash
        files[name] = write_table(table, job_dir / name)
    record = {**job, "config_hash": new_hash, "config": plain(run), "files": files}
    write_json({**record, "migrated_from": old_hash}, job_dir / JOB)
    mark_finished(sweep_dir, new_hash, job_dir)
    log.info("job %s in %s carried to %s (its job config)", old_hash, job_dir, new_hash)
    return True


def migrate_sweep(sweep_dir: str | Path) -> list[Path]:
    """Carry every finished old job of ``sweep_dir`` over (module doc), once: afterwards the
    finished index says so and a sweep's start reads nothing more. Returns the jobs carried."""
    sweep_dir = Path(sweep_dir)
    index = sweep_dir / FINISHED_INDEX
    if not index.is_dir() or (index / DONE).exists():
        return []
    done = []
    for rel in sorted(set(finished_index(sweep_dir).values())):
        if migrate_job(sweep_dir, sweep_dir / rel):
            done.append(sweep_dir / rel)
    (index / DONE).write_text("every finished job has its experiment's own job config\n")
    return done


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m attnsvm.composition.migrate SWEEP_DIR", file=sys.stderr)
        return 2
    done = migrate_sweep(argv[0])
    print(f"attnsvm: {len(done)} jobs of {argv[0]} carried to their experiment's job config")
    return 0


if __name__ == "__main__":
    sys.exit(main())
