"""Hydra entry point: compose -> validate -> run_job -> write the result contract.

python -m attnsvm.run                                   # GD vs SVM, n=6 T=8 d=10, 8 seeds
python -m attnsvm.run parameterization=kq dataset.d=20 optimizer.steps=5000 seeds=50
python -m attnsvm.run -m dataset.d=2,4,8,16 parameterization=w,kq   # a parallel sweep
python -m attnsvm.run -m dataset.d=2,4,8,16 hydra.sweep.dir=outputs/multirun/<stamp>   # resume

A job whose finished results already exist in the sweep (same config hash, any job directory)
is skipped; a missing, killed or failed one is recomputed. docs/scaling.md has the details.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from importlib import resources
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from attnsvm.composition.compose import check_override_keys, register_configs, to_run_config
from attnsvm.composition.identity import config_hash
from attnsvm.config.checks import ConfigError
from attnsvm.config.input_checks import check_group_options, check_output_dir_overrides
from attnsvm.config.schema import CONF_MODULE
from attnsvm.data.sets import preflight
from attnsvm.interrupt import JobInterrupted, exit_now, interruptible
from attnsvm.progress import Progress
from attnsvm.results.claim import claimed
from attnsvm.results.job_dir import claim_job_dir, discard_output_dir
from attnsvm.results.store import (
    JOB,
    find_broken,
    find_finished,
    job_record,
    mark_finished,
    remove_stale_temps,
    write_json,
    write_result,
)
from attnsvm.workers import keep_freed_memory

log = logging.getLogger("attnsvm")


def execute(planned: tuple | None, cfg: DictConfig) -> str:
    """Run the job of ``cfg`` into Hydra's output directory; returns its final status. A
    failure is recorded in job.json. In a sweep the job is claimed first (results/claim.py),
    and skipped if its finished results exist anywhere in the sweep. ``planned``: (resolved
    RunConfig, config hash) of ``cfg`` as the local launcher's planning made them."""
    hc = HydraConfig.get()  # every caller runs under Hydra (hydra.main or Hydra's run_job)
    out, top = Path(hc.runtime.output_dir), hc.runtime.cwd
    sweep_dir = Path(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else None
    try:
        if planned is None:
            run = to_run_config(cfg)
            chash = config_hash(run)  # resolves engine=auto: a bad $ATTNSVM_FUSED_BUILD fails
        else:
            run, chash = planned
    except ConfigError as exc:
        _refuse(exc, out, top, sweep_dir)
    with contextlib.nullcontext() if sweep_dir is None else claimed(sweep_dir, chash):
        done = find_finished(chash, out, sweep_dir)
        if done is not None:
            discard_output_dir(out, top)  # only Hydra's files there: the job finished elsewhere
            log.info("job %s already finished in %s: skipped", chash, done)
            return "skipped"
        try:  # what the data set draws (your generator's return), before job.json; a job
            preflight(run)  # skipped above draws nothing, as in the local launcher's plan
        except ConfigError as exc:
            _refuse(exc, out, top, sweep_dir)
        broken = find_broken(chash, out, sweep_dir)
        if broken is not None:  # finished files that fail verification: recomputed there
            log.warning("results in %s fail verification (%s): recomputing there", *broken)
            discard_output_dir(out, top)
            out = broken[0]
        out = claim_job_dir(out, chash)
        for tmp in remove_stale_temps(out):
            log.info("removed %s, left by a killed run", tmp)
        return _compute(run, job_record(run, chash), out, sweep_dir)


def _refuse(exc: ConfigError, out: Path, top: str, sweep_dir: Path | None) -> NoReturn:
    """An invalid config: Hydra's output directory removed, one line naming what is wrong."""
    discard_output_dir(out, top, parents=sweep_dir is None)
    raise SystemExit(f"attnsvm: invalid config: {exc}") from None


def _compute(run, job: dict, out: Path, sweep_dir: Path | None) -> str:
    """The job computed, its results written and its summary printed; ``failed`` or
    ``interrupted`` recorded in job.json instead."""
    with interruptible():
        try:
            write_json({**job, "status": "running"}, out / JOB)
            try:
                from attnsvm.experiments import entry  # torch: never in a sweep's process
                from attnsvm.job import run_job

                with Progress(run.progress_interval) as report:
                    result = run_job(run, progress=report)
            except Exception as exc:
                failed = {"status": "failed", "error": repr(exc)}
                write_json({**job, **failed, "traceback": traceback.format_exc()}, out / JOB)
                if sweep_dir is None:
                    raise
                log.error("job %s failed: %r (recorded in %s)", job["config_hash"], exc, out / JOB)
                return "failed"
            write_result(out, job, result)
            if sweep_dir is not None:
                mark_finished(sweep_dir, job["config_hash"], out)
        except JobInterrupted as exc:  # job.json says by which signal; a single run exits
            record = {**job, "status": "interrupted", "error": str(exc), "signal": exc.name}
            write_json(record, out / JOB)
            log.error("job %s %s (recorded in %s)", job["config_hash"], exc, out / JOB)
            if sweep_dir is None:
                raise SystemExit(128 + exc.signum) from None
            return "interrupted"
    print(entry(run.experiment).summary_text(result.runs, result.seconds))
    print(f"  results: {out}")
    return "finished"


_SINGLE_RUN_DONE: list[str] = []  # a single run's status, once written: cli may end at once


@hydra.main(version_base="1.3", config_path=f"pkg://{CONF_MODULE}", config_name="config")
def main(cfg: DictConfig) -> str:
    status = execute(None, cfg)
    if HydraConfig.get().mode != RunMode.MULTIRUN:
        _SINGLE_RUN_DONE.append(status)
    return status


def cli() -> None:
    """``python -m attnsvm.run``: unknown keys fail first, listing the accepted ones; then Hydra.
    An entry point: it sets malloc's thresholds, and a single run ends without teardown."""
    try:
        check_override_keys(sys.argv[1:])
        check_group_options(sys.argv[1:], Path(str(resources.files(CONF_MODULE))))
        check_output_dir_overrides(sys.argv[1:])  # before Hydra fails to create them
    except ConfigError as exc:
        raise SystemExit(f"attnsvm: invalid config: {exc}") from None
    keep_freed_memory()
    register_configs()
    main()
    if _SINGLE_RUN_DONE:
        exit_now()  # every result is written: skip the interpreter's teardown


if __name__ == "__main__":
    cli()
