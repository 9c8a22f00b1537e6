"""The README's speed table, rendered from the bench's results file (docs/benchmarks.json):
``python -m attnsvm.bench --readme README.md`` rewrites it; tests/test_docs.py fails when the
README's copy differs."""

from __future__ import annotations

from pathlib import Path

from attnsvm.svm.norm_names import FROBENIUS, NUCLEAR

README_MARKERS = ("<!-- bench:speed -->", "<!-- /bench:speed -->")


def readme_table(r: dict) -> str:
    """The README's speed table, from the bench's results file (docs/benchmarks.json);
    tests/test_docs.py fails when the README's copy differs."""
    rows = ["| | attnsvm | naive | ratio |", "|---|---|---|---|", *_core_rows(r), *_more_rows(r)]
    head = f"{r['machine']}; {r['date']}" + (" (quick mode)" if r["quick"] else "")
    return "\n".join([f"Measured on {head}:", "", *rows])


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.0f}×"


def _core_rows(r: dict) -> list[str]:
    """Training and SVMs against the naive way, and the rank and local experiments."""
    t, svm6 = r["train_ms"], r["svm_ms"]["(6, 8, 10)"]
    fro, nuc, large = svm6[FROBENIUS], svm6[NUCLEAR], r["large_s"]
    vs_naive = lambda e: " / ".join(_ratio(t[k]["naive"], t[k][e]) for k in ("w", "kq"))  # noqa: E731
    rank = r["rank"]
    portable = next((v for k, v in r["builds"].items() if "_fused," in k), None)
    return [
        f"| one 2000-step training run at (6,8,10), W / (K,Q), fused engine "
        f"| {t['w']['fused']:.1f} / {t['kq']['fused']:.1f} ms "
        f"| {t['w']['naive']:.0f} / {t['kq']['naive']:.0f} ms "
        f"| {vs_naive('fused')} |",
        f"| the same, torch engine | {t['w']['torch']:.1f} / {t['kq']['torch']:.1f} ms | "
        f"| {vs_naive('torch')} |",
        f"| training throughput, seed-runs of 2000 steps per CPU second, W / (K,Q) "
        f"| {r['throughput_per_core']['w']:.0f} / {r['throughput_per_core']['kq']:.0f}"
        + (f" (portable build {portable['w']:.0f} / {portable['kq']:.0f})" if portable else "")
        + f" | ≈ {1e3 / t['w']['naive']:.2f} / {1e3 / t['kq']['naive']:.2f} | |",
        f"| one Frobenius SVM at (6,8,10) | {fro[1]:.2f} ms | {fro[0]:.0f} ms | {_ratio(*fro)} |",
        f"| one nuclear SVM at (6,8,10), in a batch of 20 | {nuc[1]:.1f} ms "
        f"| {nuc[0]:.0f} ms | {_ratio(*nuc)} |",
        f"| rank experiment (8000 SVMs) | {rank['cpu']:.1f} CPU-s, {rank['wall']:.1f} s wall "
        f"| ≈ {rank['naive_cpu']:.0f} CPU-s | {_ratio(rank['naive_cpu'], rank['cpu'])} |",
        f"| local experiment (100 seeds × W, (K,Q), 400 SVMs) | {r['local']['cpu']:.1f} CPU-s, "
        f"{r['local']['wall']:.1f} s wall | ≈ {(t['w']['naive'] + t['kq']['naive']) / 10:.0f} "
        f"CPU-s + SVMs | |",
        f"| Frobenius SVM (20,20,1000) / nuclear SVM (20,20,200) | {large[FROBENIUS]:.2f} / "
        f"{large[NUCLEAR]:.2f} s | – | – |",
    ]


