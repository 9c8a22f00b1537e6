"""The sweep report: one self-contained HTML page per sweep directory (``DIR/report.html``).

    python -m attnsvm.report outputs/sweeps/rank      # aggregates first when the summary is stale
    write_report("outputs/sweeps/rank", figures=[...])  # the experiment's own figures

It shows the command and its grid (from Hydra's multirun.yaml), the summary table (sortable),
the figures, the convergence mix per config point, every job that failed, did not finish or
never started (with the reason known), each job's timings, and the versions that ran. It reads
only files: the sweep's job.json records, ``.hydra/overrides.yaml`` of each job (which grid
point it ran), and what ``python -m attnsvm.aggregate`` wrote into ``DIR/summary``.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from attnsvm._version import __version__
from attnsvm.results import report_html
from attnsvm.results.columns import DEFAULT, header
from attnsvm.results.columns import shown as shown_columns
from attnsvm.results.report_html import esc
from attnsvm.results.store import scan_jobs

REPORT = "report.html"
MULTIRUN = "multirun.yaml"
INTERNAL_OVERRIDES = ("hydra.mode=",)  # Hydra adds it; not part of the user's command


@dataclass
class Grid:
    """What multirun.yaml says the sweep was asked to run."""

    command: str
    params: dict[str, str]  # hydra.sweeper.params (a sweep file's grid)
    task: list[str] = field(default_factory=list)  # the command's overrides
    points: list[frozenset[str]] = field(default_factory=list)  # one override set per job
    note: str = ""  # why ``points`` is empty, when it is
    numbered: bool = False  # job directories are named by job number (hydra.sweep.subdir)


def grid_axes(params: dict[str, str], task: list[str]) -> pd.DataFrame:
    """The grid that ran: each key with its values and where they came from, the sweep file's
    params (``hydra.sweeper.params``) under the command's overrides, as Hydra's basic sweeper
    applies them (a command value replaces the sweep file's)."""
    rows = {k.lstrip("+~"): (k, v, "sweep file") for k, v in params.items()}
    for override in task:
        key, _, value = override.partition("=")
        name = key.lstrip("+~")
        was = rows.get(name)
        source = f"command (sweep file: {was[1]})" if was else "command"
        rows[name] = (was[0] if was else key, value, source)
    return pd.DataFrame(list(rows.values()), columns=["key", "values", "from"])


GRID_SWEEPERS = ("BasicSweeper", "AttnsvmSweeper")  # the default is the basic one, checked faster


def read_grid(sweep_dir: Path) -> Grid | None:
    """The command line and the grid points of the sweep in ``sweep_dir`` (None without a
    multirun.yaml). Points are expanded as Hydra's basic sweeper does (params, then overrides)."""
    path = Path(sweep_dir) / MULTIRUN
    if not path.is_file():
        return None
    hydra = (yaml.safe_load(path.read_text()) or {}).get("hydra", {})
    overrides = hydra.get("overrides", {})
    task = list(overrides.get("task") or [])
    extra = [o for o in overrides.get("hydra") or [] if not o.startswith(INTERNAL_OVERRIDES)]
    command = shlex.join(["python", "-m", "attnsvm.run", "-m", *task, *extra])
    sweeper = hydra.get("sweeper") or {}
    params = {str(k): str(v) for k, v in (sweeper.get("params") or {}).items()}
    grid = Grid(command, params, task)
    grid.numbered = str((hydra.get("sweep") or {}).get("subdir")) == "${hydra.job.num}"
    if not str(sweeper.get("_target_", "")).endswith(GRID_SWEEPERS):
        grid.note = f"the sweeper {sweeper.get('_target_')} chooses its points as it runs"
        return grid
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from attnsvm.hydra_internals import grid as split_grid

    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + task)
        (batch,) = split_grid(parsed)
    except HydraException as exc:  # e.g. an interval sweep, which only other sweepers take
        grid.note = f"its overrides do not expand to a grid here ({exc})"
        return grid
    grid.points = [frozenset(p) for p in batch]
    return grid


def _overrides(job_dir: Path) -> frozenset[str] | None:
    path = job_dir / ".hydra" / "overrides.yaml"
    try:
        return frozenset(str(o) for o in yaml.safe_load(path.read_text()) or [])
    except (OSError, yaml.YAMLError):
        return None


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _point_of(job_dir: Path, sweep_dir: Path, grid: Grid | None) -> frozenset[str] | None:
    """The grid point of a job: its ``.hydra/overrides.yaml``, else (a job that failed before
    Hydra wrote it) the point its job number names, where directories are job numbers."""
    found = _overrides(job_dir)
    if found is not None or grid is None or not grid.numbered:
        return found
    rel = job_dir.relative_to(sweep_dir).as_posix()
    return grid.points[int(rel)] if rel.isdigit() and int(rel) < len(grid.points) else None


