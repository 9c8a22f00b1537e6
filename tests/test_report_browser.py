"""The sweep report in a real headless browser: a real sweep, ``python -m attnsvm.report``, then
Debian's chromium opens the page from disk. It must load without console errors, show every image
at a non-zero size, and sort its summary table by a click on a header, both ways. Chromium is
installed with apt-get when missing, in CI (CI=true) or when asked for (ATTNSVM_SYSTEM_TESTS=1);
elsewhere a missing chromium skips the test saying so. Where chromium cannot be installed or
started, the test fails saying why."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from browser import BrowserUnavailable, chromium, chromium_installed, ensure_chromium
from cli_helpers import REPO, attnsvm_cmd, cli_env, run_cli
from conftest import skip_unless_system_software

pytestmark = pytest.mark.slow

SORT_COLUMN = "corr_fro"  # a mean that differs between the sweep's config points


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    """A finished 2 x 2 sweep (run by the CLI) and its report page."""
    sweep = tmp_path_factory.mktemp("browser") / "sweep"
    run = run_cli(
        "dataset.d=2,4",
        "parameterization=w,kq",
        "seeds=3",
        "optimizer.steps=60",
        "optimizer.checkpoint_every=20",
        f"hydra.sweep.dir={sweep}",
        "hydra.launcher.n_jobs=2",
        multirun=True,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    res = subprocess.run(
        [sys.executable, "-m", "attnsvm.report", str(sweep)],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    page = sweep / "report.html"
    assert res.stdout.strip() == str(page)
    return sweep, page


@pytest.fixture(scope="module")
def browser():
    if not chromium_installed():
        skip_unless_system_software("Debian's chromium and chromium-driver (apt-get)")
    try:
        print(ensure_chromium())
        with chromium() as driver:
            yield driver
    except BrowserUnavailable as exc:
        pytest.fail(f"no headless chromium for the report test: {exc}", pytrace=False)


def _rows(driver) -> list[dict]:
    """The summary table's rows, top to bottom, as {header: sort value}."""
    return driver.execute_script(
        """
        const table = document.querySelector("#summary table.sortable");
        const heads = Array.from(table.tHead.rows[0].cells).map(th => th.textContent);
        return Array.from(table.tBodies[0].rows).map(r => Object.fromEntries(
            heads.map((h, i) => [h, r.cells[i].dataset.v])));
        """
    )


def _column(driver, name: str) -> list[float]:
    return [float(r[name]) for r in _rows(driver)]


