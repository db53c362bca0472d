"""Bad input, property-based (hypothesis): requests built from every served kind with random
values at random places, random patches of every patch type, garbage bodies and random list and
watch parameters. Properties: no answer is a 5xx (but kube-apiserver's 504 ResourceVersionTooLarge
to a list or watch from a resourceVersion newer than the store), every error is a ``Status`` whose code is the
HTTP code, and a refused request changes nothing stored (the store's revision stays). The same
for volcano-scheduler.conf and the CLI's manifest reader: a clear error or a result, never a
crash.

Short: 1,000 requests (``make test``); full: 12,000 (``make reliability``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pumice.testing.cluster import local_cluster

from .conftest import size

NS = "fuzz"

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False),
                    st.text(max_size=12), st.sampled_from(["", "a", "1Gi", "500m", "-1", "Always", "x" * 300]))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)

BASES: dict[str, dict[str, Any]] = {
    "Pod": {"spec": {"containers": [{"name": "c", "image": "i", "command": ["sleep", "1"],
                                     "resources": {"requests": {"cpu": "100m"}}}]}},
    "Deployment": {"spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                            "template": {"metadata": {"labels": {"a": "b"}},
                                         "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
    "ConfigMap": {"data": {"k": "v"}},
    "Secret": {"stringData": {"k": "v"}},
    "Job": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}},
    "Service": {"spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}},
    "Queue": {"spec": {"weight": 1}},
    "PodGroup": {"spec": {"minMember": 1, "queue": "default"}},
    "RayCluster": {"spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray"}]}}}}},
}


class Stats:
    requests = 0
    refused = 0
    accepted = 0
    rv_too_large = 0  # the 504 below


def _path_into(obj: Any, rnd: list[int]) -> list[Any]:
    """A path to some node of ``obj`` chosen by the numbers in ``rnd``."""
    path: list[Any] = []
    cur = obj
    for r in rnd:
        if isinstance(cur, dict) and cur:
            k = sorted(cur, key=str)[r % len(cur)]
        elif isinstance(cur, list) and cur:
            k = r % len(cur)
        else:
            break
        path.append(k)
        cur = cur[k]
    return path


def _set(obj: Any, path: list[Any], value: Any) -> None:
    if not path:
        return
    cur = obj
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value


async def _send(c: Any, method: str, path: str, body: bytes | None, ctype: str, query: str = "") -> tuple[int, Any]:
    headers = [(b"accept", b"application/json")]
    if body is not None:
        headers += [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())]
    status, data = await c.client._direct.request(method, path, query.encode(), headers, body or b"")
    return status, data


def _too_large_resource_version(status: int, data: bytes) -> bool:
    """kube-apiserver's one 5xx answer to bad input: a list or watch from a resourceVersion newer
    than the store is 504 Timeout with cause ResourceVersionTooLarge (issue 14 item 5)."""
    if status != 504:
        return False
    causes = (json.loads(data).get("details") or {}).get("causes") or []
    return any(c.get("reason") == "ResourceVersionTooLarge" for c in causes)


def _check(status: int, data: bytes, before: int, after: int, what: str) -> None:
    assert status < 500 or _too_large_resource_version(status, data), f"{what}: {status} {data[:300]!r}"
    if status == 504:
        Stats.rv_too_large += 1
    if status >= 400:
        doc = json.loads(data)
        assert doc.get("kind") == "Status" and doc.get("code") == status, f"{what}: {doc}"
        assert after == before, f"{what}: refused with {status} but the store changed ({before} -> {after})"
        Stats.refused += 1
    else:
        Stats.accepted += 1
    Stats.requests += 1


def test_random_requests_never_get_a_5xx_and_refusals_change_nothing(report: Any) -> None:
    n = size(1000, 12000)
    loop = asyncio.new_event_loop()
    cm = local_cluster()
    c = loop.run_until_complete(cm.__aenter__())
    kinds = {rk.kind: rk for g, v in c.scheme.group_versions() for rk in c.scheme.kinds_in(g, v)
             if rk.kind in BASES and (rk.kind != "Job" or g in ("batch", "batch.volcano.sh"))}
    kinds["Job"] = c.scheme.by_api_version_kind("batch/v1", "Job")
    loop.run_until_complete(c.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))
    Stats.requests = Stats.refused = Stats.accepted = 0

    def base(kind: str, name: str) -> dict[str, Any]:
        rk = kinds[kind]
        md = {"name": name, **({"namespace": NS} if rk.namespaced else {})}
        return {"apiVersion": rk.api_version, "kind": kind, "metadata": md, **json.loads(json.dumps(BASES[kind]))}

    def coll(kind: str) -> str:
        return str(kinds[kind].path(NS))

    ops = st.sampled_from(["create", "put", "merge", "json", "strategic", "apply", "garbage", "list"])

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(kind=st.sampled_from(sorted(kinds)), op=ops, where=st.lists(st.integers(0, 50), min_size=1, max_size=6),
           value=json_values, raw=st.binary(max_size=64), name=st.sampled_from(["a", "b", "c"]))
    def one(kind: str, op: str, where: list[int], value: Any, raw: bytes, name: str) -> None:
        rk = kinds[kind]
        path = coll(kind)
        item = f"{path}/{name}"
        before = c.server.store.revision
        if op == "create":
            obj = base(kind, name)
            _set(obj, _path_into(obj, where), value)
            status, data = loop.run_until_complete(_send(c, "POST", path, json.dumps(obj).encode(), "application/json"))
        elif op == "put":
            obj = base(kind, name)
            _set(obj, _path_into(obj, where), value)
            status, data = loop.run_until_complete(_send(c, "PUT", item, json.dumps(obj).encode(), "application/json"))
        elif op == "json":
            patch = [{"op": ["add", "replace", "remove", "test", "move"][where[0] % 5],
                      "path": "/" + "/".join(str(p) for p in _path_into(base(kind, name), where)), "value": value}]
            status, data = loop.run_until_complete(
                _send(c, "PATCH", item, json.dumps(patch).encode(), "application/json-patch+json"))
        elif op in ("merge", "strategic", "apply"):
            doc = base(kind, name) if op == "apply" else {}
            p = _path_into(base(kind, name), where)
            cur: Any = doc
            for k in p[:-1] if p else []:
                cur = cur.setdefault(k, {}) if isinstance(cur, dict) else cur
            if isinstance(cur, dict) and p:
                cur[str(p[-1])] = value
            ctype = {"merge": "application/merge-patch+json", "strategic": "application/strategic-merge-patch+json",
                     "apply": "application/apply-patch+yaml"}[op]
            query = "fieldManager=fuzz&force=true" if op == "apply" else ""
            status, data = loop.run_until_complete(_send(c, "PATCH", item, json.dumps(doc).encode(), ctype, query))
        elif op == "garbage":
            ctype = ["application/json", "application/yaml", "application/merge-patch+json"][where[0] % 3]
            method = "PATCH" if "patch" in ctype else "POST"
            status, data = loop.run_until_complete(_send(c, method, item if method == "PATCH" else path, raw, ctype))
        else:
            params = {"labelSelector": str(value)[:40], "fieldSelector": str(value)[:40],
                      "resourceVersion": str(value)[:12], "limit": str(where[0]), "continue": raw.hex()[:20]}
            keys = [k for i, k in enumerate(sorted(params)) if where[i % len(where)] % 2]
            query = "&".join(f"{k}={params[k]}" for k in keys)
            status, data = loop.run_until_complete(_send(c, "GET", path, None, "", query))
        _check(status, data, before, c.server.store.revision, f"{op} {kind} {rk.api_version}")

    try:
        one()
    finally:
        loop.run_until_complete(cm.__aexit__(None, None, None))
        loop.close()
    report(requests=Stats.requests, refused=Stats.refused, accepted=Stats.accepted, responses_5xx=0,
           resource_version_too_large_504=Stats.rv_too_large, kinds=len(kinds))
    assert Stats.requests >= n * 0.9 and Stats.refused > 0 and Stats.accepted > 0


def test_random_volcano_scheduler_confs_are_loaded_or_refused_with_a_config_error(report: Any) -> None:
    from pumice.scheduler.volcano import ConfigError, load_conf

    count = {"loaded": 0, "refused": 0}
    actions = st.lists(st.sampled_from(["enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle", "bogus"]),
                       max_size=5).map(", ".join)
    plugin = st.fixed_dictionaries({"name": st.sampled_from(["gang", "drf", "proportion", "binpack", "nope", ""])},
                                   optional={"arguments": st.dictionaries(st.text(max_size=12), scalars, max_size=3),
                                             "enableJobOrder": st.booleans(), "bogus": scalars})
    doc = st.fixed_dictionaries({}, optional={"actions": st.one_of(actions, scalars),
                                              "tiers": st.one_of(st.lists(st.fixed_dictionaries(
                                                  {"plugins": st.lists(plugin, max_size=3)}), max_size=3), json_values),
                                              "configurations": json_values})
    texts = st.one_of(doc.map(json.dumps), st.text(max_size=200))

    @settings(max_examples=size(200, 2000), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(text=texts)
    def one(text: str) -> None:
        try:
            load_conf(text)
            count["loaded"] += 1
        except ConfigError as e:
            assert str(e), "a ConfigError says what is wrong"
            count["refused"] += 1

    one()
    report(confs=count["loaded"] + count["refused"], **count)
    assert count["refused"] > 0


def test_random_manifests_are_read_or_refused_with_one_line(tmp_path: Path, report: Any) -> None:
    from pumice.cli.volcano import load_manifests

    count = {"read": 0, "refused": 0}
    obj = st.fixed_dictionaries({}, optional={
        "apiVersion": st.sampled_from(["v1", "scheduling.volcano.sh/v1beta1", "x"]),
        "kind": st.one_of(st.sampled_from(["Node", "Pod", "PodGroup", "Queue", "List", "Job"]), scalars),
        "metadata": st.one_of(st.fixed_dictionaries({}, optional={"name": scalars, "namespace": scalars}), scalars),
        "spec": json_values, "status": json_values, "items": json_values})
    texts = st.one_of(st.lists(obj, max_size=4).map(lambda ds: "\n---\n".join(json.dumps(d) for d in ds)),
                      st.text(max_size=200))

    @settings(max_examples=size(200, 2000), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(text=texts)
    def one(text: str) -> None:
        f = tmp_path / "m.yaml"
        f.write_text(text)
        try:
            load_manifests(f)
            count["read"] += 1
        except ValueError as e:
            assert "\n" not in str(e), str(e)
            count["refused"] += 1

    one()
    report(manifests=count["read"] + count["refused"], **count)