def _more_rows(r: dict) -> list[str]:
    """The rows of what later bench runs added (absent from older results files)."""
    rows = []
    for jobs in r.get("experiment_jobs", {}).values():  # each experiment's bench_jobs
        rows += [
            f"| {j['what']} | {j['cpu']:.1f} CPU-s, {j['wall']:.1f} s wall | | |" for j in jobs
        ]
    if r.get("joint_per_cpu_s"):
        j = r["joint_per_cpu_s"]
        rows.append(
            "| joint training of the head (torch engine, 1000 steps), W / p-model: seed-runs "
            f"per CPU second, batched vs one seed at a time | {j['w']['batched']:.0f} / "
            f"{j['p']['batched']:.0f} | {j['w']['alone']:.1f} / {j['p']['alone']:.1f} | "
            f"{_ratio(j['w']['batched'], j['w']['alone'])} / "
            f"{_ratio(j['p']['batched'], j['p']['alone'])} |"
        )
    for job in r.get("scale", []):
        o = job["ours"]
        rows.append(
            f"| a {job['seeds']}-seed job at {tuple(job['shape'])}: 2000 steps and the four SVMs "
            f"per seed, threads=2 (target <= {job['target_s']:.0f} s) | {o['wall']:.0f} s, "
            f"{o['peak_mib']:.0f} MiB peak | {job['before_wall_scaled']:.0f} s (without the "
            f"large-instance routes) | {job['ratio']:.1f}× |"
        )
    if r.get("sweep_overhead"):
        o = r["sweep_overhead"]
        one, every, where = o["one"], o["all"], elsewhere(r, o.get("cpu"))
        rows.append(
            f"| sweep overhead ({o['date']}{where}): 40 small jobs on the local launcher, 1 / "
            f"{o['cores']} workers; wall of the whole command vs the sum of the jobs' seconds; "
            f"planning and dispatch per job (1 worker) | {one['wall']:.1f} / {every['wall']:.1f}"
            f" s for {one['job_seconds']:.1f} / {every['job_seconds']:.1f} job-s "
            f"({one['wall'] / one['job_seconds']:.1f}× on 1); {one['planning_ms_per_job']:.1f} "
            f"ms, {one['dispatch_ms_per_job']:.0f} ms | – | |"
        )
    rows += _stage_rows(r)
    for name, cases in r.get("experiments", {}).items():
        for case, t in cases.items():
            rows.append(
                f"| {name}, {case}: seed-runs per CPU second, batched vs one seed at a time "
                f"| {t['batched']:.2f} | {t['alone']:.2f} | {t['batched'] / t['alone']:.2f}× |"
            )
    return rows


def elsewhere(r: dict, cpu: str | None) -> str:
    """ ", on <cpu>" for rows measured apart (``--only``) on a CPU other than the headline's."""
    return f", on {cpu}" if cpu and cpu not in r["machine"] else ""


def _stage_rows(r: dict) -> list[str]:
    """The SVM stage per seed (reference = one seed at a time) and the job's start-up."""
    where = elsewhere(r, r.get("svm_stage_cpu"))
    rows, when = [], f" ({r['svm_stage_date']}{where})" if r.get("svm_stage_date") else ""
    for s in r.get("svm_stage", []):
        rows.append(
            f"| SVM stage at {tuple(s['size'])}{when} per seed (Frobenius + nuclear at opt), "
            "batched on "
            f"1 worker / on {s['workers']}; training per seed {s['train'] * 1e3:.1f} ms "
            f"| {s['batched'] * 1e3:.1f} / {s['spread'] * 1e3:.1f} ms "
            f"({s['batched'] / s['train']:.1f}× training) "
            f"| {s['reference'] * 1e3:.1f} ms (one seed at a time) "
            f"| {s['reference'] / s['batched']:.1f}× / {s['reference'] / s['spread']:.1f}× |"
        )
    if r.get("job_start"):
        j = r["job_start"]
        rows.append(
            f"| the default job's whole process (`python -m attnsvm.run`{when}"
            + (", bytecode cached" if j.get("bytecode") else "")
            + ") "
            f"against `python -c 'import torch'` | {j['default_job']:.2f} s "
            f"| {j['import_torch']:.2f} s | {j['ratio']:.2f}× |"
        )
    if r.get("job_start", {}).get("threads"):
        t = r["job_start"]["threads"]
        rows.append(
            f"| a {t['seeds']}-seed (K,Q) job on {t['workers']} cores (`threads={t['workers']}`) "
            f"against `threads=1`, rows {'identical' if t['identical'] else 'DIFFERENT'}"
            + (
                f" (this machine's ceiling: {t['workers']} processes side by side give "
                f"{t['ceiling']['python']:.2f}× one's pure-Python throughput, "
                f"{t['ceiling']['blas']:.2f}× BLAS)"
                if "ceiling" in t
                else ""
            )
            + f" | {t['all']:.2f} s | {t['one']:.2f} s | {t['speedup']:.2f}× |"
        )
    return rows


def write_readme_table(readme: Path, record: dict) -> None:
    """Replace the text between README_MARKERS in ``readme`` with ``readme_table(record)``."""
    text = readme.read_text()
    start, end = README_MARKERS
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    readme.write_text(f"{before}{start}\n{readme_table(record)}\n{end}{after}")
