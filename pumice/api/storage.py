"""PersistentVolume and PersistentVolumeClaim facts shared by the PersistentVolume binder and the
schedulers' VolumeBinding checks (pure functions over wire objects).

Mirrors: kubernetes pkg/controller/volume/persistentvolume/index.go (the checks of
findMatchingVolume), component-helpers storage/volume (GetPersistentVolumeClaimClass,
PersistentVolumeClaimHasClass), component-helpers storage/ephemeral (the claim of a generic
ephemeral volume), pkg/volume/util CheckNodeAffinity and the annotation names of
pkg/controller/volume/persistentvolume/util.
"""

from __future__ import annotations

import logging
from typing import Any

from pumice.api import Obj
from pumice.api.quantity import parse_quantity
from pumice.api.selectors import SelectorError, from_label_selector, from_node_selector_requirements

log = logging.getLogger(__name__)

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
"""On every PersistentVolumeClaim (admission); removed once no Pod uses the claim being deleted."""
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"
"""On every PersistentVolume (admission); removed once the volume being deleted is not Bound."""
NO_PROVISIONER = "kubernetes.io/no-provisioner"
"""The provisioner of a StorageClass whose volumes are made by hand (local volumes)."""
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


def storage_bytes(obj: Obj, where: str) -> int:
    """``spec.<where>.storage`` in bytes (``capacity`` of a volume); 0 when absent or unreadable."""
    try:
        return int(parse_quantity(((obj.get("spec") or {}).get(where) or {}).get("storage", "0")))
    except (ValueError, TypeError):
        return 0


def requested_bytes(pvc: Obj) -> int:
    """The claim's ``spec.resources.requests.storage`` in bytes (0 when absent or unreadable)."""
    res = (pvc.get("spec") or {}).get("resources") or {}
    try:
        return int(parse_quantity((res.get("requests") or {}).get("storage", "0")))
    except (ValueError, TypeError):
        return 0


