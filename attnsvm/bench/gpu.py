"""GPU benchmark: training on CUDA (torch engine, float64 and float32) against the CPU torch
engine of the same machine, and how far float32's final directions are from float64's.

    python -m attnsvm.bench.gpu --out docs/benchmarks_gpu.json   # needs CUDA; a few minutes
    python -m attnsvm.bench.gpu --allow-cpu                      # no GPU: a tiny CPU smoke

Measured (``train`` with ``engine=torch``, normalized GD on W, the linear head):

- **throughput**, seed-steps of training per second, at (n,T,d) = (6,8,10) with 10^5 seeds in
  batches of ``--batch-size`` and at (100,32,128) with ``--large-seeds`` seeds, in float64 and
  float32; the peak GPU memory of each point (``torch.cuda.max_memory_allocated``). Drawing the
  instances (on the CPU, draw for draw) is not timed; a short warm-up run is not counted.
- **the CPU baseline**: the torch engine on this machine's CPU, one thread (as a job runs),
  at a reduced seed count (``--cpu-seeds``, ``--cpu-large-seeds``) and scaled per seed-step:
  the GPU/CPU ratio compares throughputs, not runs of the same size.
- **accuracy**: ``--accuracy-seeds`` seeds at (6,8,10), 2000 steps, trained in float64 and in
  float32 on the GPU: max over seeds of |corr(W32, W^mm) - corr(W64, W^mm)| for the Frobenius
  and nuclear SVMs (CPU, float64, at the float64 run's selected tokens), min corr(W32, W64),
  and how many seeds end on other tokens; at (100,32,128) corr(W32, W64) of the throughput runs.

Results are printed as a table and, with ``--out``, written as JSON. Without CUDA the command
exits with status 2 and says so, or, with ``--allow-cpu``, runs every part of the code at tiny
sizes on the CPU (numbers that are not GPU numbers, marked ``"smoke": true``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from attnsvm import metrics
from attnsvm.bench.timing import load, machine
from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import OptimizerConfig, ParameterizationConfig
from attnsvm.config.enums import Engine
from attnsvm.data.generators import make_instances
from attnsvm.svm import norms
from attnsvm.svm.norm_names import DEFAULT as DEFAULT_NORMS
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import Trajectory, train

DTYPES = ("float64", "float32")


@dataclass
class Size:
    """One throughput point: the GPU at ``seeds`` (batches of ``batch``), the CPU at
    ``cpu_seeds`` (one batch), ``steps`` steps each."""

    name: str
    n: int
    T: int
    d: int
    seeds: int
    batch: int
    cpu_seeds: int
    steps: int


@dataclass
class Row:
    """One measured (size, dtype, device): the table's row and the results file's entry."""

    size: str
    n: int
    T: int
    d: int
    dtype: str
    device: str
    role: str  # "measured", or "cpu baseline" (fewer seeds, compared per seed-step)
    seeds: int
    batch_size: int
    steps: int
    seconds: float
    seed_steps_per_s: float
    peak_gpu_mib: float | None
    min_corr_w32_w64: float | None = None


def sizes(args: argparse.Namespace, smoke: bool) -> list[Size]:
    """The issue's two points, or tiny stand-ins for a smoke run."""
    if smoke:
        return [Size("small", 6, 8, 10, 64, 32, 16, 20), Size("large", 8, 6, 12, 2, 2, 1, 10)]
    return [
        Size("small", 6, 8, 10, args.seeds, args.batch_size, args.cpu_seeds, args.steps),
        Size("large", 100, 32, 128, args.large_seeds, args.large_seeds, args.cpu_large_seeds,
             args.large_steps),
    ]  # fmt: skip


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _train(inst, steps: int) -> Trajectory:
    """NGD on W from the default init, two checkpoints (step 0 and the last)."""
    ocfg = OptimizerConfig(steps=steps, checkpoint_every=steps)
    return train(inst, LinearHead(inst), ParameterizationConfig(), ocfg, engine=Engine.torch)


def _instances(size: Size, seeds: list[int], dtype: str, device: str):
    cfg = DatasetConfig(n=size.n, T=size.T, d=size.d)
    return make_instances(cfg, seeds, dtype=getattr(torch, dtype), device=device)


