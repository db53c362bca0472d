"""The TLS listener of the API server: TLS for clients that speak it, Go's one-line answer for
those that send plain HTTP to the HTTPS port.

Python's TLS server closes a connection whose first bytes are not a TLS handshake, so a client
that sends plain HTTP (``curl http://127.0.0.1:6443``) gets an empty reply. kube-apiserver (Go's
net/http) answers ``HTTP/1.0 400 Bad Request`` with the body ``Client sent an HTTP request to an
HTTPS server.``. :class:`TLSFront` accepts connections itself, peeks at the first bytes (without
consuming them), and either hands the socket to the HTTP server's protocol with TLS on top, or
writes that answer and closes.

Mirrors: go net/http server.go (conn.serve: tls.RecordHeaderError that looks like HTTP).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable

log = logging.getLogger(__name__)

__all__ = ["PLAIN_HTTP_REPLY", "TLSFront"]

PLAIN_HTTP_REPLY = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
_HTTP_STARTS = (b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO", b"PATCH", b"DELET")
_TLS_HANDSHAKE = 0x16


class TLSFront:
    """Accept on ``sock`` (listening), TLS-wrap connections that start a handshake and pass
    them to ``protocol_factory``; answer plain HTTP with :data:`PLAIN_HTTP_REPLY`.

    Args:
        sock: a bound, listening socket (made non-blocking here).
        protocol_factory: the HTTP server's protocol factory (uvicorn's, for example).
        ssl_context: the server-side TLS context.
        handshake_timeout: seconds a client may take to send its first bytes and finish TLS.
    """

    def __init__(self, sock: socket.socket, protocol_factory: Callable[[], asyncio.BaseProtocol],
                 ssl_context: ssl.SSLContext, *, handshake_timeout: float = 10.0) -> None:
        self.sock = sock
        self.sock.setblocking(False)
        self.protocol_factory = protocol_factory
        self.ssl_context = ssl_context
        self.handshake_timeout = handshake_timeout
        self._task: asyncio.Task[None] | None = None
        self._conns: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._accept_loop(), name="tls-front")

    async def close(self) -> None:
        """Stop accepting (connections already handed over stay with their protocol)."""
        for t in [*([self._task] if self._task else []), *self._conns]:
            t.cancel()
        for t in [*([self._task] if self._task else []), *self._conns]:
            with contextlib.suppress(BaseException):
                await t
        self.sock.close()

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(self.sock)
            except OSError as e:  # e.g. EMFILE: keep serving the connections we have
                log.warning("API server: accept failed: %s", e)
                await asyncio.sleep(0.1)
                continue
            t = loop.create_task(self._serve(conn))
            self._conns.add(t)
            t.add_done_callback(self._conns.discard)

    async def _serve(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        conn.setblocking(False)
        # asyncio turns Nagle off only on sockets whose proto is IPPROTO_TCP, and a socket from
        # socket.create_server (and so its accepted ones) has proto 0: without this, a response's
        # body waited ~40 ms behind its headers for the client's delayed ACK (curl, Python clients)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            async with asyncio.timeout(self.handshake_timeout):
                head = await _peek(loop, conn, 5)
                if head[:1] and head[0] == _TLS_HANDSHAKE:
                    await loop.connect_accepted_socket(self.protocol_factory, conn, ssl=self.ssl_context,
                                                       ssl_handshake_timeout=self.handshake_timeout)
                    return
                if head.startswith(_HTTP_STARTS):
                    await loop.sock_sendall(conn, PLAIN_HTTP_REPLY)
                    conn.shutdown(socket.SHUT_WR)
                    # read what the client sent, so that closing does not reset the connection
                    # (and with it the answer) before the client has read it
                    for _ in range(64):
                        if not await loop.sock_recv(conn, 65536):
                            break
        except (OSError, TimeoutError, ssl.SSLError) as e:
            log.debug("API server: connection dropped before TLS: %s", e)
        conn.close()


async def _peek(loop: asyncio.AbstractEventLoop, conn: socket.socket, n: int) -> bytes:
    """The first ``n`` bytes, left unread (fewer at EOF; one is enough when it starts TLS)."""
    while True:
        try:
            data = conn.recv(n, socket.MSG_PEEK)
        except BlockingIOError:
            await _readable(loop, conn)
            continue
        if len(data) >= n or not data or data[0] == _TLS_HANDSHAKE:
            return data
        await asyncio.sleep(0.01)  # a partial plain-text prefix: the socket stays readable, so poll


async def _readable(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(conn.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(conn.fileno())
