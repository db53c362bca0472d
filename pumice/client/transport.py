"""A streaming in-process ASGI transport for httpx2 (and so for lightkube).

httpx2's own ``ASGITransport`` collects the whole body before returning, so an endless watch
never returns. :class:`StreamingASGITransport` runs the app in a task, returns the response as
soon as ``http.response.start`` arrives, and streams ``http.response.body`` chunks as they come;
closing the response cancels the app task (the app sees ``http.disconnect``).

No sockets, no threads: under ``looptime`` the whole client/server exchange runs on virtual time.
Requests carry the ASGI scope extension ``pumice.in_process`` (the API server trusts them).

Both take the ``loop`` the app runs on (None: the caller's). A client on another thread's event
loop (``pumice up``'s Volcano scheduler) passes the app's loop: each exchange is then run on that
loop (``asyncio.run_coroutine_threadsafe``) and its answer, chunk by chunk, awaited on the
caller's, so the app's objects and asyncio primitives stay on the loop that owns them.

Mirrors: httpx ``ASGITransport`` (shape of the scope); the streaming design from
reference/ecosystem.md section 1.3.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import httpx2

__all__ = ["DirectASGI", "StreamingASGITransport"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_END = object()


def _elsewhere(loop: asyncio.AbstractEventLoop | None) -> asyncio.AbstractEventLoop | None:
    """``loop`` when it is not the running loop (the exchange must hop to it), else None."""
    return loop if loop is not None and loop is not asyncio.get_running_loop() else None


async def _on(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` on ``loop`` (another thread's) and await its result on the running loop;
    cancelling the caller cancels it there.

    Raises:
        ConnectionError: ``loop`` is closed (the API server has stopped).
        whatever ``coro`` raised.
    """
    try:
        fut = asyncio.run_coroutine_threadsafe(coro, loop)
    except RuntimeError as e:  # the loop is closed
        coro.close()
        raise ConnectionError(f"the in-process API server's event loop is gone: {e}") from None
    return await asyncio.wrap_future(fut)


async def _next_chunk(chunks: AsyncIterator[Any]) -> Any:
    try:
        return await chunks.__anext__()
    except StopAsyncIteration:
        return _END


class _Relay:
    """A stream iterated on ``loop`` (another thread's), read and closed from the running loop.

    Each chunk is pulled when the caller asks for it, as a socket is read, so a busy caller
    leaves events to batch up on the server's side rather than in a queue. Closing waits, on
    ``loop``, for a pull still running there (being cancelled with its caller, who is closing
    the stream on its way out) to end first: closing an async generator while its ``__anext__``
    runs raises "aclose(): asynchronous generator is already running", which took the place of
    the caller's CancelledError, so a cancelled informer retried its watch instead of ending and
    a stop of ``pumice up`` waited for it for ever (trial 14 F-5)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, chunks: AsyncIterator[Any],
                 close: Callable[[], Awaitable[Any]]) -> None:
        self._loop = loop
        self._chunks = chunks
        self._close = close
        self._pulling: asyncio.Task[Any] | None = None
        """The task pulling a chunk on ``loop`` (only read and written there)."""

    async def _pull(self) -> Any:
        self._pulling = asyncio.current_task()
        try:
            return await _next_chunk(self._chunks)
        finally:
            self._pulling = None

    async def _close_after_pull(self) -> None:
        pulling = self._pulling
        if pulling is not None and not pulling.done():
            pulling.cancel()
            await asyncio.wait([pulling])
        await self._close()

    async def chunks(self) -> AsyncGenerator[Any, None]:
        while True:
            chunk = await _on(self._loop, self._pull())
            if chunk is _END:
                return
            yield chunk

    async def aclose(self) -> None:
        await _on(self._loop, self._close_after_pull())


class _RelayStream(httpx2.AsyncByteStream):
    """An httpx2 response stream of another loop's, read and closed on that loop."""

    def __init__(self, inner: httpx2.AsyncByteStream, loop: asyncio.AbstractEventLoop) -> None:
        self._relay = _Relay(loop, inner.__aiter__(), inner.aclose)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._relay.chunks():
            yield chunk

    async def aclose(self) -> None:
        await self._relay.aclose()


