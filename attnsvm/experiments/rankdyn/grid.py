"""The grid of ``sweeps/rankdyn.yaml`` in one process, without Hydra: every config point's job
through ``run_job``, the concatenated tables, the summary and the figures.

    python -m attnsvm.experiments.rankdyn.grid outputs/rankdyn            # the sweep's grid
    python -m attnsvm.experiments.rankdyn.grid outputs/rankdyn --publish docs/results

Writes ``runs.parquet``, ``trajectory.parquet``, ``summary.csv`` and the figures into the output
directory; ``--publish DIR`` also copies the summary and the per-seed table as
``rankdyn_summary.csv`` and ``rankdyn_runs.csv`` there (what docs/rankdyn.md quotes), and
``--docs docs/rankdyn.md`` rewrites that page's table from the summary. A job whose
tables exist under ``jobs/`` is not run again.
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from attnsvm.config.schema import SolverConfig
from attnsvm.runtime import limit_threads

from .config import Config
from .job import run_job
from .plots import figures
from .summary import render_docs, summary_table, summary_text

ALPHAS = (1.0, 1e-1, 1e-2, 1e-3, 1e-4)
SHAPES = ((6, 8, 10), (10, 12, 16))
PARAMS = ("kq", "w")
RULES = ("gd", "ngd")


@dataclass
class GridRun:
    """What ``run_job`` reads from a resolved run."""

    rankdyn: Config
    seeds: int = 16
    seed: int = 0
    dtype: str = "float64"
    device: str = "cpu"
    threads: int = 1
    solver: SolverConfig | None = None


def grid(steps: int, shapes=SHAPES) -> list[Config]:
    """Every config point of the sweep (at ``shapes``)."""
    points = itertools.product(shapes, PARAMS, RULES, ALPHAS)
    return [
        Config(alpha=a, parameterization=p, rule=r, steps=steps, n=n, T=T, d=d)
        for (n, T, d), p, r, a in points
    ]


def run_grid(
    out: Path, seeds: int, steps: int, shapes=SHAPES
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Run every job not found under ``out/jobs``; the concatenated runs and trajectory
    tables and the jobs' total seconds."""
    jobs = out / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    runs, trajs, seconds = [], [], 0.0
    for cfg in grid(steps, shapes):
        name = f"n{cfg.n}_T{cfg.T}_d{cfg.d}_{cfg.parameterization.value}_{cfg.rule.value}"
        name += f"_a{cfg.alpha:g}_s{seeds}_t{steps}"
        paths = jobs / f"{name}_runs.parquet", jobs / f"{name}_trajectory.parquet"
        if not all(p.exists() for p in paths):
            with limit_threads(1):
                res = run_job(GridRun(cfg, seeds=seeds, solver=SolverConfig()))
            res.runs.assign(job_seconds=res.seconds).to_parquet(paths[0], index=False)
            res.trajectory.to_parquet(paths[1], index=False)
            print(f"{name}: {res.seconds:.1f} s", flush=True)
        job_runs = pd.read_parquet(paths[0])
        seconds += float(job_runs.job_seconds.iloc[0])
        runs.append(job_runs)
        trajs.append(pd.read_parquet(paths[1]))
    return pd.concat(runs, ignore_index=True), pd.concat(trajs, ignore_index=True), seconds


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--steps", type=int, default=Config.steps)
    ap.add_argument("--shapes", nargs="+", default=[",".join(map(str, s)) for s in SHAPES])
    ap.add_argument("--publish", type=Path, default=None)
    ap.add_argument("--docs", type=Path, default=None, help="rewrite the table of this page")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes]
    runs, traj, seconds = run_grid(args.out, args.seeds, args.steps, shapes)
    runs.to_parquet(args.out / "runs.parquet", index=False)
    traj.to_parquet(args.out / "trajectory.parquet", index=False)
    table = summary_table(runs).round(6)
    table.to_csv(args.out / "summary.csv", index=False)
    written = figures(runs, traj, args.out)
    if args.publish is not None:
        args.publish.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.publish / "rankdyn_summary.csv", index=False)
        keep = [c for c in runs if c not in ("reason",)]
        runs[keep].round(6).to_csv(args.publish / "rankdyn_runs.csv", index=False)
    if args.docs is not None:
        published = pd.read_csv(args.out / "summary.csv")  # what the docs test reads back
        args.docs.write_text(render_docs(args.docs.read_text(), published))
    print(summary_text(runs, seconds))
    print(f"wrote {len(written)} figures to {args.out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
