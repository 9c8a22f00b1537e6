"""Publish finished sweeps: tables and timings to docs/results/, the README tables from them.

    python -m attnsvm.publish outputs/sweeps/local outputs/sweeps/rank ... [--readme README.md]

For each (already aggregated) sweep directory ``outputs/sweeps/<name>`` this copies the tables
of ``summary/`` into docs/results/ (``summary.csv`` as ``<name>_summary.csv``, an experiment's
own table such as ``multitoken_table.csv`` under its name) and records the sweep's timing in
docs/results/sweeps.json: jobs, seed runs, the sum of the jobs' seconds and the wall time, first
job start to last job end, from each job's ``job.json`` (``started``, ``seconds``), with the
date, CPU model and core count of the machine. A sweep that has unfinished or failed jobs, or
whose summary is older than its jobs, is refused. ``--keep-timing`` copies the tables alone and
keeps the timing already published (a re-run on a machine shared with other work, whose wall
would not be the sweep's).

With ``--readme`` the README's experiment table and its headline-numbers table are rewritten
between their markers from docs/results/ alone (readme.py: a row per sweep each experiment
publishes); tests/test_docs.py fails when the README disagrees with those files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from attnsvm.results.readme import RESULTS, SWEEPS_JSON, PublishError, load_sweeps, write_readme

JOB = "job.json"
SUMMARY = "summary"


# ---------------------------------------------------------------- sweep -> docs/results
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def job_files(sweep_dir: Path) -> list[Path]:
    """Every job.json below ``sweep_dir`` but in its summary folder."""
    return sorted(p for p in sweep_dir.rglob(JOB) if SUMMARY not in p.relative_to(sweep_dir).parts)


def sweep_timing(sweep_dir: str | Path) -> dict:
    """Jobs, seed runs, summed job seconds and wall (first job start to last job end) of a
    finished sweep, from its jobs' job.json; raises PublishError for an unfinished sweep."""
    sweep_dir = Path(sweep_dir)
    files = job_files(sweep_dir)
    if not files:
        raise PublishError(f"no {JOB} below {sweep_dir}: not a sweep directory")
    starts, ends, seconds, seeds, bad = [], [], 0.0, 0, []
    for path in files:
        job = json.loads(path.read_text())
        if job.get("status") != "finished" or "started" not in job or "seconds" not in job:
            bad.append(f"{path.parent} ({job.get('status', 'no status')})")
            continue
        starts.append(float(job["started"]))
        ends.append(float(job["started"]) + float(job["seconds"]))
        seconds += float(job["seconds"])
        status = job.get("seed_status") or {}
        seeds += sum(status.values()) if status else int(job.get("config", {}).get("seeds", 0))
    if bad:
        raise PublishError(
            f"{sweep_dir}: {len(bad)} job(s) not finished or without timings: " + ", ".join(bad)
        )
    first = min(starts)
    return {
        "jobs": len(files),
        "seeds": seeds,
        "seconds": round(seconds, 3),
        "wall": round(max(ends) - first, 3),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(first)),
        "date": time.strftime("%Y-%m-%d", time.gmtime(first)),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
    }


def summary_tables(sweep_dir: Path) -> dict[str, Path]:
    """Published name -> csv file of the sweep's summary folder (refuses a stale summary)."""
    name, folder = sweep_dir.name, sweep_dir / SUMMARY
    if not (folder / "summary.csv").exists():
        raise PublishError(
            f"{folder / 'summary.csv'} missing: run `python -m attnsvm.aggregate {sweep_dir}`"
        )
    newest_job = max(p.stat().st_mtime for p in job_files(sweep_dir))
    tables = {}
    for path in sorted(folder.glob("*.csv")):
        if path.stat().st_mtime < newest_job:
            raise PublishError(
                f"{path} is older than the sweep's jobs: aggregate {sweep_dir} again "
                "(and its figure command, if it writes this table)"
            )
        if path.name == "summary.csv":
            tables[f"{name}_summary.csv"] = path
        else:
            tables[path.name if path.name.startswith(f"{name}_") else f"{name}_{path.name}"] = path
    return tables


def publish(
    sweep_dirs: list[str | Path], results_dir: str | Path = RESULTS, keep_timing: bool = False
) -> dict:
    """Copy each sweep's tables into ``results_dir`` and merge its timing into sweeps.json;
    returns the whole sweeps.json record. Checks every sweep before writing anything.

    ``keep_timing``: the tables only; each sweep keeps the timing sweeps.json holds (a re-run
    on a machine shared with other work, or resumed, whose wall is not the sweep's), and
    ``tables_date`` says when its tables were made."""
    results_dir = Path(results_dir)
    record = load_sweeps(results_dir, missing_ok=True)
    plans = []
    for sweep_dir in map(Path, sweep_dirs):
        timing = sweep_timing(sweep_dir)
        if keep_timing:
            if sweep_dir.name not in record:
                raise PublishError(f"--keep-timing: {sweep_dir.name} has no timing to keep")
            timing = {**record[sweep_dir.name], "tables_date": timing["date"]}
        plans.append((sweep_dir.name, timing, summary_tables(sweep_dir)))
    results_dir.mkdir(parents=True, exist_ok=True)
    for name, timing, tables in plans:
        for published, path in tables.items():
            shutil.copyfile(path, results_dir / published)
        record[name] = {**timing, "tables": sorted(tables)}
    record = dict(sorted(record.items()))
    (results_dir / SWEEPS_JSON).write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnsvm.publish", description=__doc__.splitlines()[0]
    )
    parser.add_argument("sweep_dirs", nargs="*", type=Path, help="aggregated sweep directories")
    parser.add_argument("--readme", type=Path, help="rewrite this README's results blocks")
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="results folder (default docs/results)"
    )
    parser.add_argument(
        "--keep-timing",
        action="store_true",
        help="copy the tables only, keeping each sweep's published timing (a re-run on a "
        "shared or loaded machine, or resumed: its wall would not be the sweep's)",
    )
    args = parser.parse_args(argv)
    if not args.sweep_dirs and not args.readme:
        parser.error("give sweep directories, --readme, or both")
    try:
        if args.sweep_dirs:
            record = publish(args.sweep_dirs, args.results, args.keep_timing)
            for d in args.sweep_dirs:
                s = record[d.name]
                print(
                    f"{d.name}: {s['jobs']} jobs, {s['seeds']} seed runs, "
                    f"{s['seconds']:.1f} job-s, wall {s['wall']:.1f} s -> {', '.join(s['tables'])}"
                )
        if args.readme:
            write_readme(args.readme, args.results)
            print(f"rewrote the results blocks of {args.readme}")
    except PublishError as exc:
        print(f"attnsvm.results.publish: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
