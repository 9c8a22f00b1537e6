"""The sweep report in the browser: one self-contained page, ``DIR/report.html``.

    python -m attnsvm.report outputs/sweeps/rank       # prints the page's path
    python -m attnsvm.report outputs/sweeps/rank --out /tmp/rank.html

The page (attnsvm.results.sweep_report) reads what ``python -m attnsvm.aggregate`` wrote into
``DIR/summary``; when that is missing, or older than a job.json of the sweep, the aggregation runs
first. The page embeds its figures and needs no server and no network: open it from disk.
"""

from __future__ import annotations

import argparse
import sys
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
    from attnsvm.results.aggregate import AggregateError, aggregate
    from attnsvm.results.sweep_report import write_report

    if summary_is_stale(args.sweep_dir):
        try:
            aggregate(args.sweep_dir)
        except AggregateError as exc:
            print(f"attnsvm: {exc}", file=sys.stderr)
            return 2
    print(write_report(args.sweep_dir, out=args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
