"""Security (issue 14): token auth on every endpoint but health and version, no plain HTTP off
loopback, Secrets never logged or echoed, the egress proxy refuses what it is not configured for.
SECURITY.md states the trust model these tests hold to."""

from __future__ import annotations

import asyncio
import base64
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pumice.apiserver.server import APIServer
from pumice.node.proxy import EgressProxy
from pumice.testing.cluster import local_cluster, serve_http

from .conftest import size

MARKER = "s3cr3t-marker-7f1c"
PUBLIC = ("/healthz", "/livez", "/readyz", "/version")


def _client(port: int) -> Any:
    import httpx2

    return httpx2.Client(base_url=f"https://127.0.0.1:{port}", verify=False, timeout=10)


def test_every_endpoint_but_health_and_version_needs_the_token(tmp_path: Path, report: Any) -> None:
    from urllib.parse import urlsplit

    with serve_http(tmp_path) as srv:
        port = urlsplit(srv.url).port
        assert port is not None
        scheme = srv.server.scheme
        paths = ["/", "/api", "/apis", "/api/v1", "/openapi/v2", "/openapi/v3", "/metrics"]
        for g, v in scheme.group_versions():
            paths.append(f"/apis/{g}/{v}" if g else f"/api/{v}")
            for rk in scheme.kinds_in(g, v):
                paths.append(rk.path("default"))
                paths.append(rk.path("default", "x"))
        token = srv.server.token
        assert token
        refused = 0
        with _client(port) as http:
            every = size(6, 1)  # short: every method on every 6th path, GET on all
            for i, p in enumerate(paths):
                for method in ("GET", "POST", "DELETE") if i % every == 0 else ("GET",):
                    for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": token}):
                        r = http.request(method, p, content=b"{}", headers=headers)
                        assert r.status_code == 401, (method, p, headers)
                        assert r.json()["kind"] == "Status"
                        refused += 1
            for p in PUBLIC:
                assert http.get(p).status_code == 200, p
            assert http.get("/api/v1/namespaces/default/configmaps",
                            headers={"Authorization": f"Bearer {token}"}).status_code == 200
    report(endpoints=len(paths), unauthenticated_requests_refused=refused, public=len(PUBLIC))


async def test_no_plain_http_off_loopback() -> None:
    server = APIServer(None)
    with pytest.raises(ValueError, match="requires TLS"):
        await server.serve("0.0.0.0", 0, tls=False)
    server.close()
    d = Path(tempfile.mkdtemp())
    try:
        server = APIServer(d)
        ready = asyncio.Event()
        task = asyncio.create_task(server.serve("0.0.0.0", 0, ready=ready))
        await asyncio.wait_for(ready.wait(), 30)
        assert server.url.startswith("https://")  # a data dir or a non-loopback host: TLS
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        server.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


async def test_secret_values_are_never_logged_or_echoed(caplog: pytest.LogCaptureFixture, report: Any) -> None:
    b64 = base64.b64encode(MARKER.encode()).decode()
    caplog.set_level(logging.DEBUG)
    async with local_cluster() as c:
        cl = c.client
        secrets = c.scheme.by_api_version_kind("v1", "Secret")
        s = await cl.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
                             "stringData": {"password": MARKER}, "data": {"token": b64}})
        got = await cl.get(secrets, "s", "default")
        # stringData is write-only: merged into data, never stored or returned (as upstream)
        assert "stringData" not in s and "stringData" not in got and got["data"]["password"] == b64
        await cl.list(secrets, "default")
        await cl.patch(secrets, "s", {"data": {"other": b64}}, "default")
        answers: list[str] = []
        for bad in ({"data": {"password": 5, "k": {"v": b64}}}, {"data": {"bad key!": MARKER}},
                    {"data": [MARKER]}, {"stringData": {"k": [MARKER]}}):
            try:
                await cl.patch(secrets, "s", bad, "default")
            except Exception as e:
                answers.append(str(getattr(e, "status", e)))
        for patch_type in ("merge", "strategic", "json"):  # bad base64 beside a good value
            body: Any = ([{"op": "add", "path": "/data/bad", "value": MARKER + "!"}] if patch_type == "json"
                         else {"data": {"bad": MARKER + "!", "good": b64}})
            try:
                await cl.patch(secrets, "s", body, "default", patch_type=patch_type)
            except Exception as e:
                answers.append(str(getattr(e, "status", e)))
        s["data"] = {"x": {"nested": MARKER}}
        try:
            await cl.update(s)
        except Exception as e:
            answers.append(str(getattr(e, "status", e)))
        events = (await cl.list(c.scheme.by_api_version_kind("v1", "Event"), "default")).items
    text = caplog.text + "\n".join(answers) + str(events)
    assert len(answers) == 8
    assert MARKER not in text and b64 not in text, [a for a in answers if MARKER in a or b64 in a]
    report(secret_writes=9, refusals_checked=len(answers), log_records=len(caplog.records), leaks=0)


async def _echo_server() -> tuple[asyncio.Server, int]:
    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(await r.read(100))
        await w.drain()
        w.close()

    srv = await asyncio.start_server(echo, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1]


async def _through(proxy_port: int, request: str) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter]:
    r, w = await asyncio.open_connection("127.0.0.1", proxy_port)
    w.write(request.encode())
    await w.drain()
    line = await asyncio.wait_for(r.readline(), 10)
    return int(line.split()[1]), r, w


async def test_the_egress_proxy_refuses_destinations_it_is_not_configured_for(report: Any) -> None:
    echo, echo_port = await _echo_server()
    proxy = EgressProxy(["*.allowed.test"], resolver=lambda host, _ip: "127.0.0.1" if host == "svc.cluster" else None)
    await proxy.start("127.0.0.1", 0)
    try:
        denied = ["CONNECT denied.test:443 HTTP/1.1\r\n\r\n",
                  f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\n",  # the host's own loopback services
                  f"CONNECT localhost:{echo_port} HTTP/1.1\r\n\r\n",
                  f"CONNECT [::1]:{echo_port} HTTP/1.1\r\n\r\n",
                  "GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n",
                  f"GET http://127.0.0.1:{echo_port}/ HTTP/1.1\r\nHost: x\r\n\r\n",
                  "CONNECT evil.allowed.test.attacker.example:443 HTTP/1.1\r\n\r\n"]
        for req in denied:
            code, _, w = await _through(proxy.port, req)
            w.close()
            assert code == 403, req
        # configured: a cluster destination (through the resolver) is tunnelled
        code, r, w = await _through(proxy.port, f"CONNECT svc.cluster:{echo_port} HTTP/1.1\r\n\r\n")
        assert code == 200
        await r.readline()
        w.write(b"ping")
        await w.drain()
        assert await asyncio.wait_for(r.read(4), 10) == b"ping"
        w.close()
        # allowed by the list: passes the check (it cannot resolve here, so 502, never 403)
        code, _, w = await _through(proxy.port, "CONNECT pypi.allowed.test:443 HTTP/1.1\r\n\r\n")
        w.close()
        assert code == 502
    finally:
        await proxy.close()
        echo.close()
    report(denied=len(denied), allowed_checked=2)



