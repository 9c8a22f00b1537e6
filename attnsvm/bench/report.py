"""The bench's report: its markdown tables (docs/benchmarks.md), its results file
(docs/benchmarks.json, what the README's speed table is rendered from) and the notes on reading
them."""

from __future__ import annotations

from dataclasses import dataclass, field

from attnsvm.bench.timing import Timing, machine
from attnsvm.bench.train_cases import ENGINES
from attnsvm.svm.norm_names import FROBENIUS


@dataclass
class Results:
    """Everything one bench run measured: what the report's tables and the results file show."""

    train: dict  # bench_training_ratio
    svm: dict  # bench_svm_ratio
    naive_rank: float
    throughput: dict  # training_throughput
    large: dict  # large_svms
    builds: dict  # build_throughput
    rank: Timing
    local: Timing
    base_mem: float
    jobs: dict = field(default_factory=dict)  # experiment_jobs: experiment -> rows
    joint: dict = field(default_factory=dict)  # joint_training
    scale: list = field(default_factory=list)  # bench_scale.measure
    experiments: dict = field(default_factory=dict)  # experiment_benches
    sweep: dict = field(default_factory=dict)  # sweep_overhead.measure
    stage: list = field(default_factory=list)  # stage.svm_stage
    start: dict = field(default_factory=dict)  # stage.job_start


def emit_ratios(emit, tr: dict, sv: dict) -> None:
    """The table of ours vs the naive way, training and SVMs."""
    emit("## Ours vs naive (same process, interleaved, CPU seconds)")
    emit()
    emit("| what | naive | attnsvm | speed-up |")
    emit("|---|---|---|---|")
    for k, t in tr.items():
        for e in ENGINES:
            what = f"train one seed-run, 2000 steps, (6,8,10), {k}, {e.value} engine"
            a, b = t["naive"], t[e]
            emit(f"| {what} | {a:.3f} s | {b * 1e3:.2f} ms | {a / b:.0f}x |")
    for shape, res in sv.items():
        for norm, (a, b) in res.items():
            what = f"one {norm} SVM at (n,T,d)={shape}"
            emit(f"| {what} | {a * 1e3:.1f} ms | {b * 1e3:.2f} ms | {a / b:.0f}x |")
    emit()


def emit_experiments(emit, r: Results, quick: bool) -> None:
    """The table of whole experiments (time, memory, the naive estimate) and the idle worker."""
    rank, local, tr = r.rank, r.local, r.train
    emit("## Whole experiments (2 worker processes, 1 thread each)")
    emit()
    emit("| experiment | target | wall | wall incl. start | CPU | peak RSS/worker | naive CPU |")
    emit("|---|---|---|---|---|---|---|")
    rseeds = "20 seeds/point (quick)" if quick else "100 seeds/point"
    lsteps = "500 steps (quick)" if quick else "2000 steps"
    emit(
        f"| rank: 8000 SVMs, {rseeds} | <= 20 s | {rank.wall:.1f} s | {rank.outer:.1f} s "
        f"| {rank.cpu:.1f} s "
        f"| {rank.peak_mib:.0f} MiB | {r.naive_rank:.0f} s |"
    )
    emit(
        f"| local: 100 seeds x (W, KQ), {lsteps}, 400 SVMs "
        f"| <= 3 s | {local.wall:.1f} s | {local.outer:.1f} s | {local.cpu:.1f} s "
        f"| {local.peak_mib:.0f} MiB | "
        f"{(tr['w']['naive'] + tr['kq']['naive']) * 100:.0f} s + SVMs |"
    )
    for line in job_rows(r.jobs):
        emit(line)
    emit()
    emit(f"Idle worker after imports + 1 tiny run: {r.base_mem:.0f} MiB peak RSS.")
    emit()


def job_rows(jobs: dict) -> list[str]:
    """The whole-experiment table's rows of each experiment's ``bench_jobs``."""
    return [
        f"| {j['what']} | {j['target']} | {_cells(j)} | - |" for rows in jobs.values() for j in rows
    ]


