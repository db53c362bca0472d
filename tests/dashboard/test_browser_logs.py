"""Pod logs stream into the open Pod page: ``pumice up --runtime process --network host`` runs a
real process that prints a line a second, and the page shows the lines as they come, without a
reload. (The simulated runtime has no logs to serve.)"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from pumice.testing.up import Up, start_up, stop_up

pytestmark = [pytest.mark.browser, pytest.mark.kubectl]

TICKER = """
apiVersion: v1
kind: Pod
metadata: {name: ticker, namespace: default}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "for i in $(seq 1 30); do echo tick $i; sleep 0.5; done"]
"""


@pytest.fixture(scope="module")
def process_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    proc, u = start_up(tmp_path_factory.mktemp("up-process"), "--runtime", "process", "--network", "host")
    try:
        yield u
    finally:
        stop_up(proc)


def test_a_pod_log_streams_into_the_open_page(process_up, browser, login, shot) -> None:
    process_up.kubectl("apply", "-f", "-", input=TICKER)
    page = login(browser, process_up)
    page.goto(process_up.url + "pods")
    page.wait_for_selector("#pods a:has-text('ticker')")
    page.click("#pods a:has-text('ticker')")
    # a locator wait, not wait_for_function: the page's CSP (script-src 'self') forbids the eval that uses
    expect(page.locator("#log")).to_contain_text("tick 1\n", timeout=30_000)
    page.evaluate("window.__notReloaded = true")
    first = page.inner_text("#log").count("tick")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and page.inner_text("#log").count("tick") <= first + 2:
        time.sleep(0.2)
    assert page.inner_text("#log").count("tick") > first + 2, "no new lines arrived while following"
    assert page.evaluate("window.__notReloaded") is True
    shot(page, "pod-log")
    page.context.close()
