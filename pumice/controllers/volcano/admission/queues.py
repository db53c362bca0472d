"""Admission for Queues (``scheduling.volcano.sh/v1beta1`` ``queues``, cluster-scoped).

- :class:`QueueMutator` (``mutatequeue.volcano.sh``, CREATE): ``reclaimable`` nil -> true,
  ``weight`` 0 -> 1, hierarchy annotations not starting with ``root`` get ``root/`` and ``1/``.
- :class:`QueueValidator` (``validatequeue.volcano.sh``, CREATE/UPDATE/DELETE): quantities valid,
  guarantee <= deserved <= capability, state in [Open Closed], hierarchy annotations, ``spec.parent``
  (not itself, exists, depth, no allocated pods on a parent getting its first child), child vs.
  ancestor capability, children's sums; DELETE of ``default``/``root``, of a queue with child
  queues, with allocated Pods, or with PodGroups is refused (the last two are switches, on here).

Mirrors: volcano pkg/webhooks/admission/queues/mutate/mutate_queue.go and
pkg/webhooks/admission/queues/validate/validate_queue.go.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pumice.api import scheme
from pumice.api.admission import AdmissionRequest, ObjectReader
from pumice.api.quantity import QuantityError, parse_quantity
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.admission._common import (
    child_queues,
    deny,
    get_queue,
    is_kind,
    list_queues,
    queue_parent,
)
from pumice.controllers.volcano.admission._validation import quantity_errors

MUTATE_WEBHOOK = "mutatequeue.volcano.sh"
VALIDATE_WEBHOOK = "validatequeue.volcano.sh"
DEFAULT_MAX_QUEUE_DEPTH = 5


def _is_queue(req: AdmissionRequest) -> bool:
    return is_kind(req, "scheduling.volcano.sh", "queues")


def mutate_queue(queue: dict[str, Any]) -> None:
    """Apply the CREATE defaults of ``mutatequeue.volcano.sh`` in place (pure)."""
    ann = (queue.setdefault("metadata", {}).get("annotations")) or {}
    hierarchy, weights = ann.get(keys.KUBE_HIERARCHY_ANNOTATION_KEY, ""), ann.get(keys.KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY, "")
    if hierarchy and weights and not hierarchy.startswith("root"):
        ann[keys.KUBE_HIERARCHY_ANNOTATION_KEY] = f"root/{hierarchy}"
        ann[keys.KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY] = f"1/{weights}"
        queue["metadata"]["annotations"] = ann
    spec = queue.setdefault("spec", {})
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    if not spec.get("weight"):
        spec["weight"] = 1


class QueueMutator:
    name = MUTATE_WEBHOOK

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_queue(req) and req.operation == "CREATE"

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is not None:
            mutate_queue(req.obj)


def _q(v: Any) -> Fraction | None:
    try:
        return parse_quantity(v)
    except (QuantityError, TypeError):
        return None


def _qstr(v: Any) -> str:
    return str(v)


def validate_queue_resources(spec: dict[str, Any]) -> list[str]:
    """``validateResourceQuantityOfQueue``: field errors in apimachinery wording."""
    path = "requestBody.spec"
    errs: list[str] = []
    cap = spec.get("capability") or {}
    des = spec.get("deserved") or {}
    gua = (spec.get("guarantee") or {}).get("resource") or {}
    errs += quantity_errors(cap, f"{path}.capability")
    errs += quantity_errors(des, f"{path}.deserved")
    for rname, gq in gua.items():
        errs += quantity_errors({rname: gq}, f"{path}.guarantee.resource")
        if rname not in des:
            errs.append(f"{path}.deserved.{rname}: Invalid value: \"<nil>\": "
                        f"deserved[{rname}] must be >= guarantee[{rname}]={_qstr(gq)}")
            continue
        d, g = _q(des[rname]), _q(gq)
        if d is not None and g is not None and d < g:
            errs.append(f"{path}.deserved.{rname}: Invalid value: \"{_qstr(des[rname])}\": "
                        f"deserved[{rname}]={_qstr(des[rname])} must be >= guarantee[{rname}]={_qstr(gq)}")
    for rname, dq in des.items():
        if rname not in cap:
            continue
        d, c = _q(dq), _q(cap[rname])
        if d is not None and c is not None and d > c:
            errs.append(f"{path}.deserved.{rname}: Invalid value: \"{_qstr(dq)}\": "
                        f"deserved[{rname}]={_qstr(dq)} must be <= capability[{rname}]={_qstr(cap[rname])}")
    return errs


def validate_queue_state(state: str) -> list[str]:
    if not state or state in (keys.QueueState.OPEN, keys.QueueState.CLOSED):
        return []
    return [f"requestBody.spec.state: Invalid value: \"{state}\": queue state must be in [Open Closed]"]


def validate_hierarchy_annotations(queue: dict[str, Any], others: list[dict[str, Any]]) -> list[str]:
    path = "requestBody.metadata.annotations"
    ann = (queue.get("metadata") or {}).get("annotations") or {}
    hierarchy, weights = ann.get(keys.KUBE_HIERARCHY_ANNOTATION_KEY, ""), ann.get(keys.KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY, "")
    if not hierarchy and not weights:
        return []
    paths, ws = hierarchy.split("/"), weights.split("/")
    if len(paths) != len(ws):
        return [f"{path}: Invalid value: \"{hierarchy}\": {keys.KUBE_HIERARCHY_ANNOTATION_KEY} must have the same "
                f"length with {keys.KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY}"]
    for w in ws:
        try:
            wf = float(w)
        except ValueError:
            return [f"{path}: Invalid value: \"{weights}\": {w} in the {weights} is invalid number: "
                    f"strconv.ParseFloat: parsing \"{w}\": invalid syntax"]
        if wf <= 0:
            return [f"{path}: Invalid value: \"{weights}\": {w} in the {weights} must be larger than 0"]
    qname = queue["metadata"].get("name")
    for other in others:
        oh = ((other.get("metadata") or {}).get("annotations") or {}).get(keys.KUBE_HIERARCHY_ANNOTATION_KEY, "")
        if oh and other["metadata"].get("name") != qname and oh.startswith(hierarchy + "/"):
            return [f"{path}: Invalid value: \"{hierarchy}\": {hierarchy} is not allowed to be in the "
                    f"sub path of {oh} of queue {other['metadata']['name']}"]
    return []


def _aggregate(errs: list[str]) -> str:
    if len(errs) == 1:
        return errs[0]
    return "[" + ", ".join(errs) + "]"


def _res(rl: Any) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for k, v in (rl or {}).items():
        q = _q(v)
        if q is not None:
            out[k] = q
    return out


def _fmt(name: str, v: Fraction) -> str:
    """One capability value in the hierarchy messages: cpu as ``NewMilliQuantity(int64(milli),
    DecimalSI).String()``, memory as ``NewQuantity(int64(bytes), BinarySI).String()``, others
    ``%.2f``.

    Mirrors: volcano pkg/webhooks/admission/queues/validate/validate_queue.go
    formatResourceWithType."""
    from pumice.api.quantity import format_bytes, format_millis

    if name == "cpu":
        return format_millis(int(v * 1000))
    if name == "memory":
        return format_bytes(int(v))
    return f"{float(v):.2f}"


class QueueValidator:
    """``validatequeue.volcano.sh``."""

    name = VALIDATE_WEBHOOK

    def __init__(self, *, max_queue_depth: int = DEFAULT_MAX_QUEUE_DEPTH,
                 check_allocated_pods_on_delete: bool = True,
                 refuse_delete_with_podgroups: bool = True) -> None:
        """Args:
            max_queue_depth: upstream ``--max-queue-depth`` (5).
            check_allocated_pods_on_delete: upstream ``--enable-queue-allocated-pods-check``.
                Deviates: on by default here (upstream's flag defaults to false), so a queue that
                still runs Pods cannot be deleted.
            refuse_delete_with_podgroups: pumice's own rule: a queue that still has PodGroups
                cannot be deleted (they would be left in a queue the scheduler ignores).
        """
        self.max_queue_depth = max_queue_depth
        self.check_allocated_pods_on_delete = check_allocated_pods_on_delete
        self.refuse_delete_with_podgroups = refuse_delete_with_podgroups

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_queue(req) and req.operation in ("CREATE", "UPDATE", "DELETE")

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.operation == "DELETE":
            msg = await self._deleting(req.name, reader)
            if msg:
                raise deny(self.name, msg)
            return
        queue = req.obj or {}
        if req.subresource:
            return
        errs = validate_queue_resources(queue.get("spec") or {})
        errs += validate_queue_state(str((queue.get("status") or {}).get("state") or ""))
        errs += validate_hierarchy_annotations(queue, await list_queues(reader))
        if errs:
            raise deny(self.name, _aggregate(errs))
        old = req.old
        if req.operation == "CREATE" or (old is not None and queue_parent(old) != queue_parent(queue)):
            msg = await self._hierarchical(queue, reader)
            if msg:
                raise deny(self.name, msg)
        if queue["metadata"].get("name") != keys.ROOT_QUEUE and (
                req.operation == "CREATE" or old is None or _resources_changed(old, queue)):
            msg = await self._hierarchy_resources(queue, reader)
            if msg:
                raise deny(self.name, msg)

    async def _deleting(self, name: str, reader: ObjectReader) -> str:
        if name in (keys.DEFAULT_QUEUE, keys.ROOT_QUEUE):
            return f"`{name}` queue can not be deleted"
        queue = await get_queue(reader, name)
        if queue is None:
            return f'queue.scheduling.volcano.sh "{name}" not found'
        if self.check_allocated_pods_on_delete:
            pods = _q(((queue.get("status") or {}).get("allocated") or {}).get("pods"))
            if pods:
                return f"queue {name} cannot be deleted because it has allocated Pods: {int(pods)}"
        if self.refuse_delete_with_podgroups:
            pg_kind = reader.kind(keys.SCHEDULING_API_VERSION, "PodGroup") or scheme.POD_GROUP
            pgs = [pg for pg in await reader.list(pg_kind)
                   if ((pg.get("spec") or {}).get("queue") or keys.DEFAULT_QUEUE) == name]
            if pgs:
                return f"queue {name} cannot be deleted because it has {len(pgs)} PodGroups"
        children = [c["metadata"]["name"] for c in await child_queues(reader, name)]
        if children:
            return (f"queue {name} can not be deleted because it has {len(children)} child queues: "
                    + ", ".join(children))
        return ""

    async def _hierarchical(self, queue: dict[str, Any], reader: ObjectReader) -> str:
        name, parent = queue["metadata"].get("name"), queue_parent(queue)
        if parent in ("", keys.ROOT_QUEUE):
            return ""
        if parent == name:
            return f"queue {name} cannot use itself as parent"
        depth, p = 1, parent
        while p not in ("", keys.ROOT_QUEUE):
            depth += 1
            if depth > self.max_queue_depth:
                return f"queue {name} exceeds the maximum allowed depth of {self.max_queue_depth}"
            pq = await get_queue(reader, p)
            if pq is None:
                return (f"failed to get parent queue {p} of queue {name}: "
                        f'queue.scheduling.volcano.sh "{p}" not found')
            p = queue_parent(pq)
        pq = await get_queue(reader, parent)
        assert pq is not None
        if not await child_queues(reader, parent):
            pods = _q(((pq.get("status") or {}).get("allocated") or {}).get("pods"))
            if pods:
                return (f"queue {parent} cannot be the parent queue of queue {name} because it has "
                        f"allocated Pods: {int(pods)}")
        return ""

    async def _hierarchy_resources(self, queue: dict[str, Any], reader: ObjectReader) -> str:
        name, parent = queue["metadata"].get("name"), queue_parent(queue)
        spec = queue.get("spec") or {}
        if parent not in ("", keys.ROOT_QUEUE):
            pq = await get_queue(reader, parent)
            if pq is None:
                return f'parent queue {parent} not found: queue.scheduling.volcano.sh "{parent}" not found'
            for r, mine in _res(spec.get("capability")).items():
                limit = await self._ancestor_capability(queue, r, reader)
                if limit is not None and mine > limit:
                    return (f"queue {name} capability[{r}]={_fmt(r, mine)} exceeds its ancestor's "
                            f"capability={_fmt(r, limit)}")
            siblings = [s for s in await child_queues(reader, parent) if s["metadata"]["name"] != name]
            msg = _sum_check(pq, [*siblings, queue], f"parent queue {parent} validation failed")
            if msg:
                return msg
        children = await child_queues(reader, name)
        if children:
            for r, pval in _res(spec.get("capability")).items():
                child_max = Fraction(0)
                for c in children:
                    child_max = max(child_max, await self._subtree_max(c, r, reader))
                if pval < child_max:
                    return (f"queue {name} capability[{r}]={_fmt(r, pval)} is smaller than its "
                            f"descendants' max capability={_fmt(r, child_max)}")
            msg = _sum_check(queue, children, f"queue {name} validation failed")
            if msg:
                return msg
        return ""

    async def _ancestor_capability(self, q: dict[str, Any], r: str, reader: ObjectReader) -> Fraction | None:
        p = queue_parent(q)
        while p not in ("", keys.ROOT_QUEUE):
            pq = await get_queue(reader, p)
            if pq is None:
                return None
            v = _res((pq.get("spec") or {}).get("capability")).get(r)
            if v:
                return v
            p = queue_parent(pq)
        return None

    async def _subtree_max(self, q: dict[str, Any], r: str, reader: ObjectReader) -> Fraction:
        v = _res((q.get("spec") or {}).get("capability")).get(r)
        if v:
            return v
        best = Fraction(0)
        for c in await child_queues(reader, q["metadata"]["name"]):
            best = max(best, await self._subtree_max(c, r, reader))
        return best


def _resources_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    o, n = old.get("spec") or {}, new.get("spec") or {}
    return any(o.get(k) != n.get(k) for k in ("parent", "capability", "deserved", "guarantee"))


def _sum_check(parent: dict[str, Any], children: list[dict[str, Any]], prefix: str) -> str:
    pspec = parent.get("spec") or {}
    pg, pd = _res((pspec.get("guarantee") or {}).get("resource")), _res(pspec.get("deserved"))
    tg: dict[str, Fraction] = {}
    td: dict[str, Fraction] = {}
    for c in children:
        cspec = c.get("spec") or {}
        for k, v in _res((cspec.get("guarantee") or {}).get("resource")).items():
            tg[k] = tg.get(k, Fraction(0)) + v
        if _less_partly(pg, tg):
            return f"{prefix}: sum of children's guarantee ({_rstr(tg)}) exceeds parent's guarantee limit ({_rstr(pg)})"
        for k, v in _res(cspec.get("deserved")).items():
            td[k] = td.get(k, Fraction(0)) + v
        if _less_partly(pd, td):
            return f"{prefix}: sum of children's deserved ({_rstr(td)}) exceeds parent's deserved limit ({_rstr(pd)})"
    return ""


def _less_partly(limit: dict[str, Fraction], total: dict[str, Fraction]) -> bool:
    """Resource.LessPartly(limit, total, Zero): some dimension of ``limit`` is below ``total``
    (a missing dimension of ``limit`` counts as 0, as upstream)."""
    return any(limit.get(k, Fraction(0)) < v for k, v in total.items() if v > 0)


def _rstr(r: dict[str, Fraction]) -> str:
    return ", ".join(f"{k} {_fmt(k, v)}" for k, v in sorted(r.items()))
