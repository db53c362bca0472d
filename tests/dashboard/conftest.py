"""A running ``pumice up --runtime simulated`` (free ports, temp data dir) with its dashboard, and
a real Chromium driven by Playwright (Debian's ``/usr/bin/chromium``, never a downloaded one)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pumice.testing.paths import repo_root

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(os.environ.get("PUMICE_TEST_ARTIFACTS", repo_root() / "test-artifacts")) / "ui"


@dataclass
class Up:
    """The running stack: dashboard URL, kubeconfig, token, and a kubectl runner."""

    url: str
    kubeconfig: Path
    token: str
    data_dir: Path

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        kubectl = shutil.which("kubectl")
        assert kubectl, "kubectl is not on PATH (make venv installs it into .venv/bin)"
        res = subprocess.run([kubectl, *args], input=input, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "KUBECONFIG": str(self.kubeconfig)})
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {res.stderr}")
        return res.stdout


def start_up(tmp: Path, *extra: str) -> tuple[subprocess.Popen[str], Up]:
    """Start ``pumice up --runtime simulated`` on free ports; return once the dashboard serves."""
    log = open(tmp / "up.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "pumice.cli.main", "up", "--runtime", "simulated", "--data-dir", str(tmp),
         "--port", "0", "--dashboard-port", "0", "--nodes", "2", "--node-cpu", "8", "--node-memory", "32Gi",
         *extra],
        stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 90
    url = None
    while time.monotonic() < deadline:
        text = (tmp / "up.log").read_text()
        m = re.search(r"dashboard: (http://\S+)", text)
        if m:
            url = m.group(1)
            break
        if proc.poll() is not None:
            raise RuntimeError(f"pumice up exited with {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.2)
    if url is None:
        stop_up(proc)
        raise RuntimeError("pumice up did not print the dashboard URL within 90 s")
    return proc, Up(url=url, kubeconfig=tmp / "kubeconfig", token=(tmp / "token").read_text().strip(), data_dir=tmp)


def stop_up(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    proc, u = start_up(tmp_path_factory.mktemp("up"))
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
