"""Health and metrics endpoints of a manager: ``/healthz``, ``/readyz``, ``/metrics``.

``/healthz`` answers 200 ``ok`` while the manager runs; ``/readyz`` answers 200 ``ok`` once the
informer caches have synced, else 503 with the failing check; ``/metrics`` serves the
prometheus_client default registry (when enabled; without ``_created`` series, as
client_golang's text format). Loopback only (127.0.0.1) by default.

Mirrors: controller-runtime pkg/healthz (healthz.Ping, readyz checks) and the metrics server.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from pumice._util.metrics import EXPOSITION_CONTENT_TYPE, configure_metrics, exposition

Check = Callable[[], bool]

__all__ = ["HealthServer", "QuietServer", "build_app"]


def build_app(healthz: dict[str, Check], readyz: dict[str, Check], *, metrics: bool = True) -> Starlette:
    """The ASGI app. Each check is a no-argument callable returning True when healthy. With
    ``metrics``, ``/metrics`` serves the process's default registry, and the process's metrics
    are set up for it (:func:`pumice._util.metrics.configure_metrics`: no ``_created`` series)."""

    def run(checks: dict[str, Check]) -> Response:
        failed = [name for name, fn in sorted(checks.items()) if not _safe(fn)]
        if failed:
            return PlainTextResponse("".join(f"[-]{n} failed\n" for n in failed) + "check failed\n", 503)
        return PlainTextResponse("ok")

    async def healthz_ep(_: HttpRequest) -> Response:
        return run(healthz)

    async def readyz_ep(_: HttpRequest) -> Response:
        return run(readyz)

    async def metrics_ep(_: HttpRequest) -> Response:
        return Response(exposition(), media_type=EXPOSITION_CONTENT_TYPE)

    routes = [Route("/healthz", healthz_ep), Route("/readyz", readyz_ep)]
    if metrics:
        configure_metrics()
        routes.append(Route("/metrics", metrics_ep))
    return Starlette(routes=routes)


def _safe(fn: Check) -> bool:
    try:
        return bool(fn())
    except Exception:
        return False


class QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the component's CLI owns SIGTERM/SIGINT
    (:mod:`pumice.cli._signals`). uvicorn's handlers would also re-raise each signal when it stops,
    which the CLI would take for a second signal."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class HealthServer:
    """Serve :func:`build_app` on ``host:port`` (port 0 picks a free port; see :attr:`port`)."""

    def __init__(self, app: Starlette, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Bind and start serving.

        Raises:
            OSError: when the port cannot be bound.
        """
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off")
        self._server = QuietServer(config)
        self._task = asyncio.get_running_loop().create_task(
            self._server.serve(sockets=[sock]), name="health-server"
        )
        while not self._server.started and not self._task.done():
            await asyncio.sleep(0.01)
        if self._task.done():
            self._task.result()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 5.0)
        self._server = None
        self._task = None
