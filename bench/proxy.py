"""The API server's proxy subresources: what a request costs through ``services/<svc>:<port>/proxy``
beside the same request sent straight to the Pod (the baseline, measured in the same run).

The API server runs over plain HTTP on loopback in this process's background thread; the target is
a small threaded HTTP server on 127.0.0.1 in a child process, standing for a Pod (a Service with Endpoints points at
it). Figures: p50 / p99 latency of sequential small GETs (the KubeRay dashboard client's kind of
request), and throughput of 4 MiB GETs (a log or an artifact download), with the API server's own
``GET /version`` as a second baseline (what any request through it costs). Prints figures and the
ratio proxied / direct; not a test.

Usage: python bench/proxy.py [--quick]
"""

from __future__ import annotations

import http.server
import statistics
import subprocess
import sys
import tempfile
import time

import httpx2

from pumice.testing.cluster import serve_http

SMALL = b'{"status": "SUCCEEDED", "job_id": "raysubmit_x"}'
LARGE = b"x" * (4 << 20)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        body = LARGE if self.path.endswith("/large") else SMALL
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


def timed(client: httpx2.Client, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.get(url)
        r.read()
        out.append(time.perf_counter() - t0)
        assert r.status_code == 200, (url, r.status_code, r.text[:200])
    return out


def p(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000


def main() -> None:
    quick = "--quick" in sys.argv
    n_small, n_large = (100, 5) if quick else (1000, 30)
    if "--backend" in sys.argv:  # the Pod: its own process, so that it shares no GIL with the server
        backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(backend.server_address[1], flush=True)
        backend.serve_forever()
        return
    child = subprocess.Popen([sys.executable, __file__, "--backend"], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    port = int(child.stdout.readline())
    with tempfile.TemporaryDirectory() as d, serve_http(d, tls=False) as srv:
        api = httpx2.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.token}"}, timeout=60)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target", "namespace": "default"},
               "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox", "ports": [
                   {"containerPort": port, "name": "http"}]}]}}
        assert api.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
        st = api.get("/api/v1/namespaces/default/pods/target").json()
        st["status"] = {"phase": "Running", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}
        assert api.put("/api/v1/namespaces/default/pods/target/status", json=st).status_code == 200
        api.post("/api/v1/namespaces/default/services", json={
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "default"},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": port}]}})
        api.post("/api/v1/namespaces/default/endpoints", json={
            "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "svc", "namespace": "default"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1", "targetRef": {"kind": "Pod", "name": "target",
                                                                          "namespace": "default"}}],
                         "ports": [{"name": "http", "port": port}]}]})
        direct = httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        proxied = "/api/v1/namespaces/default/services/svc:http/proxy"
        timed(direct, "/api/jobs/x", 20)
        timed(api, f"{proxied}/api/jobs/x", 20)
        v_small = timed(api, "/version", n_small)
        d_small = timed(direct, "/api/jobs/x", n_small)
        p_small = timed(api, f"{proxied}/api/jobs/x", n_small)
        d_large = timed(direct, "/large", n_large)
        p_large = timed(api, f"{proxied}/large", n_large)
        mib = len(LARGE) / (1 << 20)
        print(f"small GET ({len(SMALL)} B, {n_small} sequential): direct p50 {p(d_small, .5):.2f} ms "
              f"p99 {p(d_small, .99):.2f} ms; services/proxy p50 {p(p_small, .5):.2f} ms p99 {p(p_small, .99):.2f} ms; "
              f"ratio p50 {p(p_small, .5) / p(d_small, .5):.1f}x; the API server's own GET /version p50 "
              f"{p(v_small, .5):.2f} ms (the proxy adds {p(p_small, .5) - p(v_small, .5):.2f} ms to it)")
        d_tp = mib / statistics.median(d_large)
        p_tp = mib / statistics.median(p_large)
        print(f"4 MiB GET ({n_large}): direct {d_tp:.0f} MiB/s; services/proxy {p_tp:.0f} MiB/s; "
              f"ratio {p_tp / d_tp:.2f}")
        direct.close()
        api.close()
    child.terminate()
    child.wait()


if __name__ == "__main__":
    main()
