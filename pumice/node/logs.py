"""Container logs: the CRI log file format and the kubelet's log endpoint.

Files: ``<data_dir>/pods/<ns>_<pod>_<uid>/<container>/<restartCount>.log``, one line per output
line: ``<RFC 3339 nano time> <stdout|stderr> <F|P> <text>`` (``P``: a partial line continued by
the next record), written by the container shim.

Endpoint (what kube-apiserver proxies ``pods/{name}/log`` to): ``GET
/containerLogs/{namespace}/{pod}/{container}?follow=&tailLines=&sinceSeconds=&sinceTime=&timestamps=&previous=&limitBytes=``,
answering ``text/plain`` (chunked); ``follow=true`` streams until the container instance ends or the
client goes away. Also ``GET /healthz``.

Mirrors: kubernetes pkg/kubelet/kuberuntime/logs/logs.go (ReadLogs, parseCRILog) and
pkg/kubelet/server/server.go (getContainerLogs).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from pumice._util.clock import Clock, parse_rfc3339
from pumice.api.params import query_bool, query_values

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LogRequest:
    follow: bool = False
    tail_lines: int | None = None
    since_time: float | None = None
    timestamps: bool = False
    previous: bool = False
    limit_bytes: int | None = None


def parse_line(line: bytes) -> tuple[bytes, bytes, bool, bytes] | None:
    """``(timestamp, stream, full, content)`` of one CRI record, or None when malformed."""
    parts = line.rstrip(b"\n").split(b" ", 3)
    if len(parts) < 3:
        return None
    ts, stream, tag = parts[0], parts[1], parts[2]
    content = parts[3] if len(parts) > 3 else b""
    return ts, stream, tag != b"P", content


def _ts_seconds(ts: bytes) -> float:
    text = ts.decode()
    # Python parses at most microseconds.
    if "." in text:
        head, frac = text.rstrip("Z").split(".", 1)
        text = f"{head}.{frac[:6]}Z"
    return parse_rfc3339(text)


def render(records: list[bytes], req: LogRequest) -> Iterator[bytes]:
    """Records (raw CRI lines) -> output bytes, applying sinceTime and timestamps."""
    for raw in records:
        p = parse_line(raw)
        if p is None:
            continue
        ts, _stream, full, content = p
        if req.since_time is not None:
            try:
                if _ts_seconds(ts) < req.since_time:
                    continue
            except ValueError:
                pass
        out = (ts + b" " + content) if req.timestamps else content
        yield out + (b"\n" if full else b"")


def read_records(path: str, tail_lines: int | None) -> tuple[list[bytes], int]:
    """All (or the last ``tail_lines`` complete-line) records of a file and the offset read to."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [], 0
    end = data.rfind(b"\n") + 1
    lines = data[:end].splitlines(keepends=True)
    if tail_lines is not None:
        # count logical lines (a run of P records ends with an F record)
        kept: deque[bytes] = deque()
        count = 0
        for raw in reversed(lines):
            p = parse_line(raw)
            if p is not None and p[2]:
                if count == tail_lines:
                    break
                count += 1
            kept.appendleft(raw)
        lines = list(kept)
    return lines, end


class FileTail:
    """The complete lines appended to a log file, read from byte ``offset`` on (``tail -f``
    without the waiting): each :meth:`read` returns what became complete since the last one and
    keeps a partial last line for the next."""

    def __init__(self, path: str, offset: int) -> None:
        self.path = path
        self.offset = offset
        self._partial = b""

    def read(self, *, missing_ok: bool = False) -> tuple[bytes, bool]:
        """``(complete lines appended since the last read, b"" when none; whether the file grew)``.

        Raises:
            OSError: the file cannot be read, unless ``missing_ok`` (then ``(b"", False)``).
        """
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            if missing_ok:
                return b"", False
            raise
        self.offset += len(chunk)
        buf = self._partial + chunk
        cut = buf.rfind(b"\n") + 1
        self._partial = buf[cut:]
        return buf[:cut], bool(chunk)