def _cells(job: dict) -> str:
    """wall, wall incl. start, CPU and peak memory of an experiment's job row ("-" where it did
    not measure one)."""
    cells = [
        ("wall", "{:.1f} s"),
        ("outer", "{:.1f} s"),
        ("cpu", "{:.1f} s"),
        ("peak_mib", "{:.0f} MiB"),
    ]
    return " | ".join(
        form.format(job[key]) if key in job and job[key] == job[key] else "-"  # nan: not measured
        for key, form in cells
    )


def emit_joint(emit, joint: dict) -> None:
    """Joint training of the head: batched over seeds vs one seed at a time."""
    emit("## Joint training of the head (head.train=true, torch engine, 1000 steps, (6,8,10))")
    emit()
    emit("| model | seed-runs per CPU s, batched | one at a time | ratio |")
    emit("|---|---|---|---|")
    for kind, t in joint.items():
        emit(
            f"| {kind} | {t['batched']:.0f} | {t['alone']:.1f} | {t['batched'] / t['alone']:.0f}x |"
        )
    emit()


def emit_throughput(emit, thr: dict, builds: dict) -> None:
    """The training throughput table, by batch, parameterization, engine and threads."""
    emit("## Training throughput at (6,8,10) (seed-runs of 2000 steps per second)")
    emit()
    emit("| seeds in batch | param | engine | threads | per wall s | per CPU s (per core) |")
    emit("|---|---|---|---|---|---|")
    for (R, kind, engine, th), (w, c) in thr.items():
        emit(f"| {R} | {kind} | {engine} | {th} | {w:.0f} | {c:.0f} |")
    emit()
    emit("Fused engine by kernel build (1000 seeds, 1 thread, per CPU second): " + "; ".join(
        f"{desc}: W {r['w']:.0f}, (K,Q) {r['kq']:.0f}" for desc, r in builds.items()
    ))  # fmt: skip
    emit()


def emit_large_svms(emit, big: dict) -> None:
    """The table of one large Frobenius and one large nuclear SVM."""
    emit("## Large SVMs (one instance, 1 thread)")
    emit()
    emit("| SVM | (n,T,d) | target | wall | CPU | status | rank |")
    emit("|---|---|---|---|---|---|---|")
    for name, (shape, t, status, rk) in big.items():
        target = "<= 1 s" if name == FROBENIUS else "<= 5 s"
        emit(f"| {name} | {shape} | {target} | {t.wall:.2f} s | {t.cpu:.2f} s | {status} | {rk} |")
    emit()


def emit_experiment_benches(emit, benches: dict) -> None:
    """Each registered experiment's own cases (its entry's ``bench_cases``): batched vs one seed
    at a time."""
    if not benches:
        return
    emit("## Experiments' own cases (seed-runs per CPU second, 1 thread)")
    emit()
    emit("| experiment | case | batched | one seed at a time | ratio |")
    emit("|---|---|---|---|---|")
    for name, cases in benches.items():
        for case, t in cases.items():
            ratio = t["batched"] / t["alone"]
            emit(f"| {name} | {case} | {t['batched']:.2f} | {t['alone']:.2f} | {ratio:.2f}x |")
    emit()


