"""Sweep directory -> one tidy frame -> summary tables and figures.

    python -m attnsvm.run -m +sweeps=rank
    python -m attnsvm.aggregate outputs/sweeps/rank            # writes outputs/sweeps/rank/summary/
    python -m attnsvm.aggregate outputs/sweeps/rank --out docs/figures/rank

Every ``job.json`` below the sweep directory marks one job (directory names are never parsed).
Jobs are de-duplicated by config hash, keeping the newest finished one; failed and unfinished
jobs are reported, never fatal. Written to ``--out`` (default ``SWEEP_DIR/summary``):

* ``all_runs.parquet``: every seed's row of every job, the swept keys as columns;
* ``summary.parquet`` / ``summary.csv``: one row per config point, in its experiment's own
  columns (its entry's ``columns``, attnsvm/results/columns.py): seed counts (feasible,
  accepted, ...), convergence types, mean / std / count of each of its metrics;
* each experiment's figures (PNG and PDF), drawn from its own jobs (its entry's ``figures``);

and the report page ``SWEEP_DIR/report.html`` (a read-only sweep's: ``--out``'s report.html).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from attnsvm.config.checks import ConfigError, flatten
from attnsvm.config.input_checks import check_writable_dir
from attnsvm.figures import draw_to_files_only
from attnsvm.results import columns as declaration
from attnsvm.results import store as results
from attnsvm.results.artifacts import job_arrays
from attnsvm.results.columns import DEFAULT, Columns, columns_of, header, shown
from attnsvm.results.integrity import verified
from attnsvm.results.store import JOB, RUNS, TRAJECTORY

# short names the pipeline writes next to the dotted config keys they duplicate
SHORT_KEYS = {
    "dataset.n": "n",
    "dataset.T": "T",
    "dataset.d": "d",
    "dataset.attention": "attention",
    "parameterization.kind": "parameterization",
    "head.kind": "head",
    "optimizer.kind": "optimizer",
    "loss": "loss_function",  # the run key; column "loss" is the loss's value
}
PER_JOB_KEYS = ("seeds", "seed", "threads", "batch_size")  # not a config point's identity


class AggregateError(RuntimeError):
    """The directory holds no attnsvm results; the message says what was looked for."""


@dataclass
class Sweep:
    """The de-duplicated results of one sweep directory."""

    runs: pd.DataFrame  # one row per (job, seed)
    trajectory: pd.DataFrame  # one row per (job, seed, checkpoint)
    extra: dict[str, pd.DataFrame]  # further tables by name (paths, tokens, ...)
    jobs: pd.DataFrame  # one row per job.json found: dir, config_hash, status, used
    swept: list[str] = field(default_factory=list)  # config columns that vary across jobs

    @property
    def keys(self) -> list[str]:
        """The main axes its experiments declare (their ``columns``: axes, and keys where their
        runs have them), then the other swept keys: the columns naming a config point."""
        from attnsvm.experiments import entry

        axes = [k for k in declaration.declared_keys(self.runs, entry) if k in self.runs]
        return [*axes, *(k for k in self.swept if k not in axes)]

    @property
    def summary(self) -> pd.DataFrame:
        """One row per config point: seed counts and mean / std / count of each metric (the
        table ``python -m attnsvm.aggregate`` writes as summary.parquet)."""
        return summarize_sweep(self) if not self.runs.empty else pd.DataFrame()

    def arrays(self, job) -> dict:
        """arrays.npz of a used job (its config hash or directory), verified (artifacts.py)."""
        return job_arrays(self.jobs, job)

    @property
    def failed(self) -> pd.DataFrame:
        return self.jobs[self.jobs.status == "failed"]

    @property
    def unfinished(self) -> pd.DataFrame:
        return self.jobs[~self.jobs.status.isin(["finished", "failed"])]


def scan_jobs(sweep_dir: Path) -> pd.DataFrame:
    """One row per job.json below ``sweep_dir``: where, which config, status, timings."""
    rows = [
        {
            "dir": str(job_dir),
            "config_hash": job.get("config_hash"),
            "status": job.get("status", "unknown"),
            "started": job.get("started", 0.0),
            "seconds": job.get("seconds"),
            "error": job.get("error", ""),
            "config": job.get("config", {}),
        }
        for job_dir, job in map(verified, results.scan_jobs(sweep_dir))  # broken: not used
    ]
    return pd.DataFrame(
        rows, columns=["dir", "config_hash", "status", "started", "seconds", "error", "config"]
    )


def newest_finished(jobs: pd.DataFrame) -> pd.DataFrame:
    """The newest finished job of each config hash (a re-run sweep leaves older copies)."""
    done = jobs[jobs.status == "finished"].sort_values("started")
    return done.drop_duplicates("config_hash", keep="last")


def config_keys(jobs: pd.DataFrame) -> list[str]:
    """Column names of the config keys, short names in place of the keys they duplicate."""
    keys: list[str] = []
    for cfg in jobs.config:
        for k in flatten(cfg):
            name = SHORT_KEYS.get(k, k)
            if k not in PER_JOB_KEYS and name not in keys:
                keys.append(name)
    return keys


def swept_keys(runs: pd.DataFrame, keys: list[str]) -> list[str]:
    """Config columns that take more than one value across the sweep's jobs."""
    per_job = runs.drop_duplicates("config_hash")
    return [k for k in keys if k in per_job and per_job[k].astype(str).nunique() > 1]


