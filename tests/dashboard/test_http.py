"""The dashboard's HTTP behaviour a browser does not show directly: security headers, 404 pages,
where flash messages appear, and what login says to a valid token without rights (new-user
trial findings). Runs against the module's ``pumice up --runtime simulated`` with plain HTTP."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx2 as httpx
import pytest

from pumice.testing.up import Up


@pytest.fixture(scope="module")
def web(up: Up) -> Iterator[httpx.Client]:
    """An HTTP client logged in to the dashboard with the admin token."""
    with httpx.Client(base_url=up.url, timeout=30, follow_redirects=False) as c:
        r = c.post("/login", data={"token": up.token})
        assert r.status_code == 303, r.text
        yield c


def _flash(html: str) -> list[str]:
    return re.findall(r'<p class="flash \w+" role="status">([^<]*)</p>', html)


def test_every_response_forbids_framing_and_inline_scripts(up: Up, web: httpx.Client) -> None:
    for path in ("/login", "/", "/queues", "/static/app.js", "/no-such-page"):
        r = (web if path != "/login" else httpx.Client(base_url=up.url)).get(path)
        h = r.headers
        assert h["x-frame-options"] == "DENY", path
        assert h["x-content-type-options"] == "nosniff", path
        csp = h["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self';" in csp, path
    # with script-src 'self', an inline handler would not run: the templates carry none
    page = web.get("/queues/default").text
    assert "onsubmit=" not in page and "onclick=" not in page


@pytest.mark.parametrize(("path", "hint"), [("/jobs", "/vcjobs"), ("/jobs/t1/nope", "/vcjobs"),
                                            ("/nodes/nope", "/nodes"), ("/pg", "/podgroups"), ("/zzz", None)])
def test_an_unknown_path_is_a_404_page_that_points_to_the_list_meant(web: httpx.Client, path: str,
                                                                     hint: str | None) -> None:
    r = web.get(path)
    assert r.status_code == 404
    assert f"the page {path} does not exist" in r.text
    assert 'href="/queues"' in r.text  # the page chrome (navigation) is there
    if hint:
        assert f'Did you mean <a href="{hint}">' in r.text
    else:
        assert "Did you mean" not in r.text


def test_an_unknown_action_is_a_404_page(web: httpx.Client, up: Up) -> None:
    r = web.post("/queues/default/explode", headers={"origin": up.url.rstrip("/")})
    assert r.status_code == 404 and "the page /queues/default/explode does not exist" in r.text


def test_a_flash_message_shows_on_the_page_of_its_action_only(web: httpx.Client, up: Up) -> None:
    origin = {"origin": up.url.rstrip("/")}
    r = web.post("/queues/root/weight", data={"weight": "0"}, headers=origin)
    assert r.status_code == 303 and r.headers["location"] == "/queues/root"
    r = web.post("/queues/default/weight", data={"weight": "abc"}, headers=origin)
    assert r.headers["location"] == "/queues/default"
    # the other page's failure does not show here; this page's own does, worded as a failure
    assert _flash(web.get("/queues/default").text) == [
        "could not set the weight of queue default to &#39;abc&#39;: Weight must be an integer from 1 to 65535."]
    assert _flash(web.get("/queues/default").text) == []  # shown once
    assert _flash(web.get("/queues/root").text) == [
        "could not set the weight of queue root to &#39;0&#39;: Queue.scheduling.volcano.sh &#34;root&#34; is invalid: "
        "spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1"]


def _queue_state_becomes(up: Up, state: str, web: httpx.Client | None = None) -> str:
    """Wait (30 s) until Queue f5-closing's status.state is ``state``; with ``web``, then until its
    page shows it (10 s), and return that page."""
    deadline = time.monotonic() + 30
    while up.kubectl("get", "queue", "f5-closing", "-o", "jsonpath={.status.state}") != state:
        assert time.monotonic() < deadline, f"the queue never became {state}"
        time.sleep(0.2)
    if web is None:
        return ""
    deadline = time.monotonic() + 10
    while not re.search(rf'id="queue-state">[^\n]*{state}', page := web.get("/queues/f5-closing").text):
        assert time.monotonic() < deadline, f"the page never showed {state}"
        time.sleep(0.2)
    return page


def test_a_closing_queue_offers_no_weight_update_and_says_why(web: httpx.Client, up: Up) -> None:
    """trial 19 F-5: Volcano's queue webhook refuses every update of a Queue whose state is not Open
    or Closed, so the page disables the form and says when it can be edited again."""
    up.kubectl("apply", "-f", "-", input=(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: f5-closing}\nspec: {weight: 1}\n"))
    _queue_state_becomes(up, "Open")
    up.kubectl("apply", "-f", "-", input=(  # the PodGroup webhook takes only an Open queue
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: f5-pg, namespace: default}\nspec: {minMember: 1, queue: f5-closing}\n"))
    r = web.post("/queues/f5-closing/close", headers={"origin": up.url.rstrip("/")})
    assert r.status_code == 303
    page = _queue_state_becomes(up, "Closing", web)
    assert re.search(r'<button type="submit" disabled[^>]*>Update Weight</button>', page), page
    assert ("This queue is Closing: Volcano's queue webhook refuses every update of a queue that is not Open or "
            "Closed, so its weight can be set once it is Closed, or opened again.") in page
    up.kubectl("delete", "podgroup", "f5-pg")
    page = _queue_state_becomes(up, "Closed", web)
    assert re.search(r'<button type="submit"[^>]*>Update Weight</button>', page)
    assert not re.search(r'<button type="submit" disabled[^>]*>Update Weight</button>', page)
    up.kubectl("delete", "queue", "f5-closing")


@pytest.mark.parametrize(("raw", "says"), [
    ("99999999999999999999999", "Weight must be an integer from 1 to 65535."),
    ("70000", "spec.weight: Invalid value: 70000: spec.weight in body should be less than or equal to 65535"),
])
def test_a_queue_weight_out_of_range_is_refused_with_the_crds_range(web: httpx.Client, up: Up, raw: str,
                                                                     says: str) -> None:
    """trial-12 F-6 h: a huge weight was refused with "must be an integer greater than 0"; a whole
    number goes to the API (its 422 names the bound), other text is refused with the CRD's range."""
    r = web.post("/queues/default/weight", data={"weight": raw}, headers={"origin": up.url.rstrip("/")})
    assert r.status_code == 303
    [flash] = _flash(web.get("/queues/default").text)
    assert flash.startswith(f"could not set the weight of queue default to &#39;{raw}&#39;: "), flash
    assert flash.endswith(says), flash
    assert up.kubectl("get", "queue", "default", "-o", "jsonpath={.spec.weight}") != raw


