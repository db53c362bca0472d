"""The web UI in a real Chromium against ``pumice up --runtime simulated``: objects created with
kubectl appear on their pages, live, without a reload; UI actions reach the API; a pending gang
shows the ``pumice explain`` answer. Screenshots of every page go to test-artifacts/ui/."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from pumice.testing.paths import samples_dir
from pumice.testing.up import sleeping_vcjob

pytestmark = [pytest.mark.browser, pytest.mark.kubectl]

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: %(name)s}
spec: {weight: 2, capability: {cpu: "6", memory: 24Gi}}
"""


def wait_until(fn, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def explain_cli(objects, target: str) -> dict:
    """``pumice explain TARGET -o json`` against the stack: its parsed answer."""
    res = subprocess.run([sys.executable, "-m", "pumice.cli.main", "explain", target, "-o", "json",
                          "--kubeconfig", str(objects.kubeconfig)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def panel_matches_cli(page, objects, target: str, fields: tuple[str, ...], timeout: float = 30.0) -> dict:
    """Wait until the page's explain panel shows, in each of ``fields`` (``why``, ``remedy``), the
    text ``pumice explain TARGET`` gives now; return that CLI answer.

    Both are live replays of a cluster that other tests of the module still change (a deleted
    job's Pods terminate, the scheduler runs a session), so one read of each can catch them on
    either side of such a change: the page must converge to the CLI's answer, not match it at one
    instant.

    Raises:
        AssertionError: they still differ after ``timeout`` s (both texts in the message).
    """
    keys = {"why": "reason", "remedy": "remedy"}
    deadline = time.monotonic() + timeout
    while True:
        cli = explain_cli(objects, target)
        shown = {f: page.inner_text(f".explain .{f}").strip() for f in fields}
        if all(shown[f] == str(cli[keys[f]]).strip() for f in fields):
            return cli
        if time.monotonic() >= deadline:
            raise AssertionError(f"the page's explain panel {shown} never matched pumice explain {cli}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def objects(up):
    """A queue with a running gang, a gang that can never fit, and the upstream RayCluster sample."""
    up.kubectl("apply", "-f", "-", input=QUEUE % {"name": "team-a"})
    up.kubectl("apply", "-f", "-", input=sleeping_vcjob("small", replicas=2, queue="team-a", cpu="1"))
    up.kubectl("apply", "-f", "-", input=sleeping_vcjob("huge", replicas=3, queue="default", cpu="500"))
    up.kubectl("apply", "-f", str(samples_dir() / "kuberay" / "ray-cluster.sample.yaml"))
    wait_until(lambda: "Running" in up.kubectl("get", "vcjob", "small", "-o", "jsonpath={.status.state.phase}"),
               60, "vcjob small Running")
    return up


def test_login_refuses_a_wrong_token(up, browser, shot) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(up.url)
    assert page.url.endswith("/login")
    page.fill("#token", "not-the-token")
    page.click("button[type=submit]")
    assert "refused this token" in page.inner_text("main")
    shot(page, "login")
    ctx.close()


def test_pages_render_the_objects_created_with_kubectl(objects, browser, login, shot) -> None:
    page = login(browser, objects)
    wait_until(lambda: "small" in page.inner_text("#live"), what="overview lists small")
    assert "Scheduling issues" in page.inner_text("main")
    assert "huge" in page.inner_text("#issues")
    shot(page, "overview")

    page.goto(objects.url + "queues")
    assert "team-a" in page.inner_text("#queues")
    shot(page, "queues")
    page.goto(objects.url + "queues/team-a")
    assert "Capacity, deserved, guarantee and allocated" in page.inner_text("main")
    page.wait_for_selector(".chart canvas")
    shot(page, "queue")

    page.goto(objects.url + "vcjobs")
    text = page.inner_text("#vcjobs")
    assert "small" in text and "huge" in text
    assert page.locator("#vcjobs .gang").count() >= 2
    shot(page, "vcjobs")
    page.goto(objects.url + "vcjobs/default/small")
    wait_until(lambda: "Gang requirement met" in page.inner_text("main"), what="gang met on small")
    shot(page, "vcjob")

    page.goto(objects.url + "podgroups")
    assert page.locator("#podgroups tbody tr").count() >= 2
    shot(page, "podgroups")

    page.goto(objects.url + "rayclusters")
    wait_until(lambda: "raycluster-kuberay" in page.inner_text("#live"), what="RayCluster listed")
    shot(page, "rayclusters")
    page.goto(objects.url + "rayclusters/default/raycluster-kuberay")
    wait_until(lambda: "workergroup" in page.inner_text("#workergroups"), what="worker group")
    shot(page, "raycluster")

    for path, name in (("rayjobs", "rayjobs"), ("rayservices", "rayservices"), ("nodes", "nodes"),
                       ("pods", "pods"), ("charts", "charts")):
        page.goto(objects.url + path)
        assert page.locator("main h1").count() == 1
        shot(page, name)
    page.goto(objects.url + "nodes")
    assert page.locator("#nodes .usage").count() >= 2
    page.goto(objects.url + "pods")
    pod = page.locator("#pods tbody a").first
    pod.click()
    wait_until(lambda: page.inner_text("#log").strip() != "", what="the log viewer received the log stream")
    print("log viewer:", page.inner_text("#log")[:200])
    shot(page, "pod")
    page.context.close()


def test_a_vcjob_created_with_kubectl_appears_in_the_open_page_without_reload(objects, browser, login, shot) -> None:
    page = login(browser, objects)
    page.goto(objects.url + "vcjobs")
    page.evaluate("window.__notReloaded = true")
    assert "late-arrival" not in page.inner_text("#vcjobs")
    objects.kubectl("apply", "-f", "-", input=sleeping_vcjob("late-arrival", replicas=1, queue="team-a", cpu="1"))
    page.wait_for_selector("#vcjobs a:has-text('late-arrival')", timeout=15_000)
    assert page.evaluate("window.__notReloaded") is True
    page.context.close()


def test_closing_a_queue_from_the_ui_closes_it(objects, browser, login, shot) -> None:
    objects.kubectl("apply", "-f", "-", input=QUEUE % {"name": "to-close"})
    page = login(browser, objects)
    page.goto(objects.url + "queues/to-close")
    wait_until(lambda: "Open" in page.inner_text("#queue-state"), what="queue Open")
    page.click("button:has-text('Close')")
    wait_until(lambda: objects.kubectl("get", "queue", "to-close", "-o", "jsonpath={.status.state}") == "Closed",
               what="kubectl sees the queue Closed")
    wait_until(lambda: "Closed" in page.inner_text("#queue-state"), what="the page shows Closed")
    assert page.locator("button:has-text('Open')").count() == 1
    page.fill("#weight", "5")
    page.click("button:has-text('Update Weight')")
    wait_until(lambda: objects.kubectl("get", "queue", "to-close", "-o", "jsonpath={.spec.weight}") == "5",
               what="weight 5")
    page.context.close()


def test_a_pending_gang_shows_the_explain_answer(objects, browser, login, shot) -> None:
    page = login(browser, objects)
    page.goto(objects.url + "vcjobs/default/huge")
    page.wait_for_selector(".explain .why")
    cli = panel_matches_cli(page, objects, "vcjob/huge", ("why",))
    assert cli["gate"] in page.inner_text(".explain")
    shot(page, "vcjob-pending")
    page.context.close()


def test_a_job_held_by_its_queue_capability_says_why_in_the_scheduling_issues(objects, browser, login, shot) -> None:
    """Trial 6 F-4: the Overview listed a Volcano Job held at enqueue by its queue's capability
    (no condition, no state message yet) with Details ``-``; the row now says what ``pumice
    explain`` says (``<gate>: <why>``), as the job's own page does."""
    objects.kubectl("apply", "-f", "-", input="apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                    "metadata: {name: capped}\nspec: {weight: 1, capability: {cpu: '2', memory: 8Gi}}\n")
    objects.kubectl("apply", "-f", "-", input=sleeping_vcjob("capped-job", replicas=3, queue="capped", cpu="1"))
    try:
        def cli_says() -> dict | None:
            out = explain_cli(objects, "vcjob/capped-job")
            return out if out["gate"] == "enqueue-quota" else None

        found: list[dict] = []
        wait_until(lambda: bool(found.append(cli_says() or {}) or found[-1]), 30, "pumice explain says enqueue-quota")
        cli = found[-1]
        page = login(browser, objects)
        page.goto(objects.url + "?all=1")
        row = page.locator("#issues tr", has=page.locator("a", has_text="capped-job")).filter(has_text="Job").first
        wait_until(lambda: row.locator("td").nth(5).inner_text().strip() not in ("", "-"), 30,
                   "the capped-job row has a reason")
        details = row.locator("td").nth(5).inner_text().strip()
        assert details == f"{cli['gate']}: {cli['reason']}".strip(), (details, cli)
        assert "capability cpu 2" in details, details
        shot(page, "overview-capped")
        page.context.close()
    finally:
        objects.kubectl("delete", "vcjob", "capped-job", "--wait=false")


def test_a_refresh_already_sent_does_not_reset_a_field_being_typed_in(objects, browser, login) -> None:
    """A live refresh requested before the user focused a form field and answered after must not
    replace the form (the typed value would be lost, and a click on its button would send the old
    one): it waits for the focus to leave, as a refresh requested while typing does. The refresh
    is held in the network layer, so the order is fixed, not timed."""
    objects.kubectl("apply", "-f", "-", input=QUEUE % {"name": "typing"})
    page = login(browser, objects)
    page.goto(objects.url + "queues/typing")
    wait_until(lambda: "Open" in page.inner_text("#queue-state"), what="queue Open")
    held: list = []
    page.route(lambda url: "/queues/typing?" in url and "partial=1" in url, lambda route: held.append(route))
    page.evaluate("window.__answered = 0; document.body.addEventListener('htmx:afterRequest', function () {"
                  " window.__answered++; })")
    page.evaluate("htmx.trigger('#live', 'sse:change')")
    # Route handlers run while Playwright is called: wait in its own timer, not time.sleep.
    wait_until(lambda: bool(held) or page.wait_for_timeout(100), what="the refresh request sent")
    page.fill("#weight", "7")
    held[0].continue_()
    wait_until(lambda: page.evaluate("window.__answered") >= 1, what="the held refresh answered")
    assert page.input_value("#weight") == "7"
    assert page.evaluate("document.activeElement.id") == "weight"
    page.click("button:has-text('Update Weight')")
    wait_until(lambda: objects.kubectl("get", "queue", "typing", "-o", "jsonpath={.spec.weight}") == "7",
               what="weight 7")
    page.context.close()


MAIN_PAGES = ("", "queues", "queues/default", "vcjobs", "vcjobs/default/small", "podgroups", "rayclusters", "rayjobs",
              "rayservices", "nodes", "pods", "charts")


def test_the_main_pages_log_no_console_errors_and_load_every_resource(objects, browser, login) -> None:
    """Trial 6 F-13: every page load logged a 404 for /favicon.ico. The pages link an icon, and
    /favicon.ico answers too."""
    page = login(browser, objects)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
    page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
    for path in MAIN_PAGES:
        page.goto(objects.url + path)
        page.wait_for_load_state("load")
    # a live update of a detail page (no filter, no pager there: htmx logged an error when its
    # hx-include matched nothing)
    page.goto(objects.url + "vcjobs/default/small")
    page.evaluate("window.__swaps = 0; document.body.addEventListener('htmx:afterSwap', () => window.__swaps++)")
    objects.kubectl("annotate", "vcjob", "small", "--overwrite", f"pumice.test/poke={time.monotonic_ns()}")
    wait_until(lambda: page.evaluate("window.__swaps") > 0, 15, "the open vcjob page refreshed itself")
    icon = page.evaluate("fetch('/favicon.ico').then(r => r.status + ' ' + r.headers.get('content-type'))")
    assert icon == "200 image/svg+xml", icon
    assert page.locator("link[rel=icon]").count() == 1
    page.wait_for_timeout(500)
    assert errors == [], errors
    page.context.close()


CONF_MAP = ("volcano-system", "volcano-scheduler-configmap")

HYPERNODES = """
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: ui-leaf0}
spec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: %(n0)s}}}]}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: ui-leaf1}
spec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: %(n1)s}}}]}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: ui-spine}
spec: {tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: ui-leaf0}}},
                          {type: HyperNode, selector: {exactMatch: {name: ui-leaf1}}}]}
"""


def _set_scheduler_conf(up, text: str) -> None:
    """Edit the running scheduler's configuration as a user does (its ConfigMap) and wait until
    the scheduler runs it (it records what it runs in the conf-in-use annotation)."""
    patch = json.dumps({"data": {"volcano-scheduler.conf": text}})
    up.kubectl("patch", "configmap", CONF_MAP[1], "-n", CONF_MAP[0], "--type=merge", "-p", patch)
    wait_until(lambda: up.kubectl("get", "configmap", CONF_MAP[1], "-n", CONF_MAP[0], "-o",
                                  r"jsonpath={.metadata.annotations.scheduling\.pumice\.io/conf-in-use}").strip() == text.strip(),
               30, "the scheduler runs the edited configuration")


def test_a_gang_held_by_its_network_topology_shows_what_pumice_explain_says(objects, browser, login, shot) -> None:
    """With network-topology-aware enabled, two 5-cpu Pods with networkTopology hard,
    highestTierAllowed 1, where each tier-1 HyperNode is one 8-cpu Node: the scheduler holds the
    gang, and the page says so (gate ``topology``, the tier, the roomiest HyperNode, the tier that
    would do) in the CLI's words. Without HyperNodes in its replay the UI found the gang placeable
    on two Nodes."""
    before = objects.kubectl("get", "configmap", CONF_MAP[1], "-n", CONF_MAP[0], "-o",
                             r"jsonpath={.data.volcano-scheduler\.conf}")
    assert "  - name: nodeorder\n" in before + "\n"
    _set_scheduler_conf(objects, before.rstrip("\n") + "\n  - name: network-topology-aware\n")
    nodes = objects.kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").split()
    objects.kubectl("apply", "-f", "-", input=HYPERNODES % {"n0": nodes[0], "n1": nodes[1]})
    job = sleeping_vcjob("topo", replicas=2, queue="default", cpu="5").replace(
        "  queue: default\n", "  queue: default\n  networkTopology: {mode: hard, highestTierAllowed: 1}\n")
    try:
        wait_until(lambda: objects.kubectl("get", "hypernode", "ui-spine", "-o", "jsonpath={.status.nodeCount}") == "2",
                   30, "the HyperNode controller counted the spine's Nodes")
        objects.kubectl("apply", "-f", "-", input=job)
        page = login(browser, objects)
        page.goto(objects.url + "vcjobs/default/topo")
        wait_until(lambda: page.locator(".explain .why").count() == 1 and "topology" in page.inner_text(".explain dd code"),
                   30, "the explain panel names the topology gate")
        cli = panel_matches_cli(page, objects, "vcjob/topo", ("why", "remedy"))
        assert cli["gate"] == "topology"
        assert "highestTierAllowed 1" in cli["reason"] and "raised to 2" in cli["remedy"]
        shot(page, "vcjob-topology")
        page.context.close()
        assert objects.kubectl("get", "pods", "-l", "volcano.sh/job-name=topo",
                               "-o", "jsonpath={.items[*].spec.nodeName}").strip() == ""
    finally:
        objects.kubectl("delete", "vcjob", "topo", "--ignore-not-found", "--wait=false")
        objects.kubectl("delete", "hypernode", "ui-leaf0", "ui-leaf1", "ui-spine", "--ignore-not-found")
        _set_scheduler_conf(objects, before)


def test_scaling_a_worker_group_from_the_ui_patches_the_raycluster(objects, browser, login, shot) -> None:
    page = login(browser, objects)
    page.goto(objects.url + "rayclusters/default/raycluster-kuberay")
    page.fill("#r-1", "2")
    page.click("#workergroups button:has-text('Scale')")
    wait_until(lambda: objects.kubectl("get", "raycluster", "raycluster-kuberay", "-o",
                                       "jsonpath={.spec.workerGroupSpecs[0].replicas}") == "2", what="replicas 2")
    page.fill("#r-1", "9")  # above maxReplicas 5: the UI says why and changes nothing
    page.locator("#r-1").evaluate("el => el.removeAttribute('max')")
    page.click("#workergroups button:has-text('Scale')")
    wait_until(lambda: "within minReplicas" in page.inner_text("main"), what="range error shown")
    page.context.close()


def test_phone_width_and_keyboard(objects, browser, login, shot) -> None:
    page = login(browser, objects, width=390, height=844)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    shot(page, "overview-phone")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    # Following the skip link is a same-document navigation that focuses <main> a moment after the
    # key press returns; the next Tab starts from there.
    page.wait_for_function("document.activeElement === document.getElementById('main')")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('main') !== null")
    page.context.close()


def test_keyboard_focus_survives_a_live_refresh(objects, browser, login, shot) -> None:
    """A keyboard user on a link of the live region keeps it when a change re-renders the region
    (the card's count changes; its href does not), instead of the focus falling back to <body>."""
    page = login(browser, objects)
    page.goto(objects.url + "vcjobs")
    page.evaluate("window.__swaps = 0; document.body.addEventListener('htmx:afterSwap', function () { window.__swaps++; })")
    page.focus("#vcjobs a")
    href = page.evaluate("document.activeElement.getAttribute('href')")
    assert href and href.startswith("/vcjobs/")
    objects.kubectl("apply", "-f", "-", input=sleeping_vcjob("refocus", replicas=1, queue="team-a", cpu="1"))
    try:
        page.wait_for_selector("#vcjobs a:has-text('refocus')", timeout=15_000)
        assert page.evaluate("window.__swaps") >= 1
        assert page.evaluate("document.activeElement.getAttribute('href')") == href
        assert page.evaluate("document.activeElement.closest('#live') !== null")
    finally:
        objects.kubectl("delete", "vcjob", "refocus", "--ignore-not-found", "--wait=false")
        page.context.close()


def test_suspending_and_resuming_a_vcjob_goes_through_commands(objects, browser, login, shot) -> None:
    objects.kubectl("apply", "-f", "-", input=sleeping_vcjob("pausable", replicas=1, queue="team-a", cpu="1"))
    wait_until(lambda: objects.kubectl("get", "vcjob", "pausable", "-o", "jsonpath={.status.state.phase}") == "Running",
               60, "pausable Running")
    page = login(browser, objects)
    page.goto(objects.url + "vcjobs/default/pausable")
    page.click("button:has-text('Suspend')")
    wait_until(lambda: objects.kubectl("get", "vcjob", "pausable", "-o", "jsonpath={.status.state.phase}") == "Aborted",
               60, "pausable Aborted")
    page.wait_for_selector("button:has-text('Resume')")
    page.click("button:has-text('Resume')")
    wait_until(lambda: objects.kubectl("get", "vcjob", "pausable", "-o", "jsonpath={.status.state.phase}")
               in ("Restarting", "Pending", "Running"), 60, "pausable resumed")
    page.context.close()


def test_suspending_a_rayjob_from_the_ui_suspends_it(objects, browser, login, shot) -> None:
    import yaml

    docs = list(yaml.safe_load_all((samples_dir() / "kuberay" / "ray-job.sample.yaml").read_text()))
    job = next(d for d in docs if d and d.get("kind") == "RayJob")
    objects.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))  # as upstream ships it
    job["metadata"]["name"] = "rayjob-suspendable"
    job["spec"]["shutdownAfterJobFinishes"] = True
    objects.kubectl("apply", "-f", "-", input=yaml.safe_dump(job))
    page = login(browser, objects)
    page.goto(objects.url + "rayjobs/default/rayjob-sample")
    assert "shutdownAfterJobFinishes" in page.inner_text("#no-suspend")  # KubeRay would refuse it
    page.goto(objects.url + "rayjobs")
    page.wait_for_selector("#rayjobs a:has-text('rayjob-suspendable')")
    shot(page, "rayjobs")
    page.click("#rayjobs a:has-text('rayjob-suspendable')")
    page.click("button:has-text('Suspend')")
    wait_until(lambda: objects.kubectl("get", "rayjob", "rayjob-suspendable", "-o",
                                       "jsonpath={.status.jobDeploymentStatus}") == "Suspended", 60, "Suspended")
    page.wait_for_selector("button:has-text('Resume')")
    wait_until(lambda: "Suspended" in page.inner_text("main"), what="page shows Suspended")
    shot(page, "rayjob")
    page.context.close()


def test_pumice_dashboard_serves_the_same_pages_against_a_kubeconfig(objects, browser, login, shot) -> None:
    import re
    import subprocess
    import sys

    from pumice.testing.up import Up

    proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "dashboard", "--kubeconfig",
                             str(objects.kubeconfig), "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        m = re.search(r"dashboard: (http://\S+)", line)
        assert m, f"no URL printed: {line!r}"
        standalone = Up(url=m.group(1), kubeconfig=objects.kubeconfig, token=objects.token, data_dir=objects.data_dir)
        page = login(browser, standalone)
        wait_until(lambda: "small" in page.inner_text("#live"), what="the standalone dashboard lists small")
        page.goto(standalone.url + "queues/team-a")
        assert "team-a" in page.inner_text("main h1")
        page.context.close()
    finally:
        proc.send_signal(2)
        proc.wait(timeout=30)
