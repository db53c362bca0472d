"""Web UI benchmark: prints figures (not a test).

Against ``pumice up --runtime simulated`` (2 Nodes x 8 cpu) with a real Chromium (Debian's
``/usr/bin/chromium`` through Playwright):

1. first render of Overview: navigation start to the page loaded with its live region, median of
   5; baseline in the same run: the login page (a template with no cluster data);
2. a list with 1,000 Volcano Jobs: 1,000 vcjobs are created through the API (each a gang that can
   never fit, so they stay Pending with their PodGroups); first render of /vcjobs (its first page:
   250 rows, newest first, "1000 total"), median of 5; baseline: ``kubectl get vcjobs -o json`` of the same 1,000 (the API
   list the page is built from, plus kubectl's own start-up); also the time for the filter box to
   narrow the 1,000 rows and the size of the page; then the Overview with the 1,000 (its Scheduling
   issues rows reuse their explain verdicts for 30 s), and once they are older and re-run (one
   scheduling session for each of the 5 explained rows); baseline: the former;
3. kubectl change -> the open page shows it, p50/p99 over 30 changes: ``kubectl patch`` of a
   Queue's weight with the Queue page open, and ``kubectl apply`` of a new vcjob with the
   1,000-job list open (20 changes); baseline: the same ``kubectl`` command's own wall time.

Usage: python bench/ui.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pumice.testing.up import CHROMIUM, CHROMIUM_ARGS, Up, start_up, stop_up

QUICK = "--quick" in sys.argv
N_JOBS = 200 if QUICK else 1000
N_CHANGES = 10 if QUICK else 30


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def vcjob(name: str) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "w", "replicas": 1, "template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"],
                                         "resources": {"requests": {"cpu": "100", "memory": "1Gi"}}}]}}}]}}


async def create_jobs(up: Up, n: int) -> float:
    from pumice.client.kubeconfig import connect

    client = connect(up.kubeconfig)
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with sem:
            await client.create(vcjob(f"bench-{i:04d}"))

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    await client.close()
    return time.perf_counter() - t0


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="pumice-bench-ui-"))
    proc, up = start_up(tmp, "--runtime", "simulated", "--nodes", "2", "--node-cpu", "8", "--node-memory", "32Gi")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            ctx = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)  # its waits evaluate strings; the pages forbid eval
            page = ctx.new_page()
            page.set_default_timeout(120_000)
            base = [timed(lambda: page.goto(up.url + "login")) for _ in range(5)]
            page.fill("#token", up.token)
            page.click("button[type=submit]")
            page.wait_for_url(up.url)
            up.kubectl("apply", "-f", "-", input="apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                                                  "metadata: {name: bench}\nspec: {weight: 1}\n")

            def overview() -> None:
                page.goto(up.url)
                page.wait_for_selector("#issues-h")

            ov = [timed(overview) for _ in range(5)]
            print(f"first render, Overview (empty cluster): median {statistics.median(ov) * 1000:.0f} ms "
                  f"(login page {statistics.median(base) * 1000:.0f} ms; ratio {statistics.median(ov) / statistics.median(base):.1f}x)")

            with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's loop
                secs = pool.submit(asyncio.run, create_jobs(up, N_JOBS)).result()
            print(f"created {N_JOBS} vcjobs through the API in {secs:.1f} s")
            all_there = f"(document.getElementById('rowcount') || {{textContent: ''}}).textContent.includes('{N_JOBS} total')"
            page.goto(up.url + "vcjobs")
            page.wait_for_function(all_there)

            def joblist() -> None:
                page.goto(up.url + "vcjobs")
                page.wait_for_function(all_there)
                page.wait_for_selector(f"#vcjobs tbody tr:nth-child({min(250, N_JOBS)})")

            lst = [timed(joblist) for _ in range(5)]
            kube = [timed(lambda: up.kubectl("get", "jobs.batch.volcano.sh", "-o", "json")) for _ in range(5)]
            size = len(page.content().encode())
            print(f"first render, Jobs list with {N_JOBS} vcjobs (its first page, 250 rows): median {statistics.median(lst) * 1000:.0f} ms, "
                  f"{size / 1024:.0f} KiB of HTML (kubectl get jobs.batch.volcano.sh -o json: {statistics.median(kube) * 1000:.0f} ms; "
                  f"ratio {statistics.median(lst) / statistics.median(kube):.2f}x)")
            ov2 = [timed(overview) for _ in range(5)]
            print(f"first render, Overview with {N_JOBS} pending gangs: median {statistics.median(ov2) * 1000:.0f} ms")

            def overview_verdicts_expired() -> float:
                time.sleep(31)  # past the Scheduling issues verdicts' 30 s reuse (Dashboard.ISSUE_VERDICT_AGE)
                up.kubectl("annotate", "queue", "bench", "--overwrite", f"bench/poke={time.monotonic_ns()}")
                return timed(overview)

            ov3 = [overview_verdicts_expired() for _ in range(1 if QUICK else 3)]
            print(f"first render, Overview with {N_JOBS} pending gangs when its Scheduling issues rows' explain "
                  f"verdicts are 30 s old and re-run (5 sessions): median {statistics.median(ov3) * 1000:.0f} ms "
                  f"(verdicts reused: {statistics.median(ov2) * 1000:.0f} ms; ratio "
                  f"{statistics.median(ov3) / statistics.median(ov2):.1f}x)")

            def narrow() -> None:
                page.fill("#filter", "bench-0999" if N_JOBS == 1000 else "bench-0199")
                page.wait_for_function("document.querySelectorAll('#vcjobs tbody tr').length === 1")
                page.fill("#filter", "")
                page.wait_for_function("document.querySelectorAll('#vcjobs tbody tr').length >= 200")

            joblist()
            flt = [timed(narrow) / 2 for _ in range(3)]
            print(f"filter on the {N_JOBS}-row list: median {statistics.median(flt) * 1000:.0f} ms per filter change")

            # kubectl change -> the open page shows it
            page.goto(up.url + "queues/bench")
            lat, cmd = [], []
            for i in range(N_CHANGES):
                w = i + 2
                t0 = time.perf_counter()
                up.kubectl("patch", "queue", "bench", "--type", "merge", "-p", f'{{"spec":{{"weight":{w}}}}}')
                t1 = time.perf_counter()
                page.wait_for_function(f"document.querySelector('#weight') && document.querySelector('#weight').value === '{w}'")
                lat.append(time.perf_counter() - t0)
                cmd.append(t1 - t0)
            print(f"kubectl patch queue weight -> Queue page shows it ({N_CHANGES} changes): "
                  f"p50 {pct(lat, 50) * 1000:.0f} ms, p99 {pct(lat, 99) * 1000:.0f} ms "
                  f"(kubectl patch alone p50 {pct(cmd, 50) * 1000:.0f} ms; page after kubectl returned p50 "
                  f"{pct([a - b for a, b in zip(lat, cmd, strict=True)], 50) * 1000:.0f} ms)")

            joblist()
            lat, cmd = [], []
            for i in range(N_CHANGES * 2 // 3):
                name = f"late-{i:03d}"
                t0 = time.perf_counter()
                up.kubectl("apply", "-f", "-", input=json.dumps(vcjob(name)))
                t1 = time.perf_counter()
                page.wait_for_selector(f"#vcjobs a:has-text('{name}')")
                lat.append(time.perf_counter() - t0)
                cmd.append(t1 - t0)
            print(f"kubectl apply vcjob -> the {N_JOBS}-job list shows it ({len(lat)} changes): "
                  f"p50 {pct(lat, 50) * 1000:.0f} ms, p99 {pct(lat, 99) * 1000:.0f} ms "
                  f"(kubectl apply alone p50 {pct(cmd, 50) * 1000:.0f} ms)")
            browser.close()
    finally:
        stop_up(proc)


if __name__ == "__main__":
    main()
