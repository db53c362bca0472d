"""The API server's TLS listener (pumice/apiserver/tlsfront.py): what it sets on the connections it
hands to the HTTP server."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import ssl
from pathlib import Path

from pumice._util.tls import self_signed
from pumice.apiserver.tlsfront import TLSFront


async def test_connections_are_handed_over_with_nagle_off(tmp_path: Path) -> None:
    """A listening socket from socket.create_server has proto 0, so asyncio leaves Nagle on for the
    connections it accepts; with Nagle on, a response's body waited for the client's delayed ACK of
    its headers (~40 ms per request for curl). TLSFront turns it off itself."""
    cert, key = self_signed("t", ["127.0.0.1"], now=dt.datetime.now(dt.UTC))
    (tmp_path / "c.pem").write_bytes(cert)
    (tmp_path / "k.pem").write_bytes(key)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(str(tmp_path / "c.pem"), str(tmp_path / "k.pem"))
    handed: asyncio.Future[socket.socket] = asyncio.get_running_loop().create_future()

    class Recorder(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
            if not handed.done():
                handed.set_result(transport.get_extra_info("socket"))
            transport.close()

    listener = socket.create_server(("127.0.0.1", 0))
    front = TLSFront(listener, Recorder, server_ctx)
    front.start()
    client_ctx = ssl.create_default_context(cafile=str(tmp_path / "c.pem"))
    try:
        port = listener.getsockname()[1]
        _r, w = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname="127.0.0.1")
        sock = await asyncio.wait_for(handed, 10)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        w.close()
    finally:
        await front.close()
        listener.close()
