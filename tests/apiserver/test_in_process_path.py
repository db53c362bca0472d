"""The in-process fast path (``DirectASGI`` over the server's ``respond``) answers exactly as the
ASGI path (the same app called through ``StreamingASGITransport``, as lightkube and any ASGI
client call it): statuses, bodies, Status errors, the parsed query, the body-size limit and the
acknowledge-when-durable rule. Also the request headers' dict lookups against Starlette's own."""

from __future__ import annotations

import asyncio
import random
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx2
import msgspec
import pytest
from starlette.datastructures import Headers

from pumice.api import scheme
from pumice.apiserver.http import MAX_BODY_BYTES, _Headers
from pumice.apiserver.storage import MemoryStorage, StorageError
from pumice.client.kube import _query_string, query_fields
from pumice.client.transport import DirectASGI, StreamingASGITransport
from pumice.testing.cluster import local_cluster

_RAW = [(b"accept", b"application/json"), (b"x-twice", b"first"), (b"content-type", b"application/json"),
        (b"x-twice", b"second"), (b"x-empty", b"")]


@pytest.mark.parametrize("name", ["accept", "Accept", "X-TWICE", "x-twice", "x-empty", "content-type",
                                  "authorization", "content-length", ""])
def test_request_headers_answer_as_starlette_headers(name: str) -> None:
    ours, theirs = _Headers({"headers": list(_RAW)}), Headers(scope={"headers": list(_RAW)})
    assert ours.get(name) == theirs.get(name)
    assert ours.get(name, "dflt") == theirs.get(name, "dflt")
    assert (name in ours) == (name in theirs)
    try:
        want: Any = theirs[name]
    except KeyError:
        with pytest.raises(KeyError):
            ours[name]
    else:
        assert ours[name] == want
    assert ours.getlist(name) == theirs.getlist(name)
    assert ours.items() == theirs.items() and ours.raw == theirs.raw


@pytest.mark.parametrize("params", [
    {"labelSelector": "app in (a,b),tier!=front,!gone", "limit": 5, "continue": None},
    {"fieldSelector": "spec.nodeName=n-1,status.phase!=Failed", "watch": "true", "timeoutSeconds": 30},
    {"fieldManager": "kube-controller manager/ü", "dryRun": "All", "force": True, "empty": ""},
    {"a&b": "c=d&e", "plus": "1+1 %20", "x": 0.5},
    {},
    None,
])
def test_the_query_dict_is_what_the_server_would_parse(params: dict[str, Any] | None) -> None:
    fields = query_fields(params)
    assert dict(parse_qsl(urlencode(fields), keep_blank_values=True)) == fields
    assert urlencode(fields) == urlencode({k: v for k, v in (params or {}).items() if v is not None})


async def _asgi(app: Any, method: str, path: str, query: dict[str, Any], body: bytes | None,
                content_type: str = "application/json") -> tuple[int, bytes]:
    headers = {"accept": "application/json"}
    if body is not None:
        headers["content-type"] = content_type
    async with httpx2.AsyncClient(transport=StreamingASGITransport(app), base_url="http://pumice.local") as h:
        r = await h.request(method, path, params=query_fields(query), content=body, headers=headers)
        return r.status_code, r.content


async def _direct(app: Any, method: str, path: str, query: dict[str, Any], body: bytes | None,
                  content_type: str = "application/json") -> tuple[int, bytes]:
    raw = [(b"accept", b"application/json")]
    if body is not None:
        raw += [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    fields = query_fields(query)
    return await DirectASGI(app).request(method, path, urlencode(fields).encode(), raw, body or b"", params=fields)


def _pod(name: str, labels: dict[str, str]) -> bytes:
    return msgspec.json.encode({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}})