def record(r: Results, stamp: str, quick: bool) -> dict:
    """The results file (docs/benchmarks.json): what the README's speed table is rendered from."""
    return {
        "machine": machine(),
        "date": stamp,
        "quick": quick,
        "train_ms": {
            k: {e if isinstance(e, str) else e.value: v * 1e3 for e, v in t.items()}
            for k, t in r.train.items()
        },
        "throughput_per_core": {k: r.throughput[(1000, k, "fused", 1)][1] for k in ("w", "kq")},
        "builds": r.builds,
        "svm_ms": {
            str(shape): {norm: [a * 1e3, b * 1e3] for norm, (a, b) in res.items()}
            for shape, res in r.svm.items()
        },
        "rank": {"wall": r.rank.wall, "cpu": r.rank.cpu, "naive_cpu": r.naive_rank},
        "local": {"wall": r.local.wall, "cpu": r.local.cpu},
        "experiment_jobs": r.jobs,
        "joint_per_cpu_s": r.joint,
        "large_s": {name: t.wall for name, (_, t, _, _) in r.large.items()},
        "scale": r.scale,
        "experiments": r.experiments,
        "svm_stage": [{**row, "size": list(row["size"])} for row in r.stage],
        "job_start": r.start,
        "sweep_overhead": r.sweep,
    }


