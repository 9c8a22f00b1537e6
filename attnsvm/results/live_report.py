"""The live report: the sweep page rewritten while the sweep runs, reloading itself in the browser.

    python -m attnsvm.report outputs/sweeps/rank --watch --interval 5

Every ``interval`` seconds the finished jobs are aggregated (only when a job.json changed) and
the page is written again (atomically: a browser never reads half a page) with the jobs by
status, the summary of the finished rows and the figures. Until the sweep is done the page
says so at its top and asks the browser to reload it every ``interval`` seconds; the last page,
written once no job runs and every grid point has a job, is the usual one.
"""

from __future__ import annotations

import time
from pathlib import Path

from attnsvm.results.report_html import esc


def sweep_state(sweep_dir: Path) -> tuple[dict[str, int], int, bool]:
    """(jobs by status, grid points no job.json answers for yet, whether the sweep is done:
    no job running and every grid point has a job that ended)."""
    from attnsvm.results.sweep_report import never_started, read_grid, read_jobs

    grid = read_grid(sweep_dir)
    jobs = read_jobs(sweep_dir, grid)
    counts = jobs.status.value_counts().to_dict()
    missing = len(never_started(sweep_dir, grid, jobs)) if grid is not None else 0
    done = len(jobs) > 0 and counts.get("running", 0) == 0 and missing == 0
    return counts, missing, done


def live_banner(counts: dict[str, int], missing: int, interval: float) -> str:
    jobs = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no job yet"
    waiting = f"; {missing} grid points not started" if missing else ""
    return (
        f'<p id="live" class="bad">Sweep running: {esc(jobs)}{esc(waiting)}. This page reloads '
        f"every {interval:g} s (written {esc(time.strftime('%H:%M:%S'))}).</p>"
    )


def live_page(sweep_dir: Path, summary_dir: Path | None, interval: float, state) -> str:
    """The page's HTML as it is now; ``state``: ``sweep_state`` as read before the summary
    was prepared (a job that ends after it is shown on the next page, never lost)."""
    from attnsvm.results.sweep_report import build_report

    counts, missing, done = state
    page = build_report(sweep_dir, summary_dir)
    if done:
        return page
    page = page.replace("<nav>", live_banner(counts, missing, interval) + "<nav>", 1)
    return reloading(page, interval)


def reloading(page: str, interval: float) -> str:
    """``page`` asking the browser to reload it every ``interval`` seconds."""
    return page.replace("<head>", f'<head><meta http-equiv="refresh" content="{interval:g}">', 1)


def watch(sweep_dir: Path, out: Path | None, interval: float, prepare) -> Path:
    """Keep the page at ``out`` (default ``SWEEP_DIR/report.html``) current until the sweep
    is done; returns its path. ``prepare(sweep_dir)``: the summary folder to read, aggregated
    where stale (None: the sweep's own). A sweep with no job.json yet gets a page saying so."""
    from attnsvm.results.store import _atomic
    from attnsvm.results.sweep_report import REPORT

    sweep_dir = Path(sweep_dir)
    target = Path(out) if out is not None else sweep_dir / REPORT
    while True:
        if any(sweep_dir.rglob("job.json")):
            state = sweep_state(sweep_dir)  # first: the summary then holds every job it saw end
            done = state[2]
            page = live_page(sweep_dir, prepare(sweep_dir), interval, state)
        else:
            page, done = _waiting_page(sweep_dir, interval), False
        _atomic(target, page.encode("utf-8"))
        if done:
            return target
        time.sleep(interval)


def _waiting_page(sweep_dir: Path, interval: float) -> str:
    from attnsvm.results import report_html

    body = live_banner({}, 0, interval)
    return reloading(
        report_html.page(f"attnsvm sweep {sweep_dir.name}", [("Jobs", "jobs", body)]), interval
    )
