"""The sweep-overhead row (issue #31): what a local sweep costs beyond its jobs.

    python -m attnsvm.bench.sweep_overhead   # alone, about a minute (attnsvm.bench runs it too)

The 40-job grid ``dataset.d=2..21 parameterization=w,kq seeds=2 optimizer.steps=200`` runs as a
real sweep (``python -m attnsvm.run -m ...`` in a fresh process and a fresh sweep directory,
bytecode cached as Python's default: ``stage.bytecode_env``),
once on 1 worker and once on all cores, then once more on 1 worker into the finished directory
(every job skipped). For each: the command's wall against the sum of its jobs' ``seconds``
(job.json: the job's own compute); planning per job (the local launcher's ``planned N jobs``
line); dispatch per job, the median time between one job's end and the next start on the same
worker (worker found greedily: the job that ended last before it started), and its part after
the job's results were written (from job.json's mtime: no table writing); the start-up, the
finished rerun's wall less its planning (imports, Hydra), and the issue's own yardstick, one
default job's start-up (its wall less its seconds: torch's import included). Goals: 1-worker
wall <= 1.3 x job seconds + start-up; planning and dispatch <= 20 ms per job. The all-cores
wall is reported without a goal: its ratio to 1 worker belongs to the machine, not the code.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnsvm.bench.stage import bytecode_env
from hydra_plugins.attnsvm_local import usable_cores

GRID = [
    "dataset.d=" + ",".join(str(d) for d in range(2, 22)),
    "parameterization=w,kq",
    "seeds=2",
    "optimizer.steps=200",
]
PLANNED = re.compile(r"planned (\d+) jobs in ([\d.]+) ms")
OWN_CPU = re.compile(r"the sweep's process: ([\d.]+) s of CPU")


def _sweep(sweep_dir: Path, n_jobs: int) -> dict:
    """One sweep of GRID in a fresh process: wall, job seconds, planning and dispatch."""
    cmd = [sys.executable, "-m", "attnsvm.run", "-m", *GRID]
    cmd += [f"hydra.launcher.n_jobs={n_jobs}", f"hydra.sweep.dir={sweep_dir}"]
    t0 = time.time()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=bytecode_env())
    wall = time.time() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}:\n{res.stderr[-2000:]}")
    match = PLANNED.search(res.stdout + res.stderr)
    own = OWN_CPU.search(res.stdout + res.stderr)
    jobs = [(json.loads(p.read_text()), p.stat().st_mtime) for p in sweep_dir.rglob("job.json")]
    spans = sorted(
        (j["started"], j["started"] + j["seconds"], t) for j, t in jobs if j.get("seconds")
    )
    ran = [s for s in spans if s[0] >= t0]
    return {
        "workers": n_jobs,
        "wall": wall,
        "job_seconds": sum(e - s for s, e, _ in ran),
        "jobs_run": len(ran),
        "planning_ms_per_job": float(match[2]) / int(match[1]) if match else float("nan"),
        "dispatch_ms_per_job": _dispatch([(s, e) for s, e, _ in ran]) * 1e3,
        "handover_ms_per_job": _dispatch([(s, w) for s, _, w in ran]) * 1e3,
        "first_job_s": ran[0][0] - t0 if ran else float("nan"),
        "own_cpu_s": float(own[1]) if own else float("nan"),
    }


def _dispatch(spans: list[tuple[float, float]]) -> float:
    """Median gap between a job's end and the next start on the same worker (greedy match)."""
    free: list[float] = []  # end times of the jobs that no later job has followed yet
    gaps = []
    for start, end in spans:
        before = [e for e in free if e <= start]
        if before:
            prev = max(before)
            free.remove(prev)
            gaps.append(start - prev)
        free.append(end)
    return statistics.median(gaps) if gaps else float("nan")


def default_job_startup(runs: int = 2) -> float:
    """The issue's yardstick, "one default job's start-up": ``python -m attnsvm.run``'s wall
    less its job's own ``seconds`` (Python, imports with torch, Hydra), best of ``runs``."""
    best = float("inf")
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="attnsvm-start-bench-") as tmp:
            cmd = [sys.executable, "-m", "attnsvm.run", f"hydra.run.dir={tmp}/job"]
            t0 = time.time()
            subprocess.run(cmd, capture_output=True, check=True, cwd=tmp, env=bytecode_env())
            wall = time.time() - t0
            job = json.loads((Path(tmp) / "job" / "job.json").read_text())
            best = min(best, wall - job["seconds"])
    return best


