"""Trial 16 F-5: ``/livez?verbose`` and ``/readyz?verbose`` answered a bare ``ok`` without
kube-apiserver's per-check list, and ``/metrics`` was 404. Now the health paths answer as
apiserver/pkg/server/healthz does (``[+]ping ok`` ... ``livez check passed``; a failing check
``[-]etcd failed: reason withheld`` and 500; ``exclude=``), and ``/metrics`` serves the process's
Prometheus registry with kube-apiserver's ``apiserver_request_total`` and
``apiserver_request_duration_seconds``, to system:masters and the ``system:monitoring`` group."""

from __future__ import annotations

from pathlib import Path

import httpx2
from prometheus_client.parser import text_string_to_metric_families

from pumice.apiserver.server import APIServer
from pumice.apiserver.storage import MemoryStorage, StorageError
from pumice.testing.cluster import LocalCluster, local_cluster

from .builders import configmap


async def test_verbose_health_lists_each_check_then_passed(http: httpx2.AsyncClient) -> None:
    r = await http.get("/livez", params={"verbose": ""})
    assert (r.status_code, r.headers["content-type"], r.text) == (
        200, "text/plain; charset=utf-8", "[+]ping ok\n[+]log ok\n[+]etcd ok\nlivez check passed\n")
    r = await http.get("/readyz?verbose")
    assert r.text == ("[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n"
                      "[+]shutdown ok\nreadyz check passed\n")
    assert (await http.get("/healthz?verbose=1")).text.endswith("[+]etcd ok\nhealthz check passed\n")
    assert (await http.get("/readyz")).text == "ok"  # without verbose: as before


async def test_excluded_checks_are_listed_and_an_unknown_one_warned_about(http: httpx2.AsyncClient) -> None:
    r = await http.get("/healthz?verbose&exclude=etcd&exclude=bogus&exclude=nope")
    assert (r.status_code, r.text) == (200, '[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n'
                                            'warn: some health checks cannot be excluded: no matches for "bogus","nope"\n'
                                            'healthz check passed\n')


class _FailedStorage(MemoryStorage):
    """A storage whose fsync has failed (it refuses commits from then on)."""

    @property
    def failure(self) -> StorageError | None:
        return StorageError("fsync: disk full")


async def test_a_failing_check_is_500_listing_every_check_with_its_reason_withheld() -> None:
    async with local_cluster(storage=_FailedStorage()) as c, \
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=c.app), base_url="http://apiserver",
                               headers={"Authorization": f"Bearer {c.server.token}"}) as http:
        for query in ("", "?verbose"):
            r = await http.get("/livez" + query)
            assert (r.status_code, r.text) == (500, "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n"
                                                    "livez check failed\n")
        r = await http.get("/readyz")
        assert r.status_code == 500 and "[-]etcd-readiness failed: reason withheld\n" in r.text
        r = await http.get("/livez/etcd")  # a named check is not public, and says why
        assert (r.status_code, r.text) == (500, "internal server error: fsync: disk full\n")
        r = await http.get("/livez?exclude=etcd")
        assert (r.status_code, r.text) == (200, "ok")


def _samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(s.labels.items())): s.value for fam in text_string_to_metric_families(text)
            for s in fam.samples if s.name == name}


def _labels(verb: str, resource: str, scope: str, code: str | None = None, *, group: str = "", version: str = "v1",
            dry_run: str = "", subresource: str = "") -> tuple[tuple[str, str], ...]:
    d = {"verb": verb, "dry_run": dry_run, "group": group, "version": version, "resource": resource,
         "subresource": subresource, "scope": scope, "component": "apiserver"}
    if code is not None:
        d["code"] = code
    return tuple(sorted(d.items()))


async def test_metrics_count_each_request_with_kube_apiservers_labels(cluster: LocalCluster,
                                                                      http: httpx2.AsyncClient) -> None:
    r = await http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=")
    before = _samples(r.text, "apiserver_request_total")
    await cluster.client.create(configmap("seen"))  # the in-process client is counted too
    await http.get("/api/v1/namespaces/default/configmaps")
    await http.get("/api/v1/configmaps")
    await http.get("/api/v1/namespaces/default/configmaps/seen")
    await http.get("/api/v1/namespaces/default/configmaps/absent")
    await http.post("/api/v1/namespaces/default/configmaps", params={"dryRun": "All"},
                    json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}})
    await http.patch("/api/v1/namespaces/default/configmaps/seen", content=b'{"data":{"a":"b"}}',
                     headers={"content-type": "application/merge-patch+json"})
    await http.patch("/api/v1/namespaces/default/configmaps/applied", params={"fieldManager": "t"},
                     content=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"}}',
                     headers={"content-type": "application/apply-patch+yaml"})
    await http.delete("/api/v1/namespaces/default/configmaps/seen")
    await http.get("/apis/apps/v1/namespaces/default/deployments")
    await http.get("/livez")
    r = await http.get("/metrics")
    after = _samples(r.text, "apiserver_request_total")
    grown = {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}
    assert grown == {
        _labels("POST", "configmaps", "resource", "201"): 1.0,
        _labels("LIST", "configmaps", "namespace", "200"): 1.0,
        _labels("LIST", "configmaps", "cluster", "200"): 1.0,
        _labels("GET", "configmaps", "resource", "200"): 1.0,
        _labels("GET", "configmaps", "resource", "404"): 1.0,
        _labels("POST", "configmaps", "resource", "201", dry_run="All"): 1.0,
        _labels("PATCH", "configmaps", "resource", "200"): 1.0,
        _labels("APPLY", "configmaps", "resource", "201"): 1.0,
        _labels("DELETE", "configmaps", "resource", "200"): 1.0,
        _labels("LIST", "deployments", "namespace", "200", group="apps"): 1.0,
        (("code", "200"), ("component", ""), ("dry_run", ""), ("group", ""), ("resource", ""), ("scope", ""),
         ("subresource", "/livez"), ("verb", "GET"), ("version", "")): 1.0,
    }
    counts = _samples(r.text, "apiserver_request_duration_seconds_count")
    assert counts[_labels("LIST", "deployments", "namespace", group="apps")] >= 1.0
    assert "# TYPE apiserver_request_duration_seconds histogram" in r.text
    assert 'apiserver_request_duration_seconds_bucket{component="apiserver"' in r.text and 'le="0.005"' in r.text


