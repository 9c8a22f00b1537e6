"""The Python API: the CLI's configs, jobs and sweeps from a notebook or a script.

    import attnsvm
    cfg = attnsvm.compose(["parameterization=kq", "seeds=16"])  # validated; the CLI's errors
    res = attnsvm.run_job(cfg)                  # nothing written
    res.runs, res.trajectory                    # runs.parquet / trajectory.parquet's columns
    attnsvm.run_job(cfg, out_dir="outputs/mine")  # the result contract on disk, as the CLI
    sweep = attnsvm.load_sweep("outputs/sweeps/local")  # .runs, .trajectory, .summary, .jobs

A ``RunConfig`` built by hand works too: ``RunConfig(parameterization=ParameterizationConfig(
kind="kq"))`` (enum fields accept their names).
"""

from __future__ import annotations

from pathlib import Path

from attnsvm.composition.compose import check_override_keys, register_configs
from attnsvm.config.schema import CONF_MODULE, RunBase


def compose(overrides: list[str] | None = None) -> RunBase:
    """The validated ``RunConfig`` that ``python -m attnsvm.run OVERRIDES`` would run.

    Unknown keys, bad values, rules across groups and an unknown option of a group
    (``dataset=nope``) raise ``ConfigError`` naming the key and the accepted values.
    """
    from hydra import initialize_config_module
    from hydra.errors import MissingConfigException

    from attnsvm.composition.compose import to_run_config
    from attnsvm.composition.compose_memo import compose_config

    overrides = list(overrides or [])
    check_override_keys(overrides)
    register_configs()
    with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
        try:
            cfg = compose_config(overrides)  # Hydra's, its structure composed once
        except MissingConfigException as exc:
            raise missing_option(exc, overrides) from None
        return to_run_config(cfg)


def missing_option(exc, overrides: list[str]):
    """A ``ConfigError`` for Hydra's MissingConfigException: the group, the option asked for
    and the accepted ones, without Hydra's config search path."""
    from attnsvm.config.checks import ConfigError

    group, _, name = str(exc.missing_cfg_file or "").rpartition("/")
    if not group:  # not a group option (e.g. a missing primary config): Hydra's first line
        return ConfigError(str(exc).splitlines()[0])
    given = next(
        (o for o in overrides if o.lstrip("+~").partition("=")[0] == group), f"{group}={name}"
    )
    accepted = ", ".join(sorted(exc.options or [])) or "none"
    return ConfigError(f"{given}: no option {name!r} in group '{group}'; accepted: {accepted}")


def run_job(cfg: RunBase | list[str], out_dir: str | Path | None = None):
    """Run one job (all its seeds) and return its ``JobResult`` (.runs, .trajectory, .extra,
    .config_hash, .seconds). With ``out_dir``, also write runs.parquet, trajectory.parquet and
    job.json there exactly as the CLI does; a list of overrides is composed first."""
    from attnsvm.composition.identity import config_hash
    from attnsvm.composition.resolve import resolve
    from attnsvm.config.input_checks import check_writable_dir
    from attnsvm.data.sets import preflight
    from attnsvm.job import run_job as run_pipeline
    from attnsvm.results.store import job_record, write_result

    if not isinstance(cfg, RunBase):
        cfg = compose(cfg)
    cfg = resolve(cfg)  # job.json holds the resolved run, as the CLI's does
    preflight(cfg)  # as the CLI: a generator's wrong return fails before any work
    if out_dir is not None:
        check_writable_dir(out_dir, "out_dir")  # before training, not after
    job = job_record(cfg, config_hash(cfg)) if out_dir is not None else None
    result = run_pipeline(cfg)
    if out_dir is not None:
        write_result(Path(out_dir), job, result)
    return result


def load_sweep(sweep_dir: str | Path):
    """What the aggregator sees of a sweep directory: a ``Sweep`` with .runs (every seed's
    row, swept keys as columns), .trajectory, .summary (one row per config point), .jobs."""
    from attnsvm.results.aggregate import load_sweep as load

    return load(sweep_dir)
