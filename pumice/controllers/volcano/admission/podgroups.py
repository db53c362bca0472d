"""Admission for PodGroups (``scheduling.volcano.sh/v1beta1`` ``podgroups``).

- :class:`PodGroupMutator` (``mutatepodgroup.volcano.sh``, CREATE): a PodGroup in the ``default``
  queue (or with no queue) takes the queue named by its Namespace's annotation
  ``scheduling.volcano.sh/queue-name``; otherwise the queue defaults to ``default`` (the CRD default).
- :class:`PodGroupValidator` (``validatepodgroup.volcano.sh``, CREATE): the queue must exist and be
  Open; network topology must not set both tier fields.

Mirrors: volcano pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go and
pkg/webhooks/admission/podgroups/validate/validate_podgroup.go.
"""

from __future__ import annotations

from pumice.api import scheme
from pumice.api.admission import AdmissionRequest, ObjectReader
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.admission._common import deny, get_queue, is_kind, queue_state

MUTATE_WEBHOOK = "mutatepodgroup.volcano.sh"
VALIDATE_WEBHOOK = "validatepodgroup.volcano.sh"


def _is_pg(req: AdmissionRequest) -> bool:
    return is_kind(req, "scheduling.volcano.sh", "podgroups")


class PodGroupMutator:
    name = MUTATE_WEBHOOK

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_pg(req) and req.operation == "CREATE"

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        pg = req.obj
        if pg is None:
            return
        spec = pg.setdefault("spec", {})
        if not spec.get("queue"):
            spec["queue"] = keys.DEFAULT_QUEUE
        if spec["queue"] != keys.DEFAULT_QUEUE or not req.namespace:
            return
        ns_kind = reader.kind("v1", "Namespace") or scheme.NAMESPACE
        ns = await reader.get(ns_kind, req.namespace)
        q = ((ns or {}).get("metadata", {}).get("annotations") or {}).get(keys.QUEUE_NAME_ANNOTATION_KEY)
        if q:
            spec["queue"] = q


class PodGroupValidator:
    name = VALIDATE_WEBHOOK

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_pg(req) and req.operation == "CREATE"

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        pg = req.obj or {}
        spec = pg.get("spec") or {}
        errs: list[str] = []
        qname = spec.get("queue") or ""
        if qname:
            queue = await get_queue(reader, qname)
            if queue is None:
                errs.append(f'unable to find queue: queue.scheduling.volcano.sh "{qname}" not found')
            elif queue_state(queue) != keys.QueueState.OPEN:
                errs.append(f"can only submit PodGroup to queue with state `Open`, queue `{qname}` "
                            f"status is `{queue_state(queue)}`.")
        nt = spec.get("networkTopology") or {}
        nt_errs: list[str] = []
        if nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
            nt_errs.append("must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
                           "simultaneously.")
        for policy in spec.get("subGroupPolicy") or []:
            pnt = policy.get("networkTopology") or {}
            if pnt.get("highestTierAllowed") is not None and pnt.get("highestTierName"):
                nt_errs.append(f"in subGroupPolicy '{policy.get('name', '')}': must not specify "
                               "'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously.")
                break
        if nt_errs:
            errs.append(" ".join(nt_errs))
        if errs:
            raise deny(self.name, "; ".join(errs))