LogSource = Callable[[str, str, str, bool], tuple[str, Callable[[], bool]] | str]
"""``source(namespace, pod, container, previous)`` -> ``(log path, still_running())`` or an error
message (404)."""


class LogServer:
    """The kubelet HTTP endpoint for logs, on loopback (and the bridge address in netns mode)."""

    def __init__(self, source: LogSource, clock: Clock, poll_interval: float = 0.1, streams: Any = None,
                 usage: Any = None) -> None:
        self.source = source
        self.usage = usage  # () -> the /stats/usage document (pumice.node.metrics) or None
        self.streams = streams  # a pumice.node.streaming.StreamServer for exec and attach
        self.clock = clock
        self.poll_interval = poll_interval
        self._servers: list[asyncio.Server] = []
        self.port = 0

    async def start(self, hosts: list[str], port: int = 0) -> int:
        for h in hosts:
            srv = await asyncio.start_server(self._handle, h, port or self.port, reuse_address=True)
            self._servers.append(srv)
            if not self.port:
                self.port = srv.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        for s in self._servers:
            s.close()
        for s in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(s.wait_closed(), 1.0)
        self._servers.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            if self.streams is not None and method == "GET" and self.streams.handles(target):
                await self.streams.serve(target, head, reader, writer)
                return
            await self._serve(method, target, reader, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError,
                ConnectionError):
            pass
        except Exception:
            log.exception("log endpoint failed")
        finally:
            writer.close()

    @staticmethod
    async def _simple(writer: asyncio.StreamWriter, code: int, text: str) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}[code]
        body = text.encode()
        writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await writer.drain()

    async def _serve(self, method: str, target: str, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        url = urlsplit(target)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        if method != "GET":
            await self._simple(writer, 405, "only GET is supported\n")
            return
        if parts == ["healthz"]:
            await self._simple(writer, 200, "ok")
            return
        if parts == ["stats", "usage"] and self.usage is not None:
            doc = self.usage()
            if doc is None:
                await self._simple(writer, 404, "no usage sampled yet\n")
                return
            body = json.dumps(doc).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            return
        if len(parts) != 4 or parts[0] != "containerLogs":
            await self._simple(writer, 404, "not found\n")
            return
        q = query_values(url.query)
        try:
            req = self._parse(q)
        except ValueError as e:
            await self._simple(writer, 400, f"{e}\n")
            return
        found = self.source(parts[1], parts[2], parts[3], req.previous)
        if isinstance(found, str):
            await self._simple(writer, 404, found + "\n")
            return
        path, running = found
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
                     b"Connection: close\r\n\r\n")
        budget = [req.limit_bytes]

        async def send(data: bytes) -> bool:
            if budget[0] is not None:
                data = data[: budget[0]]
                budget[0] -= len(data)
            if data:
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
            return budget[0] is None or budget[0] > 0

        records, offset = read_records(path, req.tail_lines)
        more = await send(b"".join(render(records, req)))
        if req.follow and more:
            gone = asyncio.ensure_future(reader.read(1))
            try:
                tail = FileTail(path, offset)
                while more:
                    # missing_ok: a just-started instance's shim may not have created the file yet.
                    lines, grew = tail.read(missing_ok=True)
                    if lines:
                        more = await send(b"".join(render(lines.splitlines(keepends=True), req)))
                    elif not running():
                        break
                    if not grew and not running():
                        break
                    done, _ = await asyncio.wait([gone], timeout=self.poll_interval)
                    if done:
                        break
            finally:
                gone.cancel()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    def _parse(self, q: dict[str, str]) -> LogRequest:
        def flag(name: str) -> bool:
            return bool(query_bool(q, name))

        def num(name: str) -> int | None:
            if name not in q:
                return None
            v = int(q[name])
            if v < 0:
                raise ValueError(f"{name} must be non-negative")
            return v

        since_time = None
        if "sinceSeconds" in q:
            since_time = self.clock.now() - (num("sinceSeconds") or 0)
        elif "sinceTime" in q:
            since_time = parse_rfc3339(q["sinceTime"])
        return LogRequest(flag("follow"), num("tailLines"), since_time, flag("timestamps"), flag("previous"),
                          num("limitBytes"))
