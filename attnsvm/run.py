"""Hydra entry point: compose -> validate -> run_job -> write the result contract.

python -m attnsvm.run                                   # GD vs SVM, n=6 T=8 d=10, 8 seeds
python -m attnsvm.run parameterization=kq dataset.d=20 optimizer.steps=5000 seeds=50
python -m attnsvm.run -m dataset.d=2,4,8,16 parameterization=w,kq   # a parallel sweep
"""

from __future__ import annotations

import logging
import shutil
import time
import traceback
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from attnsvm.config import ConfigError, register_configs, to_run_config
from attnsvm.pipeline import run_job
from attnsvm.report import summary_text
from attnsvm.results import (
    JOB,
    RUNS,
    TRAJECTORY,
    config_hash,
    is_finished,
    plain,
    write_json,
    write_table,
)
from attnsvm.versions import versions

log = logging.getLogger("attnsvm")
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")

register_configs()


def _discard_output_dir(out: Path) -> None:
    """A config that fails validation leaves no half-written job directory behind."""
    if out.exists() and not any((out / f).exists() for f in (JOB, RUNS, TRAJECTORY)):
        shutil.rmtree(out, ignore_errors=True)


def execute(cfg: DictConfig, out: Path, multirun: bool) -> str:
    """Run one job into ``out``; returns its final status. A failure is recorded in job.json."""
    try:
        run = to_run_config(cfg)
    except ConfigError as exc:
        _discard_output_dir(out)
        raise SystemExit(f"attnsvm: invalid config: {exc}") from None
    chash = config_hash(run)
    if is_finished(out, chash):
        log.info("job %s already finished in %s: skipped", chash, out)
        return "skipped"
    job = {
        "config_hash": chash,
        "config": plain(run),
        "versions": versions(),
        "started": time.time(),
    }
    write_json({**job, "status": "running"}, out / JOB)
    try:
        result = run_job(run, progress=lambda k, total: log.info("seeds done: %d/%d", k, total))
    except Exception as exc:
        write_json(
            {**job, "status": "failed", "error": repr(exc), "traceback": traceback.format_exc()},
            out / JOB,
        )
        if not multirun:
            raise
        log.error("job %s failed: %r (recorded in %s)", chash, exc, out / JOB)
        return "failed"
    write_table(result.runs, out / RUNS)
    write_table(result.trajectory, out / TRAJECTORY)
    for name, table in result.extra.items():  # e.g. paths.parquet, tokens.parquet
        write_table(table, out / f"{name}.parquet")
    seed_status = result.runs.status.value_counts().to_dict()
    write_json(
        {**job, "status": "finished", "seconds": result.seconds, "seed_status": seed_status},
        out / JOB,
    )
    print(summary_text(result.runs, result.seconds))
    print(f"  results: {out}")
    return "finished"


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> str:
    hc = HydraConfig.get()
    return execute(cfg, Path(hc.runtime.output_dir), hc.mode == RunMode.MULTIRUN)


if __name__ == "__main__":
    main()
