"""The sweep report in the browser: one self-contained page, ``DIR/report.html``.

    python -m attnsvm.report outputs/sweeps/rank       # prints the page's path
    python -m attnsvm.report outputs/sweeps/rank --out /tmp/rank.html

The page (attnsvm.results.sweep_report) reads what ``python -m attnsvm.aggregate`` wrote into
``DIR/summary``; when that is missing, or older than a job.json of the sweep, the aggregation runs
first. The page embeds its figures and needs no server and no network: open it from disk.
A sweep that cannot be written (read-only) is aggregated into a temporary folder when ``--out``
names a page elsewhere; nothing is written into it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from attnsvm.results.store import JOB


def summary_is_stale(sweep_dir: Path) -> bool:
    """No summary yet, or a job.json changed after it was written."""
    summary = Path(sweep_dir) / "summary" / "summary.parquet"
    if not summary.is_file():
        return True
    written = summary.stat().st_mtime
    return any(p.stat().st_mtime > written for p in Path(sweep_dir).rglob(JOB))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnsvm.report",
        description="A self-contained HTML report of an attnsvm sweep directory.",
    )
    parser.add_argument("sweep_dir", type=Path, help="a directory of `python -m attnsvm.run -m`")
    parser.add_argument(
        "--out", type=Path, help="the page to write (default SWEEP_DIR/report.html)"
    )
    args = parser.parse_args(argv)
    from attnsvm.results.aggregate import AggregateError

    try:
        with tempfile.TemporaryDirectory(prefix="attnsvm-report-") as tmp:
            print(write_page(args.sweep_dir, args.out, Path(tmp)))
    except AggregateError as exc:
        print(f"attnsvm: {exc}", file=sys.stderr)
        return 2
    return 0


def write_page(sweep_dir: Path, out: Path | None, tmp: Path) -> Path:
    """Aggregate when the summary is stale (into ``tmp`` for a read-only sweep with ``out``
    elsewhere), then write the page; an error says which file and what to do."""
    from attnsvm.results.aggregate import AggregateError, aggregate
    from attnsvm.results.sweep_report import REPORT, write_report

    if not sweep_dir.is_dir():
        what = "does not exist" if not sweep_dir.exists() else "is not a directory"
        raise AggregateError(f"{sweep_dir} {what}: name a sweep directory")
    summary_dir = None
    writable = os.access(sweep_dir, os.W_OK) and (
        not (sweep_dir / "summary").exists() or os.access(sweep_dir / "summary", os.W_OK)
    )
    if not writable and out is None:
        raise AggregateError(
            f"{sweep_dir} cannot be written (read-only): pass --out FILE to write the page "
            "elsewhere"
        )
    if summary_is_stale(sweep_dir):
        summary_dir = None if writable else tmp / "summary"
        aggregate(sweep_dir, summary_dir)
    target = out if out is not None else sweep_dir / REPORT
    try:
        return write_report(sweep_dir, summary_dir, out=target)
    except OSError as exc:
        raise AggregateError(
            f"--out {target} cannot be written ({exc.strerror or exc}): name a file in a "
            "directory you can write"
        ) from None


if __name__ == "__main__":
    sys.exit(main())
