"""The sweep report in the browser: one self-contained page, ``DIR/report.html``.

    python -m attnsvm.report outputs/sweeps/rank       # prints the page's path
    python -m attnsvm.report outputs/sweeps/rank --out /tmp/rank.html
    python -m attnsvm.report outputs/sweeps/A outputs/sweeps/B --out cmp.html   # side by side
    python -m attnsvm.report outputs/sweeps/rank --watch    # kept current while the sweep runs

The page (attnsvm.results.sweep_report) reads what ``python -m attnsvm.aggregate`` wrote into
``DIR/summary``; when that is missing, or older than a job.json of the sweep, the aggregation runs
first. The page embeds its figures and needs no server and no network: open it from disk.
A sweep that cannot be written (read-only) is aggregated into a temporary folder when ``--out``
names a page elsewhere; nothing is written into it. Several directories make one comparison page
(attnsvm.results.compare_report); ``--watch`` rewrites the page every ``--interval`` seconds
until no job runs, and the page reloads itself (attnsvm.results.live_report).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from attnsvm.figures import draw_to_files_only
from attnsvm.results.store import JOB


def summary_is_stale(sweep_dir: Path) -> bool:
    """No summary yet, or a job.json changed since the aggregation that wrote it began to read
    (``prepared_summary`` dates summary.parquet back to that moment: a job that ended while the
    sweep was being read is not in it). A change is a later mtime or ctime: an atomic write
    renames a file written earlier into place, and the rename moves only its ctime."""
    summary = Path(sweep_dir) / "summary" / "summary.parquet"
    if not summary.is_file():
        return True
    read_from = summary.stat().st_mtime_ns

    def changed(p: Path) -> int:
        st = p.stat()
        return max(st.st_mtime_ns, st.st_ctime_ns)

    return any(changed(p) >= read_from for p in Path(sweep_dir).rglob(JOB))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnsvm.report",
        description="A self-contained HTML report of an attnsvm sweep directory, or of several "
        "side by side.",
    )
    parser.add_argument(
        "sweep_dirs", type=Path, nargs="+", help="directories of `python -m attnsvm.run -m`"
    )
    parser.add_argument(
        "--out", type=Path, help="the page to write (default SWEEP_DIR/report.html)"
    )
    parser.add_argument("--watch", action="store_true", help="keep the page current until done")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between updates")
    args = parser.parse_args(argv)
    draw_to_files_only()  # the report aggregates (and draws) a sweep that has no summary yet
    from attnsvm.results.aggregate import AggregateError

    if len(args.sweep_dirs) > 1 and (args.out is None or args.watch):
        parser.error("several sweep directories: name the page with --out (and no --watch)")
    try:
        with tempfile.TemporaryDirectory(prefix="attnsvm-report-") as tmp:
            if args.watch:
                from attnsvm.results.live_report import watch

                sweep = args.sweep_dirs[0]
                prepare = lambda d: prepared_summary(d, args.out, Path(tmp))  # noqa: E731
                print(watch(sweep, args.out, args.interval, prepare))
            elif len(args.sweep_dirs) > 1:
                print(write_comparison(args.sweep_dirs, args.out, Path(tmp)))
            else:
                print(write_page(args.sweep_dirs[0], args.out, Path(tmp)))
    except AggregateError as exc:
        print(f"attnsvm: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # --watch stopped by hand: the page written last stays
        return 130
    return 0


def prepared_summary(sweep_dir: Path, out: Path | None, tmp: Path) -> Path | None:
    """The summary folder to read, aggregated first when stale (into ``tmp`` for a read-only
    sweep with ``out`` elsewhere); None: the sweep's own ``summary``."""
    from attnsvm.results.aggregate import AggregateError, aggregate

    if not sweep_dir.is_dir():
        what = "does not exist" if not sweep_dir.exists() else "is not a directory"
        raise AggregateError(f"{sweep_dir} {what}: name a sweep directory")
    writable = os.access(sweep_dir, os.W_OK) and (
        not (sweep_dir / "summary").exists() or os.access(sweep_dir / "summary", os.W_OK)
    )
    if not writable and out is None:
        raise AggregateError(
            f"{sweep_dir} cannot be written (read-only): pass --out FILE to write the page "
            "elsewhere"
        )
    summary_dir = None
    if summary_is_stale(sweep_dir):
        summary_dir = None if writable else tmp / "summary"
        began = time.time_ns()
        aggregate(sweep_dir, summary_dir)
        written = (summary_dir or sweep_dir / "summary") / "summary.parquet"
        if written.is_file():  # none while no job has finished
            os.utime(written, ns=(began, began))  # as current as the moment its reading began
    return summary_dir


def _written(target: Path, text: str) -> Path:
    from attnsvm.results.aggregate import AggregateError

    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise AggregateError(
            f"--out {target} cannot be written ({exc.strerror or exc}): name a file in a "
            "directory you can write"
        ) from None
    return target


def write_page(sweep_dir: Path, out: Path | None, tmp: Path) -> Path:
    """Aggregate when the summary is stale, then write the page; an error says which file and
    what to do."""
    from attnsvm.results.sweep_report import REPORT, build_report

    summary_dir = prepared_summary(sweep_dir, out, tmp)
    target = out if out is not None else sweep_dir / REPORT
    return _written(target, build_report(sweep_dir, summary_dir))


def write_comparison(sweep_dirs: list[Path], out: Path, tmp: Path) -> Path:
    """Each sweep aggregated where stale, then one page with them side by side at ``out``."""
    from attnsvm.results.compare_report import build_comparison, labels, side

    names = labels(sweep_dirs)
    sides = []
    for k, (name, d) in enumerate(zip(names, sweep_dirs, strict=True)):
        summary_dir = prepared_summary(d, out, tmp / str(k))
        sides.append(side(name, d, summary_dir or d / "summary"))
    return _written(out, build_comparison(sides))


if __name__ == "__main__":
    sys.exit(main())
