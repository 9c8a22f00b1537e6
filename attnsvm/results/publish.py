"""Publish finished sweeps: tables and timings to docs/results/, the README tables from them.

    python -m attnsvm.publish outputs/sweeps/local outputs/sweeps/rank ... [--readme README.md]

For each (already aggregated) sweep directory ``outputs/sweeps/<name>`` this copies the tables
of ``summary/`` into docs/results/ (``summary.csv`` as ``<name>_summary.csv``, an experiment's
own table such as ``multitoken_table.csv`` under its name) and records the sweep's timing in
docs/results/sweeps.json: jobs, seed runs, the sum of the jobs' seconds and the wall time, first
job start to last job end, from each job's ``job.json`` (``started``, ``seconds``), with the
date, CPU model and core count of the machine. A sweep that has unfinished or failed jobs, or
whose summary is older than its jobs, is refused.

With ``--readme`` the README's experiment table (its ``wall`` column and the sentence above it)
and its headline-numbers table are rewritten between their markers from docs/results/ alone;
tests/test_docs.py fails when the README disagrees with those files.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import sys
import textwrap
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
SWEEPS_JSON = "sweeps.json"
JOB = "job.json"
SUMMARY = "summary"
WALL_MARKERS = ("<!-- results:walls -->", "<!-- /results:walls -->")
HEADLINE_MARKERS = ("<!-- results:headlines -->", "<!-- /results:headlines -->")
# the d values the headline row of overparam shows (a choice of columns; those the file lacks
# are skipped, and the smallest and largest d of the file are always shown)
OVERPARAM_SHOWN_D = (2, 4, 10, 20, 30)


class PublishError(Exception):
    """A sweep that cannot be published, or results that cannot be rendered."""


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


def publish(sweep_dirs: list[str | Path], results_dir: str | Path = RESULTS) -> dict:
    """Copy each sweep's tables into ``results_dir`` and merge its timing into sweeps.json;
    returns the whole sweeps.json record. Checks every sweep before writing anything."""
    results_dir = Path(results_dir)
    plans = []
    for sweep_dir in map(Path, sweep_dirs):
        plans.append((sweep_dir.name, sweep_timing(sweep_dir), summary_tables(sweep_dir)))
    results_dir.mkdir(parents=True, exist_ok=True)
    record = load_sweeps(results_dir, missing_ok=True)
    for name, timing, tables in plans:
        for published, path in tables.items():
            shutil.copyfile(path, results_dir / published)
        record[name] = {**timing, "tables": sorted(tables)}
    record = dict(sorted(record.items()))
    (results_dir / SWEEPS_JSON).write_text(json.dumps(record, indent=2) + "\n")
    return record


# ---------------------------------------------------------------- docs/results -> README
def load_sweeps(results_dir: str | Path = RESULTS, missing_ok: bool = False) -> dict:
    path = Path(results_dir) / SWEEPS_JSON
    if not path.exists():
        if missing_ok:
            return {}
        raise PublishError(f"{path} missing: run python -m attnsvm.publish outputs/sweeps/<name>")
    return json.loads(path.read_text())


def read_table(results_dir: str | Path, name: str) -> list[dict]:
    """Rows of docs/results/<name> (strings as in the file)."""
    path = Path(results_dir) / name
    if not path.exists():
        sweep = name.split("_")[0]
        raise PublishError(f"{path} missing: run python -m attnsvm.publish outputs/sweeps/{sweep}")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _num(row: dict, key: str) -> float:
    return float(row[key])


def format_wall(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def experiment_walls(results_dir: str | Path = RESULTS) -> dict[str, str]:
    """Sweep name -> its wall time as the README's experiment table shows it."""
    return {name: format_wall(s["wall"]) for name, s in load_sweeps(results_dir).items()}


def _ranges(values: list[int]) -> str:
    """[3, 4, 5, 6, 9] -> '3–6, 9'."""
    parts, values = [], sorted(values)
    for v in values:
        if parts and v == parts[-1][1] + 1:
            parts[-1][1] = v
        else:
            parts.append([v, v])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in parts)


def _joined(values) -> str:
    values = sorted(set(values))
    return values[0] if len(values) == 1 else " / ".join(values)


