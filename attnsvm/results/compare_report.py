"""Sweeps side by side: one self-contained page comparing two or more sweep directories.

    python -m attnsvm.report outputs/sweeps/A outputs/sweeps/B --out cmp.html

The page shows each sweep's jobs, the config keys whose values differ between the sweeps, the
summary tables stacked on the config axes they share (one row per sweep and point, the metric
means they all have), and the figures drawn in several of them side by side. Each sweep's
summary is what ``python -m attnsvm.aggregate`` wrote (attnsvm/report.py aggregates first where
it is stale).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from attnsvm.config.checks import flatten
from attnsvm.results import report_html
from attnsvm.results.artifacts import NON_RESULT_KEYS
from attnsvm.results.report_html import esc
from attnsvm.results.store import scan_jobs
from attnsvm.results.sweep_report import _point_keys

PER_JOB = ("seeds", "seed", *NON_RESULT_KEYS)  # differ between jobs of one config point too


@dataclass
class Side:
    """One sweep of the comparison: its label on the page, where it is, what it holds."""

    label: str
    sweep_dir: Path
    summary_dir: Path
    jobs: list[dict]

    @property
    def summary(self) -> pd.DataFrame:
        path = self.summary_dir / "summary.parquet"
        return pd.read_parquet(path) if path.is_file() else pd.DataFrame()

    def figures(self) -> dict[str, Path]:
        return {p.name: p for p in sorted(self.summary_dir.glob("*.png"))}


def side(label: str, sweep_dir: Path, summary_dir: Path) -> Side:
    return Side(label, Path(sweep_dir), Path(summary_dir), [job for _, job in scan_jobs(sweep_dir)])


def labels(dirs: list[Path]) -> list[str]:
    """Short labels: each directory's name, its parent's too where names repeat."""
    names = [Path(d).name for d in dirs]
    if len(set(names)) == len(names):
        return names
    return [f"{Path(d).parent.name}/{Path(d).name}" for d in dirs]


def _values(jobs: list[dict]) -> dict[str, str]:
    """Per config key, the values the sweep's jobs ran (sorted, joined)."""
    seen: dict[str, set] = {}
    for job in jobs:
        for k, v in flatten(job.get("config") or {}).items():
            if k not in PER_JOB:
                seen.setdefault(k, set()).add(str(v))
    return {k: ", ".join(sorted(v)) for k, v in seen.items()}


def config_difference(sides: list[Side]) -> pd.DataFrame:
    """One row per config key whose values differ between the sweeps (missing: empty)."""
    values = [_values(s.jobs) for s in sides]
    keys = sorted({k for v in values for k in v})
    rows = [
        {"key": k, **{s.label: v.get(k, "") for s, v in zip(sides, values, strict=True)}}
        for k in keys
        if len({v.get(k, "") for v in values}) > 1
    ]
    return pd.DataFrame(rows, columns=["key", *(s.label for s in sides)])


def aligned_summary(sides: list[Side]) -> tuple[pd.DataFrame, list[str]]:
    """The sweeps' summaries stacked: the point axes all of them have, ``sweep``, then the
    counts and metric means all of them have; rows sorted by the shared axes. Also the axes."""
    summaries = [(s.label, s.summary) for s in sides]
    summaries = [(label, t) for label, t in summaries if not t.empty]
    if not summaries:
        return pd.DataFrame(), []
    axes = [k for k in _point_keys(summaries[0][1]) if all(k in t for _, t in summaries)]
    shared = [c for c in summaries[0][1] if all(c in t for _, t in summaries)]
    metrics = [c for c in shared if c.endswith("_mean") or c in ("seeds", "ok")]
    frames = [t[axes + metrics].assign(sweep=label) for label, t in summaries]
    table = pd.concat(frames, ignore_index=True)[[*axes, "sweep", *metrics]]
    order = [*axes, "sweep"]
    try:  # numbers as numbers; mixed kinds of values as text
        table = table.sort_values(order, kind="stable")
    except TypeError:
        table = table.sort_values(order, key=lambda c: c.astype(str), kind="stable")
    return table.reset_index(drop=True), axes


def figures_section(sides: list[Side]) -> str:
    """Figures of the same name side by side; those only one sweep has, listed by name."""
    found = [s.figures() for s in sides]
    names = sorted({n for f in found for n in f})
    shared = [n for n in names if sum(n in f for f in found) > 1]
    rows = []
    for name in shared:
        cells = "".join(
            f'<div class="side"><p>{esc(s.label)}</p>{report_html.image(f[name])}</div>'
            for s, f in zip(sides, found, strict=True)
            if name in f
        )
        rows.append(f'<h3>{esc(name)}</h3><div class="sides">{cells}</div>')
    alone = [f"{n} ({s.label})" for s, f in zip(sides, found, strict=True) for n in f]
    alone = [a for a in alone if a.split(" (")[0] not in shared]
    if alone:
        rows.append(f'<p class="note">In one sweep only: {esc(", ".join(alone))}.</p>')
    return "\n".join(rows) or '<p class="note">No figures.</p>'


def sweeps_section(sides: list[Side]) -> str:
    rows = []
    for s in sides:
        counts = pd.Series([j.get("status", "unknown") for j in s.jobs]).value_counts()
        status = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no job.json"
        rows.append({"sweep": s.label, "directory": str(s.sweep_dir), "jobs": status})
    return report_html.table(pd.DataFrame(rows), sortable=False)


SIDE_CSS = (
    ".sides{display:flex;gap:1em;flex-wrap:wrap}.side{flex:1 1 30em;min-width:0}"
    ".side img{max-width:100%}"
)


def build_comparison(sides: list[Side]) -> str:
    """The comparison page's HTML."""
    diff = config_difference(sides)
    table, axes = aligned_summary(sides)
    note = (
        f"<p>Aligned on {esc(', '.join(axes))}: one row per sweep and point; metric columns "
        "are means over seeds (those every sweep has).</p>"
        if axes
        else "<p>No config axis in common: the sweeps' rows one after the other.</p>"
    )
    sections = [
        ("Sweeps", "sweeps", sweeps_section(sides)),
        (
            "Config difference",
            "config",
            report_html.table(diff, sortable=False) if len(diff) else "<p>Same configs.</p>",
        ),
        ("Summaries side by side", "summary", note + report_html.table(table)),
        ("Figures side by side", "figures", figures_section(sides)),
    ]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    title = f"attnsvm sweeps {' vs '.join(s.label for s in sides)} ({stamp})"
    return report_html.page(title, sections).replace("</style>", f"{SIDE_CSS}</style>", 1)