def read_jobs(sweep_dir: Path, grid: Grid | None = None) -> pd.DataFrame:
    """One row per job.json below ``sweep_dir``: where, status, reason, timings, versions, and
    the grid point it answers for (``overrides``)."""
    rows = []
    for job_dir, job in scan_jobs(sweep_dir):
        seeds = job.get("seed_status") or {}
        rows.append(
            {
                "job": job_dir.relative_to(sweep_dir).as_posix(),
                "status": job.get("status", "unknown"),
                "config_hash": job.get("config_hash"),
                "seeds": sum(seeds.values()) if seeds else None,
                "seed_status": ", ".join(f"{n} {s}" for s, n in sorted(seeds.items())),
                "started": job.get("started"),
                "seconds": job.get("seconds"),
                "error": job.get("error", ""),
                "versions": job.get("versions") or {},
                "overrides": _point_of(job_dir, Path(sweep_dir), grid),
            }
        )
    rows.sort(key=lambda r: natural_key(r["job"]))  # 0, 1, 2, ..., 10, not 0, 1, 10, 2
    return pd.DataFrame(
        rows,
        columns=["job", "status", "config_hash", "seeds", "seed_status", "started", "seconds"]
        + ["error", "versions", "overrides"],
    )


def natural_key(path: str) -> tuple:
    """Sort key of a job path that orders its numbers as numbers: 2 before 10, a/9 before a/10."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", path)
    )


def never_started(sweep_dir: Path, grid: Grid | None, jobs: pd.DataFrame) -> pd.DataFrame:
    """Grid points no job.json answers for, with the reason the directory tells."""
    if grid is None or not grid.points:
        return pd.DataFrame(columns=["overrides", "reason"])
    ran = set(jobs.overrides.dropna())
    dirs = {
        o: d
        for d in sorted(p.parent.parent for p in Path(sweep_dir).rglob(".hydra/overrides.yaml"))
        if (o := _overrides(d)) is not None and not (d / "job.json").exists()
    }
    rows = []
    for point in grid.points:
        if point in ran:
            continue
        where = dirs.get(point)
        if where is None:
            reason = "no job directory: the sweep did not reach it (interrupted, or still queued)"
        else:
            last = _last_line(where / "run.log")
            rel = where.relative_to(sweep_dir).as_posix()
            reason = f"{rel} has no job.json (rejected or killed before it ran)"
            reason += f"; run.log ends: {last}" if last else ""
        rows.append({"overrides": " ".join(sorted(point)), "reason": reason})
    return pd.DataFrame(rows, columns=["overrides", "reason"])


def _point_keys(summary: pd.DataFrame) -> list[str]:
    """The columns naming a config point: those aggregate puts before config_hash."""
    cols = list(summary.columns)
    return cols[: cols.index("config_hash")] if "config_hash" in cols else []


def _conv_kinds(summary: pd.DataFrame) -> list[str]:
    """The convergence types the summary counts (a ``<type>_share`` column each)."""
    return [c.removesuffix("_share") for c in summary if c.endswith("_share") and c != "feasible"]


def summary_section(summary: pd.DataFrame | None) -> str:
    if summary is None or summary.empty:
        return '<p class="note">No summary yet: no job of this sweep has finished.</p>'
    what = summary.attrs.get("columns") or shown_columns([DEFAULT])
    keys = _point_keys(summary)
    counts = ["seeds", "ok", *what["counts"], *_conv_kinds(summary)]
    counts = [c for c in dict.fromkeys(counts) if c in summary]
    means = [c for c in summary if c.endswith("_mean") and summary[c].notna().any()]
    table = summary[[*keys, *counts, *means]].rename(columns=lambda c: header(c, what["labels"]))
    note = (
        '<p class="note">One row per config point, in the columns its experiment declares; '
        "metric columns are means over seeds (ranks and SVM norms over feasible seeds). Click a "
        "header to sort. Standard deviations and counts: summary.csv, written next to the "
        "figures.</p>"
    )
    return note + report_html.table(table)


def convergence_section(summary: pd.DataFrame | None) -> str:
    kinds = _conv_kinds(summary) if summary is not None else []
    if not kinds or summary[kinds].isna().all().all():
        return '<p class="note">No convergence classification in this sweep.</p>'
    keys = _point_keys(summary)
    rows = summary[keys + kinds].copy()
    rows["mix"] = [
        report_html.bar({k: int(r[k]) if pd.notna(r[k]) else 0 for k in kinds})
        for _, r in summary.iterrows()
    ]
    return report_html.legend(kinds) + report_html.table(rows, raw=["mix"])


def jobs_section(jobs: pd.DataFrame, missing: pd.DataFrame, grid: Grid | None) -> str:
    counts = jobs.status.value_counts()
    order = sorted(counts.index, key=lambda s: (s != "finished", s))  # finished first
    parts = [", ".join(f"{counts[s]} {s}" for s in order) or "no job.json found"]
    if grid is not None and grid.points:
        parts.append(f"{len(missing)} never started of {len(grid.points)} grid points")
    out = [f"<p>{esc('; '.join(parts))}</p>"]
    failed = jobs[jobs.status == "failed"][["job", "config_hash", "error"]]
    unfinished = jobs[~jobs.status.isin(["finished", "failed"])][["job", "status", "error"]]
    for title, frame in (("Failed", failed), ("Not finished", unfinished)):
        if len(frame):
            out.append(f'<h3 class="bad">{title} ({len(frame)})</h3>' + report_html.table(frame))
    if len(missing):
        out.append(f'<h3 class="bad">Never started ({len(missing)})</h3>')
        out.append(report_html.table(missing))
    if grid is not None and grid.note:
        out.append(f'<p class="note">Grid not expanded: {esc(grid.note)}.</p>')
    return "\n".join(out)


def _run_seconds(summary_dir: Path) -> pd.DataFrame:
    """Per config hash: the seconds the seeds spent training and solving SVMs (all_runs)."""
    path = summary_dir / "all_runs.parquet"
    cols = ["train_seconds", "svm_seconds"]
    if not path.is_file():
        return pd.DataFrame(columns=["config_hash", *cols])
    runs = pd.read_parquet(path)
    cols = [c for c in cols if c in runs]
    return runs.groupby("config_hash", as_index=False)[cols].sum() if cols else runs[[]]


def timings_section(jobs: pd.DataFrame, summary_dir: Path) -> str:
    done = jobs.dropna(subset=["seconds"])
    if done.empty:
        return '<p class="note">No job recorded its time yet.</p>'
    end = (done.started + done.seconds).max()
    head = (
        f"<p>{len(done)} jobs: {done.seconds.sum():.3g} s of computing in all (longest "
        f"{done.seconds.max():.3g} s, median {done.seconds.median():.3g} s); first start to last "
        f"finish {end - jobs.started.min():.3g} s.</p>"
    )
    table = jobs[["job", "status", "config_hash", "seeds", "seed_status", "seconds"]]
    seconds = _run_seconds(summary_dir)
    if "config_hash" in seconds and len(seconds.columns) > 1:
        table = table.merge(seconds, on="config_hash", how="left")
    return head + report_html.table(table)


def versions_section(jobs: pd.DataFrame) -> str:
    """Each package with the versions the jobs ran (and how many jobs ran each)."""
    seen: dict[tuple[str, str], int] = {}
    for record in jobs.versions:
        for package, version in record.items():
            seen[(package, str(version))] = seen.get((package, str(version)), 0) + 1
    rows = [{"package": p, "version": v, "jobs": n} for (p, v), n in seen.items()]
    mixed = {p for p, _ in seen if sum(q == p for q, _ in seen) > 1}
    note = f'<p class="bad">Jobs ran different versions of {esc(", ".join(sorted(mixed)))}.</p>'
    note = note if mixed else ""
    this = f'<p class="note">Report written by attnsvm {esc(__version__)}.</p>'
    return (
        note + report_html.table(pd.DataFrame(rows, columns=["package", "version", "jobs"])) + this
    )


def grid_section(grid: Grid | None) -> str:
    if grid is None:
        return f'<p class="note">No {MULTIRUN}: a single run, not a sweep.</p>'
    out = [f"<pre>{esc(grid.command)}</pre>"]
    if grid.params or grid.task:
        out.append(
            "<p>The grid that ran: the sweep file's (hydra.sweeper.params) under the "
            "command's overrides.</p>"
        )
        out.append(report_html.table(grid_axes(grid.params, grid.task), sortable=False))
    if grid.points:
        out.append(f"<p>{len(grid.points)} grid points.</p>")
    return "\n".join(out)


def build_report(sweep_dir: Path, summary_dir: Path | None = None, figures=None) -> str:
    """The page's HTML. ``figures`` (image paths) default to every PNG in ``summary_dir``."""
    sweep_dir = Path(sweep_dir)
    summary_dir = Path(summary_dir) if summary_dir is not None else sweep_dir / "summary"
    path = summary_dir / "summary.parquet"
    summary = pd.read_parquet(path) if path.is_file() else None
    figures = sorted(summary_dir.glob("*.png")) if figures is None else list(figures)
    grid = read_grid(sweep_dir)
    jobs = read_jobs(sweep_dir, grid)
    missing = never_started(sweep_dir, grid, jobs)
    images = "\n".join(report_html.image(f) for f in figures)
    sections = [
        ("Command and grid", "grid", grid_section(grid)),
        ("Jobs", "jobs", jobs_section(jobs, missing, grid)),
        ("Summary", "summary", summary_section(summary)),
        ("Figures", "figures", images or '<p class="note">No figures.</p>'),
        ("Convergence per config point", "convergence", convergence_section(summary)),
        ("Timings", "timings", timings_section(jobs, summary_dir)),
        ("Versions", "versions", versions_section(jobs)),
    ]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return report_html.page(f"attnsvm sweep {sweep_dir.name} ({stamp})", sections)


def write_report(
    sweep_dir: str | Path, summary_dir: str | Path | None = None, figures=None, out=None
) -> Path:
    """Write the page (default ``SWEEP_DIR/report.html``) and return its path."""
    out = Path(out) if out is not None else Path(sweep_dir) / REPORT
    out.write_text(build_report(Path(sweep_dir), summary_dir, figures), encoding="utf-8")
    return out