def walls_sentence(results_dir: str | Path = RESULTS) -> str:
    sweeps = load_sweeps(results_dir).values()
    cores = _joined(str(s["cores"]) for s in sweeps)
    cpus = _joined(s["cpu"] for s in sweeps)
    dates = _joined(s["date"] for s in sweeps)
    text = (
        f"Wall times of the full sweeps on a {cores}-core {cpus} ({dates}): first job start to "
        "last job end, from the `started` and `seconds` of each job's `job.json`, so the "
        "launcher's start-up (spawning the workers, importing torch) is not counted. "
        "`python -m attnsvm.publish outputs/sweeps/<name> ... --readme README.md` copies each "
        "sweep's tables and timing to [docs/results/](docs/results/) and rewrites this table's "
        "`wall` column and the headline numbers below from those files."
    )
    return textwrap.fill(text, width=96, break_long_words=False, break_on_hyphens=False)


def experiment_table(block: str, results_dir: str | Path = RESULTS) -> str:
    """The README's experiment block (sentence + table) with the sentence and every row's
    ``wall`` cell rendered from sweeps.json; the other cells are kept as given. A row names its
    sweep by ``+sweeps=<name>`` in its command cell."""
    walls = experiment_walls(results_dir)
    lines = [ln for ln in block.strip().splitlines() if ln.startswith("|")]
    if len(lines) < 3 or [c.strip() for c in lines[0].strip("|").split("|")][-1] != "wall":
        raise PublishError("the experiment block holds no table whose last column is `wall`")
    rows = lines[:2]
    for line in lines[2:]:
        m = re.search(r"\+sweeps=([\w-]+)", line)
        if m is None:
            raise PublishError(f"experiment row without `+sweeps=<name>`: {line}")
        if m.group(1) not in walls:
            raise PublishError(
                f"no timing of sweep {m.group(1)!r} in docs/results/{SWEEPS_JSON}: run "
                f"python -m attnsvm.publish outputs/sweeps/{m.group(1)} --readme README.md"
            )
        cells = line.strip().strip("|").split("|")
        rows.append("|" + "|".join([*cells[:-1], f" {walls[m.group(1)]} "]) + "|")
    return walls_sentence(results_dir) + "\n\n" + "\n".join(rows)


def _local_row(rows: list[dict]) -> str:
    by = {r["parameterization"]: r for r in rows}
    w, kq = by["w"], by["kq"]
    seeds = _joined(r["seeds"] for r in rows)
    return (
        f"| local ({seeds} seeds) | final corr(W, W^mm_α) {_num(w, 'corr_fro_mean'):.4f}, "
        f"corr(KQᵀ, W^mm_⋆,α) {_num(kq, 'corr_nuc_mean'):.4f}; cross-norm "
        f"{_num(w, 'corr_nuc_mean'):.3f} / {_num(kq, 'corr_fro_mean'):.3f} |"
    )


