"""The admission webhook server: Volcano's webhooks for a real kube-apiserver, running the same admission plugins the embedded API server runs in-process.

Each :class:`Webhook` serves one upstream webhook name at its upstream path (``mutatejob.volcano.sh``
at ``/jobs/mutate``, ``validatequeue.volcano.sh`` at ``/queues/validate`` ...) and runs the plugins
of that name: an ``admission.k8s.io/v1`` AdmissionReview in, an AdmissionReview out. A mutating
webhook answers with a JSONPatch (RFC 6902) that replaces each top-level field the plugins changed;
a denial carries the plugin's Status (code, reason, message), which kube-apiserver reports as
``admission webhook "<name>" denied the request: <message>``, as upstream's does.

:func:`webhook_configurations` builds the MutatingWebhookConfiguration and
ValidatingWebhookConfiguration that point a cluster at the server's Service; ``pumice install
--print`` includes them.

Mirrors: volcano pkg/webhooks (router, admission paths and rules) and cmd/webhook-manager.
"""

from __future__ import annotations

import base64
import builtins
import copy
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from pumice.api import Obj
from pumice.api.admission import AdmissionError, AdmissionRequest, Operation
from pumice.api.scheme import ResourceKind
from pumice.api.selectors import field_value
from pumice.client.base import ApiError, KubeClient, get_or_none, is_not_found

__all__ = ["ClientReader", "Rule", "Webhook", "build_app", "default_webhooks", "webhook_configurations"]

log = logging.getLogger(__name__)

_decode = msgspec.json.Decoder().decode
_DENIAL_PREFIX = re.compile(r'^admission webhook "[^"]*" denied the request: ')
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class Rule:
    """A RuleWithOperations of a webhook configuration."""

    api_group: str
    api_version: str
    resources: tuple[str, ...]
    operations: tuple[Operation, ...]

    def to_wire(self) -> Obj:
        return {"apiGroups": [self.api_group], "apiVersions": [self.api_version],
                "resources": list(self.resources), "operations": list(self.operations)}


@dataclass(frozen=True)
class Webhook:
    """One served webhook: its upstream ``name``, ``path``, kind, rules and plugins.

    ``failure_policy``: what kube-apiserver does when the server cannot be reached (``Ignore``
    for Pods, so that a webhook outage never blocks every Pod of the cluster).
    """

    name: str
    path: str
    mutating: bool
    rules: tuple[Rule, ...]
    plugins: tuple[Any, ...]
    failure_policy: Literal["Fail", "Ignore"] = "Fail"
    system_namespaces_excluded: bool = False


# (webhook name, path, rules) as volcano's webhook-manager registers them
_VOLCANO_ROUTES: dict[str, tuple[str, tuple[Rule, ...]]] = {
    "mutatejob.volcano.sh": ("/jobs/mutate", (Rule("batch.volcano.sh", "v1alpha1", ("jobs",), ("CREATE",)),)),
    "validatejob.volcano.sh": ("/jobs/validate",
                               (Rule("batch.volcano.sh", "v1alpha1", ("jobs",), ("CREATE", "UPDATE")),)),
    "mutatequeue.volcano.sh": ("/queues/mutate",
                               (Rule("scheduling.volcano.sh", "v1beta1", ("queues",), ("CREATE",)),)),
    "validatequeue.volcano.sh": ("/queues/validate", (Rule("scheduling.volcano.sh", "v1beta1", ("queues",),
                                                           ("CREATE", "UPDATE", "DELETE")),)),
    "mutatepodgroup.volcano.sh": ("/podgroups/mutate",
                                  (Rule("scheduling.volcano.sh", "v1beta1", ("podgroups",), ("CREATE",)),)),
    "validatepodgroup.volcano.sh": ("/podgroups/validate",
                                    (Rule("scheduling.volcano.sh", "v1beta1", ("podgroups",), ("CREATE",)),)),
    "mutatepod.volcano.sh": ("/pods/mutate", (Rule("", "v1", ("pods",), ("CREATE",)),)),
    "validatepod.volcano.sh": ("/pods/validate", (Rule("", "v1", ("pods",), ("CREATE",)),)),
    "validatehypernode.volcano.sh": ("/hypernodes/validate", (Rule("topology.volcano.sh", "v1alpha1", ("hypernodes",),
                                                                   ("CREATE", "UPDATE")),)),
}
# plugins that upstream runs elsewhere (a ValidatingAdmissionPolicy) join the webhook of their kind
_JOINS = {"job-validation-policy": "validatejob.volcano.sh"}


