"""pods/log is proxied to the node agent named by the Node's InternalIP and kubelet port."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from urllib.parse import parse_qsl

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

from .builders import pod

SEEN: list[str] = []


async def container_logs(request: Request) -> PlainTextResponse:
    SEEN.append(f"{request.url.path}?{request.url.query}")
    p = request.path_params
    return PlainTextResponse(f"log of {p['ns']}/{p['pod']}/{p['container']}\n")


@contextlib.asynccontextmanager
async def fake_node_agent():
    app = Starlette(routes=[Route("/containerLogs/{ns}/{pod}/{container}", container_logs)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await task


async def test_logs_are_fetched_from_the_node_agent(cluster: LocalCluster) -> None:
    async with fake_node_agent() as port:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                           "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}
        await cluster.client.create(node)
        await cluster.client.create(pod("p"))
        await cluster.client.bind("default", "p", "n1")
        chunks = [c async for c in cluster.client.logs("default", "p", tail_lines=5, timestamps=True)]
        assert b"".join(chunks) == b"log of default/p/main\n"
        assert SEEN[-1] == "/containerLogs/default/p/main?tailLines=5&timestamps=true"


async def test_logs_of_an_unscheduled_pod_are_empty(cluster: LocalCluster) -> None:
    # kube-apiserver has no location for them and answers 204 No Content (LogLocation), not an error
    await cluster.client.create(pod("p"))
    assert [c async for c in cluster.client.logs("default", "p")] in ([], [b""])


async def test_logs_of_an_unknown_container_are_400(cluster: LocalCluster) -> None:
    await cluster.client.create(pod("p"))
    with pytest.raises(ApiError) as e:
        _ = [c async for c in cluster.client.logs("default", "p", container="nope")]
    assert e.value.code == 400 and e.value.message == "container nope is not valid for pod p"


async def test_logs_and_exec_of_a_pod_on_a_node_without_kubelet_endpoint_answer_a_clear_400(
        cluster: LocalCluster) -> None:
    """The simulated runtime publishes no kubelet endpoint: logs, exec and attach say so instead
    of answering 500."""
    c = cluster.client
    await c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "sim-0"},
                    "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
                               "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}}})
    await c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sim", "namespace": "default"},
                    "spec": {"nodeName": "sim-0", "containers": [{"name": "c", "image": "busybox"}]}})
    for sub, params in (("log", None), ("exec", {"command": "true"}), ("attach", None)):
        with pytest.raises(ApiError) as e:
            await c.request("GET", f"/api/v1/namespaces/default/pods/sim/{sub}", params=params)
        assert e.value.code == 400, e.value
        assert "simulated runtime" in str(e.value)


@pytest.mark.parametrize(("query", "code", "message"), [
    ("sinceSeconds=-5", 422, 'PodLogOptions "sim" is invalid: sinceSeconds: Invalid value: -5: must be greater than 0'),
    ("tailLines=-1", 422,
     'PodLogOptions "sim" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'),
    ("limitBytes=0&tailLines=-2", 422, 'PodLogOptions "sim" is invalid: [tailLines: Invalid value: -2: must be '
                                       'greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]'),
    ("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", 422,
     'PodLogOptions "sim" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'),
    ("tailLines=abc", 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
    # a bool never fails to decode (Convert_Slice_string_To_bool: "yes" is true)
    ("follow=yes&tailLines=-1", 422,
     'PodLogOptions "sim" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'),
])
async def test_log_options_are_checked_before_the_pod_and_its_node(cluster: LocalCluster, query: str, code: int,
                                                                    message: str) -> None:
    """As kube-apiserver's LogREST.Get: the options are decoded and validated first, so a bad
    option is reported on the simulated runtime too, and for a Pod that does not exist."""
    c = cluster.client
    await c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "sim-0"},
                    "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
                               "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}}})
    await c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sim", "namespace": "default"},
                    "spec": {"nodeName": "sim-0", "containers": [{"name": "c", "image": "busybox"}]}})
    for pod_name in ("sim", "absent"):
        with pytest.raises(ApiError) as e:
            await c.request("GET", f"/api/v1/namespaces/default/pods/{pod_name}/log", params=dict(parse_qsl(query)))
        assert (e.value.code, e.value.message) == (code, message.replace('"sim"', f'"{pod_name}"'))