def _rank_row(rows: list[dict]) -> str:
    d = max(int(r["d"]) for r in rows)
    top = [r for r in rows if int(r["d"]) == d]
    ts = {}
    for r in top:  # the slice over n: the T shared by most n values
        ts.setdefault(int(r["T"]), []).append(r)
    T, sl = max(ts.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    sl = sorted(sl, key=lambda r: int(r["n"]))
    fro = [_num(r, "rank_fro_mean") for r in sl]
    ns = [int(r["n"]) for r in sl]
    nuc = ", ".join(f"{_num(r, 'rank_nuc_mean'):.1f}" for r in sl)
    if fro == [float(n) for n in ns]:
        fro_text = f"Frobenius rank = n ({', '.join(map(str, ns))})"
    else:
        fro_text = f"Frobenius rank {', '.join(f'{x:.1f}' for x in fro)} at n = " + ", ".join(
            map(str, ns)
        )
    return f"| rank, d={d} | {fro_text}; nuclear rank {nuc} at T={T} |"


def _overparam_row(rows: list[dict]) -> str:
    rows = sorted(
        (r for r in rows if r.get("parameterization", "w") == "w"), key=lambda r: int(r["d"])
    )
    ds = [int(r["d"]) for r in rows]
    shown = {ds[0], ds[-1], *(d for d in OVERPARAM_SHOWN_D if d in ds)}
    shares = ", ".join(
        f"{_num(r, 'global_share') * 100:.0f} % (d={r['d']})" for r in rows if int(r["d"]) in shown
    )
    others = ("global", "other", "not_converged")  # not_converged: absent before it existed
    local_first = [
        int(r["d"]) for r in rows if _num(r, "local") > max(_num(r, k) for k in others if k in r)
    ]
    tail = (
        f"; local is the most frequent outcome at d={_ranges(local_first)}" if local_first else ""
    )
    return f"| overparam, global share | {shares}{tail} |"


def _small(x: float) -> str:
    return f"{x:.3f}" if abs(x) >= 0.01 else f"{x:.2g}"


def _multitoken_row(rows: list[dict]) -> str:
    rows = sorted(rows, key=lambda r: int(r["d"]))
    lo, hi = rows[0], rows[-1]
    names = {"svmeq": "SVMeq", "dir": "W^dir", "1token": "W^1token"}
    parts = ", ".join(
        f"{label} {_small(_num(lo, f'mean_1-corr_{k}'))} / {_small(_num(hi, f'mean_1-corr_{k}'))}"
        for k, label in names.items()
    )
    return f"| multitoken, final 1 − corr at d={lo['d']} / {hi['d']} (mean) | {parts} |"


def _regpath_row(rows: list[dict]) -> str:
    d = max(int(r["d"]) for r in rows)
    by = {r["parameterization"]: r for r in rows if int(r["d"]) == d}
    w, kq = by["w"], by["kq"]
    seeds = _joined(f"{_num(r, c):.0f}" for r, c in ((w, "corr_fro_count"), (kq, "corr_nuc_count")))
    return (
        f"| regpath, d={d} | corr(W̄_R, W^mm) {_num(w, 'corr_fro_mean'):.4f}, "
        f"corr(K̄Q̄ᵀ, W^mm_⋆) {_num(kq, 'corr_nuc_mean'):.4f}, mean over {seeds} seeds at "
        "each seed's largest R before its gradient underflows |"
    )


def _geometry_row(rows: list[dict]) -> str:
    """Per step rule: its predicted norm's final margin ratio against the best other norm."""
    by_rule: dict[str, list[dict]] = {}
    for r in rows:
        by_rule.setdefault(r["rule"], []).append(r)
    parts, held = [], 0
    for rule in sorted(by_rule):
        cells = by_rule[rule]
        own = [r for r in cells if r["predicted"] == "True"]
        if not own:
            continue
        own = own[0]
        other = max((r for r in cells if r is not own), key=lambda r: _num(r, "margin_mean"))
        wins = _num(own, "margin_mean") > _num(other, "margin_mean")
        held += wins
        parts.append(
            f"{rule}→{own['norm']} {_num(own, 'margin_mean'):.3f} "
            f"{'>' if wins else '<'} {other['norm']} {_num(other, 'margin_mean'):.3f}"
        )
    seeds = _joined(r["seeds"] for r in rows)
    return (
        f"| geometry, d={rows[0]['d']}, final margin ratio γ_N(W)/γ*_N (mean, {seeds} ok seeds "
        f"per rule): predicted norm vs best other | {'; '.join(parts)} — the predicted norm "
        f"wins for {held} of {len(parts)} step rules |"
    )


def _rates_row(rows: list[dict]) -> str:
    """Median slope of log(1 - corr(W, W^mm)) vs log t for the rules that target W^mm."""
    fro = {
        r["rule"]: r for r in rows if r["norm"] == "fro" and r["rule"] in ("ngd", "gd", "polyak")
    }
    parts = [
        f"{rule} {float(r['rate_median'] or 'nan'):.2f} "
        f"({r['rate_fitted']} of {r['seeds']} seeds fitted)"
        for rule, r in sorted(fro.items())
    ]
    what = "rates: median slope of log(1 − corr(W, W^mm)) vs log t, last two decades"
    return f"| {what} | {'; '.join(parts)} |"


def _mirror_row(rows: list[dict]) -> str:
    """Final mean Bregman divergence of each p-path (N(0,1) init) to each lp-SVM."""
    cols = [c for c in rows[0] if c.startswith("bregman_l")]  # the lp-SVMs
    parts = []
    for r in sorted((r for r in rows if r["init"] == "normal"), key=lambda r: r["rule"]):
        ds = ", ".join(
            f"{c.removeprefix('bregman_').replace('p', '.')} {_small(_num(r, c))}" for c in cols
        )
        parts.append(f"{r['rule']}: {ds}")
    what = "mirror, final mean Bregman divergence D_p to the lp-SVMs (N(0,1) init)"
    return f"| {what} | {'; '.join(parts)} |"


def _maxmargin_row(rows: list[dict]) -> str:
    """Per published example (logistic loss): the least final corr of p with its own SVM (the
    relaxed one for joint_relaxed) at float64, the published float32 form in parentheses, and
    ||p|| where each ends."""
    at = {(r["example"], r["dtype"]): r for r in rows if r["loss_function"] == "logistic"}
    order = ["single", "single_local", "multi", "joint", "joint_relaxed", "loss"]
    parts = []
    for ex in (e for e in order if (e, "float64") in at):
        col = "corr_relaxed_min" if ex == "joint_relaxed" else "corr_p_mm_min"
        r64, r32 = at[(ex, "float64")], at.get((ex, "float32"))
        text = f"{ex} {_num(r64, col):.5f}" + (f" ({_num(r32, col):.4f})" if r32 else "")
        if ex == "joint_relaxed":
            text += f", vs the ordinary p-SVM {_num(r64, 'corr_p_mm_min'):.4f}"
        if r64.get("corr_v_mm_min"):
            text += f", corr(v, v^mm) {_num(r64, 'corr_v_mm_min'):.5f}"
        parts.append(text)
    norms = [_num(r, "w_norm_mean") for (_, dtype), r in at.items() if dtype == "float32"]
    ends = [_num(r, "w_norm_mean") for (_, dtype), r in at.items() if dtype == "float64"]
    what = (
        "maxmargin: least final corr(p, p^mm) after 1000 NGD steps, float64 (published float32 "
        "form)"
    )
    tail = f"‖p‖ {min(ends):.0f}–{max(ends):.0f} at float64; float32 freezes at "
    tail += f"{min(norms):.0f}–{max(norms):.0f}"
    return f"| {what} | {'; '.join(parts)}; {tail} |"


def _digits_row(rows: list[dict]) -> str:
    """Per (n, patch): SVM at the optimal patches feasible, saturated seeds, corr(p, p^mm) at
    the selected patches, and how often GD selected the highest-scoring patch."""
    parts = []
    for r in sorted(rows, key=lambda r: (int(r["patch"]), int(r["n"]))):
        parts.append(
            f"patch {r['patch']}, n={r['n']}: opt-SVM feasible {_num(r, 'opt_svm_feasible'):.0%}, "
            f"saturated {_num(r, 'saturated'):.0%}, corr {_num(r, 'corr_p_mm_mean'):.3f}, "
            f"top patch selected {_num(r, 'share_selected_opt'):.0%}"
        )
    return f"| digits 0 vs 1, p-model, 20 image draws per point | {'; '.join(parts)} |"


HEADLINES = [  # (published table, row renderer)
    ("local_summary.csv", _local_row),
    ("rank_summary.csv", _rank_row),
    ("overparam_summary.csv", _overparam_row),
    ("multitoken_table.csv", _multitoken_row),
    ("regpath_summary.csv", _regpath_row),
    ("geometry_table.csv", _geometry_row),
    ("rates_geometry_table.csv", _rates_row),
    ("mirror_table.csv", _mirror_row),
    ("maxmargin_table.csv", _maxmargin_row),
    ("digits_table.csv", _digits_row),
]


def headline_table(results_dir: str | Path = RESULTS) -> str:
    """The README's headline-numbers table, from the tables in ``results_dir`` only."""
    rows = ["| | result |", "|---|---|"]
    rows += [render(read_table(results_dir, name)) for name, render in HEADLINES]
    return "\n".join(rows)


def readme_block(text: str, markers: tuple[str, str]) -> str:
    """The text between ``markers`` in ``text`` (stripped)."""
    start, end = markers
    if start not in text or end not in text:
        raise PublishError(f"README lacks the markers {start} ... {end}")
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def _replace(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = markers
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{body}\n{end}{after}"


def render_readme(text: str, results_dir: str | Path = RESULTS) -> str:
    """``text`` (a README) with both results blocks rendered from ``results_dir``."""
    walls = experiment_table(readme_block(text, WALL_MARKERS), results_dir)
    text = _replace(text, WALL_MARKERS, walls)
    readme_block(text, HEADLINE_MARKERS)
    return _replace(text, HEADLINE_MARKERS, headline_table(results_dir))


def write_readme(readme: str | Path, results_dir: str | Path = RESULTS) -> None:
    readme = Path(readme)
    readme.write_text(render_readme(readme.read_text(), results_dir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnsvm.publish", description=__doc__.splitlines()[0]
    )
    parser.add_argument("sweep_dirs", nargs="*", type=Path, help="aggregated sweep directories")
    parser.add_argument("--readme", type=Path, help="rewrite this README's results blocks")
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="results folder (default docs/results)"
    )
    args = parser.parse_args(argv)
    if not args.sweep_dirs and not args.readme:
        parser.error("give sweep directories, --readme, or both")
    try:
        if args.sweep_dirs:
            record = publish(args.sweep_dirs, args.results)
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