def _same(a: tuple[int, bytes], b: tuple[int, bytes]) -> None:
    """The same status and body, but for the fields that differ between two creates of twins."""
    assert a[0] == b[0], (a, b)
    if not a[1].startswith(b"{"):  # a plain-text answer (an unknown group's "404 page not found")
        assert a[1] == b[1], (a, b)
        return
    da, db = msgspec.json.decode(a[1]), msgspec.json.decode(b[1])

    def strip(d: Any) -> Any:
        if isinstance(d, dict):
            # managedFields name the writer by its User-Agent (httpx here, none on the direct path)
            return {k: strip(v) for k, v in d.items()
                    if k not in ("uid", "resourceVersion", "creationTimestamp", "managedFields")}
        if isinstance(d, list):
            return [strip(v) for v in d]
        return d.replace("-asgi", "").replace("-direct", "") if isinstance(d, str) else d

    assert strip(da) == strip(db)


async def test_the_fast_path_answers_as_the_asgi_path() -> None:
    async with local_cluster() as c:
        app = c.server.app
        ns = "/api/v1/namespaces/default/pods"
        for tag, call in (("asgi", _asgi), ("direct", _direct)):
            await call(app, "POST", ns, {}, _pod(f"p1-{tag}", {"app": "a", "tier": "back"}))
            await call(app, "POST", ns, {}, _pod(f"p2-{tag}", {"app": "b", "tier": "front"}))
        cases: list[tuple[str, str, dict[str, Any], bytes | None, str]] = [
            ("GET", ns + "/p1-{t}", {}, None, "application/json"),
            ("GET", ns + "/nope", {}, None, "application/json"),  # 404 Status
            ("POST", ns, {}, b"{not json", "application/json"),  # 400
            ("POST", ns, {"fieldValidation": "Sometimes"}, _pod("x-{t}", {}), "application/json"),  # 422
            ("POST", ns, {}, _pod("p1-{t}", {}), "application/json"),  # 409 AlreadyExists
            ("POST", ns, {"dryRun": "All"}, _pod("dry-{t}", {"z": "1"}), "application/json"),
            ("PATCH", ns + "/p1-{t}", {"fieldManager": "m"}, b'{"metadata":{"labels":{"x":"1"}}}',
             "application/merge-patch+json"),
            ("PATCH", ns + "/p1-{t}", {}, b'{"a":1}', "text/plain"),  # 415
            ("PATCH", ns + "/p2-{t}/status", {}, b'{"status":{"phase":"Running"}}', "application/merge-patch+json"),
            ("GET", ns, {"labelSelector": "tier in (back),app!=zz", "limit": 10}, None, "application/json"),
            ("GET", ns, {"labelSelector": "a in (b"}, None, "application/json"),  # 400 bad selector
            ("GET", ns, {"resourceVersion": "99999999"}, None, "application/json"),  # 504 too large
            ("DELETE", ns + "/p2-{t}", {"gracePeriodSeconds": 0}, None, "application/json"),
            ("GET", "/api/v1/nodes/n/status", {}, None, "application/json"),  # 404
            ("PUT", "/apis/nope.io/v1/things/x", {}, b"{}", "application/json"),  # 404 path
        ]
        for method, path, query, body, ctype in cases:
            a = await _asgi(app, method, path.format(t="asgi"), query, body and body.replace(b"{t}", b"asgi"), ctype)
            d = await _direct(app, method, path.format(t="direct"), query, body and body.replace(b"{t}", b"direct"),
                              ctype)
            if method == "GET" and "labelSelector" in query and a[0] == 200:
                # both pods of both tags are listed: compare the name sets
                names = sorted(i["metadata"]["name"] for i in msgspec.json.decode(d[1])["items"])
                assert names == sorted(i["metadata"]["name"] for i in msgspec.json.decode(a[1])["items"])
                assert names == ["p1-asgi", "p1-direct"]
                continue
            _same(a, d)


async def test_an_oversize_body_is_413_on_the_fast_path() -> None:
    async with local_cluster() as c:
        body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"' + \
            b"x" * MAX_BODY_BYTES + b'"}}'
        status, data = await _direct(c.server.app, "POST", "/api/v1/namespaces/default/configmaps", {}, body)
        assert status == 413 and msgspec.json.decode(data)["reason"] == "RequestEntityTooLarge"
        assert (await _asgi(c.server.app, "POST", "/api/v1/namespaces/default/configmaps", {}, body))[0] == 413


class _NotDurable(MemoryStorage):
    """Memory storage whose durability fails once ``failing`` is set."""

    failing = False

    async def sync(self, revision: int) -> None:
        if self.failing:
            raise StorageError("disk on fire")
        await super().sync(revision)


