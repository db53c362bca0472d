"""A running ``pumice up --runtime simulated`` (free ports, temp data dir) with its dashboard, and
a real Chromium driven by Playwright (Debian's ``/usr/bin/chromium``, never a downloaded one)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pumice.testing.paths import repo_root
from pumice.testing.up import CHROMIUM, CHROMIUM_ARGS, Up, start_up, stop_up

ARTIFACTS = Path(os.environ.get("PUMICE_TEST_ARTIFACTS", repo_root() / "test-artifacts")) / "ui"


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    proc, u = start_up(tmp_path_factory.mktemp("up"), "--runtime", "simulated", "--nodes", "2",
                       "--node-cpu", "8", "--node-memory", "32Gi")
    try:
        yield u
    finally:
        stop_up(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent: apt-get install -y chromium (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _login(browser: object, up: Up, *, width: int = 1280, height: int = 800) -> object:
    """A new page in a new browser context, logged in with the token through the login form."""
    ctx = browser.new_context(viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = ctx.new_page()
    page.set_default_timeout(20_000)
    page.goto(up.url + "login")
    page.fill("#token", up.token)
    page.click("button[type=submit]")
    page.wait_for_url(up.url)
    return page


def _shot(page: object, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path


@pytest.fixture
def login():
    """``login(browser, up, width=, height=)``: a logged-in page in a fresh browser context."""
    return _login


@pytest.fixture
def shot():
    """``shot(page, name)``: a full-page screenshot under test-artifacts/ui/."""
    return _shot
