"""``pods/{name}/exec``, ``pods/{name}/attach`` and ``pods/{name}/portforward``: the API server's
WebSocket hop to the node agent, as kube-apiserver proxies these to the kubelet.

A WebSocket upgrade (``GET``, subprotocols ``v5.channel.k8s.io`` / ``v4.channel.k8s.io``) is
authenticated and authorized (``get`` and ``create`` on the subresource), the Pod's Node and
kubelet endpoint are looked up, a WebSocket to ``/exec|attach/{ns}/{pod}/{container}`` on the node
agent is opened with the client's subprotocols and query, and messages are relayed both ways
unchanged. Failures before the upgrade answer with a ``Status`` (404 no Pod, 400 no container /
no kubelet endpoint, e.g. the simulated runtime, 403, 401), which kubectl prints.

Port-forward: the client's WebSocket (subprotocol ``SPDY/3.1+portforward.k8s.io``) carries a
SPDY session; its bytes are relayed unchanged to the node agent, which ends the SPDY session.

Deviates: SPDY/3.1 upgrades without a WebSocket (kubectl's fallback) are answered with 400.

Mirrors: kubernetes pkg/registry/core/pod/rest/subresources.go (ExecREST, AttachREST),
pkg/registry/core/pod/strategy.go (ExecLocation, streamLocation: the default container, the
"pod does not have a host assigned" and container-not-valid errors).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlencode

import msgspec

from pumice._util.clock import parse_rfc3339
from pumice._util.gostrings import atoi
from pumice.api.admission import FieldCause
from pumice.api.params import query_values
from pumice.apiserver import errors
from pumice.apiserver.access import Access
from pumice.apiserver.errors import StatusError
from pumice.apiserver.registry import Registry
from pumice.client.websocket import WebSocket, WebSocketError, connect

log = logging.getLogger(__name__)


STREAM_SUBRESOURCES = frozenset({"exec", "attach", "portforward"})
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"



def check_log_options(name: str, query: Mapping[str, str]) -> None:
    """Check a ``pods/<name>/log`` request's options before anything else (the Pod, its
    container, its node agent), as kube-apiserver decodes and validates PodLogOptions first.

    Raises:
        StatusError: 400 BadRequest for a value that does not parse (``tailLines``,
            ``sinceSeconds``, ``limitBytes`` integers; ``sinceTime`` RFC 3339), with Go's
            strconv/time texts (the booleans ``follow``, ``previous``, ``timestamps`` never fail:
            :func:`pumice.api.params.query_bool`); 422 Invalid
            ``PodLogOptions "<name>" is invalid: ...`` for negative ``tailLines``,
            ``sinceSeconds``/``limitBytes`` below 1, or both ``sinceSeconds`` and ``sinceTime``.

    Mirrors: kubernetes pkg/registry/core/pod/rest/log.go (LogREST.Get),
    pkg/apis/core/validation ValidatePodLogOptions, the query conversions of PodLogOptions.
    """
    numbers: dict[str, int] = {}
    for key in ("tailLines", "sinceSeconds", "limitBytes"):
        if key in query:
            try:
                numbers[key] = atoi(query[key], "ParseInt")
            except ValueError as e:
                raise errors.bad_request(str(e)) from None
    if "sinceTime" in query:
        try:
            parse_rfc3339(query["sinceTime"])
        except ValueError as e:  # Go's time.Parse text (metav1.Time's query parameter conversion)
            raise errors.bad_request(str(e)) from None
    causes: list[FieldCause] = []
    tail, since, limit = numbers.get("tailLines"), numbers.get("sinceSeconds"), numbers.get("limitBytes")
    if tail is not None and tail < 0:
        causes.append(FieldCause("tailLines", f"Invalid value: {tail}: must be greater than or equal to 0",
                                 "FieldValueInvalid"))
    if limit is not None and limit < 1:
        causes.append(FieldCause("limitBytes", f"Invalid value: {limit}: must be greater than 0", "FieldValueInvalid"))
    if since is not None and "sinceTime" in query:
        causes.append(FieldCause("", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
                                 "FieldValueForbidden"))
    elif since is not None and since < 1:
        causes.append(FieldCause("sinceSeconds", f"Invalid value: {since}: must be greater than 0",
                                 "FieldValueInvalid"))
    if causes:
        parts = [f"{c.field}: {c.message}" for c in causes]
        body = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        raise StatusError(422, f'PodLogOptions "{name}" is invalid: {body}', "Invalid",
                          {"name": name, "kind": "PodLogOptions",
                           "causes": [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes]})


def kubelet_endpoint(registry: Registry, pod: dict[str, Any], what: str) -> tuple[str, int]:
    """``(InternalIP, kubelet port)`` of the Node ``pod`` is bound to, where the API server reaches
    the node agent for ``what`` (logs, exec, attach, portforward).

    Raises:
        StatusError: 400 when the Pod has no Node yet, or its Node no kubelet endpoint (an agent
            on the simulated runtime runs no processes); 404 when the Node is gone.
    """
    name = (pod.get("metadata") or {}).get("name", "")
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    nodes = registry.scheme.by_api_version_kind("v1", "Node")
    assert nodes is not None
    node = registry.store.get("/nodes", "", node_name)
    if node is None:
        raise errors.not_found(nodes, node_name)
    status = node.obj.get("status") or {}
    ip = next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), None)
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    if not ip or not port:
        raise errors.bad_request(
            f"pod {name} runs on node {node_name}, which has no kubelet endpoint for {what}: its node agent runs "
            "the simulated runtime (no container processes, so no logs, exec or attach)")
    return str(ip), int(port)


def stream_location(registry: Registry, namespace: str, name: str, sub: str,
                    query: dict[str, list[str]]) -> tuple[str, int, str]:
    """``(host, port, target)`` of the node agent endpoint serving ``sub`` for the Pod.

    Raises:
        StatusError: 404 (no Pod or Node), 400 (no host, bad container, no kubelet endpoint).
    """
    pods = registry.scheme.by_api_version_kind("v1", "Pod")
    assert pods is not None
    pod = registry.get(pods, namespace, name).obj
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    inits = [c.get("name") for key in ("initContainers", "ephemeralContainers") for c in spec.get(key) or []]
    container = (query.get("container") or [""])[0]
    if sub == "portforward":
        container = "-"
    elif not container:
        default = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER_ANNOTATION)
        container = str(default) if default in names else (str(names[0]) if len(names) == 1 else "")
        if not container:
            raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                     f"[{' '.join(str(n) for n in names)}]")
    elif container not in names and container not in inits:
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    ip, port = kubelet_endpoint(registry, pod, sub)
    if sub == "portforward":
        return str(ip), int(port), f"/portForward/{namespace}/{name}"
    q = [(k, v) for k, vs in query.items() for v in vs if k != "container"]
    q.append(("container", container))
    target = f"/{sub}/{namespace}/{name}/{container}?{urlencode(q)}"
    return str(ip), int(port), target


class StreamProxy:
    """Serves ASGI WebSocket scopes for the exec and attach subresources."""

    def __init__(self, registry: Registry, access: Access | None) -> None:
        self.registry = registry
        self.access = access

    @staticmethod
    def parse(path: str) -> tuple[str, str, str] | None:
        """``(namespace, pod, subresource)`` of ``/api/v1/namespaces/<ns>/pods/<pod>/<sub>``."""
        parts = [p for p in path.split("/") if p]
        if len(parts) == 7 and parts[:2] == ["api", "v1"] and parts[2] == "namespaces" and parts[4] == "pods" \
                and parts[6] in STREAM_SUBRESOURCES:
            return parts[3], parts[5], parts[6]
        return None

    def check(self, scope: MutableMapping[str, Any], method: str) -> tuple[str, int, str]:
        """Authenticate, authorize and locate (see :func:`stream_location`).

        Raises:
            StatusError: 401, 403, 404, 400.
        """
        path = scope["path"]
        raw_query = scope.get("query_string", b"").decode("latin-1")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.access is not None:
            user = self.access.authenticate(scope, headers.get("authorization", ""))
            user = self.access.impersonate(user, list(scope.get("headers") or []))
            self.access.authorize(user, method, path, query_values(raw_query), upgrade=method == "GET")
        found = self.parse(path)
        if found is None:
            raise StatusError(404, "the server could not find the requested resource", "NotFound", {})
        ns, name, sub = found
        return stream_location(self.registry, ns, name, sub, parse_qs(raw_query, keep_blank_values=True))

    async def serve(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Handle one ``websocket`` scope."""
        msg = await receive()
        if msg.get("type") != "websocket.connect":
            return
        offered = list(scope.get("subprotocols") or [])
        try:
            host, port, target = self.check(scope, "GET")
            try:
                node = await connect(host, port, target, offered)
            except (OSError, TimeoutError, WebSocketError) as e:
                body = getattr(e, "body", b"").decode(errors="replace").strip()
                raise StatusError(500 if not isinstance(e, WebSocketError) or e.status >= 500 else 400,
                                  f"error dialing backend: {body or e}") from None
        except StatusError as e:
            await self._refuse(scope, send, e)
            return
        await send({"type": "websocket.accept", "subprotocol": node.subprotocol})
        await self._relay(node, receive, send)

    async def _refuse(self, scope: dict[str, Any], send: Any, e: StatusError) -> None:
        if "websocket.http.response" in (scope.get("extensions") or {}):
            body = msgspec.json.encode(e.status()) + b"\n"
            await send({"type": "websocket.http.response.start", "status": e.code,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "websocket.http.response.body", "body": body})
            return
        await send({"type": "websocket.close", "code": 1008, "reason": e.message[:120]})

    @staticmethod
    async def _relay(node: WebSocket, receive: Any, send: Any) -> None:
        async def up() -> None:
            while True:
                m = await receive()
                if m["type"] == "websocket.disconnect":
                    return
                data = m.get("bytes")
                if data is None and m.get("text") is not None:
                    data = m["text"].encode()
                if data is not None:
                    await node.send(data)

        async def down() -> None:
            while True:
                data = await node.recv()
                if data is None:
                    return
                await send({"type": "websocket.send", "bytes": data})

        tasks = [asyncio.create_task(up()), asyncio.create_task(down())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(BaseException):
                    await t
            await node.close()
            with contextlib.suppress(Exception):
                await send({"type": "websocket.close", "code": 1000})
