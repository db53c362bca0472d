"""The server side of a SPDY/3.1 session, as much as Kubernetes' port-forward protocol needs:
streams opened by the client (SYN_STREAM), answered (SYN_REPLY), data both ways with FIN, reset
(RST_STREAM), PING echo, GOAWAY. Header blocks are zlib streams with the SPDY/3 dictionary, one
compression context per direction for the whole session. No flow control is enforced (the Go
client, moby/spdystream, does not need WINDOW_UPDATE from the server for its transfers).

kubectl 1.30+ tunnels this session through a WebSocket (subprotocol
``SPDY/3.1+portforward.k8s.io``); :class:`Session` reads and writes bytes through two callables,
so it does not care what carries them.

Mirrors: the SPDY/3.1 draft (framing, the header dictionary) as spoken by moby/spdystream and
k8s.io/apimachinery pkg/util/httpstream/spdy.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import zlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DICTIONARY", "Session", "Stream", "decode_headers", "encode_headers"]

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
RST_CANCEL = 5

# The SPDY/3 header dictionary: length-prefixed words, then a tail of common strings.
_WORD_TEXT = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
    "allow authorization cache-control connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status"
)
_WORDS = _WORD_TEXT.split(" ")
_WORDS_WITH_SPACES = ("200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin")
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in (*_WORDS, *_WORDS_WITH_SPACES)) + \
    _TAIL.encode()


def encode_headers(headers: dict[str, str]) -> bytes:
    """An uncompressed SPDY/3 header block."""
    out = [struct.pack(">I", len(headers))]
    for k, v in headers.items():
        kb, vb = k.lower().encode(), v.encode()
        out.append(struct.pack(">I", len(kb)) + kb + struct.pack(">I", len(vb)) + vb)
    return b"".join(out)


def decode_headers(block: bytes) -> dict[str, str]:
    """A decompressed SPDY/3 header block (several values of a name are NUL-separated; the last wins).

    Raises:
        ValueError: a truncated block.
    """
    try:
        (n,), pos = struct.unpack_from(">I", block), 4
        out: dict[str, str] = {}
        for _ in range(n):
            (klen,) = struct.unpack_from(">I", block, pos)
            key = block[pos + 4: pos + 4 + klen].decode()
            pos += 4 + klen
            (vlen,) = struct.unpack_from(">I", block, pos)
            value = block[pos + 4: pos + 4 + vlen].decode()
            pos += 4 + vlen
            out[key] = value.split("\x00")[-1]
        return out
    except struct.error as e:
        raise ValueError(f"truncated SPDY header block: {e}") from e


@dataclass
class Stream:
    """A stream the client opened: its headers, incoming data (None marks the client's FIN)."""

    id: int
    headers: dict[str, str]
    session: Session
    incoming: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    closed_local: bool = False

    async def write(self, data: bytes) -> None:
        if not self.closed_local and data:
            await self.session.send_data(self.id, data, fin=False)

    async def close(self) -> None:
        """Half-close our side (DATA with FIN)."""
        if not self.closed_local:
            self.closed_local = True
            await self.session.send_data(self.id, b"", fin=True)

    async def read(self) -> bytes | None:
        return await self.incoming.get()


class Session:
    """A SPDY/3.1 server session over ``read()`` (returns bytes, b"" at EOF) and ``write(bytes)``.

    Args:
        on_stream: called (as a task) for every stream the client opens, after it was answered.
    """

    def __init__(self, read: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]],
                 on_stream: Callable[[Stream], Coroutine[Any, Any, None]]) -> None:
        self._read = read
        self._write = write
        self._on_stream = on_stream
        self._buf = b""
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)
        self._lock = asyncio.Lock()
        self.streams: dict[int, Stream] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def _frame(self, data: bytes) -> None:
        async with self._lock:
            await self._write(data)

    def _control(self, typ: int, flags: int, payload: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, typ, (flags << 24) | len(payload)) + payload

    async def send_data(self, stream_id: int, data: bytes, *, fin: bool) -> None:
        await self._frame(struct.pack(">II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data))
                          + data)

    async def reset(self, stream_id: int, status: int = RST_CANCEL) -> None:
        await self._frame(self._control(RST_STREAM, 0, struct.pack(">II", stream_id, status)))

    async def _reply(self, stream_id: int) -> None:
        block = self._deflate.compress(encode_headers({})) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        await self._frame(self._control(SYN_REPLY, 0, struct.pack(">I", stream_id) + block))

    async def _next(self, n: int) -> bytes | None:
        while len(self._buf) < n:
            chunk = await self._read()
            if not chunk:
                return None
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    async def run(self) -> None:
        """Serve until the transport ends or the client sends GOAWAY.

        Raises:
            ValueError: a malformed frame or header block.
        """
        try:
            while True:
                head = await self._next(8)
                if head is None:
                    return
                first, second = struct.unpack(">II", head)
                flags, length = second >> 24, second & 0xFFFFFF
                payload = await self._next(length) if length else b""
                if payload is None:
                    return
                if first & 0x80000000:
                    if not await self._on_control((first >> 16) & 0x7FFF, first & 0xFFFF, flags, payload):
                        return
                else:
                    stream = self.streams.get(first & 0x7FFFFFFF)
                    if stream is None:
                        continue
                    if payload:
                        stream.incoming.put_nowait(payload)
                    if flags & FLAG_FIN:
                        stream.incoming.put_nowait(None)
        finally:
            for s in self.streams.values():
                s.incoming.put_nowait(None)
            for t in list(self._tasks):
                t.cancel()

    async def _on_control(self, version: int, typ: int, flags: int, payload: bytes) -> bool:
        if version != VERSION:
            raise ValueError(f"unsupported SPDY version {version}")
        if typ == SYN_STREAM:
            (sid,) = struct.unpack_from(">I", payload)
            sid &= 0x7FFFFFFF
            headers = decode_headers(self._inflate.decompress(payload[10:]))
            stream = Stream(sid, headers, self)
            self.streams[sid] = stream
            await self._reply(sid)
            if flags & FLAG_FIN:
                stream.incoming.put_nowait(None)
            task = asyncio.get_running_loop().create_task(self._on_stream(stream))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif typ == RST_STREAM:
            (sid,) = struct.unpack_from(">I", payload)
            gone = self.streams.pop(sid & 0x7FFFFFFF, None)
            if gone is not None:
                gone.closed_local = True
                gone.incoming.put_nowait(None)
        elif typ == PING:
            await self._frame(self._control(PING, 0, payload))
        elif typ == GOAWAY:
            return False
        elif typ == HEADERS:
            with contextlib.suppress(zlib.error):
                self._inflate.decompress(payload[4:])  # keep the shared context in step
        # SETTINGS, WINDOW_UPDATE: nothing to do without flow control
        return True
