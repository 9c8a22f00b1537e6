"""GPU benchmark of what follows training: the SVM stage on CUDA, and a job end to end.

    python -m attnsvm.bench.gpu_job --out docs/benchmarks_gpu_job.json   # needs CUDA
    python -m attnsvm.bench.gpu_job --allow-cpu --smoke                  # no GPU: a CPU smoke

- **SVM stage**: trained (6,8,10) seeds (``--stage-seeds``) and a few (64,16,64) seeds; their
  SVMs at alpha = opt solved on the job's device (norms.solve_all, device=cuda) and on the CPU
  with every core (norms.solve_spread, the route of ``device=cpu threads=N``): seconds per
  seed each way, status disagreements, the largest 1 - corr(W_cuda, W_cpu).
- **end to end**: ``python -m attnsvm.run device=cuda seeds=S batch_size=B threads=N`` timed
  as a whole process (start-up, training, SVMs, metrics, files), with the job's own seconds
  (job.json) and, from a ``Stages`` reporter in the job, the seconds of each stage.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from attnsvm.bench.stage import _worst
from attnsvm.bench.timing import load, machine
from attnsvm.composition import DatasetConfig
from attnsvm.config import OptimizerConfig, ParameterizationConfig, SolverConfig
from attnsvm.config.enums import Engine
from attnsvm.data.generators import make_instances
from attnsvm.progress import Progress
from attnsvm.svm import norms
from attnsvm.svm.norm_names import FROBENIUS
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import train


class Stages(Progress):
    """A silent progress reporter that adds up the seconds of each stage of a job (training,
    svms, analysis; "other": drawing data, rows and tables)."""

    def __init__(self):
        super().__init__(interval=float("inf"), emit=lambda line: None)
        self.seconds: dict[str, float] = {}
        self.mark = time.perf_counter()
        self.current = "other"

    def _enter(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[self.current] = self.seconds.get(self.current, 0.0) + now - self.mark
        self.current, self.mark = stage, now
        super()._enter(stage)

    def start_batch(self, lo: int, hi: int) -> None:
        self._enter("other")

    def close(self) -> dict[str, float]:
        self._enter("other")
        return self.seconds


def _problems(n: int, T: int, d: int, seeds: int, device: str) -> list[tuple]:
    """(X, Z, opt) of ``seeds`` instances trained 500 steps (NGD on W) on ``device``."""
    inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(range(seeds)), device=device)
    ocfg = OptimizerConfig(steps=500, checkpoint_every=500)
    train(inst, LinearHead(inst), ParameterizationConfig(), ocfg, engine=Engine.torch)
    X, Z, opt = (t.cpu().double().numpy() for t in (inst.X, inst.Z, inst.opt))
    return [(X[r], Z[r], opt[r].astype(np.int64)) for r in range(seeds)]


def svm_stage(device: str, sizes: dict, workers: int) -> list[dict]:
    """Per size: the SVM stage on ``device`` against the CPU on ``workers`` cores."""
    cfg, rows = SolverConfig(), []
    for (n, T, d), seeds in sizes.items():
        problems = _problems(n, T, d, seeds, device)
        norms.solve_all(norms.make_norms(cfg), problems[:2], cfg, device)  # warm-up: kernels
        t0 = time.perf_counter()
        on_device = norms.solve_all(norms.make_norms(cfg), problems, cfg, device)
        t_device = time.perf_counter() - t0
        t0 = time.perf_counter()
        on_cpu = norms.solve_spread(lambda: norms.make_norms(cfg), problems, cfg, workers)
        t_cpu = time.perf_counter() - t0
        diffs, worst = _worst(on_device, on_cpu)
        batched = sum(s[FROBENIUS].path == "batched" for s in on_device)
        rows.append({
            "n": n, "T": T, "d": d, "seeds": seeds, "device": device,
            "device_ms_per_seed": 1e3 * t_device / seeds,
            "cpu_workers": workers, "cpu_ms_per_seed": 1e3 * t_cpu / seeds,
            "cpu_over_device": t_cpu / t_device, "status_differences": diffs,
            "max_one_minus_corr": worst, "fro_batched": batched,
        })  # fmt: skip
        print(f"  svm stage ({n},{T},{d}) x {seeds}: {rows[-1]}", flush=True)
    return rows


def end_to_end(device: str, seeds: int, batch: int, threads: int) -> dict:
    """The whole command as a user runs it: wall time of the process, the job's own seconds,
    its seeds by status and by the path that solved W^mm."""
    import pandas as pd  # the bench's other rows never read a table

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "attnsvm.run", f"device={device}", f"seeds={seeds}",
               f"batch_size={batch}", f"threads={threads}", f"hydra.run.dir={tmp}/job"]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode:
            raise SystemExit(f"the job failed ({done.returncode}):\n{done.stderr[-3000:]}")
        job = json.loads((Path(tmp) / "job" / "job.json").read_text())
        runs = pd.read_parquet(Path(tmp) / "job" / "runs.parquet")
    return {
        "command": "python -m attnsvm.run " + " ".join(cmd[3:-1]),
        "wall_s": wall, "job_seconds": job.get("seconds"), "seeds": seeds,
        "statuses": runs["status"].value_counts().to_dict(),
        "fro_paths": runs["svm_path_fro"].value_counts().to_dict(),
        "train_seconds": float(runs["train_seconds"].sum()),
        "svm_seconds": float(runs["svm_seconds"].sum()),
    }  # fmt: skip


def stages(device: str, seeds: int, threads: int) -> dict:
    """One batch of ``seeds`` in-process (``run_job``): seconds of each stage."""
    from attnsvm.composition import RunConfig
    from attnsvm.job import run_job

    report = Stages()
    t0 = time.perf_counter()
    run_job(RunConfig(device=device, seeds=seeds, batch_size=seeds, threads=threads), report)
    return {"seeds": seeds, "threads": threads, "job_s": time.perf_counter() - t0,
            **{f"{k}_s": v for k, v in report.close().items()}}  # fmt: skip


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m attnsvm.bench.gpu_job", description=__doc__)
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--allow-cpu", action="store_true", help="without CUDA: a CPU smoke")
    p.add_argument("--smoke", action="store_true", help="tiny sizes")
    p.add_argument("--stage-seeds", type=int, default=8192, help="(6,8,10) seeds of the stage")
    p.add_argument("--seeds", type=int, default=100_000, help="seeds of the end-to-end job")
    p.add_argument("--batch-size", type=int, default=25_000, help="its batch size")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="its threads")
    p.add_argument("--parts", default="stage,stages,job", help="which parts, comma-separated")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the parts asked for; the JSON is rewritten after each, so a cut run keeps them."""
    args = _parse_args(argv)
    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        print("attnsvm.bench.gpu_job: CUDA is not available: nothing measured (--allow-cpu "
              "runs a CPU smoke)", file=sys.stderr)  # fmt: skip
        return 2
    device = "cuda" if cuda else "cpu"
    small = args.smoke or not cuda
    gpu = torch.cuda.get_device_name(0) if cuda else "none"
    record = {
        "machine": machine(),
        "gpu": gpu,
        "device": device,
        "smoke": small,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": load(),
    }
    print(f"Machine: {record['machine']}; GPU: {gpu}; {record['load']}", flush=True)
    sizes = {(6, 8, 10): 16 if small else args.stage_seeds, (64, 16, 64): 2 if small else 16}
    seeds, batch = (64, 32) if small else (args.seeds, args.batch_size)
    parts = {
        "svm_stage": lambda: svm_stage(device, sizes, args.threads),
        "stages": lambda: stages(device, batch, args.threads),
        "end_to_end": lambda: end_to_end(device, seeds, batch, args.threads),
    }
    wanted = {"stage": "svm_stage", "stages": "stages", "job": "end_to_end"}
    for key in args.parts.split(","):
        record[wanted[key]] = parts[wanted[key]]()
        print(f"{wanted[key]}: {json.dumps(record[wanted[key]])}", flush=True)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
