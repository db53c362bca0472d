"""``kubectl port-forward`` and ``curl`` through it, with the API server relaying the WebSocket
tunnel (a SPDY/3.1 session, subprotocol ``SPDY/3.1+portforward.k8s.io``) to a node agent's kubelet
endpoint whose Pod address is a local HTTP server (no process runtime needed: the forwarding
target is given directly)."""

from __future__ import annotations

import asyncio
import http.server
import os
import socket
import socketserver
import subprocess
import threading
import time
from pathlib import Path

import pytest

from pumice._util.clock import default_clock
from pumice.api.scheme import POD
from pumice.node.logs import LogServer
from pumice.node.streaming import ExecTarget, ForwardTarget, StreamServer
from pumice.testing.cluster import serve_http
from pumice.testing.kubectl import kubectl_binary

pytestmark = pytest.mark.kubectl


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello through port-forward\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def get_and_linger(port: int) -> str:
    """``GET /`` on 127.0.0.1:``port``, read to the server's end of the connection, then keep this
    side open a moment (as a client that closes after the server does); the body, or the error."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: pod\r\n\r\n")
            got = b""
            while chunk := s.recv(65536):
                got += chunk
            time.sleep(0.5)
    except OSError as e:
        return f"{e}\n"
    return got.partition(b"\r\n\r\n")[2].decode(errors="replace") if got else "no answer\n"


@pytest.mark.parametrize("prefix", [[], ["env"]], ids=["dial", "relay"])
async def test_port_forward_carries_http_to_the_pod_and_back(tmp_path: Path, prefix: list[str]) -> None:
    """Two connections over one tunnel, dialled from the agent or through the relay process (the
    netns runtime's, run here in the host's namespace through ``env``). The server ends each
    connection first (HTTP/1.0) while curl's side is still open: the relay used to abort at exit
    (its stdin reader thread held the lock), which sent an error that ends kubectl's whole
    port-forward ("lost connection to pod"), so the second connection failed."""
    httpd = socketserver.TCPServer(("127.0.0.1", 0), _Hello)
    target_port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    async def no_exec(ns: str, pod: str, container: str) -> ExecTarget | str:
        return "exec is not part of this test"

    async def pod_address(ns: str, pod: str) -> ForwardTarget | str:
        return ForwardTarget(prefix, "127.0.0.1", "uid-web") if pod == "web" else f'pod "{pod}" not found'

    kubelet = LogServer(lambda *a: "no logs", default_clock(), streams=StreamServer(no_exec, pod_address))
    kubelet_port = await kubelet.start(["127.0.0.1"])
    try:
        async with serve_http(tmp_path / "api") as srv:
            c = srv.client()
            await c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                                       "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}}}})
            await c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
                            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}})
            pod = await c.get(POD, "web", "default")
            await c.update_status({**pod, "status": {"phase": "Running"}})
            await c.close()
            env = {**os.environ, "KUBECONFIG": str(srv.kubeconfig), "HOME": str(tmp_path)}

            def forward_and_curl() -> tuple[str, str]:
                proc = subprocess.Popen([kubectl_binary(), "port-forward", "pod/web", f":{target_port}"], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                try:
                    assert proc.stdout is not None
                    line = proc.stdout.readline()
                    local = line.split("127.0.0.1:")[1].split(" ")[0] if "127.0.0.1:" in line else "0"
                    outs = []
                    for _ in range(2):  # two connections over the same tunnel
                        outs.append(get_and_linger(int(local)))
                    return line, "".join(outs)
                finally:
                    time.sleep(0.2)
                    proc.terminate()
                    proc.communicate(timeout=10)

            line, out = await asyncio.to_thread(forward_and_curl)
            assert f"-> {target_port}" in line, line
            assert out == "hello through port-forward\n" * 2, out
    finally:
        await kubelet.close()
        httpd.shutdown()