def throughput(size: Size, dtype: str, device: str, baseline: bool) -> tuple[Row, np.ndarray]:
    """Train ``size`` on ``device`` (the CPU baseline: at ``cpu_seeds``, one batch); the row and
    every seed's final W (R, d, d) in float64."""
    gpu = device == "cuda"
    total, batch = (size.cpu_seeds, size.cpu_seeds) if baseline else (size.seeds, size.batch)
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    seconds, finals = 0.0, []
    for start in range(0, total, batch):
        inst = _instances(size, list(range(start, min(start + batch, total))), dtype, device)
        if start == 0:
            _train(inst, 2)  # warm-up, not timed: kernel loading, cuBLAS handles
        _sync(device)
        t0 = time.perf_counter()
        traj = _train(inst, size.steps)
        _sync(device)
        seconds += time.perf_counter() - t0
        finals.append(traj.final_W.cpu().double().numpy())
        del inst, traj
    peak = torch.cuda.max_memory_allocated() / 2**20 if gpu else None
    rate = total * size.steps / seconds
    role = "cpu baseline" if baseline else "measured"
    row = Row(size.name, size.n, size.T, size.d, dtype, device, role, total, batch, size.steps,
              seconds, rate, peak)  # fmt: skip
    return row, np.concatenate(finals)


def _min_corr(A: np.ndarray, B: np.ndarray) -> float:
    """min over seeds of corr(A_r, B_r), for (R, d, d) stacks."""
    return float(np.min([metrics.corr(a, b) for a, b in zip(A, B, strict=True)]))


def _svms(inst, selected: np.ndarray) -> list[dict]:
    """The default norms' SVMs of each seed at its selected tokens: [{norm: SVMSolution}]."""
    X, Z = inst.K.cpu().double().numpy(), inst.Z.cpu().double().numpy()
    solver = RunConfig().solver
    problems = [(X[r], Z[r], alpha) for r, alpha in enumerate(selected)]
    return norms.solve_all(norms.make_norms(solver), problems, solver)


def accuracy(device: str, seeds: int, steps: int) -> dict:
    """float32 against float64 at (6,8,10): final directions, against the SVMs and each other."""
    size = Size("small", 6, 8, 10, seeds, seeds, seeds, steps)
    runs = {}
    for dtype in DTYPES:
        inst = _instances(size, list(range(seeds)), dtype, device)
        traj = _train(inst, steps)
        runs[dtype] = (traj.final_W.cpu().double().numpy(), traj.selected[-1].cpu().numpy())
    (W64, sel64), (W32, sel32) = runs["float64"], runs["float32"]
    inst = _instances(size, list(range(seeds)), "float64", "cpu")
    svms = _svms(inst, sel64)  # CPU, float64
    out = {"seeds": seeds, "steps": steps}
    for norm in DEFAULT_NORMS:  # the Frobenius and the nuclear-norm SVM (svm/norm_names.py)
        diffs = [
            abs(float(metrics.corr(W32[r], sol[norm].W)) - float(metrics.corr(W64[r], sol[norm].W)))
            for r, sol in enumerate(svms)
            if sol[norm].ok
        ]
        out[f"max_abs_dcorr_{norm}"] = max(diffs) if diffs else None
        out[f"svm_ok_{norm}"] = len(diffs)
    out["min_corr_w32_w64"] = _min_corr(W32, W64)
    out["seeds_selecting_other_tokens"] = int((sel32 != sel64).any(-1).sum())
    return out


def _gpu_name() -> str:
    if not torch.cuda.is_available():
        return "none"
    props = torch.cuda.get_device_properties(0)
    return f"{props.name}, {props.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}"


def table(rows: list[Row], ratios: dict[str, float]) -> str:
    """The printed table: one line per (size, dtype, device), GPU/CPU ratio on the GPU lines."""
    head = (
        f"{'(n,T,d)':>13} {'dtype':>8} {'device':>6} {'run':>12} {'seeds':>7} {'batch':>7} "
        f"{'steps':>6} "
        f"{'seconds':>9} {'seed-steps/s':>13} {'peak MiB':>9} {'vs CPU':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        key = f"{r.size}/{r.dtype}"
        ratio = f"{ratios[key]:.1f}x" if r.role == "measured" else ""
        peak = f"{r.peak_gpu_mib:.0f}" if r.peak_gpu_mib is not None else ""
        lines.append(
            f"{f'({r.n},{r.T},{r.d})':>13} {r.dtype:>8} {r.device:>6} {r.role:>12} "
            f"{r.seeds:>7} {r.batch_size:>7} {r.steps:>6} {r.seconds:>9.2f} "
            f"{r.seed_steps_per_s:>13.4g} {peak:>9} {ratio:>7}"
        )
    return "\n".join(lines)


def _g(x: float | None) -> str:
    return "n/a (no SVM solved)" if x is None else f"{x:.3g}"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m attnsvm.bench.gpu", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", help="write the results as JSON here (e.g. docs/benchmarks_gpu.json)")
    p.add_argument("--allow-cpu", action="store_true", help="without CUDA: a tiny CPU smoke run")
    p.add_argument("--smoke", action="store_true", help="tiny sizes (on CUDA: a quick check)")
    p.add_argument("--seeds", type=int, default=100_000, help="GPU seeds at (6,8,10)")
    p.add_argument("--batch-size", type=int, default=25_000, help="GPU batch at (6,8,10)")
    p.add_argument("--cpu-seeds", type=int, default=1000, help="CPU seeds at (6,8,10)")
    p.add_argument("--steps", type=int, default=500, help="steps at (6,8,10)")
    p.add_argument("--large-seeds", type=int, default=8, help="GPU seeds at (100,32,128)")
    p.add_argument("--cpu-large-seeds", type=int, default=2, help="CPU seeds at (100,32,128)")
    p.add_argument("--large-steps", type=int, default=200, help="steps at (100,32,128)")
    p.add_argument("--accuracy-seeds", type=int, default=256, help="seeds of the float32 check")
    p.add_argument("--accuracy-steps", type=int, default=2000, help="its steps (published: 2000)")
    return p.parse_args(argv)


