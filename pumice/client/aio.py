"""The HTTP(S) path of :class:`~pumice.client.kube.Client` to a real server: aiohttp.

httpx2 (with httpcore2 and anyio under it) costs about three times the client CPU of a minimal
keep-alive client per request, which capped pumice's components at a third of what the API server
can take over HTTPS. aiohttp's C-accelerated parser and keep-alive pool come within a few percent
of the minimal client (``bench/apiserver.py`` prints both), so requests and watch streams go
through it; the httpx2 client stays for what lightkube needs and for users that authenticate with
an exec plugin or a password.

Authentication from the kubeconfig user: a bearer token, a token file (re-read at each request,
as the kubelet rotates ServiceAccount tokens), or a client certificate; the server's certificate is
verified as lightkube verifies it (CA file or data, or ``insecure-skip-tls-verify``).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SingleConfig
from lightkube.config.models import User
from yarl import URL

from pumice._util.errors import dial_error
from pumice.client.websocket import WebSocket, connect

__all__ = ["AioHTTP", "DialError", "supports"]


class DialError(aiohttp.ClientConnectionError):
    """No connection to the API server, in client-go's words: ``Get "https://127.0.0.1:1/api/v1/
    namespaces/default/pods": dial tcp 127.0.0.1:1: connect: connection refused`` (net/url's
    Error: the method as ``Get``, the quoted URL, then the dial error). Raised from aiohttp's
    own error."""


def _dial_failure(method: str, url: str, e: aiohttp.ClientConnectionError) -> aiohttp.ClientConnectionError:
    """``e`` as a :class:`DialError` when it is a refused, unreachable or timed-out connect
    (``e`` itself otherwise: a TLS failure keeps aiohttp's text)."""
    if not isinstance(e, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError):
        return e
    u = urlsplit(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    host = u.hostname or ""
    text = dial_error(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", e)
    if text is None:
        return e
    return DialError(f'{method[:1].upper()}{method[1:].lower()} "{url}": {text}')


def supports(config: SingleConfig) -> bool:
    """True when the kubeconfig's user authenticates in a way :class:`AioHTTP` speaks (token, token
    file, client certificate, or nothing); exec plugins and passwords stay on httpx2."""
    user = config.user
    return user is None or not (user.exec or user.auth_provider or (user.username and user.password))


class AioHTTP:
    """One aiohttp session (created on first use, in the running loop) for a kubeconfig context.

    Args:
        config: the kubeconfig context (server, CA, user).
        timeout: seconds for a whole non-streaming request.
        user_agent: the User-Agent header.
    """

    def __init__(self, config: SingleConfig, *, timeout: float, user_agent: str) -> None:
        self.base = config.cluster.server.rstrip("/")
        self.timeout = timeout
        self._ssl: ssl.SSLContext | None = None
        if self.base.startswith("https://"):
            self._ssl = client_adapter.verify_cluster(config.cluster, config.user or User(), config.abs_file,
                                                      trust_env=False)
        self._headers: dict[str, str] = {"User-Agent": user_agent}
        self._token: Callable[[], str | None] = lambda: None
        user = config.user
        if user is not None and user.token_file is not None:
            path = Path(str(config.abs_file(user.token_file)))
            self._token = lambda: path.read_text().strip()
        elif user is not None and user.token is not None:
            token = user.token
            self._token = lambda: token
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else False, limit=0,
                                             keepalive_timeout=60)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers,
                                                  auto_decompress=True, trust_env=False)
            self._loop = loop
        return self._session

    def _auth(self, headers: dict[str, str]) -> dict[str, str]:
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    async def request(self, method: str, path_and_query: str, headers: dict[str, str],
                      body: bytes | None) -> tuple[int, bytes]:
        """``(status, body)`` of one request.

        Raises:
            DialError: no connection (refused, unreachable, connect timed out).
            aiohttp.ClientError, TimeoutError: another failure, or the request timed out.
        """
        session = self._open()
        url = self.base + path_and_query
        try:
            async with session.request(method, URL(url, encoded=True), data=body, headers=self._auth(headers),
                                       timeout=aiohttp.ClientTimeout(total=self.timeout)) as resp:
                return resp.status, await resp.read()
        except aiohttp.ClientConnectionError as e:
            failure = _dial_failure(method, url, e)
            if failure is e:
                raise
            raise failure from e

    async def stream(self, path_and_query: str, headers: dict[str, str]) -> tuple[int, AsyncIterator[bytes], Any]:
        """Open a streaming GET: ``(status, chunks, aclose)``; no timeout (a watch ends when the
        server ends it or ``aclose`` is awaited)."""
        session = self._open()
        url = self.base + path_and_query
        try:
            resp = await session.get(URL(url, encoded=True), headers=self._auth(headers),
                                     timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout))
        except aiohttp.ClientConnectionError as e:
            failure = _dial_failure("GET", url, e)
            if failure is e:
                raise
            raise failure from e

        async def chunks() -> AsyncIterator[bytes]:
            async for chunk in resp.content.iter_any():
                yield chunk

        async def aclose() -> None:
            resp.release()
            resp.close()

        return resp.status, chunks(), aclose

    async def websocket(self, path_and_query: str, protocols: list[str]) -> WebSocket:
        """Open a WebSocket (the ``exec``, ``attach`` and ``portforward`` subresources) with the
        kubeconfig's TLS settings and credentials; the caller closes it.

        Raises:
            WebSocketError: the server refused the upgrade (``status`` and the Status ``body`` set).
            OSError, TimeoutError: no connection.
        """
        url = urlsplit(self.base)
        tls = url.scheme == "https"
        headers = [(k, v) for k, v in self._auth(dict(self._headers)).items()]
        return await connect(url.hostname or "", url.port or (443 if tls else 80), url.path + path_and_query,
                             protocols, headers=headers, timeout=self.timeout, ssl=self._ssl if tls else None)

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
