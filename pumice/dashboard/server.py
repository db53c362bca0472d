"""Running the dashboard: the cache, the sampler and the HTTP server, until a stop event.

:func:`run_dashboard` is what ``pumice up`` and ``pumice dashboard`` call. The dashboard is a
client of the API server named by a kubeconfig (lists and watches with the kubeconfig's
credentials; actions with the logged-in user's token), plus optional Prometheus metric sources.
It serves plain HTTP and refuses to bind a non-loopback address unless ``allow_remote`` is set
(the login token would cross the network in clear text).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp
import httpx2

from pumice.dashboard.app import Dashboard
from pumice.dashboard.auth import Sessions, token_client_factory
from pumice.dashboard.cache import ClusterCache
from pumice.dashboard.series import MetricSource, Sampler

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 picks a free port).

    Raises:
        OSError: the address is taken or not available, with a one-line message.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(f"dashboard cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_metric_source(url: str, *, timeout: float = 5.0) -> MetricSource:
    """A metric source reading a Prometheus ``/metrics`` URL (plain HTTP or HTTPS).

    Raises:
        ValueError: ``url`` is not an absolute http or https URL (``ftp://x: not an http or
            https URL``), refused at once rather than failing at every sample.
    """
    import httpx2

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url}: not an http or https URL")

    def fetch() -> str:
        resp = httpx2.get(url, timeout=timeout, trust_env=False)
        resp.raise_for_status()
        return resp.text

    return MetricSource.from_text(fetch, url)


async def run_dashboard(
    kubeconfig: Path | str | None,
    *,
    context: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    sock: socket.socket | None = None,
    metric_sources: Iterable[MetricSource] = (),
    stop_event: asyncio.Event | None = None,
    on_ready: Callable[[str], Any] | None = None,
    sample_interval: float = 5.0,
    scheduler_conf: str | None = None,
    allow_remote: bool = False,
) -> None:
    """Serve the dashboard until ``stop_event`` is set.

    Args:
        kubeconfig: the API server and the dashboard's own credentials (None: ``$KUBECONFIG`` or
            ``~/.kube/config``).
        host, port: where to listen (port 0: a free one); ignored when ``sock`` is given.
        metric_sources: Prometheus sources charted on the Charts page.
        on_ready: called with the dashboard URL once it listens and the cache has synced.
        scheduler_conf: volcano-scheduler.conf the explain panels replay instead (default: the one
            the running Volcano scheduler runs, as it records it on
            ``volcano-system/volcano-scheduler-configmap``, else the built-in default).
        allow_remote: allow a non-loopback ``host``.
    Returns at once when ``stop_event`` is set, also while it waits for the API server's first
    answer or the cache's first lists.

    Raises:
        OSError: the address cannot be bound.
        ConnectionError: the API server cannot be reached (its first request got no answer).
        ValueError: a non-loopback host without ``allow_remote``.
        MemoryError: (a FATAL_TYPES error) what an informer of the cache stopped with for good.
    """
    from pumice.client.kubeconfig import connect, load

    sock = sock if sock is not None else _listening_socket(host, port, allow_remote)
    stop = stop_event or asyncio.Event()
    # one line per watch and list would drown the log of `pumice up -v`-less runs
    logging.getLogger("httpx2").setLevel(max(logging.WARNING, logging.getLogger("httpx2").level))
    client = connect(kubeconfig, context=context, field_manager="pumice-dashboard")
    single = load(kubeconfig, context=context)
    cache = ClusterCache(client)
    sampler = Sampler(cache, metric_sources, interval=sample_interval)
    sessions = Sessions(token_client_factory(single))
    dash = Dashboard(cache, sessions, sampler, explain_conf=_explain_conf(scheduler_conf) or _published_conf(client),
                     title=single.cluster.server)

    import uvicorn

    from pumice.runtime.health import QuietServer

    config = uvicorn.Config(dash.app, lifespan="off", log_level="warning", access_log=False,
                            timeout_graceful_shutdown=2)
    # the caller owns SIGTERM/SIGINT (stop_event): uvicorn's own handlers would re-raise the signal
    # when it stops, which `pumice dashboard` took for a second signal (trial-9 F-10)
    server = QuietServer(config)
    tasks: list[asyncio.Task[Any]] = []
    try:
        if not await _until_stopped(asyncio.ensure_future(_check_reachable(client)), stop):
            return
        await _serve(cache, sampler, server, sock, stop, tasks, on_ready)
    finally:
        stop.set()
        dash.stopping.set()  # the live-update streams end, so the HTTP server stops without cancelling them
        server.should_exit = True
        for t in tasks:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(t), timeout=5)
            t.cancel()
        await sessions.close()
        await cache.stop()
        await client.close()
        with contextlib.suppress(OSError):
            sock.close()


def _listening_socket(host: str, port: int, allow_remote: bool) -> socket.socket:
    """A socket bound to ``host:port``.

    Raises:
        ValueError: a non-loopback host without ``allow_remote`` (the dashboard is plain HTTP).
        OSError: the address cannot be bound.
    """
    if host not in LOOPBACK and not allow_remote:
        raise ValueError(f"the dashboard serves plain HTTP; refusing to listen on {host} "
                         "(use a loopback address or --allow-remote behind a TLS proxy)")
    return bind(host, port)


def _published_conf(client: Any) -> Callable[[], Any]:
    """The explain panels' configuration when none is given: the one the running Volcano
    scheduler published (see ``read_published_conf``), else the built-in default (logged)."""
    from pumice.scheduler.volcano import default_conf
    from pumice.scheduler.volcano.scheduler import read_published_conf

    async def current() -> Any:
        try:
            conf = await read_published_conf(client)
        except Exception as e:
            log.warning("dashboard: cannot read the scheduler's published configuration, explaining with the "
                        "built-in default: %s", e)
            return default_conf()
        return conf if conf is not None else default_conf()

    return current


def _explain_conf(scheduler_conf: str | None) -> Callable[[], Any] | None:
    """The explain panels' scheduler configuration, loaded from ``scheduler_conf`` at start (a bad
    file raises ConfigError) and re-read when the file changes, as the scheduler does (a bad edit
    keeps the previous one). None: the panels use the built-in default."""
    if not scheduler_conf:
        return None
    import os

    from pumice.scheduler.volcano import ConfigError, load_conf

    path = Path(scheduler_conf)  # a path, never YAML text (load_conf reads a str that names no file as text)
    state: dict[str, Any] = {"mtime": os.stat(scheduler_conf).st_mtime, "conf": load_conf(path)}

    def current() -> Any:
        try:
            mtime = os.stat(scheduler_conf).st_mtime
            if mtime != state["mtime"]:
                state["mtime"] = mtime
                state["conf"] = load_conf(path)
        except (OSError, ConfigError) as e:
            log.error("dashboard: keeping the previous scheduler configuration: %s", e)
        return state["conf"]

    return current


async def _until_stopped(job: asyncio.Future[Any], stop: asyncio.Event) -> bool:
    """Wait for ``job`` unless ``stop`` is set first (then ``job`` is cancelled): True when it
    finished. Its exception is raised."""
    stop_waiter = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([job, stop_waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop_waiter.cancel()
    if job.done():
        job.result()
        return True
    job.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await job
    return False


async def _check_reachable(client: Any) -> None:
    """One request (``GET /version``) before anything else: any HTTP answer, a refusal too, is a
    server; no answer is the dashboard's failure in one line (trial 12 F-6 g: it waited 30 s for
    informers that logged a retry each, and never said why).

    Raises:
        ConnectionError: ``cannot reach the API server: Get "https://127.0.0.1:1/version": dial
            tcp 127.0.0.1:1: connect: connection refused``.
    """
    from pumice.client.base import ApiError

    try:
        await client.request("GET", "/version")
    except ApiError:
        return
    except (OSError, aiohttp.ClientError, httpx2.HTTPError) as e:
        raise ConnectionError(f"cannot reach the API server: {e}") from e


async def _serve(cache: ClusterCache, sampler: Sampler, server: uvicorn.Server, sock: socket.socket, stop: asyncio.Event,
                 tasks: list[asyncio.Task[Any]], on_ready: Callable[[str], Any] | None) -> None:
    """Sync the cache, start the sampler and the HTTP server (into ``tasks``), call ``on_ready``
    with the URL, then wait for ``stop`` or for a task to end.

    Raises:
        whatever ended a task (e.g. the HTTP server failing), or a cache's informer for good
        (MemoryError: the pages would show a cache that no longer follows the API).
    """
    synced = asyncio.ensure_future(cache.start(sync_timeout=30.0))
    if not await _until_stopped(synced, stop):
        return
    if not synced.result():
        missing = [k for k in cache.kinds if not cache.synced(k)]
        log.warning("dashboard: not listed yet (not installed or not authorized?): %s", ", ".join(missing))
    sampler.tick()
    tasks.append(asyncio.create_task(sampler.run(stop), name="dashboard-sampler"))
    tasks.append(asyncio.create_task(server.serve(sockets=[sock]), name="dashboard-http"))
    addr = sock.getsockname()
    h = f"[{addr[0]}]" if ":" in addr[0] else addr[0]
    url = f"http://{h}:{addr[1]}/"
    if on_ready is not None:
        res = on_ready(url)
        if asyncio.iscoroutine(res):
            await res
    stop_waiter = asyncio.create_task(stop.wait())
    cache_failed = asyncio.ensure_future(cache.factory.wait_failed())
    try:
        done, _ = await asyncio.wait([stop_waiter, cache_failed, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop_waiter.cancel()
        cache_failed.cancel()
    for t in done:
        if t is not stop_waiter and not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]


async def run_dashboard_in_thread(kubeconfig: Path | str | None, *, stop_event: asyncio.Event,
                                  on_ready: Callable[[str], Any] | None = None, **kwargs: Any) -> None:
    """:func:`run_dashboard` on its own thread and event loop, until ``stop_event`` is set.

    ``pumice up`` runs the API server, the controllers and the default scheduler on one loop,
    which a burst of work (a controller's pass over thousands of Pods) holds for a while; a
    dashboard on the same loop would stall with it. On its own loop the dashboard keeps answering (it is an
    HTTP client of the API like any other). ``on_ready`` is called on the caller's loop.

    Raises:
        whatever :func:`run_dashboard` raised (e.g. OSError for a taken port).
    """
    from pumice.runtime.thread import run_in_thread

    outer = asyncio.get_running_loop()

    def ready(url: str) -> None:
        if on_ready is not None:
            outer.call_soon_threadsafe(on_ready, url)

    async def main(stop: asyncio.Event) -> None:
        await run_dashboard(kubeconfig, stop_event=stop, on_ready=ready, **kwargs)

    await run_in_thread(main, stop_event=stop_event, name="pumice-dashboard")