async def test_metrics_are_served_to_the_monitoring_group_and_masters_only(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('prom-token,prom,1001,"system:monitoring"\nbob-token,bob,1002\n')
    srv = APIServer(None, token_auth_file=tokens)
    await srv.start()
    try:
        async def get(token: str | None, path: str = "/metrics") -> httpx2.Response:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=srv.app), base_url="http://apiserver",
                                          headers=headers) as h:
                return await h.get(path)

        assert (await get(srv.token)).status_code == 200  # system:masters
        assert (await get("prom-token")).status_code == 200
        assert (await get("prom-token", "/readyz/etcd")).text == "ok"
        r = await get("bob-token")
        assert (r.status_code, r.json()["message"]) == (403, 'forbidden: User "bob" cannot get path "/metrics"')
        assert (await get(None)).status_code == 401
        assert (await get("bob-token", "/livez?verbose")).text.endswith("livez check passed\n")  # public
    finally:
        srv.close()


def test_the_verb_and_scope_labels_are_upstreams() -> None:
    from pumice.apiserver.requestmetrics import request_labels

    def verb_scope(method: str, sub: str = "", named: bool = False, ns: bool = True, query: dict[str, str] | None = None,
                   content_type: str = "") -> tuple[str, str]:
        labels = request_labels(method, "", "v1", "pods", sub, named, ns and not named, query or {}, None, content_type)
        return labels[0], labels[6]

    assert verb_scope("GET", query={"watch": "1"}) == ("WATCH", "namespace")
    assert verb_scope("GET", query={"watch": "false"}) == ("LIST", "namespace")
    assert verb_scope("GET", ns=False, query={"watch": "true"}) == ("WATCH", "cluster")
    assert verb_scope("HEAD", named=True) == ("GET", "resource")
    assert verb_scope("GET", "log", named=True) == ("CONNECT", "resource")
    assert verb_scope("POST", "exec", named=True) == ("CONNECT", "resource")
    assert verb_scope("PUT", "status", named=True) == ("PUT", "resource")
    assert verb_scope("DELETE") == ("DELETE", "namespace")  # a collection delete
    assert verb_scope("PATCH", named=True, content_type="application/apply-patch+yaml") == ("APPLY", "resource")
    assert verb_scope("OPTIONS") == ("other", "namespace")
    assert request_labels("POST", "", "v1", "pods", "", False, True, {}, ["All", "All"], "")[1] == "All"


async def test_metrics_have_no_created_series_as_client_golang_writes_none(cluster: LocalCluster,
                                                                           http: httpx2.AsyncClient) -> None:
    await cluster.client.create(configmap("counted"))  # a counter and a histogram child exist
    text = (await http.get("/metrics")).text
    assert "apiserver_request_total{" in text and "apiserver_request_duration_seconds_count{" in text
    assert [line for line in text.splitlines() if "_created" in line] == []


async def test_a_server_built_without_request_metrics_counts_no_request() -> None:
    """``pumice simulate``'s API server (``request_metrics=False``: nothing can scrape it) skips
    the per-request labels, timing and counting; its answers are the usual ones."""
    from prometheus_client import REGISTRY

    from pumice.client.kubeconfig import in_process

    def created() -> float:
        return REGISTRY.get_sample_value("apiserver_request_total", dict(_labels("POST", "configmaps", "resource",
                                                                                  "201"))) or 0.0

    def reads() -> float:
        return REGISTRY.get_sample_value("apiserver_request_duration_seconds_count",
                                         dict(_labels("GET", "configmaps", "resource"))) or 0.0

    for metrics in (True, False):
        srv = APIServer(None, request_metrics=metrics)
        await srv.start()
        try:
            client = in_process(srv.app, scheme=srv.scheme)
            before = created(), reads()
            made = await client.create(configmap("counted" if metrics else "uncounted"))
            got = await client.request("GET", f"/api/v1/namespaces/default/configmaps/{made['metadata']['name']}")
            assert got["metadata"]["uid"] == made["metadata"]["uid"]
            assert (created() - before[0], reads() - before[1]) == ((1.0, 1.0) if metrics else (0.0, 0.0))
            await client.close()
        finally:
            srv.close()


async def test_metrics_are_served_as_the_0_0_4_text_format_as_client_golang_names_it(
        http: httpx2.AsyncClient) -> None:
    # trial 18 F-9: both /metrics endpoints said version=1.0.0 (prometheus_client's
    # CONTENT_TYPE_LATEST); kube-apiserver and controller-runtime answer the 0.0.4 text format
    from pumice.runtime.health import build_app

    r = await http.get("/metrics")
    assert (r.status_code, r.headers["content-type"]) == (200, "text/plain; version=0.0.4; charset=utf-8")
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=build_app({}, {})),
                                  base_url="http://manager") as manager:
        r = await manager.get("/metrics")
    assert (r.status_code, r.headers["content-type"]) == (200, "text/plain; version=0.0.4; charset=utf-8")