@pytest.mark.parametrize("path", ["/queues/nope/weight", "/queues/nope/open", "/vcjobs/default/nope/suspend",
                                  "/rayjobs/default/nope/suspend", "/rayclusters/default/nope/scale"])
def test_an_action_on_an_object_that_does_not_exist_is_a_404_page(web: httpx.Client, up: Up, path: str) -> None:
    # trial 11 F-11 k: the queue weight action redirected (303) to the 404 page with a flash, while
    # the others answered 404 at once
    r = web.post(path, data={"weight": "2", "group": "g", "replicas": "1"}, headers={"origin": up.url.rstrip("/")})
    assert r.status_code == 404 and "does not exist" in r.text


ACTIONS = ["/queues/{q}/open", "/queues/{q}/weight", "/queues/{q}/delete", "/vcjobs/default/{n}/suspend",
           "/vcjobs/default/{n}/delete", "/rayclusters/default/{n}/scale", "/rayclusters/default/{n}/delete",
           "/rayjobs/default/{n}/suspend", "/rayjobs/default/{n}/delete", "/podgroups/default/{n}/delete",
           "/rayservices/default/{n}/delete"]


@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_without_a_session_says_nothing_about_the_object(up: Up, action: str) -> None:
    """trial 12 F-3: the actions looked the object up before checking the session, so an anonymous
    POST answered 404 (with the signed-in page layout) for a missing name and 303 for an existing
    one. The session is checked first, as on the GET pages."""
    origin = {"origin": up.url.rstrip("/")}
    with httpx.Client(base_url=up.url, timeout=30, follow_redirects=False) as anonymous:
        for q, n in (("default", "exists-or-not"), ("nope", "nope")):
            path = action.format(q=q, n=n)
            r = anonymous.post(path, data={"weight": "2", "group": "g", "replicas": "1"}, headers=origin)
            assert (r.status_code, r.headers.get("location")) == (303, "/login"), (path, r.status_code)
            r = anonymous.post(path, headers={**origin, "HX-Request": "true"})
            assert (r.status_code, r.headers.get("hx-redirect")) == (401, "/login"), (path, r.status_code)