NOTES = """
## Reading the tables

Workers are single-threaded and the two of an experiment run side by side, so on two idle
cores an experiment's wall time is about its CPU time / 2 (the rank grid is split evenly;
local is W on one core, (K,Q) on the other, so its wall is the (K,Q) worker's CPU time).
"wall incl. start" adds spawning the workers and importing torch and cvxpy (about 5-10 s on
a busy machine), which a Hydra multirun pays once per worker as well.

## Where the speed comes from

- **Training**: the fused engine (`engine=auto`, the default, for the linear and ReLU heads in
  float64 on the CPU) runs whole trajectories in C (`attnsvm/kernel/_fused.c`, built at install,
  called through ctypes): every array seed-last, so each formula of the hand-written stable
  gradient is one SIMD operation across 8 seeds (AVX-512 build) or 4 (AVX2 / baseline build),
  and the loops over n, T, d run once per group instead of once per seed and step; `exp` is a
  vectorised Cody-Waite + degree-13 polynomial within 1 ulp (a libm call per lane had taken
  half the time). The vector width must match the CPU's: 8-lane code on AVX2 ran 5x slower
  than 4-lane code, because GCC expands its comparisons lane by lane. The torch engine
  (`engine=torch`; the lambda head, float32, CUDA) batches all seeds of a job instead; its
  steps are dominated by torch's batched matmuls of tiny matrices (about 55 %) and
  log-softmax over rows of 8 (15 %).
  The naive baseline is one seed at a time through autograd. Threads: a second thread never
  lowers the CPU time per seed-run (table above); on an otherwise idle machine it shortens the
  wall time (torch about 1.9x at 1000 seeds, fused about 1.7x), but whenever anything else ran,
  two torch threads made training 3-30x slower (docs/math.md#threads, and the previous version
  of this table). A sweep's workers already fill every core, so `threads: 1` is the default and
  parallelism comes from worker processes (joblib launcher); `threads: 2` suits one big job
  on an idle machine (same numbers with either engine).
- **BLAS threads**: `threads` also bounds numpy/scipy's OpenBLAS pools (threadpoolctl). With the
  default two BLAS threads on two busy cores, a 380 x 380 `eigh` took 6.9 s instead of 0.045 s
  and the (20,20,200) nuclear SVM 46 CPU-s instead of about 1.
- **Frobenius SVM**: all seeds of a shape in one batched block-principal-pivoting solve of
  its dual (`attnsvm/svm/fro_batch.py`, Gram matrices scaled to a largest entry of 1), each
  answer certified by its KKT residuals and margins; an instance it cannot certify (a singular
  Gram block, as when n(T-1) > d^2, or an infeasible one) goes to the exact NNLS dual of the
  least-distance program, which alone says `infeasible`, and only with a certificate (0 within
  1e-6 of the hull of the scaled constraint matrices). The row's `svm_path_fro` says which.
- **Nuclear SVM**: solved in the reduced (p x q) space, p <= n(T-1), q <= n, by a batched
  primal-dual interior point (`attnsvm/svm/nuclear_ipm.py`, HKM direction, Mehrotra
  predictor-corrector):
  each Newton step is an m x m Schur complement built from the rank-2 constraint matrices, so
  no modelling layer and no dense ((p+q)(p+q+1)/2)^2 KKT block; instances of one shape (all
  seeds of a grid point) go through one call. It stops at Clarabel's tolerance (`solver.tol`,
  1e-10: relative gap and max-norm residuals); once an instance's gap is below 1e-8 its Schur
  solve is refined against the operator itself, which keeps degenerate instances (many active
  constraints at a low-rank solution, as in sequential attention) primal feasible to the end;
  an instance that still does not get
  there is re-solved by the per-instance cvxpy model (`solver=clarabel` selects that model for
  everything). Its products and sums run in the batch-invariant primitives below (the C
  kernel's sequential matmul), not in BLAS: slower than MKL's batched gemm at these sizes, the
  price of a result that does not depend on the batch. When every sequence has the same
  number of constraints, the Schur complement's repeated factors are broadcast over k x k
  blocks instead of gathered into m x m matrices.
- **Workers**: `threads=N` spreads the SVM stage over N threads, each on a contiguous share of
  the seeds with LAPACK on one thread (norms.solve_spread): every solver's answer for a seed is
  independent of its batch mates, so the bits are those of N=1 (tests/test_svm_batch.py).

## Found on the way (fixed)

- Seeds were not batch-invariant: torch's CPU kernels compute the last (numel mod 16) elements
  of `exp`/`sigmoid`/`softplus` with scalar libm calls and the rest with vectorised ones, which
  differ in the last bit, so a seed's trajectory depended on its position in the batch (a
  seed alone vs in a batch of 50 differed from step 21 on). `batchops.elementwise` pads those
  calls' inputs to a multiple of 64 so every element takes the vectorised path; trajectories are
  unchanged wherever the old code had no scalar tail (tested), and now bit-identical alone
  or in any batch (tested). Row reductions (`sum`, `mean`, long dot products) also round
  differently with the batch shape; `batchops.dot_last` reduces every row with the same
  small-matmul kernel.
- The fused engine is batch-invariant by construction: lane l of every SIMD operation is the
  same IEEE operation on seed l's numbers alone, sums run in an order fixed by (n, T, d, m), the
  last group is padded with copies of a real seed, and the build forbids FMA contraction
  (`-ffp-contract=off`). A seed alone, in a batch of 23, on one or two threads: the same bits
  (tested). Its rounding order differs from torch's kernels, so the engines agree to rounding
  error (W: 1e-15 relative after 2000 steps; (K,Q) amplifies it to about 1e-7 along the path,
  same tokens, direction correlation 1 - 1e-9; tested), and `engine` is part of the job hash.

- Correct on every CPU (found on an AMD EPYC, AVX2 and AVX-512 kernels): MKL's batched gemm
  (torch's BLAS) changed one seed's product with its batch mates at (5,5,25), and MKL's LAPACK
  (eigvalsh, cholesky_solve/inverse in the interior point) depended on an instance's memory
  alignment, i.e. its position in the batch. Every product now sums in a fixed sequential
  order in exactly rounded operations (`batchops.matmul`: torch's per-matrix loop, or the C
  kernel's `attnsvm_seq_matmul`, no FMA), the same bits on every kernel level; LAPACK runs in
  MKL's strict CNR mode on one thread.

## Known gaps

- The fused kernel covers the linear and ReLU heads; the lambda head trains with torch.
- An experiment's own whole-job rows may be estimates scaled from a smaller run; each row's
  text says how it was measured (the experiment's docs give the real sweep's time).
- The naive rank time is extrapolated from one instance per (n,T,d) point (times 100).
"""


def report(results: str) -> str:
    return (
        "# Benchmarks\n\n"
        "Produced by `python -m attnsvm.bench` (see the module docstring for what is measured).\n"
        "Wall times depend on what else runs on the machine; CPU times and ratios much less.\n\n"
        + results
        + NOTES
    )