async def test_a_write_that_cannot_be_made_durable_answers_500_on_the_fast_path() -> None:
    storage = _NotDurable()
    async with local_cluster(storage=storage) as c:
        await c.client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}})
        storage.failing = True
        for call in (_direct, _asgi):
            status, data = await call(c.server.app, "POST", "/api/v1/namespaces/default/configmaps", {},
                                      b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"x-"}}')
            st = msgspec.json.decode(data)
            assert (status, st["code"], st["reason"]) == (500, 500, "InternalError"), (call, st)
            assert "disk on fire" in st["message"]
        # reads never wait for durability
        status, _ = await _direct(c.server.app, "GET", "/api/v1/namespaces/default/configmaps/ok", {}, None)
        assert status == 200
        storage.failing = False
        got = await c.client.get(scheme.CONFIG_MAP, "ok", "default")
        assert got["metadata"]["name"] == "ok"


async def _asgi_stream(app: Any, path: str, query: dict[str, Any]) -> tuple[int, bytes]:
    h = httpx2.AsyncClient(transport=StreamingASGITransport(app), base_url="http://pumice.local")
    async with h, h.stream("GET", path, params=query_fields(query), headers={"accept": "application/json"}) as r:
        return r.status_code, b"".join([c async for c in r.aiter_raw()])


async def _direct_stream(app: Any, path: str, query: dict[str, Any]) -> tuple[int, bytes]:
    status, chunks, close = await DirectASGI(app).stream("GET", path, urlencode(query_fields(query)).encode(),
                                                         [(b"accept", b"application/json")])
    try:
        return status, b"".join([c async for c in chunks])
    finally:
        await close()


async def test_a_watch_on_the_fast_path_streams_the_bytes_of_the_asgi_path() -> None:
    async with local_cluster(history=3) as c:
        app, ns = c.server.app, "/api/v1/namespaces/default/configmaps"
        start = (await c.client.list(scheme.CONFIG_MAP, "default")).resource_version
        for i in range(5):
            await c.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": f"w{i}", "labels": {"i": str(i)}}})
        now = (await c.client.list(scheme.CONFIG_MAP, "default")).resource_version
        cases: list[dict[str, Any]] = [
            {"watch": "true", "resourceVersion": str(int(now) - 2), "timeoutSeconds": 1},
            {"watch": "true", "resourceVersion": str(int(now) - 2), "labelSelector": "i in (1,2),i!=2",
             "timeoutSeconds": 1, "allowWatchBookmarks": "true"},
            {"watch": "true", "timeoutSeconds": 1, "fieldSelector": "metadata.name=w0"},  # the current objects
            {"watch": "true", "resourceVersion": start, "timeoutSeconds": 1},  # compacted: 200 + an ERROR event
            {"watch": "true", "resourceVersion": "x"},  # 400
            {"watch": "true", "sendInitialEvents": "true"},  # 422
        ]
        got = await asyncio.gather(*(f(app, ns, q) for q in cases for f in (_asgi_stream, _direct_stream)))
        for i, q in enumerate(cases):
            a, d = got[2 * i], got[2 * i + 1]
            assert a == d, q
            assert a[0] != 200 or a[1].count(b"\n") >= 1, (q, a)
        assert [g[0] for g in got[::2]] == [200, 200, 200, 200, 400, 422]
        assert b'"reason":"Expired"' in got[7][1] and got[7][1].count(b"\n") == 1
        assert c.server.store.watcher_count() == 0  # every ended watch is unregistered


def test_the_query_text_is_urlencode_also_when_remembered() -> None:
    # _query_string remembers its texts (and empties the memo when full): each text, first made
    # or remembered, is what urlencode writes
    rng = random.Random(15)
    alphabet = "ab0_.~- &=%+/\u00e9"
    for _ in range(3000):
        fields = {"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))):
                  "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 3))}
        assert _query_string(fields) == urlencode(fields)
        assert _query_string(fields) == urlencode(fields)
    assert _query_string({"fieldManager": "pumice-scheduler"}) == "fieldManager=pumice-scheduler"
