"""Run an icl sweep file's grid without Hydra, in one process (until experiment=icl is
registered with the run command; then ``python -m attnsvm.run -m +sweeps=NAME`` does this).

    python tools/icl_grid.py sweeps/icl_N.yaml outputs/icl_N [--seeds 4]

Writes runs.parquet, trajectory.parquet, summary.csv and the experiment's figures into the
output folder.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import torch
from omegaconf import OmegaConf

from attnsvm.experiments import icl


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def points(sweep: Path) -> tuple[int, list[dict]]:
    """Seeds and the icl keys of every grid point of a sweep file."""
    conf = OmegaConf.to_container(OmegaConf.load(sweep))
    base = conf.get("icl", {})
    params = conf["hydra"]["sweeper"]["params"]
    axes = [
        [(k.removeprefix("icl."), _value(v)) for v in str(vs).split(",")]
        for k, vs in params.items()
    ]
    return conf.get("seeds", 4), [{**base, **dict(c)} for c in itertools.product(*axes)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sweep", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seeds", type=int)
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds, grid = points(args.sweep)
    seeds = args.seeds or seeds
    runs, trajs = [], []
    for keys in grid:
        run = SimpleNamespace(seed=0, seeds=seeds, dtype="float64", device="cpu", threads=1)
        run.icl = icl.Config(**keys)
        t0 = time.perf_counter()
        result = icl.run_job(run)
        print(icl.summary_text(result.runs, time.perf_counter() - t0), flush=True)
        runs.append(result.runs)
        trajs.append(result.trajectory)
    args.out.mkdir(parents=True, exist_ok=True)
    runs, trajs = pd.concat(runs, ignore_index=True), pd.concat(trajs, ignore_index=True)
    runs.to_parquet(args.out / "runs.parquet", index=False)
    trajs.to_parquet(args.out / "trajectory.parquet", index=False)
    table(runs).to_csv(args.out / "summary.csv", index=False)
    for path in icl.figures(runs, trajs, args.out):
        print("wrote", path)


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per grid point: seeds ok, rel_err_limit (mean, max), mean losses, seconds per seed."""
    keys = ["icl.N", "icl.spectrum", "icl.parameterization", "icl.layers"]
    g = runs[runs.status == "ok"].groupby(keys)
    out = g.agg(ok=("seed", "size"), rel_err_mean=("rel_err_limit", "mean"))
    out["rel_err_max"] = g.rel_err_limit.max()
    out["corr_min"] = g.corr_limit.min()
    for col in ("icl_loss", "icl_loss_limit", "icl_loss_gd1", "icl_loss_pgd", "seconds"):
        out[col] = g[col].mean()
    return out.reset_index().round(5)


if __name__ == "__main__":
    main()