def _throughputs(args: argparse.Namespace, smoke: bool, device: str) -> tuple[list, dict, dict]:
    """Rows of every size and dtype (GPU then CPU), GPU-over-CPU ratios, and per size the least
    corr(W32, W64) of its runs (also written into its float32 row)."""
    rows, ratios, corr_large = [], {}, {}
    for size in sizes(args, smoke):
        finals = {}
        for dtype in DTYPES:
            cpu_row, _ = throughput(size, dtype, "cpu", baseline=True)
            gpu_row, finals[dtype] = throughput(size, dtype, device, baseline=False)
            ratios[f"{size.name}/{dtype}"] = gpu_row.seed_steps_per_s / cpu_row.seed_steps_per_s
            rows += [gpu_row, cpu_row]
            print(f"  measured {size.name} {dtype}", flush=True)
        corr = _min_corr(finals["float32"], finals["float64"])
        corr_large[size.name] = corr
        for row in rows[-4:]:
            if row.role == "measured" and row.dtype == "float32":
                row.min_corr_w32_w64 = corr
    return rows, ratios, corr_large


def _print_accuracy(device: str, acc: dict, corr_large: dict) -> None:
    """The notes under the table: what the CPU rows are, and float32 against float64."""
    print(
        "\nCPU rows: the torch engine on one thread at fewer seeds than the GPU's (seeds "
        "column), scaled per seed-step; 'vs CPU' is the GPU's throughput over the CPU's."
    )
    print(
        f"float32 vs float64 on {device}, {acc['seeds']} seeds at (6,8,10), {acc['steps']} "
        f"steps: max |corr(W32, W^mm) - corr(W64, W^mm)| = {_g(acc['max_abs_dcorr_fro'])} "
        f"(Frobenius), {_g(acc['max_abs_dcorr_nuc'])} (nuclear); 1 - min corr(W32, W64) = "
        f"{1 - acc['min_corr_w32_w64']:.3g}; seeds ending on other tokens: "
        f"{acc['seeds_selecting_other_tokens']}; 1 - min corr(W32, W64) of the throughput "
        "runs: " + ", ".join(f"{k} {1 - v:.3g}" for k, v in corr_large.items())
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, write --out; the exit status."""
    args = _parse_args(argv)
    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        print(
            "attnsvm.bench.gpu: CUDA is not available (torch.cuda.is_available() is False, "
            f"torch {torch.__version__}): nothing measured. Run it on a machine with a GPU and "
            "a CUDA build of torch, or pass --allow-cpu for a tiny CPU smoke of this code.",
            file=sys.stderr,
        )
        return 2
    smoke = args.smoke or not cuda
    device = "cuda" if cuda else "cpu"
    torch.set_num_threads(1)  # the CPU baseline runs as a job does (threads: 1)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"Machine: {machine()}; GPU: {_gpu_name()}; {load()}; {stamp}", flush=True)
    if not cuda:
        print("CUDA is not available: a tiny CPU smoke of the GPU benchmark, not GPU numbers.")
    rows, ratios, corr_large = _throughputs(args, smoke, device)
    acc = accuracy(device, *((4, 100) if smoke else (args.accuracy_seeds, args.accuracy_steps)))
    print()
    print(table(rows, ratios))
    _print_accuracy(device, acc, corr_large)
    record = {
        "machine": machine(),
        "gpu": _gpu_name(),
        "device": device,
        "smoke": smoke,
        "date": stamp,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cpu_baseline": "torch engine, 1 thread, fewer seeds, scaled per seed-step",
        "throughput": [asdict(r) for r in rows],
        "gpu_over_cpu": ratios,
        "accuracy": acc,
    }
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
