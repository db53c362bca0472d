"""Regenerate the README's dashboard screenshots (docs/ui-overview.png, docs/ui-queue.png).

Starts ``pumice up --runtime simulated`` (3 Nodes x 8 cpu), creates two queues, a few Volcano
Jobs (one gang that can never fit) and KubeRay's RayCluster sample with kubectl, lets the
dashboard sample a minute of history, then captures the pages with Debian's Chromium.

Usage: python tools/ui_screenshots.py [--wait SECONDS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from pumice.testing.paths import repo_root, samples_dir
from pumice.testing.up import CHROMIUM, CHROMIUM_ARGS, sleeping_vcjob, start_up, stop_up

QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: %s}\nspec: {weight: %d, capability: {cpu: '%d'}}\n"


def main() -> None:
    wait = float(sys.argv[sys.argv.index("--wait") + 1]) if "--wait" in sys.argv else 60.0
    docs = repo_root() / "docs"
    docs.mkdir(exist_ok=True)
    proc, up = start_up(Path(tempfile.mkdtemp(prefix="pumice-shots-")), "--runtime", "simulated", "--nodes", "3",
                        "--node-cpu", "8", "--node-memory", "32Gi")
    try:
        up.kubectl("apply", "-f", "-", input=QUEUE % ("research", 3, 16) + "---\n" + QUEUE % ("batch", 1, 8))
        for name, n, queue, cpu in (("train-a", 4, "research", "2"), ("train-b", 2, "research", "1"),
                                    ("etl", 3, "batch", "1")):
            up.kubectl("apply", "-f", "-", input=sleeping_vcjob(name, replicas=n, queue=queue, cpu=cpu))
        time.sleep(wait / 2)
        for name, n, queue, cpu in (("train-c", 4, "research", "2"), ("too-big", 3, "batch", "500")):
            up.kubectl("apply", "-f", "-", input=sleeping_vcjob(name, replicas=n, queue=queue, cpu=cpu))
        up.kubectl("apply", "-f", str(samples_dir() / "kuberay" / "ray-cluster.sample.yaml"))
        time.sleep(wait / 2)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.goto(up.url + "login")
            page.fill("#token", up.token)
            page.click("button[type=submit]")
            page.wait_for_url(up.url)
            page.screenshot(path=str(docs / "ui-overview.png"))
            page.goto(up.url + "queues/research")
            page.wait_for_selector(".chart canvas")
            page.screenshot(path=str(docs / "ui-queue.png"), full_page=True)
            browser.close()
    finally:
        stop_up(proc)
    print(f"wrote {docs / 'ui-overview.png'} and {docs / 'ui-queue.png'}")


if __name__ == "__main__":
    main()
