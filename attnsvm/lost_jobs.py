"""What the Ray and Slurm launchers share: the JobReturn of a job that died outside Python
(a lost node, a cancelled task), its failure recorded as the local launcher records one
(``results.job_dir.record_lost_job``)."""

from __future__ import annotations

from pathlib import Path

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf, open_dict

from attnsvm.composition.compose import to_run_config
from attnsvm.composition.identity import config_hash
from attnsvm.config.checks import ConfigError
from attnsvm.results.job_dir import record_lost_job


def lost_job_return(hydra_context, config, overrides, num: int, error: str, job_id=None, **extra):
    """The Ray and Slurm launchers' JobReturn for a job that died outside Python, its failure
    recorded (``record_lost_job``): value ``failed``, or ``finished`` when its results were
    complete. ``job_id``: the scheduler's (default Hydra's ``<name>_<num>``)."""
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config.hydra.job):
        sweep_config.hydra.job.num = num
        sweep_config.hydra.job.id = job_id or f"{sweep_config.hydra.job.name}_{num}"
    sweep_dir = Path(str(sweep_config.hydra.sweep.dir))
    out = sweep_dir / str(sweep_config.hydra.sweep.subdir)
    task_cfg = OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])
    try:
        run = to_run_config(task_cfg)
        where = record_lost_job(run, config_hash(run), out, sweep_dir, error, **extra)
    except ConfigError as exc:  # the task would have exited on it: the sweep stops
        raise SystemExit(f"attnsvm: invalid config: {exc}") from None
    ret = JobReturn(
        overrides=list(overrides),
        cfg=task_cfg,
        hydra_cfg=sweep_config,
        working_dir=str(where or out),
        task_name=str(sweep_config.hydra.job.name),
        status=JobStatus.COMPLETED,
    )
    ret.return_value = "failed" if where is not None else "finished"
    return ret
