"""A headless Chromium for the report's browser test: Debian's chromium and chromium-driver,
installed with apt-get when missing (root on Debian), driven by selenium with the system driver.

    from browser import chromium
    with chromium() as driver:
        driver.get("file:///tmp/report.html")

Where the browser cannot be installed or started, ``BrowserUnavailable`` says why: the caller
fails the test with it, never skips.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
PACKAGES = ("chromium", "chromium-driver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)


class BrowserUnavailable(RuntimeError):
    """Chromium or its driver is missing and could not be installed, or did not start."""


def _apt(*args: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    res = subprocess.run(
        ["apt-get", *args], capture_output=True, text=True, timeout=900, env=env, check=False
    )
    if res.returncode != 0:
        tail = (res.stdout + res.stderr)[-2000:]
        raise BrowserUnavailable(f"apt-get {' '.join(args)} failed ({res.returncode}):\n{tail}")


def chromium_installed() -> bool:
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


def ensure_chromium() -> str:
    """Install Debian's chromium and chromium-driver when either binary is missing; returns
    what was done (for the test's log)."""
    if chromium_installed():
        return "chromium already installed"
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise BrowserUnavailable(
            f"{CHROMIUM} or {CHROMEDRIVER} is missing and cannot be installed here (needs root "
            f"and apt-get on Debian: apt-get install {' '.join(PACKAGES)})"
        )
    _apt("update")
    _apt("install", "-y", "--no-install-recommends", *PACKAGES)
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        raise BrowserUnavailable(f"apt-get installed {PACKAGES} but {CHROMEDRIVER} is missing")
    return f"installed {' '.join(PACKAGES)} with apt-get"


@contextlib.contextmanager
def chromium() -> Iterator:
    """A headless selenium Chrome driver on Debian's chromium, with a fresh profile that is
    removed afterwards; the browser's console log is kept (``driver.get_log("browser")``)."""
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="attnsvm-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    except WebDriverException as exc:
        shutil.rmtree(profile, ignore_errors=True)
        raise BrowserUnavailable(f"chromium did not start: {exc.msg}") from exc
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