def default_webhooks(*, scheduler_name: str = "volcano") -> list[Webhook]:
    """The webhooks of Volcano's admission plugins. (ray.io objects have no webhook: the KubeRay
    controllers validate them and report with events, as upstream's operator does.)

    Raises:
        ValueError: a plugin has no route and its name does not follow Volcano's pattern.
    """
    from pumice.controllers.volcano import admission_plugins

    mutating, validating = admission_plugins(scheduler_name=scheduler_name)
    grouped: dict[str, list[Any]] = {}
    everything: list[Any] = [*mutating, *validating]
    for p in everything:
        grouped.setdefault(_JOINS.get(p.name, p.name), []).append(p)
    hooks: list[Webhook] = []
    for name, plugins in grouped.items():
        path, rules = _VOLCANO_ROUTES.get(name) or _derived_route(name)
        pods = rules[0].resources == ("pods",)
        hooks.append(Webhook(name, path, name.startswith("mutate"), rules, tuple(plugins),
                             failure_policy="Ignore" if pods else "Fail", system_namespaces_excluded=pods))
    return hooks


def _derived_route(name: str) -> tuple[str, tuple[Rule, ...]]:
    """The path and rule of a Volcano webhook named ``<mutate|validate><kind>.volcano.sh`` that
    the table does not list (upstream's pattern: ``/<kind>s/<mutate|validate>``), its kind looked
    up among the Volcano kinds pumice declares.

    Raises:
        ValueError: the name does not follow the pattern or names no declared Volcano kind.
    """
    from pumice.api.scheme import CUSTOM_KINDS

    m = re.fullmatch(r"(mutate|validate)([a-z]+)\.volcano\.sh", name)
    kinds = [rk for rk in CUSTOM_KINDS if rk.group.endswith("volcano.sh")] if m else []
    rk = next((k for k in kinds if k.kind.lower() == m.group(2)), None) if m else None
    if m is None or rk is None:
        raise ValueError(f"admission plugin {name!r} has no webhook route")
    ops: tuple[Operation, ...] = ("CREATE",) if m.group(1) == "mutate" else ("CREATE", "UPDATE")
    return f"/{rk.plural}/{m.group(1)}", (Rule(rk.group, rk.version, (rk.plural,), ops),)