def _one_body(body: bytes, disconnected: asyncio.Event | None) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI ``receive`` for a request whose whole ``body`` is known: one ``http.request``
    message, then ``http.disconnect`` once ``disconnected`` is set (None: never, as for a plain
    request, whose answer never waits for a disconnect; no Event is made for it)."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if disconnected is None:
            await asyncio.get_running_loop().create_future()  # never done: no disconnect comes
        else:
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
        loop: the event loop ``app`` runs on, when callers may be on another thread's loop (see the
            module docstring); None: the caller's.
    """

    def __init__(self, app: Any, client: tuple[str, int] = ("127.0.0.1", 1), *,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.app = app
        self.client = client
        self.loop = loop

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        there = _elsewhere(self.loop)
        if there is not None:
            resp = await _on(there, self._handle(request))
            return httpx2.Response(resp.status_code, headers=resp.headers,
                                   stream=_RelayStream(resp.stream, there),  # type: ignore[arg-type]
                                   request=request)
        return await self._handle(request)

    async def _handle(self, request: httpx2.Request) -> httpx2.Response:
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

    When the app has ``respond(scope, receive)`` (pumice's API server: it returns the Starlette
    Response instead of sending it), the answer is read from that object: no ASGI messages, and a
    streamed answer (a watch) is iterated in the caller's own task, with no app task and no queue
    in between. Otherwise the app is called as any ASGI app.

    ``loop``: the event loop ``app`` runs on, when callers may be on another thread's loop (see
    the module docstring); None: the caller's.
    """

    def __init__(self, app: Any, host: str = "pumice.local", *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.app = app
        self.host = host
        self.loop = loop
        self._respond: Callable[[dict[str, Any], Any], Awaitable[Any]] | None = getattr(app, "respond", None)

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
                      body: bytes, *, params: dict[str, str] | None = None) -> tuple[int, bytes]:
        """One request; ``params``, when given, is ``query`` already parsed (what
        ``pumice.api.params.query_values(query)`` gives), which an app with ``respond``
        takes instead of parsing ``query`` again (scope keys ``pumice.query``; the body goes as
        ``pumice.body``)."""
        there = _elsewhere(self.loop)
        if there is not None:
            return await _on(there, self._request(method, path, query, headers, body, params))
        return await self._request(method, path, query, headers, body, params)

    async def _request(self, method: str, path: str, query: bytes, headers: list[tuple[bytes, bytes]],
                       body: bytes, params: dict[str, str] | None) -> tuple[int, bytes]:
        scope = self._scope(method, path, query, headers)
        receive = _one_body(body, None)  # a plain response never waits for a disconnect
        if self._respond is not None:
            scope["pumice.body"] = body
            if params is not None:
                scope["pumice.query"] = params
            response = await self._respond(scope, receive)
            iterator = getattr(response, "body_iterator", None)
            if iterator is None:
                return response.status_code, response.body
            return response.status_code, b"".join([c async for c in _as_bytes(iterator)])
        status = 500
        chunks: list[bytes] = []

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

    async def stream(self, method: str, path: str, query: bytes, headers: list[tuple[bytes, bytes]], *,
                     objects: bool = False) -> tuple[int, AsyncIterator[Any], Any]:
        """``objects`` (a watch whose caller promised not to change what it receives): ask an app
        with ``respond`` (pumice's API server) for events as objects (scope key
        ``pumice.watch_objects``): the chunks are then lists of ``(type, object)`` pairs, the
        objects possibly the server's own stored ones, instead of bytes of JSON lines. An error
        answer, and any other app, still give bytes. Across loops (``loop``), the objects are the
        server's too, read-only on both threads."""
        there = _elsewhere(self.loop)
        if there is None:
            return await self._stream(method, path, query, headers, objects)
        status, chunks, close = await _on(there, self._stream(method, path, query, headers, objects))
        relay = _Relay(there, chunks, close)
        return status, relay.chunks(), relay.aclose

    async def _stream(self, method: str, path: str, query: bytes, headers: list[tuple[bytes, bytes]],
                      objects: bool) -> tuple[int, AsyncIterator[Any], Any]:
        if self._respond is not None:
            scope = self._scope(method, path, query, headers)
            if objects:
                scope["pumice.watch_objects"] = True
            return await self._stream_response(scope)
        transport = StreamingASGITransport(self.app)
        url = httpx2.URL(f"http://{self.host}{path}" + (f"?{query.decode()}" if query else ""))
        req = httpx2.Request(method, url, headers=headers)
        resp = await transport.handle_async_request(req)
        stream = resp.stream
        assert isinstance(stream, _QueueStream)
        return resp.status_code, stream.__aiter__(), stream.aclose

    async def _stream_response(self, scope: dict[str, Any]) -> tuple[int, AsyncIterator[Any], Any]:
        """:meth:`stream` over the app's ``respond``: the caller iterates the response's body
        iterator in its own task (no app task, no queue, no ASGI message per chunk), so an event
        reaches an informer one task switch earlier than through :class:`StreamingASGITransport`.
        ``close`` ends the exchange as a client disconnect does. A body iterator that fails is
        logged and ends the stream, as a dropped connection would."""
        done = asyncio.Event()
        assert self._respond is not None
        response = await self._respond(scope, _one_body(b"", done))
        iterator = getattr(response, "body_iterator", None)
        if iterator is None:
            return response.status_code, _once(bytes(response.body)), _noop
        chunks = _logged(iterator, scope)

        async def close() -> None:
            done.set()
            await chunks.aclose()
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()

        return response.status_code, chunks, close


async def _as_bytes(chunks: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    """A Starlette body iterator's chunks as bytes (str chunks UTF-8 encoded, as StreamingResponse
    sends them); empty chunks are left out, as the ASGI transports leave them out. Lists (a watch
    of objects: see :meth:`DirectASGI.stream`) pass as they are."""
    async for chunk in chunks:
        if chunk:
            yield chunk if isinstance(chunk, (bytes, list)) else (
                chunk.encode() if isinstance(chunk, str) else bytes(chunk))


async def _once(body: bytes) -> AsyncGenerator[bytes, None]:
    if body:
        yield body


async def _noop() -> None:
    return None


async def _logged(chunks: AsyncIterator[Any], scope: dict[str, Any]) -> AsyncGenerator[Any, None]:
    """A Starlette body iterator's chunks as :func:`_as_bytes` gives them (one generator, not two
    stacked: a watch passes every event batch through here), ending (with the error logged) where
    the server's body iterator fails."""
    try:
        async for chunk in chunks:
            if chunk:
                yield chunk if isinstance(chunk, (bytes, list)) else (
                    chunk.encode() if isinstance(chunk, str) else bytes(chunk))
    except Exception:
        log.exception("in-process stream %s %s failed; ending it", scope["method"], scope["path"])