def _read_tables(job_dirs: list[str], name: str) -> pd.DataFrame:
    frames = [pd.read_parquet(Path(d) / name) for d in job_dirs if (Path(d) / name).exists()]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_sweep(sweep_dir: str | Path) -> Sweep:
    """Read every finished job below ``sweep_dir`` into one Sweep (raises AggregateError)."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise AggregateError(f"{sweep_dir} is not a directory")
    jobs = scan_jobs(sweep_dir)
    if jobs.empty:
        raise AggregateError(
            f"no {JOB} found below {sweep_dir}: not an attnsvm sweep or run directory "
            "(expected the output of `python -m attnsvm.run -m ...`)"
        )
    used = newest_finished(jobs)
    jobs["used"] = jobs.dir.isin(used.dir)
    return _load_jobs(jobs, used)


def _load_jobs(jobs: pd.DataFrame, used: pd.DataFrame) -> Sweep:
    """The Sweep of the finished jobs ``used`` (rows of ``jobs``): their tables, swept keys."""
    dirs = list(used.dir)
    runs = _read_tables(dirs, RUNS)
    trajectory = _read_tables(dirs, TRAJECTORY)
    extra_names = sorted(
        {p.name for d in dirs for p in Path(d).glob("*.parquet")} - {RUNS, TRAJECTORY}
    )
    extra = {Path(n).stem: _read_tables(dirs, n) for n in extra_names}
    sweep = Sweep(runs, trajectory, extra, jobs)
    if not runs.empty:
        sweep.swept = swept_keys(runs, config_keys(used))
        for name, table in [("trajectory", trajectory), *extra.items()]:
            _add_swept(sweep, name, table)
    return sweep


def experiment_sweeps(sweep: Sweep) -> dict[str, Sweep]:
    """experiment name -> the Sweep of its jobs alone, read from their own files: tables with
    the columns and dtypes its jobs wrote (not widened by another experiment's), and the keys
    that vary among them. A sweep of one experiment is itself."""
    names = sorted(sweep.runs.experiment.unique()) if "experiment" in sweep.runs else []
    if len(names) <= 1:
        return dict.fromkeys(names, sweep)
    used = sweep.jobs[sweep.jobs.used]
    out = {}
    for name in names:
        hashes = set(sweep.runs.config_hash[sweep.runs.experiment == name])
        out[name] = _load_jobs(sweep.jobs, used[used.config_hash.isin(hashes)])
    return out


def _add_swept(sweep: Sweep, name: str, table: pd.DataFrame) -> None:
    """Give a per-job table every key column of the sweep (joined on config_hash)."""
    if table.empty or "config_hash" not in table:
        return
    missing = [k for k in sweep.keys if k not in table]
    if missing:
        keys = sweep.runs.drop_duplicates("config_hash")[["config_hash", *missing]]
        table = table.merge(keys, on="config_hash", how="left")
    if name == "trajectory":
        sweep.trajectory = table
    else:
        sweep.extra[name] = table


def metric_columns(runs: pd.DataFrame, columns: Columns = DEFAULT) -> list[tuple[str, bool]]:
    """(column, over ``columns.subset`` seeds only?) of every declared metric in ``runs``, then
    (``columns.norms``) those of each further SVM norm the job solved (``solver.norms``: a
    ``svm_status_<norm>`` column each)."""
    names = [m for m in columns.metrics if m in runs]
    for col in runs.columns if columns.norms else ():
        norm = col.removeprefix("svm_status_")
        if col.startswith("svm_status_") and f"rank_{norm}" not in columns.metrics:
            names += [f"{k}_{norm}{s}" for k, s in (("rank", ""), ("corr", ""), ("corr", "_opt"))]
            names += [f"norm_{norm}"]
    return [(m, m.startswith(columns.subset_only)) for m in names if m in runs]


def summarize(runs: pd.DataFrame, by: list[str], columns: Columns = DEFAULT) -> pd.DataFrame:
    """One row per config point (``by`` + config_hash): seed counts (``columns.counts``), and
    mean / std / count of each of its metrics. Metrics of ``columns.subset_only`` average over
    the ``columns.subset`` seeds (SVM ranks and norms: the feasible ones; infeasible have none)."""
    keys = [*by, "config_hash"]
    rows = []
    for point, g in runs.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, point if isinstance(point, tuple) else (point,), strict=True))
        row["seeds"] = len(g)
        row["ok"] = int((g.status == "ok").sum())
        for name, col in columns.counts.items():
            if col in g:
                row[name] = int(g[col].astype(bool).sum())
                row[f"{name}_rate"] = row[name] / len(g)
        subset = g[g[columns.subset].astype(bool)] if columns.subset in g else g
        conv = columns.convergence
        if conv in g:  # blank where an experiment does not classify (SVMs only)
            classified = g[conv].notna().any()
            for kind in columns.categories:
                col = kind.replace(" ", "_")
                row[col] = int((g[conv] == kind).sum()) if classified else None
                row[f"{col}_share"] = row[col] / len(g) if classified else None
        for m, subset_only in metric_columns(g, columns):
            col = pd.to_numeric((subset if subset_only else g)[m], errors="coerce")
            row[f"{m}_mean"] = col.mean()
            row[f"{m}_std"] = col.std()
            row[f"{m}_count"] = int(col.count())
        rows.append(row)
    return pd.DataFrame(rows)


def summarize_sweep(sweep: Sweep) -> pd.DataFrame:
    """``summarize`` of each config point under its experiment's declaration (``columns``),
    keyed by the declaration's axes and the swept keys; rows sorted by the keys. What the
    console and the report show of it: ``.attrs["columns"]`` (``columns.shown``)."""
    from attnsvm.experiments import entry

    runs = sweep.runs
    names = runs.experiment if "experiment" in runs else pd.Series(None, index=runs.index)
    parts, declared, axes = [], [], []
    for (name, _), point in runs.groupby([names, runs.config_hash], sort=True, dropna=False):
        columns = columns_of(entry(name) if isinstance(name, str) else None, point)
        named = declaration.point_keys(columns, point)
        parts.append(summarize(point, list(dict.fromkeys([*named, *sweep.swept])), columns))
        declared.append(columns)
        axes += named
    summary = pd.concat(parts, ignore_index=True)
    keys = dict.fromkeys([*axes, *sweep.swept])  # the axes first, as they are declared
    first = [k for k in keys if k in summary] + ["config_hash"]
    summary = summary[first + [c for c in summary if c not in first]]
    summary = summary.sort_values(first, na_position="last", kind="stable", ignore_index=True)
    summary.attrs["columns"] = shown(declared)
    return summary


def summary_table(summary: pd.DataFrame) -> str:
    """The summary's headline columns as readable text: the point's keys, seeds, the counts and
    console columns its experiments declare (``.attrs["columns"]``), under their headers."""
    what = summary.attrs.get("columns") or shown([DEFAULT])
    cols = list(summary.columns)
    keys = cols[: cols.index("config_hash")] if "config_hash" in cols else []
    cols = [*keys, "seeds", *what["counts"], *what["console"]]
    cols = [c for c in dict.fromkeys(cols) if c in summary and summary[c].notna().any()]
    table = summary[cols].rename(columns=lambda c: header(c, what["labels"], "_mean"))
    return table.to_string(index=False, float_format=lambda x: f"{x:.4g}")


def job_report(sweep: Sweep) -> str:
    """Counts of jobs by status, and which failed (with their errors) or did not finish."""
    j = sweep.jobs
    lines = [
        f"jobs: {len(j)} found, {int(j.used.sum())} used"
        + "".join(f", {v} {k}" for k, v in j.status.value_counts().sort_index().items())
    ]
    for _, job in sweep.failed.iterrows():
        lines.append(f"  FAILED {job.dir} ({job.config_hash}): {job.error}")
    for _, job in sweep.unfinished.iterrows():
        lines.append(
            f"  not finished ({job.status}): {job.dir}" + f"  {job.error}" * bool(job.error)
        )
    return "\n".join(lines)


def aggregate(sweep_dir: str | Path, out: str | Path | None = None, figures: bool = True):
    """Load, summarise and plot a sweep; returns (Sweep, summary frame, written paths)."""
    sweep = load_sweep(sweep_dir)
    key = "--out" if out is not None else "--out (default SWEEP_DIR/summary)"
    out = Path(out) if out is not None else Path(sweep_dir) / "summary"
    try:
        check_writable_dir(out, key)  # a read-only sweep: one line, before any work
    except ConfigError as exc:
        raise AggregateError(str(exc)) from None
    if sweep.runs.empty:
        return sweep, pd.DataFrame(), []
    summary = sweep.summary
    sweep.runs.to_parquet(out / "all_runs.parquet", index=False)
    summary.to_parquet(out / "summary.parquet", index=False)
    summary.round(6).to_csv(out / "summary.csv", index=False)
    written = [out / "all_runs.parquet", out / "summary.parquet", out / "summary.csv"]
    if figures:
        written += experiment_figures(sweep, out)
    return sweep, summary, written


def experiment_figures(sweep: Sweep, out: Path) -> list[Path]:
    """Each experiment in the sweep draws its own figures (its entry's ``figures``), from its
    own jobs' rows only (``experiment_sweeps``)."""
    from attnsvm.experiments import entry

    written = []
    for name, mine in experiment_sweeps(sweep).items():
        draw = entry(name).figures
        if draw is not None:
            written += draw(mine.runs, mine.trajectory, out, sweep=mine)
    return written


def never_started_lines(sweep_dir: Path) -> list[str]:
    """``  never started: OVERRIDES (reason)`` for each grid point no job.json answers for (a
    job that failed before Hydra wrote its overrides is matched by its job number)."""
    from attnsvm.results.sweep_report import never_started, read_grid, read_jobs

    grid = read_grid(sweep_dir)
    missing = never_started(sweep_dir, grid, read_jobs(sweep_dir, grid))
    return [f"  never started: {r.overrides} ({r.reason})" for r in missing.itertuples()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnsvm.aggregate",
        description="Summary tables and figures of an attnsvm sweep (or run) directory.",
    )
    parser.add_argument("sweep_dir", help="a directory written by `python -m attnsvm.run -m`")
    parser.add_argument("--out", help="output directory (default: SWEEP_DIR/summary)")
    parser.add_argument("--no-figures", action="store_true", help="tables only")
    args = parser.parse_args(argv)
    if not args.no_figures:
        draw_to_files_only()
    try:
        sweep, summary, written = aggregate(args.sweep_dir, args.out, not args.no_figures)
    except AggregateError as exc:
        print(f"attnsvm.aggregate: {exc}", file=sys.stderr)
        return 2
    print(job_report(sweep))
    for line in never_started_lines(Path(args.sweep_dir)):  # an interrupted sweep's points
        print(line)
    if summary.empty:
        print("no finished job yet: nothing to summarise")
        return 1
    print(f"swept keys: {', '.join(sweep.swept) or '(none)'}")
    print(summary_table(summary))
    for path in written:
        print(f"  wrote {path}")
    from attnsvm.results.sweep_report import REPORT, write_report

    page = None  # SWEEP_DIR/report.html; a read-only sweep's beside its --out summary
    if args.out is not None and not os.access(args.sweep_dir, os.W_OK):
        page = Path(args.out) / REPORT
    print(f"report: {write_report(args.sweep_dir, args.out, out=page)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
