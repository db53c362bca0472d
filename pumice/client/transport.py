"""A streaming in-process ASGI transport for httpx2 (and so for lightkube).

httpx2's own ``ASGITransport`` collects the whole body before returning, so an endless watch
never returns. :class:`StreamingASGITransport` runs the app in a task, returns the response as
soon as ``http.response.start`` arrives, and streams ``http.response.body`` chunks as they come;
closing the response cancels the app task (the app sees ``http.disconnect``).

No sockets, no threads: under ``looptime`` the whole client/server exchange runs on virtual time.
Requests carry the ASGI scope extension ``pumice.in_process`` (the API server trusts them).

Mirrors: httpx ``ASGITransport`` (shape of the scope); the streaming design from
reference/ecosystem.md section 1.3.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2

__all__ = ["StreamingASGITransport"]


def _one_body(body: bytes, disconnected: asyncio.Event) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI ``receive`` for a request whose whole ``body`` is known: one ``http.request``
    message, then ``http.disconnect`` once ``disconnected`` is set."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    return receive


class _QueueStream(httpx2.AsyncByteStream):
    def __init__(self, queue: asyncio.Queue[bytes | None], task: asyncio.Task[None], done: asyncio.Event) -> None:
        self._queue = queue
        self._task = task
        self._done = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        q = self._queue
        while True:
            chunk = await q.get()
            if chunk is None:
                return
            yield chunk

    async def aclose(self) -> None:
        self._done.set()
        if not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass


class StreamingASGITransport(httpx2.AsyncBaseTransport):
    """Send httpx2 requests straight into an ASGI app, streaming the responses.

    Args:
        app: the ASGI application (e.g. ``APIServer.app``).
        client: the ``(host, port)`` the app sees as the peer.
    """

    def __init__(self, app: Any, client: tuple[str, int] = ("127.0.0.1", 1)) -> None:
        self.app = app
        self.client = client

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
            "client": self.client,
            "root_path": "",
            "extensions": {"pumice.in_process": True},
        }
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = loop.create_future()
        done = asyncio.Event()
        receive = _one_body(body, done)

        async def send(message: dict[str, Any]) -> None:
            t = message["type"]
            if t == "http.response.start":
                if not started.done():
                    started.set_result((message["status"], list(message.get("headers", []))))
            elif t == "http.response.body":
                chunk = message.get("body", b"")
                if chunk:
                    queue.put_nowait(chunk)
                if not message.get("more_body", False):
                    queue.put_nowait(None)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if not started.done():
                    started.set_exception(e)
            finally:
                if not started.done():
                    started.set_result((500, []))
                queue.put_nowait(None)

        task = loop.create_task(run())
        try:
            status, headers = await started
        except BaseException:
            task.cancel()
            raise
        return httpx2.Response(status, headers=headers, stream=_QueueStream(queue, task, done), request=request)


class DirectASGI:
    """Calls an ASGI app without building httpx2 requests: the in-process fast path of
    :class:`~pumice.client.kube.Client` (same scope shape and trust marker as
    :class:`StreamingASGITransport`).

    :meth:`request` returns ``(status, body)``; :meth:`stream` returns ``(status, chunks, close)``
    where ``chunks`` is an async iterator of body chunks and ``close`` ends the exchange.
    """

    def __init__(self, app: Any, host: str = "pumice.local") -> None:
        self.app = app
        self.host = host

    def _scope(self, method: str, path: str, query: bytes, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "headers": headers,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query,
            "server": (self.host, 80),
            "client": ("127.0.0.1", 1),
            "root_path": "",
            "extensions": {"pumice.in_process": True},
        }

    async def request(self, method: str, path: str, query: bytes, headers: list[tuple[bytes, bytes]],
                      body: bytes) -> tuple[int, bytes]:
        scope = self._scope(method, path, query, headers)
        status = 500
        chunks: list[bytes] = []
        receive = _one_body(body, asyncio.Event())  # a plain response never waits for a disconnect

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                if chunk:
                    chunks.append(chunk)

        await self.app(scope, receive, send)
        return status, b"".join(chunks)

    async def stream(self, method: str, path: str, query: bytes,
                     headers: list[tuple[bytes, bytes]]) -> tuple[int, AsyncIterator[bytes], Any]:
        transport = StreamingASGITransport(self.app)
        url = httpx2.URL(f"http://{self.host}{path}" + (f"?{query.decode()}" if query else ""))
        req = httpx2.Request(method, url, headers=headers)
        resp = await transport.handle_async_request(req)
        stream = resp.stream
        assert isinstance(stream, _QueueStream)
        return resp.status_code, stream.__aiter__(), stream.aclose
