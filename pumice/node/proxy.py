"""Small TCP services the agent runs on the bridge address for Pods in network namespaces.

- :class:`EgressProxy`: an HTTP proxy (``CONNECT host:port`` tunnels and absolute-URI plain HTTP
  requests) that only lets Pods reach an allow-list of hosts (the package indexes by default), so
  ``pip install`` inside a Pod works without NAT or any host network change.
- :class:`TcpForwarder`: forwards the bridge address's port to the API server's loopback port, so
  Pods reach the API server at KUBERNETES_SERVICE_HOST/PORT.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
import os
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

DEFAULT_EGRESS_ALLOW = ("pypi.org", "files.pythonhosted.org", "pypi.python.org", "test.pypi.org")


def package_index_hosts(environ: dict[str, str] | None = None) -> list[str]:
    """Hosts of the package indexes pip is configured with (``PIP_INDEX_URL``,
    ``PIP_EXTRA_INDEX_URL``, ``UV_INDEX_URL``, ``/etc/pip.conf`` ``index-url``) plus PyPI's."""
    env = os.environ if environ is None else environ
    hosts = list(DEFAULT_EGRESS_ALLOW)
    urls: list[str] = []
    for k in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL"):
        urls += env.get(k, "").split()
    for conf in ("/etc/pip.conf", os.path.expanduser("~/.config/pip/pip.conf"), os.path.expanduser("~/.pip/pip.conf")):
        with contextlib.suppress(OSError), open(conf) as f:
            for line in f:
                k, _, v = line.partition("=")
                if k.strip() in ("index-url", "extra-index-url"):
                    urls += v.split()
    for u in urls:
        h = urlsplit(u).hostname
        if h and h not in hosts:
            hosts.append(h)
    return hosts


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _splice(r1: asyncio.StreamReader, w1: asyncio.StreamWriter, r2: asyncio.StreamReader,
                  w2: asyncio.StreamWriter) -> None:
    try:
        await asyncio.gather(_pipe(r1, w2), _pipe(r2, w1))
    finally:
        for w in (w1, w2):
            w.close()


class _Server:
    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self.port = 0

    async def _listen(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._handle, host, port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None


class EgressProxy(_Server):
    """HTTP(S) proxy for Pods, limited to ``allow`` (host names or fnmatch patterns such as
    ``*.pythonhosted.org``). A denied destination gets ``403 Forbidden`` with a one-line reason."""

    def __init__(self, allow: Iterable[str], resolver: Callable[[str, str], str | None] | None = None) -> None:
        super().__init__()
        self.allow = list(allow)
        # (host, client ip) -> address of a cluster destination (a Pod IP or a Service name);
        # those are always let through, so that Python clients in Pods, which ignore the CIDRs in
        # NO_PROXY, still reach Pods and Services through the proxy.
        self.resolver = resolver

    async def start(self, host: str, port: int = 0) -> None:
        await self._listen(host, port)

    def allowed(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(fnmatch.fnmatch(host, pat.lower()) for pat in self.allow)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            await self._reply(writer, 400, "malformed request line")
            return
        method, target, version = parts
        if method == "CONNECT":
            host, _, port_s = target.rpartition(":")
            port = int(port_s) if port_s.isdigit() else 443
            host = host.strip("[]")
        else:
            u = urlsplit(target)
            if u.scheme != "http" or not u.hostname:
                await self._reply(writer, 400, "only absolute http:// URLs and CONNECT are proxied")
                return
            host, port = u.hostname, u.port or 80
        cluster = None
        if self.resolver is not None:
            peer = writer.get_extra_info("peername")
            cluster = self.resolver(host, peer[0] if peer else "")
        if cluster is not None:
            host = cluster
        elif not self.allowed(host):
            log.info("egress proxy: denied %s %s", method, target)
            await self._reply(writer, 403, f"pumice egress proxy: {host} is not an allowed destination")
            return
        try:
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        except (OSError, TimeoutError) as e:
            await self._reply(writer, 502, f"cannot connect to {host}:{port}: {e}")
            return
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
        else:
            u = urlsplit(target)
            path = (u.path or "/") + (f"?{u.query}" if u.query else "")
            headers = [h for h in lines[1:] if h and not h.lower().startswith(("proxy-", "connection:"))]
            up_w.write((f"{method} {path} {version}\r\n" + "\r\n".join([*headers, "Connection: close"])
                        + "\r\n\r\n").encode("latin-1"))
        await _splice(reader, writer, up_r, up_w)

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, code: int, text: str) -> None:
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[code]
        body = (text + "\n").encode()
        writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + body)
        with contextlib.suppress(OSError):
            await writer.drain()
        writer.close()


class TcpForwarder(_Server):
    """Accepts on ``listen`` and splices each connection to ``target``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        super().__init__()
        self.target = (target_host, target_port)

    async def start(self, host: str, port: int = 0) -> None:
        await self._listen(host, port)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(*self.target), 10)
        except (OSError, TimeoutError):
            writer.close()
            return
        await _splice(reader, writer, up_r, up_w)