def measure(quick: bool = False) -> dict:
    """1 worker, all cores, then the finished rerun (start-up); the goals' left-hand sides."""
    cores = usable_cores()  # as the launcher counts them
    with tempfile.TemporaryDirectory(prefix="attnsvm-sweep-bench-") as tmp:
        one = _sweep(Path(tmp) / "one", 1)
        every = _sweep(Path(tmp) / "all", cores)
        rerun = _sweep(Path(tmp) / "one", 1)
        shutil.rmtree(tmp, ignore_errors=True)
    planning_s = rerun["planning_ms_per_job"] * 40 / 1e3
    startup = rerun["wall"] - planning_s
    job_startup = default_job_startup()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "grid": " ".join(GRID),
        "cores": cores,
        "one": one,
        "all": every,
        "rerun_wall": rerun["wall"],
        "startup_s": startup,
        "goal_one_wall": 1.3 * one["job_seconds"] + startup,
        "default_job_startup_s": job_startup,
        "goal_one_wall_job_startup": 1.3 * one["job_seconds"] + job_startup,
        "all_vs_one": every["wall"] / one["wall"],
    }


def emit_table(emit, r: dict) -> None:
    """The sweep-overhead table of the bench report."""
    emit("## Sweep overhead (local launcher, 40 jobs: " + r["grid"] + ")")
    emit()
    emit("| workers | wall | sum of job seconds | wall / job s | first job at | planning / job "
         "| dispatch / job | of which after the results were written "
         "| the sweep's process, CPU |")  # fmt: skip
    emit("|---|---|---|---|---|---|---|---|---|")
    for row in (r["one"], r["all"]):
        emit(
            f"| {row['workers']} | {row['wall']:.1f} s | {row['job_seconds']:.1f} s "
            f"| {row['wall'] / row['job_seconds']:.2f}× | {row['first_job_s']:.1f} s "
            f"| {row['planning_ms_per_job']:.1f} ms | {row['dispatch_ms_per_job']:.1f} ms "
            f"| {_shown(row.get('handover_ms_per_job'), 'ms')} "
            f"| {_shown(row.get('own_cpu_s'), 's')} |"
        )
    emit()
    emit_floor(emit, r)
    emit(
        f"Start-up (a finished rerun's wall, {r['rerun_wall']:.1f} s, less its planning): "
        f"{r['startup_s']:.1f} s. Goal for 1 worker: wall <= 1.3 × job seconds + start-up = "
        f"{r['goal_one_wall']:.1f} s; all {r['cores']} cores: {r['all_vs_one']:.2f} × the "
        "1-worker wall. Wall is the whole command: start-up, planning, the "
        "workers' start (spawn, imports), the jobs, their dispatch and the summary."
    )
    if "default_job_startup_s" in r:  # rows recorded before it was measured lack it
        emit()
        emit(
            "With the issue's yardstick, one default job's start-up (`python -m attnsvm.run`'s "
            f"wall less its job's seconds: {r['default_job_startup_s']:.1f} s, torch's import "
            "included, which the rerun above never does): 1.3 × job seconds + that = "
            f"{r['goal_one_wall_job_startup']:.1f} s."
        )
    emit()


def _shown(x: float | None, unit: str) -> str:
    return "–" if x is None or x != x else f"{x:.1f} {unit}"  # recorded before it was measured: –


def all_cores_floor(r: dict) -> float:
    """The least all-cores wall over the 1-worker wall that this machine allowed in this run:
    every worker ready when the 1-worker run's first job began, no dispatch, perfect packing,
    the jobs as long as they took side by side (their sum over the cores)."""
    one, every = r["one"], r["all"]
    return (one["first_job_s"] + every["job_seconds"] / r["cores"]) / one["wall"]


def emit_floor(emit, r: dict) -> None:
    """Why the all-cores goal may be out of reach: the floor, the jobs' slowdown side by side."""
    slower = r["all"]["job_seconds"] / r["one"]["job_seconds"]
    emit(
        f"Side by side the jobs took {slower:.2f}× their 1-worker seconds; with every worker "
        "ready at the 1-worker run's first job, no dispatch and perfect packing, all cores "
        f"would take {all_cores_floor(r):.2f}× the 1-worker wall (the floor this machine "
        "allowed in this run)."
    )
    emit()


def main() -> None:
    emit_table(print, measure())


if __name__ == "__main__":
    main()