@pytest.mark.parametrize("path", ["/queues/nope/open", "/rayclusters/default/nope/scale"])
def test_an_action_from_another_origin_is_refused_before_the_lookup(web: httpx.Client, path: str) -> None:
    r = web.post(path, data={"group": "g", "replicas": "1"}, headers={"origin": "https://elsewhere.example"})
    assert r.status_code == 403 and r.text == "cross-origin request refused"


def test_login_with_a_valid_token_that_may_not_list_namespaces_says_so(up: Up) -> None:
    up.kubectl("create", "serviceaccount", "ui-nobody")
    token = up.kubectl("create", "token", "ui-nobody").strip()
    with httpx.Client(base_url=up.url, timeout=30) as c:
        r = c.post("/login", data={"token": token})
        assert r.status_code == 401
        assert "this token is valid but its user may not list namespaces" in r.text
        assert "refused this token" not in r.text
        r = c.post("/login", data={"token": token + "x"})
        assert r.status_code == 401 and "the API server refused this token (401 Unauthorized)" in r.text


def test_the_queues_list_says_what_its_bars_end_at_and_filters_by_name(web: httpx.Client) -> None:
    """Trial 3 finding 11: the column said "allocated / capability" but showed deserved, and the
    filter asked for namespace/name although Queues are cluster-scoped."""
    page = web.get("/queues").text
    assert "<th>Resources (allocated / capability, else deserved)</th>" in page
    assert 'placeholder="name"' in page and 'placeholder="namespace/name"' not in page
    row = page[page.index('<tr data-name="default">'):]
    row = row[:row.index("</tr>")]
    # the default queue has no capability: each figure names the limit it is shown against
    assert re.findall(r'<span class="muted">(capability|deserved|no limit)</span>', row), row
    assert '<span class="muted">capability</span>' not in row, row
    assert 'placeholder="namespace/name"' in web.get("/pods").text


def test_the_icon_is_served_without_sign_in_and_linked_from_every_page(up: Up, web: httpx.Client) -> None:
    """Trial 6 F-13: /favicon.ico was a 404 on every page load."""
    with httpx.Client(base_url=up.url) as anonymous:
        for path in ("/favicon.ico", "/static/favicon.svg"):
            r = anonymous.get(path)
            assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml", (path, r.status_code)
            assert r.text.startswith("<svg"), path
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in anonymous.get("/login").text
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in web.get("/queues").text