class ClientReader:
    """The plugins' :class:`~pumice.api.admission.ObjectReader`, backed by the API (the webhook
    reads Queues, PodGroups ... of the cluster it serves)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj | None:
        return await get_or_none(self.client, kind, name, namespace)

    async def list(self, kind: ResourceKind, namespace: str | None = None) -> list[Obj]:
        return list((await self.client.list(kind, namespace)).items)

    async def list_by_field(self, kind: ResourceKind, path: str, value: str,
                            namespace: str | None = None) -> builtins.list[Obj]:
        """A list filtered here (a custom resource serves no field selector but the metadata ones)."""
        return [o for o in await self.list(kind, namespace) if field_value(o, path) == value]

    def kind(self, api_version: str, kind: str) -> ResourceKind | None:
        return self.client.scheme.by_api_version_kind(api_version, kind)


def _patch(before: Obj, after: Obj) -> list[Obj]:
    """A JSONPatch turning ``before`` into ``after``, one operation per changed top-level field."""
    ops: list[Obj] = []
    for key in sorted(set(before) | set(after)):
        path = "/" + key.replace("~", "~0").replace("/", "~1")
        if key not in after:
            ops.append({"op": "remove", "path": path})
        elif key not in before:
            ops.append({"op": "add", "path": path, "value": after[key]})
        elif before[key] != after[key]:
            ops.append({"op": "replace", "path": path, "value": after[key]})
    return ops


async def review(hook: Webhook, body: Obj, client: KubeClient) -> Obj:
    """Answer one AdmissionReview (``admission.k8s.io/v1``) for ``hook``.

    Raises:
        ValueError: the body is not an AdmissionReview with a request.
    """
    req = body.get("request") if isinstance(body, dict) else None
    if not isinstance(req, dict) or "uid" not in req:
        raise ValueError("the body is not an admission.k8s.io/v1 AdmissionReview with a request")
    kind_ref = req.get("kind") or {}
    group, version = kind_ref.get("group", ""), kind_ref.get("version", "")
    api_version = f"{group}/{version}" if group else version
    response: Obj = {"uid": req["uid"], "allowed": True}
    try:
        rk = await client.resolve(api_version, kind_ref.get("kind", ""))
    except ApiError as e:
        if not is_not_found(e):
            raise
        return _answer(body, response)  # a kind the server does not serve: nothing of ours applies
    obj = req.get("object")
    for raw in (obj, req.get("oldObject")):
        failure = decode_error(rk, raw)
        if failure is not None:
            log.info("webhook %s denied %s %s: %s", hook.name, rk.kind, req.get("name") or "", failure)
            return _answer(body, {"uid": req["uid"], "allowed": False, "status": {"message": failure}})
    original = copy.deepcopy(obj) if isinstance(obj, dict) else None
    areq = AdmissionRequest(
        operation=req.get("operation", "CREATE"), kind=rk, namespace=req.get("namespace") or None,
        name=req.get("name") or ((obj or {}).get("metadata") or {}).get("name", ""),
        obj=obj if isinstance(obj, dict) else None, old=req.get("oldObject"),
        subresource=req.get("subResource") or "", dry_run=bool(req.get("dryRun")),
        user=((req.get("userInfo") or {}).get("username") or ""))
    reader = ClientReader(client)
    try:
        for plugin in hook.plugins:
            if not plugin.handles(areq):
                continue
            if hook.mutating:
                await plugin.admit(areq, reader)
            else:
                await plugin.validate(areq, reader)
    except AdmissionError as e:
        log.info("webhook %s denied %s %s/%s: %s", hook.name, rk.kind, areq.namespace or "", areq.name, e.message)
        # the plugins word denials as kube-apiserver reports them; it adds that prefix itself
        message = _DENIAL_PREFIX.sub("", e.message, count=1)
        status: Obj = {"code": e.code, "message": message}
        if e.reason:
            status["reason"] = e.reason
        if e.causes:
            status["details"] = {"causes": [{"field": c.field, "message": c.message, "reason": c.reason}
                                            for c in e.causes]}
        return _answer(body, {"uid": req["uid"], "allowed": False, "status": status})
    if hook.mutating and original is not None and areq.obj is not None:
        ops = _patch(original, areq.obj)
        if ops:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(_encode(ops)).decode()
    return _answer(body, response)


_compiled: dict[tuple[str, str], Any] = {}


def decode_error(rk: ResourceKind, obj: Any) -> str | None:
    """What decoding ``obj`` (an AdmissionReview's ``object`` or ``oldObject``) into the Go type
    of ``rk`` says, None when it decodes: upstream's webhooks decode first (``schema.DecodeJob``,
    ``DecodeQueue``, ``DecodePodGroup``, the Pod and HyperNode decoders) and answer a failure as
    a refusal with the error's text, so a value of the wrong JSON type anywhere (``spec.tasks:
    "x"``, ``replicas: "2"``, ``weight: "x"``) is ``json: cannot unmarshal string into Go struct
    field JobSpec.spec.tasks of type []v1alpha1.TaskSpec``, never defaulted as if absent.

    The types are checked with the API server's own checks: a custom resource against the
    structural schema pumice publishes for it (:class:`~pumice.api.schema.CompiledSchema`), its
    metadata and built-in kinds against the lightkube model
    (:func:`~pumice.api.fields.type_causes`); the first cause in document order is the
    one Go's decoder reports. ``null`` is unset, as Go reads it. Kinds pumice has no model of are
    not checked (None).

    Mirrors: volcano pkg/webhooks/schema (DecodeJob ...), util.ToAdmissionResponse.
    """
    from lightkube.models.core_v1 import Pod

    from pumice.api.crds import crd_spec, structural_schema
    from pumice.api.fields import go_unmarshal_error, model_for, object_meta_tree, type_causes
    from pumice.api.schema import CompiledSchema

    spec = crd_spec(rk.group, rk.kind)
    model: type | None = spec.model if spec is not None else (Pod if (rk.group, rk.kind) == ("", "Pod") else None)
    if model is None or obj is None:
        return None
    if not isinstance(obj, dict):
        return go_unmarshal_error(model, obj, "", rk.version)
    if spec is not None:
        key = (rk.group, rk.kind)
        compiled = _compiled.get(key)
        if compiled is None:
            compiled = _compiled[key] = CompiledSchema(structural_schema(spec.model))
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        causes = [c for c in compiled.validate(body) if _decode_cause(c)]
        md = obj.get("metadata")
        if md is not None:
            causes += [c for c in type_causes(object_meta_tree(), md, "metadata") if _decode_cause(c)]
    else:
        causes = [c for c in type_causes(model_for(rk), obj) if _decode_cause(c)]
    if not causes:
        return None
    order = {k: i for i, k in enumerate(obj)}
    first = min(causes, key=lambda c: order.get(re.split(r"[.\[]", c.field, maxsplit=1)[0], len(order)))
    return go_unmarshal_error(model, obj, first.field, rk.version)


def _decode_cause(cause: Any) -> bool:
    """Whether a type check's cause is one Go's decoder fails on: a wrong JSON type (not a null,
    which it reads as unset) or an integer out of its Go type's range."""
    if cause.reason == "FieldValueTypeInvalid":
        return not cause.message.startswith("Invalid value: null")
    return cause.reason == "FieldValueInvalid" and cause.message.endswith(("must be of type int32",
                                                                            "must be of type int64"))


