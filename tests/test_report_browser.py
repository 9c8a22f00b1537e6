"""The sweep report in a real headless browser: a real sweep, ``python -m attnsvm.report``, then
Debian's chromium opens the page from disk. It must load without console errors, show every image
at a non-zero size, and sort its summary table by a click on a header, both ways. Chromium is
installed with apt-get when missing, in CI (CI=true) or when asked for (ATTNSVM_SYSTEM_TESTS=1);
elsewhere a missing chromium skips the test saying so. Where chromium cannot be installed or
started, the test fails saying why."""

from __future__ import annotations

import subprocess
import sys

import pytest

from browser import BrowserUnavailable, chromium, chromium_installed, ensure_chromium
from cli_helpers import REPO, cli_env, run_cli
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