@pytest.mark.parametrize("raw", ["٣", "²", "3\u200b"])
def test_a_number_in_a_form_is_ascii_digits_only(web: httpx.Client, up: Up, raw: str) -> None:
    """trial-10 F-6: the forms took ``str.isdigit``'s digits: an Arabic-Indic three scaled to 3,
    a superscript two answered with Python's int() text. Go's strconv.Atoi (kubectl's number
    flags) takes ASCII digits only."""
    origin = {"origin": up.url.rstrip("/")}
    r = web.post("/queues/default/weight", data={"weight": raw}, headers=origin)
    assert r.status_code == 303
    [flash] = _flash(web.get("/queues/default").text)
    assert flash.endswith(": Weight must be an integer from 1 to 65535."), flash
    r = web.get("/pods/default/nope/log", params={"tail": raw})
    assert r.status_code == 400 and r.text.startswith("tail must be a number of lines")


def test_a_rayjob_action_the_page_does_not_offer_is_refused_and_changes_nothing(web: httpx.Client, up: Up) -> None:
    """The POST handlers refuse what the page would not send (trial 11 F-4: suspend posted for a
    Complete RayJob turned it ValidationFailed for good): here a RayJob without
    shutdownAfterJobFinishes (KubeRay refuses to suspend it) and a resume of one not suspended."""
    up.kubectl("apply", "-f", "-", input="""
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: t11-nosuspend, namespace: default}
spec:
  entrypoint: python -c pass
  suspend: false
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template: {spec: {containers: [{name: ray-head, image: rayproject/ray:2.46.0,
                                      resources: {requests: {cpu: 100m, memory: 256Mi}}}]}}
""")
    origin = {"origin": up.url.rstrip("/")}
    page = "/rayjobs/default/t11-nosuspend"
    for _ in range(100):  # the dashboard's cache sees the RayJob shortly after the apply
        if web.get(page).status_code == 200:
            break
    r = web.post(f"{page}/suspend", headers=origin)
    assert r.status_code == 303 and r.headers["location"] == page
    assert _flash(web.get(page).text) == ["could not suspend RayJob default/t11-nosuspend: a RayJob with "
                                          "shutdownAfterJobFinishes set to false is not allowed to be suspended"]
    r = web.post(f"{page}/resume", headers=origin)
    assert _flash(web.get(page).text) == ["could not resume RayJob default/t11-nosuspend: it is not suspended"]
    assert up.kubectl("get", "rayjob", "t11-nosuspend", "-o", "jsonpath={.spec.suspend}") == "false"
    up.kubectl("delete", "rayjob", "t11-nosuspend", "--wait=false")


def test_a_rayjobs_cluster_that_does_not_exist_is_named_without_a_link(web: httpx.Client, up: Up) -> None:
    """Trial 15: the RayJob page linked to its RayCluster after the cluster was deleted (a 404).
    A cluster not there (here: a clusterSelector naming none) is named, marked, and not linked;
    once it exists it is linked, on the RayJob page and in the RayJobs list."""
    up.kubectl("apply", "-f", "-", input="""
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: t15-sel, namespace: default}
spec:
  entrypoint: python -c pass
  clusterSelector: {ray.io/cluster: t15-gone}
""")
    page, link = "/rayjobs/default/t15-sel", 'href="/rayclusters/default/t15-gone"'
    for _ in range(200):  # the dashboard's cache sees the RayJob's status shortly after (its
        html = web.get(page).text  # RayClusterNotFound Event, which names the cluster, may come first)
        if "t15-gone <span" in html or link in html:
            break
        time.sleep(0.05)
    assert 't15-gone <span class="muted">(not found)</span>' in html and link not in html, html
    assert link not in web.get("/rayjobs").text
    up.kubectl("apply", "-f", "-", input="""
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: t15-gone, namespace: default}
spec:
  headGroupSpec:
    rayStartParams: {}
    template: {spec: {containers: [{name: ray-head, image: rayproject/ray:2.46.0,
                                    resources: {requests: {cpu: 100m, memory: 256Mi}}}]}}
""")
    for _ in range(200):
        if link in web.get(page).text:
            break
    assert link in web.get(page).text and link in web.get("/rayjobs").text
    up.kubectl("delete", "rayjob", "t15-sel", "--wait=false")
    up.kubectl("delete", "raycluster", "t15-gone", "--wait=false")