def _answer(body: Obj, response: Obj) -> Obj:
    return {"apiVersion": body.get("apiVersion") or "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}


def build_app(hooks: Sequence[Webhook], client: KubeClient) -> Starlette:
    """The ASGI app: ``POST <hook.path>`` per webhook, ``GET /healthz``. A body that is not an
    AdmissionReview gets 400 with one line; a plugin that fails unexpectedly is logged and the
    request answered 500, which kube-apiserver treats per the webhook's failurePolicy."""

    def endpoint(hook: Webhook) -> Any:
        async def handle(request: Request) -> Response:
            try:
                body = _decode(await request.body())
                answer = await review(hook, body, client)
            except (msgspec.DecodeError, ValueError) as e:
                return PlainTextResponse(f"bad AdmissionReview: {e}\n", 400)
            except Exception:
                log.exception("webhook %s failed", hook.name)
                return PlainTextResponse(f"webhook {hook.name} failed; see its log\n", 500)
            return Response(_encode(answer), media_type="application/json")

        return handle

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [Route(h.path, endpoint(h), methods=["POST"]) for h in hooks]
    routes.append(Route("/healthz", healthz))
    return Starlette(routes=routes)


def webhook_configurations(hooks: Sequence[Webhook], *, namespace: str, service: str, ca_bundle: bytes,
                           port: int = 443, name: str = "pumice-admission", url: str | None = None) -> list[Obj]:
    """The MutatingWebhookConfiguration and ValidatingWebhookConfiguration for ``hooks``, served
    by Service ``namespace/service`` whose certificate ``ca_bundle`` (PEM) signs, or, with ``url``
    (``https://host:port``), by a server outside the cluster at that address."""
    ca = base64.b64encode(ca_bundle).decode()

    def entry(h: Webhook) -> Obj:
        client: Obj = ({"url": f"{url.rstrip('/')}{h.path}"} if url else
                       {"service": {"namespace": namespace, "name": service, "path": h.path, "port": port}})
        e: Obj = {"name": h.name,
                  "clientConfig": {**client, "caBundle": ca},
                  "rules": [r.to_wire() for r in h.rules], "failurePolicy": h.failure_policy,
                  "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}
        if h.system_namespaces_excluded:
            e["namespaceSelector"] = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                            "values": ["kube-system", namespace]}]}
        return e

    mutating = [entry(h) for h in hooks if h.mutating]
    validating = [entry(h) for h in hooks if not h.mutating]
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": name}, "webhooks": mutating},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": name}, "webhooks": validating},
    ]
