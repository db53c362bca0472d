"""Test and simulation harnesses around the API server.

- :func:`local_cluster`: an in-memory (or given-storage) :class:`~pumice.apiserver.server.APIServer`
  with a :class:`~pumice.client.kube.Client` over the streaming in-process transport. No sockets,
  no threads; works under looptime.

      async with local_cluster() as c:
          pod = await c.client.create({...})

- :func:`serve_http`: the server over real HTTPS on 127.0.0.1 (uvicorn in a background thread with
  its own event loop), with ``<data_dir>/kubeconfig`` written, for kubectl, the official
  ``kubernetes`` client and other processes. Usable as ``with`` or ``async with``.

      with serve_http(tmp_path) as srv:
          subprocess.run(["kubectl", "--kubeconfig", str(srv.kubeconfig), "get", "pods"])
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice._util.clock import Clock
from pumice.api.scheme import Scheme
from pumice.apiserver.server import APIServer
from pumice.apiserver.storage import Storage
from pumice.client.kube import Client
from pumice.client.kubeconfig import connect, in_process
from pumice.runtime.manager import Manager

__all__ = ["HttpServer", "LocalCluster", "local_cluster", "serve_http"]


@dataclass
class LocalCluster:
    """What :func:`local_cluster` yields.

    Attributes:
        server: the APIServer (``server.registry``, ``server.store`` for white-box tests).
        app: its ASGI app.
        scheme: the server's Scheme (shared with the clients, so CRD kinds resolve at once).
        client: a Client over the in-process transport (field manager ``pumice``).
    """

    server: APIServer
    client: Client
    _clients: list[Client] = field(default_factory=list)

    @property
    def app(self) -> Any:
        return self.server.app

    @property
    def scheme(self) -> Scheme:
        return self.server.scheme

    def new_client(self, *, field_manager: str = "pumice", namespace: str = "default") -> Client:
        """Another in-process Client (closed with the cluster)."""
        c = in_process(self.server.app, scheme=self.server.scheme, field_manager=field_manager,
                       namespace=namespace)
        self._clients.append(c)
        return c

    def add_admission_plugin(self, plugin: Any) -> None:
        self.server.add_admission_plugin(plugin)


@contextlib.asynccontextmanager
async def local_cluster(
    *,
    storage: Storage | None = None,
    admission: Iterable[Any] = (),
    clock: Clock | None = None,
    install_crds: bool = True,
    data_dir: Path | None = None,
    **server_kwargs: Any,
) -> AsyncIterator[LocalCluster]:
    """An in-process API server and client. When the body ends without an exception, every
    object the server stored (current, or in the event history) must still be as stored: a
    component that changed one (e.g. a handler writing into an informer's object, which in-process
    informers share with the server) fails the test with AssertionError.

    Args:
        storage: a backend (default: in memory, or SQLite in ``data_dir`` when given).
        admission: extra admission plugins (after the built-in ones).
        clock: the server's clock (default: the process clock).
        install_crds: install the ray.io and volcano CRDs at start.
        data_dir: a directory for the SQLite database (None: in memory).
        server_kwargs: more :class:`~pumice.apiserver.server.APIServer` arguments (``history``,
            ``bookmark_interval``, ``builtin_admission``; ``seed`` defaults to 0 here, so tests
            get the same uids every run).
    """
    server_kwargs.setdefault("seed", 0)
    server = APIServer(data_dir, storage=storage, admission_plugins=admission, clock=clock,
                       install_crds=install_crds, **server_kwargs)
    await server.start()
    client = in_process(server.app, scheme=server.scheme)
    cluster = LocalCluster(server, client)
    try:
        yield cluster
        # in-process informers share the server's stored objects: none may have been changed
        changed = server.store.changed_objects()
        if changed:
            raise AssertionError(f"{len(changed)} stored objects were changed in place (informer objects are "
                                 f"read-only): {', '.join(changed[:5])}")
    finally:
        server.store.close_watchers()
        for c in [client, *cluster._clients]:
            with contextlib.suppress(Exception):
                await c.close()
        server.close()


class HttpServer:
    """An APIServer on ``http://127.0.0.1:<port>`` in a background thread.

    Attributes (after start): ``url``, ``kubeconfig`` (path), ``server``, ``data_dir``, ``token``.
    """

    def __init__(self, data_dir: Path | str, port: int = 0, *, tls: bool = True, **server_kwargs: Any) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        self.tls = tls
        self._kwargs = server_kwargs
        self.server: APIServer | None = None
        self.url = ""
        self.kubeconfig = self.data_dir / "kubeconfig"
        self.token = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    def start(self) -> HttpServer:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._main(ready))
            except BaseException as e:  # reported to the starting thread
                self._error = e
                ready.set()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="pumice-apiserver", daemon=True)
        self._thread.start()
        ready.wait(30)
        if self._error is not None:
            raise RuntimeError(f"the API server did not start: {self._error}") from self._error
        if not self.url:
            raise RuntimeError("the API server did not start within 30 s")
        return self

    async def _main(self, ready: threading.Event) -> None:
        self.server = APIServer(self.data_dir, **self._kwargs)
        self.token = self.server.token
        started = asyncio.Event()
        self._task = asyncio.create_task(self.server.serve("127.0.0.1", self.port, tls=self.tls, ready=started))
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait([self._task, waiter], return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():
            waiter.cancel()
            await self._task
            return
        assert self.server.url is not None
        self.url = self.server.url
        ready.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.server.close()

    def stop(self) -> None:
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(15)

    def client(self, **kwargs: Any) -> Client:
        """A pumice Client over HTTP using the written kubeconfig."""
        return connect(self.kubeconfig, **kwargs)

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> HttpServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)


def serve_http(data_dir: Path | str, port: int = 0, *, tls: bool = True, **server_kwargs: Any) -> HttpServer:
    """The API server on 127.0.0.1 (``port`` 0 picks a free one), HTTPS with a self-signed
    certificate by default (``tls=False``: plain HTTP, which kubectl will not send its token over);
    use as ``with`` or ``async with``; ``.url`` and ``.kubeconfig`` (``<data_dir>/kubeconfig``, with
    the CA data) once entered."""
    return HttpServer(data_dir, port, tls=tls, **server_kwargs)


@contextlib.asynccontextmanager
async def running(mgr: Manager, *, stop_timeout: float = 10.0,
                  start_timeout: float | None = None) -> AsyncIterator[Manager]:
    """``mgr`` started (caches synced, controllers running) for the body of the ``async with``;
    stopped after it, waiting up to ``stop_timeout`` seconds for its task (an error while it
    shuts down is not the test's concern and is suppressed).

    Raises:
        TimeoutError: the manager did not start within ``start_timeout`` seconds (None: no bound).
    """
    task = asyncio.create_task(mgr.start())
    try:
        await asyncio.wait_for(mgr.wait_started(), start_timeout)
        yield mgr
    finally:
        mgr.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, stop_timeout)