def _severe(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _images(driver) -> list[list]:
    """[alt, complete, natural width, natural height, shown width, shown height] per image."""
    return driver.execute_script(
        """return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth,
               i.naturalHeight, i.getBoundingClientRect().width,
               i.getBoundingClientRect().height]);"""
    )


def test_the_checks_see_a_script_error_and_a_broken_image(browser, tmp_path):
    """The console and image checks below can fail: a page with both faults fails them."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<img alt="x" src="data:image/png;base64,AAAA"><script>nope();</script></body></html>'
    )
    browser.get(bad.as_uri())
    assert any("nope is not defined" in e["message"] for e in _severe(browser))
    ((_, _, width, *_),) = _images(browser)
    assert width == 0


def test_the_report_page_in_headless_chromium(browser, report_page):
    from selenium.webdriver.common.by import By

    sweep, page = report_page
    browser.get_log("browser")  # drop anything from before this page
    browser.get(page.as_uri())
    assert browser.title.startswith("attnsvm sweep sweep")
    assert _severe(browser) == []

    images = _images(browser)
    pngs = sorted((sweep / "summary").glob("*.png"))
    assert len(images) == len(pngs) >= 2, (images, pngs)
    for alt, complete, nat_w, nat_h, width, height in images:
        assert complete and nat_w > 0 and nat_h > 0 and width > 0 and height > 0, alt

    rows = _rows(browser)
    before = _column(browser, SORT_COLUMN)
    assert len(before) == 4 and len(set(before)) == 4, before
    header = browser.find_element(By.XPATH, f'//section[@id="summary"]//th[.="{SORT_COLUMN}"]')
    header.click()
    assert _column(browser, SORT_COLUMN) == sorted(before)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert _column(browser, SORT_COLUMN) == sorted(before, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"
    key = sorted(rows, key=lambda r: float(r[SORT_COLUMN]), reverse=True)
    assert _rows(browser) == key  # whole rows moved, not one column
    assert _severe(browser) == []


def _report(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnsvm.report", *args],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_two_sweeps_side_by_side(browser, report_page, tmp_path):
    """``python -m attnsvm.report A C --out cmp.html``: both sweeps on one page, the config
    difference named, their rows aligned on the shared axes, shared figures side by side."""
    sweep, _ = report_page
    other = tmp_path / "other"
    run = run_cli(
        "dataset.d=2,4",
        "parameterization=w",
        "optimizer=gd",
        "seeds=3",
        "optimizer.steps=60",
        "optimizer.checkpoint_every=20",
        f"hydra.sweep.dir={other}",
        multirun=True,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    page = tmp_path / "cmp.html"
    res = _report(str(sweep), str(other), "--out", str(page))
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == str(page)
    browser.get_log("browser")
    browser.get(page.as_uri())
    assert browser.title.startswith("attnsvm sweeps sweep vs other")
    assert _severe(browser) == []
    diff = browser.execute_script(
        """return Array.from(document.querySelectorAll("#config tbody tr"))
               .map(r => Array.from(r.cells).map(c => c.textContent));"""
    )
    assert ["optimizer.kind", "ngd", "gd"] in diff
    assert ["parameterization.kind", "kq, w", "w"] in diff
    rows = browser.execute_script(
        """const t = document.querySelector("#summary table");
           const h = Array.from(t.tHead.rows[0].cells).map(c => c.textContent);
           return Array.from(t.tBodies[0].rows).map(r => Object.fromEntries(
               h.map((k, i) => [k, r.cells[i].textContent])));"""
    )
    points = [(r["d"], r["parameterization"], r["sweep"]) for r in rows]
    assert points == sorted(points) and len(points) == 6, points  # 4 of one, 2 of the other
    assert {p[2] for p in points} == {"sweep", "other"}
    shared = browser.find_elements("css selector", "#figures .sides")
    assert shared and all(len(s.find_elements("css selector", "img")) == 2 for s in shared)
    for alt, complete, nat_w, nat_h, width, height in _images(browser):
        assert complete and nat_w > 0 and nat_h > 0 and width > 0 and height > 0, alt


def test_the_live_page_follows_a_running_sweep(browser, tmp_path):
    """``--watch`` while the sweep runs: the page says it runs and reloads itself; once the
    sweep is done the watch ends and the page is the usual one, every job finished."""
    sweep, page = tmp_path / "live", tmp_path / "live.html"
    overrides = ["dataset.d=2,4,8", "seeds=2", "optimizer.steps=2000", "hydra.launcher.n_jobs=1"]
    env = cli_env()
    runner = subprocess.Popen(
        attnsvm_cmd(*overrides, f"hydra.sweep.dir={sweep}", multirun=True),
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    watcher = subprocess.Popen(
        [sys.executable, "-m", "attnsvm.report", str(sweep), "--watch", "--interval", "1",
         "--out", str(page)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 120
        while not (page.is_file() and 'id="live"' in page.read_text()) and time.time() < deadline:
            time.sleep(0.2)
        assert runner.poll() is None, "the sweep ended before the live page was seen"
        browser.get(page.as_uri())
        assert "Sweep running" in browser.find_element("id", "live").text
        browser.execute_script("window.__before_reload = 1;")
        deadline = time.time() + 10
        while browser.execute_script("return window.__before_reload") == 1:
            assert time.time() < deadline, "the live page did not reload itself"
            time.sleep(0.2)
        assert runner.wait(timeout=300) == 0
        out, err = watcher.communicate(timeout=120)
        assert watcher.returncode == 0, err[-3000:]
        assert out.strip() == str(page)
    finally:
        for proc in (runner, watcher):
            if proc.poll() is None:
                proc.kill()
    browser.get_log("browser")
    browser.get(page.as_uri())
    assert browser.find_elements("id", "live") == []
    assert browser.find_element("css selector", "#jobs p").text.startswith("3 finished")
    assert len(browser.find_elements("css selector", "#summary tbody tr")) == 3
    assert _severe(browser) == []