def class_of(obj: Obj) -> str:
    """The StorageClass name of a volume or claim: the beta annotation first, then
    ``spec.storageClassName`` ("" for none)."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str((obj.get("spec") or {}).get("storageClassName") or "")


def volume_claim_name(pod: Obj, volume: Obj) -> str:
    """The name of the claim made for ``volume``, a generic ephemeral volume of ``pod``:
    ``<pod name>-<volume name>`` (the name is all it takes: check the claim with
    :func:`why_not_for_pod` before using it).

    Mirrors: component-helpers storage/ephemeral VolumeClaimName."""
    return f"{(pod.get('metadata') or {}).get('name') or ''}-{volume.get('name', '')}"


def why_not_for_pod(pod: Obj, pvc: Obj) -> str | None:
    """Why ``pvc`` is not the claim made for ``pod``'s ephemeral volume, in kube's words:
    ``PVC <ns>/<claim> was not created for pod <ns>/<pod> (pod is not owner)``; None when it is
    (same namespace and controlled by the Pod).

    Mirrors: component-helpers storage/ephemeral VolumeIsForPod (its error; nil -> None)."""
    pmd, cmd = pod.get("metadata") or {}, pvc.get("metadata") or {}
    owned = any(r.get("controller") and r.get("uid") == pmd.get("uid") for r in cmd.get("ownerReferences") or ())
    if owned and cmd.get("namespace") == pmd.get("namespace"):
        return None
    return (f"PVC {cmd.get('namespace') or ''}/{cmd.get('name') or ''} was not created for pod "
            f"{pmd.get('namespace') or ''}/{pmd.get('name') or ''} (pod is not owner)")


def pod_claims(pod: Obj) -> list[tuple[str, bool]]:
    """The claims a Pod uses, in volume order, as ``(claim name, ephemeral)``: a
    ``persistentVolumeClaim`` volume's ``claimName``, and :func:`volume_claim_name` for a generic
    ephemeral volume (the claim the ephemeral volume controller makes for it).

    Mirrors: the volume walks of the PersistentVolume controller's Pod index and VolumeBinding's
    podHasPVCs."""
    out = []
    for vol in (pod.get("spec") or {}).get("volumes") or ():
        if "persistentVolumeClaim" in vol:
            out.append((str((vol["persistentVolumeClaim"] or {}).get("claimName") or ""), False))
        elif "ephemeral" in vol:
            out.append((volume_claim_name(pod, vol), True))
    return out


def delays_binding(storage_class: Obj | None) -> bool:
    """Whether a claim of ``storage_class`` (None: no such class) waits for its first consumer
    (``volumeBindingMode: WaitForFirstConsumer``) before it is bound or provisioned.

    Mirrors: kubernetes pkg/controller/volume/persistentvolume/util IsDelayBindingMode (a
    missing class binds at once)."""
    return storage_class is not None and storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER


def volume_fits(pv: Obj, pvc: Obj) -> bool:
    """Whether ``pv`` can serve ``pvc``: same class, every asked access mode, same volume mode,
    enough capacity, the claim's selector (a selector that does not parse matches nothing; logged)."""
    pspec, cspec = pv.get("spec") or {}, pvc.get("spec") or {}
    if class_of(pv) != class_of(pvc):
        return False
    if not set(cspec.get("accessModes") or []) <= set(pspec.get("accessModes") or []):
        return False
    if (pspec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem"):
        return False
    if storage_bytes(pv, "capacity") < requested_bytes(pvc):
        return False
    sel = cspec.get("selector")
    if not sel:
        return True
    try:
        return from_label_selector(sel).matches((pv.get("metadata") or {}).get("labels") or {})
    except SelectorError as e:
        # validation keeps such selectors out; one stored by other means matches nothing
        md = pvc.get("metadata") or {}
        log.warning("claim %s/%s: error creating internal label selector for claim: %s; it matches no volume",
                    md.get("namespace"), md.get("name"), e)
        return False


def prebound_to(pv: Obj, pvc: Obj) -> bool:
    """The volume's ``claimRef`` names ``pvc`` (and its uid, when the ref has one)."""
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    md = pvc["metadata"]
    return ref.get("name") == md["name"] and ref.get("namespace") == md.get("namespace") and \
        (not ref.get("uid") or ref.get("uid") == md.get("uid"))


def claim_fully_bound(pvc: Obj) -> bool:
    """The claim names its volume and the binder finished (``pv.kubernetes.io/bind-completed``).

    Mirrors: pkg/scheduler/framework/plugins/volumebinding binder.go isPVCFullyBound."""
    ann = (pvc.get("metadata") or {}).get("annotations") or {}
    return bool((pvc.get("spec") or {}).get("volumeName")) and ANN_BIND_COMPLETED in ann


def _term_matches(term: Obj, labels: dict[str, Any]) -> bool:
    exprs = term.get("matchExpressions") or []
    if not exprs:
        return False  # an empty term, or one with only matchFields (no Node name here), matches nothing
    try:
        return from_node_selector_requirements(exprs).matches(labels)
    except SelectorError:
        return False


def volume_node_affinity_matches(pv: Obj, node_labels: dict[str, Any]) -> bool:
    """Whether a Node with ``node_labels`` satisfies the volume's required node affinity (none:
    every Node). Terms are ORed; a term's matchExpressions ANDed.

    Mirrors: pkg/volume/util CheckNodeAffinity (it matches a Node made of the labels alone)."""
    required = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required"))
    if required is None:
        return True
    return any(_term_matches(t, node_labels) for t in required.get("nodeSelectorTerms") or [])


def topology_matches(terms: list[Obj] | None, node_labels: dict[str, Any]) -> bool:
    """A StorageClass's ``allowedTopologies`` against a Node's labels: no terms admit every Node;
    else some term whose every ``matchLabelExpressions`` entry has the Node's value among its values.

    Mirrors: pkg/apis/core/v1/helper MatchTopologySelectorTerms."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if not exprs:
            continue  # an empty term selects no Node (upstream: "nil or empty term selects no objects")
        if all(str(node_labels.get(e.get("key", ""), "\0")) in [str(v) for v in e.get("values") or []]
               and e.get("key", "") in node_labels for e in exprs):
            return True
    return False
