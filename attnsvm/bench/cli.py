"""Benchmarks: attnsvm against the naive way of doing the same math, and whole experiments.

    python -m attnsvm.bench           # published settings, minutes; writes docs/benchmarks.md
    python -m attnsvm.bench --quick   # smaller samples, scaled up; about two minutes

The naive baselines are what the published notebooks do: one seed at a time, an nn-style model,
``loss.backward()``, normalize, step (autograd's gradient, the cancellation-prone form of
docs/math.md#cancellation-after-saturation); and one cvxpy model per SVM built with a Python
loop over the constraints (i, t), in the full d x d space, default solver settings. Ratios come
from the same process, naive and ours interleaved. Whole experiments run in fresh worker
processes, one per core as the joblib launcher would, each reporting its CPU time and peak
resident memory (ru_maxrss).
Every registered experiment whose entry declares ``bench_cases(quick)`` adds its own cases
(batched against one seed at a time), and ``bench_jobs(quick)`` its whole jobs. Benchmarks
are never unit tests; tests/test_speed_paths.py checks that the fast paths agree.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from attnsvm.bench import report, stage, sweep_overhead
from attnsvm.bench import scale as bench_scale
from attnsvm.bench.experiment_cases import (
    experiment_benches,
    experiment_jobs,
    local_experiment,
    naive_training_memory,
    rank_experiment,
)
from attnsvm.bench.readme import write_readme_table
from attnsvm.bench.svm_cases import bench_svm_ratio, large_svms, naive_rank_estimate
from attnsvm.bench.timing import cpu_name, load, machine
from attnsvm.bench.train_cases import (
    bench_training_ratio,
    build_throughput,
    joint_training,
    training_throughput,
)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The bench's command line (``--help``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller samples (about a minute)")
    ap.add_argument("--out", default="docs/benchmarks.md", help="markdown report ('' = none)")
    ap.add_argument(
        "--readme", default="", help="also rewrite this README's speed table from the results"
    )
    ap.add_argument(
        "--only",
        choices=["stage", "sweep"],
        help="only these rows (stage: the SVM stage and job start; sweep: the sweep-overhead "
        "row, about 2 minutes); nothing written unless --readme is given: then these rows "
        "replace theirs in --out's .json record (dated; the others keep theirs) and the "
        "README's speed table is rewritten from it",
    )
    return ap.parse_args(argv)


def _measure(quick: bool, emit) -> report.Results:
    """Run every benchmark; the ratio table is emitted as soon as it is measured (progress)."""
    with threadpool_limits(limits=1):
        tr = bench_training_ratio(quick)
        sv = bench_svm_ratio(quick)
        report.emit_ratios(emit, tr, sv)
        naive_rank = naive_rank_estimate(quick)
        thr = training_throughput(quick)
        joint = joint_training(quick)
        big = large_svms()
    builds = build_throughput(quick)
    rank = rank_experiment(quick)
    local = local_experiment(quick)
    base_mem = naive_training_memory()
    jobs = experiment_jobs(quick)
    scale = bench_scale.measure(quick)
    experiments = experiment_benches(quick)
    sweep = sweep_overhead.measure(quick)
    return report.Results(
        tr, sv, naive_rank, thr, big, builds, rank, local, base_mem, jobs, joint, scale,
        experiments, sweep, *_stage(quick),
    )  # fmt: skip


def _stage(quick: bool) -> tuple[list, dict]:
    """The SVM-stage rows (one thread per worker) and the job-start row."""
    with threadpool_limits(limits=1):
        rows = stage.svm_stage(quick)
    return rows, stage.job_start(quick=quick)


def _only(args: argparse.Namespace, emit, stamp: str) -> str:
    """``--only stage|sweep``: those rows; with ``--readme`` recorded in place of their old
    values in the .json record beside ``--out`` (each with its date), then the README table."""
    if args.only == "stage":
        rows, start = _stage(args.quick)
        stage.emit_stage(emit, rows, start)
        start = {**start, "date": stamp}
        fresh = {"svm_stage": [{**row, "size": list(row["size"])} for row in rows]}
        fresh.update(job_start=start, svm_stage_date=stamp, svm_stage_cpu=cpu_name())
    else:
        fresh = {"sweep_overhead": {**sweep_overhead.measure(args.quick), "cpu": cpu_name()}}
        sweep_overhead.emit_table(emit, fresh["sweep_overhead"])
    emit(f"Finished with {load()}.")
    if args.readme and not args.quick:
        path = Path(args.out).with_suffix(".json")
        record = {**json.loads(path.read_text()), **fresh}
        path.write_text(json.dumps(record, indent=1) + "\n")
        write_readme_table(Path(args.readme), record)
    return ""


def main(argv: list[str] | None = None) -> str:
    """Run the benchmarks, print the report, write it (--out) and the README table (--readme)."""
    args = _parse_args(argv)
    torch.set_num_threads(1)
    lines: list[str] = []

    def emit(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    emit(f"Machine: {machine()}; {load()} at start; {stamp}")
    emit(f"Mode: {'quick (samples scaled up)' if args.quick else 'published settings'}")
    emit()
    if args.only:
        return _only(args, emit, stamp)
    res = _measure(args.quick, emit)
    report.emit_experiments(emit, res, args.quick)
    report.emit_throughput(emit, res.throughput, res.builds)
    report.emit_joint(emit, res.joint)
    report.emit_experiment_benches(emit, res.experiments)
    report.emit_large_svms(emit, res.large)
    bench_scale.emit_table(emit, res.scale)
    stage.emit_stage(emit, res.stage, res.start)
    sweep_overhead.emit_table(emit, res.sweep)
    emit(f"Finished with {load()}.")
    text = "\n".join(lines) + "\n"
    record = report.record(res, stamp, args.quick)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report.report(text))
        out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    if args.readme:
        write_readme_table(Path(args.readme), record)
    return text


if __name__ == "__main__":
    main()
