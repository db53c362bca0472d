"""A small asyncio WebSocket over stream pairs, on wsproto (RFC 6455 framing, handshake, ping/pong).

Used where pumice speaks Kubernetes' channel protocols itself: the node agent's exec/attach
endpoint (server side, after its HTTP reader has read the upgrade request), the API server's
hop to it, and :meth:`pumice.client.kube.Client.exec` to an API server over TLS (client side).

Messages are binary; :meth:`WebSocket.recv` returns None once the peer closed.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from collections import deque

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

__all__ = ["WebSocket", "WebSocketError", "accept", "connect"]


class WebSocketError(Exception):
    """The handshake failed (with the HTTP status and body of a refusal when there was one)."""

    def __init__(self, message: str, status: int = 0, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class WebSocket:
    """One open WebSocket connection; ``subprotocol`` is what the handshake agreed on."""

    def __init__(self, conn: WSConnection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 subprotocol: str | None, pending: list[Event] | None = None) -> None:
        self._conn = conn
        self._reader = reader
        self._writer = writer
        self.subprotocol = subprotocol
        self._events: deque[Event] = deque(pending or [])
        self._parts: list[bytes] = []
        self._closed = False
        self._send_lock = asyncio.Lock()

    @property
    def closed(self) -> bool:
        return self._closed

    async def _write(self, data: bytes) -> None:
        if not data:
            return
        async with self._send_lock:
            self._writer.write(data)
            await self._writer.drain()

    async def send(self, data: bytes) -> None:
        """Send one binary message.

        Raises:
            ConnectionError: the connection is gone.
        """
        if self._closed:
            raise ConnectionError("websocket closed")
        try:
            await self._write(self._conn.send(BytesMessage(data=data)))
        except LocalProtocolError as e:
            raise ConnectionError(str(e)) from e

    async def recv(self) -> bytes | None:
        """The next message (text messages as UTF-8 bytes), or None once the connection closed."""
        while True:
            while self._events:
                ev = self._events.popleft()
                if isinstance(ev, (BytesMessage, TextMessage)):
                    data = ev.data.encode() if isinstance(ev.data, str) else bytes(ev.data)
                    self._parts.append(data)
                    if ev.message_finished:
                        out = b"".join(self._parts)
                        self._parts = []
                        return out
                elif isinstance(ev, Ping):
                    await self._write(self._conn.send(ev.response()))
                elif isinstance(ev, CloseConnection):
                    if not self._closed:
                        self._closed = True
                        try:
                            await self._write(self._conn.send(ev.response()))
                        except (LocalProtocolError, ConnectionError):
                            pass
                    return None
            if self._closed:
                return None
            try:
                data = await self._reader.read(65536)
            except ConnectionError:
                data = b""
            if not data:
                self._closed = True
                return None
            try:
                self._conn.receive_data(data)
                self._events.extend(self._conn.events())
            except RemoteProtocolError:
                self._closed = True
                return None

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (once) and close the transport."""
        if not self._closed:
            self._closed = True
            try:
                await self._write(self._conn.send(CloseConnection(code=code, reason=reason)))
            except (LocalProtocolError, ConnectionError, RuntimeError):
                pass
        self._writer.close()


async def accept(head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 subprotocols: list[str]) -> WebSocket | None:
    """Finish the server side of a handshake whose request head (through the blank line) was
    already read; the first of the client's offered subprotocols that is in ``subprotocols`` is
    chosen. Returns None (after answering 400) when the request is not a WebSocket upgrade or
    offers none of ``subprotocols``."""
    conn = WSConnection(ConnectionType.SERVER)
    try:
        conn.receive_data(head)
        events = list(conn.events())
    except RemoteProtocolError:
        events = []
    req = next((e for e in events if isinstance(e, Request)), None)
    if req is None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        return None
    chosen = next((p for p in req.subprotocols if p in subprotocols), None)
    if chosen is None:
        writer.write(conn.send(RejectConnection(status_code=400, has_body=False)))
        await writer.drain()
        return None
    writer.write(conn.send(AcceptConnection(subprotocol=chosen)))
    await writer.drain()
    return WebSocket(conn, reader, writer, chosen)


async def connect(host: str, port: int, target: str, subprotocols: list[str], *,
                  headers: list[tuple[str, str]] | None = None, timeout: float = 10.0,
                  ssl: _ssl.SSLContext | None = None) -> WebSocket:
    """Open a client WebSocket to ``ws://host:port<target>`` (``wss://`` with ``ssl``).

    Raises:
        WebSocketError: the server refused the upgrade (``status``, ``body`` set) or hung up.
        OSError: no connection.
    """
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(host, port, ssl=ssl, server_hostname=host if ssl is not None else None), timeout)
    conn = WSConnection(ConnectionType.CLIENT)
    writer.write(conn.send(Request(host=f"{host}:{port}", target=target, subprotocols=list(subprotocols),
                                   extra_headers=[(k.encode(), v.encode()) for k, v in headers or []])))
    await writer.drain()
    status, body = 0, b""
    while True:
        data = await asyncio.wait_for(reader.read(65536), timeout)
        if not data:
            writer.close()
            raise WebSocketError("the server closed the connection during the WebSocket handshake", status, body)
        conn.receive_data(data)
        events = list(conn.events())
        for i, ev in enumerate(events):
            if isinstance(ev, AcceptConnection):
                return WebSocket(conn, reader, writer, ev.subprotocol, events[i + 1:])
            if isinstance(ev, RejectConnection):
                status = ev.status_code
                if not ev.has_body:
                    writer.close()
                    raise WebSocketError(f"upgrade refused with HTTP {status}", status)
            elif isinstance(ev, RejectData):
                body += ev.data
                if ev.body_finished:
                    writer.close()
                    raise WebSocketError(f"upgrade refused with HTTP {status}: {body.decode(errors='replace')}",
                                         status, body)

