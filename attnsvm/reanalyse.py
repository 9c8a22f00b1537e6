"""Re-analysis without retraining: a finished job's or sweep's SVMs and metrics computed again
from the parameters its jobs saved (arrays.npz), under new analysis keys, into a new result
directory of the usual form (runs.parquet, trajectory.parquet, arrays.npz, job.json).

    python -m attnsvm.reanalyse outputs/runs/A 'solver.norms=[...]' --out outputs/B
    python -m attnsvm.reanalyse outputs/sweeps/rank metrics.epsilon=0.05 --out outputs/rank-eps

Only what the analysis reads may change (``solver.*``, ``metrics.*``; the keys that change no
number too): anything else would need training again. Each job's config is its job.json's with
the keys given, so a re-analysed job has the identity (config hash) of a fresh run with those
keys. A job without arrays.npz (artifacts=false, or written before they existed), or of an
experiment without a re-analysis, is named and skipped. The experiment's ``reanalyse`` (its
entry's field) says which columns it recomputes (docs/result-contract.md#re-analysis).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import traceback
from pathlib import Path

from attnsvm.config.checks import ConfigError
from attnsvm.results.artifacts import NON_RESULT_KEYS

ANALYSIS_GROUPS = ("solver", "metrics")  # what the analysis reads: changeable without training


def parse_overrides(overrides: list[str]) -> dict:
    """KEY=VALUE strings as a nested dict (values parsed as Hydra's command line does: YAML);
    a key outside ``ANALYSIS_GROUPS`` and the non-result keys is refused, naming them."""
    from omegaconf import OmegaConf

    for o in overrides:
        key, eq, _ = o.partition("=")
        if not eq or not key:
            raise ConfigError(f"{o!r}: expected KEY=VALUE")
        if key.partition(".")[0] not in ANALYSIS_GROUPS and key not in NON_RESULT_KEYS:
            accepted = ", ".join([f"{g}.*" for g in ANALYSIS_GROUPS] + list(NON_RESULT_KEYS))
            raise ConfigError(
                f"{key}: a re-analysis changes only what the analysis reads (accepted: "
                f"{accepted}); {key} needs training again: `python -m attnsvm.run`"
            )
    return OmegaConf.to_container(OmegaConf.from_dotlist(list(overrides)))


def new_config(job: dict, changes: dict):
    """The resolved run config of a finished job's job.json with ``changes`` merged in."""
    from omegaconf import OmegaConf

    from attnsvm.composition.compose import run_config_from_plain
    from attnsvm.composition.resolve import resolve

    merged = OmegaConf.merge(OmegaConf.create(job["config"]), OmegaConf.create(changes))
    return resolve(run_config_from_plain(OmegaConf.to_container(merged)))


def finished_jobs(source: Path) -> list[tuple[Path, Path]]:
    """(job dir, its place relative to ``source``) of every finished, verified job below
    ``source``: ``source`` itself when it is a job directory."""
    from attnsvm.results.integrity import verified
    from attnsvm.results.store import JOB, scan_jobs

    if (source / JOB).is_file():
        return [(source, Path("."))]
    return [
        (job_dir, job_dir.relative_to(source))
        for job_dir, job in map(verified, scan_jobs(source))
        if job.get("status") == "finished"
    ]


def read_before(job_dir: Path, job: dict):
    """The training run's result as written: its tables (and extra tables) from ``job_dir``."""
    import pandas as pd

    from attnsvm.results.contract import JobResult
    from attnsvm.results.store import RUNS, TRAJECTORY

    extra = {
        p.stem: pd.read_parquet(p)
        for p in sorted(job_dir.glob("*.parquet"))
        if p.name not in (RUNS, TRAJECTORY)
    }
    return JobResult(
        pd.read_parquet(job_dir / RUNS), pd.read_parquet(job_dir / TRAJECTORY),
        job["config_hash"], job.get("seconds") or 0.0, extra,
    )  # fmt: skip


def reanalyse_job(job_dir: Path, out: Path, changes: dict) -> str:
    """Re-analyse one finished job into ``out``; returns the line that says what happened.
    A job that cannot be re-analysed is skipped (``skipped ...``), never fails the others."""
    from attnsvm.composition.identity import config_hash
    from attnsvm.experiments import entry
    from attnsvm.experiments.config_columns import config_columns
    from attnsvm.results.artifacts import ArtifactError, read_arrays
    from attnsvm.results.contract import finish
    from attnsvm.results.store import job_record, read_job, write_result
    from attnsvm.runtime import limit_threads

    job = read_job(job_dir) or {}
    run = new_config(job, changes)
    module = entry(run.experiment)
    if module.reanalyse is None:
        return f"skipped {job_dir}: experiment={module.name} has no re-analysis"
    try:
        arrays = read_arrays(job_dir)
    except ArtifactError as exc:
        return f"skipped {exc}"
    chash = config_hash(run)
    record = {**job_record(run, chash), "reanalysed_from": str(job_dir.resolve())}
    with limit_threads(run.threads):
        result = module.reanalyse(run, arrays, read_before(job_dir, job))
        result = finish(result, chash, config_columns(run))
    write_result(out, record, result)
    if (job_dir / ".hydra").is_dir():  # its overrides: where a report places the job
        shutil.copytree(job_dir / ".hydra", out / ".hydra", dirs_exist_ok=True)
    return f"reanalysed {job_dir} -> {out} (config {result.config_hash})"


def reanalyse(source: Path, overrides: list[str], out: Path) -> tuple[list[str], int]:
    """Every finished job below ``source`` re-analysed into the same place below ``out``;
    (one line per job, how many failed). A failure is recorded in its job.json."""
    from attnsvm.composition.identity import config_hash
    from attnsvm.results.store import JOB, job_record, mark_finished, read_job, write_json

    changes = parse_overrides(overrides)
    jobs = finished_jobs(source)
    if not jobs:
        raise ConfigError(f"{source}: no finished job found (a job or sweep directory)")
    lines, failed = [], 0
    for job_dir, rel in jobs:
        target = out / rel
        try:
            lines.append(reanalyse_job(job_dir, target, changes))
        except ConfigError:
            raise
        except Exception as exc:  # one job's failure is recorded; the others go on
            failed += 1
            run = new_config(read_job(job_dir), changes)
            record = {**job_record(run, config_hash(run)), "status": "failed", "error": repr(exc)}
            target.mkdir(parents=True, exist_ok=True)
            write_json({**record, "traceback": traceback.format_exc()}, target / JOB)
            lines.append(f"failed {job_dir}: {exc!r} (recorded in {target / JOB})")
            continue
        if rel != Path(".") and (target / JOB).is_file():
            mark_finished(out, read_job(target)["config_hash"], target)
    if (source / "multirun.yaml").is_file():
        shutil.copy2(source / "multirun.yaml", out / "multirun.yaml")
    return lines, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnsvm.reanalyse",
        description="Recompute a finished job's or sweep's SVMs and metrics from its saved "
        "parameters (arrays.npz), without training, into a new result directory.",
    )
    parser.add_argument("source", type=Path, help="a job or sweep directory of attnsvm.run")
    parser.add_argument("overrides", nargs="*", help="KEY=VALUE: solver.* and metrics.* keys")
    parser.add_argument("--out", type=Path, required=True, help="the new result directory")
    args = parser.parse_args(argv)
    src, out = args.source.resolve(), args.out.resolve()
    if out == src or src in out.parents:
        print(f"attnsvm: --out {args.out} lies inside {args.source}: name another", file=sys.stderr)
        return 2
    try:
        lines, failed = reanalyse(args.source, args.overrides, args.out)
    except ConfigError as exc:
        print(f"attnsvm: invalid config: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    done = sum(line.startswith("reanalysed") for line in lines)
    print(f"{done} of {len(lines)} jobs re-analysed into {args.out}")
    return 1 if failed else 0 if done else 2


if __name__ == "__main__":
    sys.exit(main())
