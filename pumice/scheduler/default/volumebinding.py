"""VolumeBinding: a Pod's PersistentVolumeClaims (``persistentVolumeClaim`` and generic
``ephemeral`` volumes) must exist and be usable before it is placed, and their volumes must be
reachable from the Node. Pure functions over wire objects read through :class:`VolumeListers`;
the default scheduler and Volcano's ``predicates`` plugin both run them.

PreFilter (:func:`pre_filter`), once per scheduling attempt; a rejection is
UnschedulableAndUnresolvable with one of these messages:

- ``persistentvolumeclaim "<name>" not found`` (for an ephemeral volume:
  ``waiting for ephemeral volume controller to create the persistentvolumeclaim "<name>"``);
- ``persistentvolumeclaim "<name>" bound to non-existent persistentvolume "<volume>"`` (phase Lost);
- ``persistentvolumeclaim "<name>" is being deleted``;
- ``PVC <ns>/<name> was not created for pod <ns>/<pod> (pod is not owner)`` (ephemeral);
- ``pod has unbound immediate PersistentVolumeClaims``: a claim not yet bound whose class binds
  Immediately (no class, a class that does not exist, or a claim that names its volume count as
  Immediate).

Claims bound, and unbound claims of a ``WaitForFirstConsumer`` class, pass on to the Filter
(:func:`filter_reasons`), per Node, every reason UnschedulableAndUnresolvable:

- ``node(s) had volume node affinity conflict``: a bound volume's required node affinity excludes
  the Node;
- ``node(s) didn't find available persistent volumes to bind``: a waiting claim finds no
  Available volume that fits it and admits the Node, and its class cannot provision there (no
  provisioner, ``kubernetes.io/no-provisioner``, or ``allowedTopologies`` excluding the Node), or
  the claim's ``volume.kubernetes.io/selected-node`` names another Node;
- ``node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)``.

Mirrors: kubernetes v1.32 pkg/scheduler/framework/plugins/volumebinding (volume_binding.go
PreFilter, podHasPVCs, Filter; binder.go GetPodVolumeClaims, FindPodVolumes, checkBoundClaims,
findMatchingVolumes, checkVolumeProvisions; the ErrReason texts) and component-helpers
storage/ephemeral (VolumeClaimName, VolumeIsForPod).
Reserve and PreBind (the writes, then the wait for the binder) are
:mod:`pumice.scheduler.default.bindvolumes`, which the schedulers' binding steps run.
Deviates: no PreFilterResult narrowing to the Nodes named by local volumes (those Nodes' peers get the
Filter's "volume node affinity conflict" instead of "didn't satisfy plugin(s) [VolumeBinding]");
no storage capacity tracking (CSIStorageCapacity); a StorageClass without
``volumeBindingMode`` counts as Immediate (the API server's default) instead of an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pumice.api import Obj
from pumice.api.storage import (
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    claim_fully_bound,
    class_of,
    delays_binding,
    pod_claims,
    prebound_to,
    requested_bytes,
    storage_bytes,
    topology_matches,
    volume_fits,
    volume_node_affinity_matches,
    why_not_for_pod,
)

PLUGIN_NAME = "VolumeBinding"

REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class VolumeListers(Protocol):
    """Read-only views of claims, volumes and StorageClasses (informer caches; no I/O)."""

    def claim(self, namespace: str, name: str) -> Obj | None: ...

    def volume(self, name: str) -> Obj | None: ...

    def storage_class(self, name: str) -> Obj | None: ...

    def volumes(self) -> Iterable[Obj]: ...


class _Store(Protocol):
    def get(self, namespace: str | None, name: str) -> Obj | None: ...

    def list(self) -> list[Obj]: ...


class _HasStore(Protocol):
    @property
    def store(self) -> Any: ...


class InformerListers:
    """:class:`VolumeListers` over three informers (PersistentVolumeClaim, PersistentVolume,
    StorageClass), read at call time."""

    def __init__(self, claims: _HasStore, volumes: _HasStore, classes: _HasStore) -> None:
        self._claims: _Store = claims.store
        self._volumes: _Store = volumes.store
        self._classes: _Store = classes.store

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self._claims.get(namespace, name)

    def volume(self, name: str) -> Obj | None:
        return self._volumes.get(None, name)

    def storage_class(self, name: str) -> Obj | None:
        return self._classes.get(None, name)

    def volumes(self) -> Iterable[Obj]:
        return self._volumes.list()


class StaticListers:
    """:class:`VolumeListers` over fixed objects (a snapshot built from objects, tests): every
    PersistentVolumeClaim, PersistentVolume and StorageClass among ``objects`` (by ``kind``)."""

    def __init__(self, objects: Iterable[Obj]) -> None:
        self._claims: dict[tuple[str, str], Obj] = {}
        self._volumes: dict[str, Obj] = {}
        self._classes: dict[str, Obj] = {}
        for o in objects:
            md = o.get("metadata") or {}
            kind = o.get("kind")
            if kind == "PersistentVolumeClaim":
                self._claims[(str(md.get("namespace") or ""), str(md.get("name") or ""))] = o
            elif kind == "PersistentVolume":
                self._volumes[str(md.get("name") or "")] = o
            elif kind == "StorageClass":
                self._classes[str(md.get("name") or "")] = o

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self._claims.get((namespace, name))

    def volume(self, name: str) -> Obj | None:
        return self._volumes.get(name)

    def storage_class(self, name: str) -> Obj | None:
        return self._classes.get(name)

    def volumes(self) -> Iterable[Obj]:
        return list(self._volumes.values())


VOLUME_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")


class VolumeBindingError(Exception):
    """An error (not a rejection) of the Filter: a waiting claim without a class, or whose class
    is gone. The scheduling attempt fails with this message."""


@dataclass(frozen=True)
class PodVolumeClaims:
    """The PreFilter's result: the Pod's bound claims and its unbound WaitForFirstConsumer ones,
    in volume order."""

    bound: tuple[Obj, ...] = ()
    delayed: tuple[Obj, ...] = ()


def has_claim_volumes(pod: Obj) -> bool:
    """The Pod has a ``persistentVolumeClaim`` or ``ephemeral`` volume (else VolumeBinding skips it)."""
    for vol in (pod.get("spec") or {}).get("volumes") or ():
        if "persistentVolumeClaim" in vol or "ephemeral" in vol:
            return True
    return False


def _delay_binding(pvc: Obj, listers: VolumeListers) -> bool:
    name = class_of(pvc)
    if not name:
        return False
    return delays_binding(listers.storage_class(name))


def pre_filter(pod: Obj, listers: VolumeListers) -> PodVolumeClaims | str:
    """VolumeBinding's PreFilter for a Pod with claim volumes.

    Returns:
        the claims for :func:`filter_reasons`, or the rejection message (see the module docstring).
    """
    md = pod.get("metadata") or {}
    ns = str(md.get("namespace") or "")
    claims: list[Obj] = []
    for name, ephemeral in pod_claims(pod):
        pvc = listers.claim(ns, name)
        if pvc is None:
            if ephemeral:
                return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
            return f'persistentvolumeclaim "{name}" not found'
        spec = pvc.get("spec") or {}
        if (pvc.get("status") or {}).get("phase") == "Lost":
            return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{spec.get("volumeName") or ""}"'
        if (pvc.get("metadata") or {}).get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        if ephemeral and (why := why_not_for_pod(pod, pvc)) is not None:
            return why
        claims.append(pvc)
    bound: list[Obj] = []
    delayed: list[Obj] = []
    immediate = False
    for pvc in claims:
        if claim_fully_bound(pvc):
            bound.append(pvc)
        elif _delay_binding(pvc, listers) and not (pvc.get("spec") or {}).get("volumeName"):
            delayed.append(pvc)
        else:
            immediate = True
    if immediate:
        return REASON_UNBOUND_IMMEDIATE
    return PodVolumeClaims(tuple(bound), tuple(delayed))


def _match_volume(pvc: Obj, candidates: list[Obj], taken: set[str], node_labels: dict[str, Any]) -> Obj | None:
    """The volume for a waiting claim on a Node (index.go findMatchingVolume, scheduler path): a
    volume pre-bound to the claim when it admits the Node (none at all when it does not), else the
    smallest Available volume of the claim's class that fits it and admits the Node (ties by name),
    skipping those chosen for the Pod's other claims."""
    best: tuple[int, str, Obj] | None = None
    want = requested_bytes(pvc)
    mode = (pvc.get("spec") or {}).get("volumeMode") or "Filesystem"
    for pv in candidates:
        md, spec = pv.get("metadata") or {}, pv.get("spec") or {}
        name = str(md.get("name") or "")
        if name in taken or (spec.get("claimRef") and not prebound_to(pv, pvc)):
            continue
        cap = storage_bytes(pv, "capacity")
        if cap < want or (spec.get("volumeMode") or "Filesystem") != mode or md.get("deletionTimestamp"):
            continue
        admits = volume_node_affinity_matches(pv, node_labels)
        if spec.get("claimRef"):
            return pv if admits else None
        if (pv.get("status") or {}).get("phase") != "Available" or not admits or not volume_fits(pv, pvc):
            continue
        if best is None or (cap, name) < best[:2]:
            best = (cap, name, pv)
    return best[2] if best is not None else None


def _can_provision(pvc: Obj, listers: VolumeListers, node_labels: dict[str, Any]) -> bool:
    """Raises: VolumeBindingError (no class, or the class is gone)."""
    md = pvc.get("metadata") or {}
    name = class_of(pvc)
    if not name:
        raise VolumeBindingError(f'no class for claim "{md.get("namespace", "")}/{md.get("name", "")}"')
    sc = listers.storage_class(name)
    if sc is None:
        raise VolumeBindingError(f'failed to find storage class "{name}"')
    provisioner = sc.get("provisioner") or ""
    if not provisioner or provisioner == NO_PROVISIONER:
        return False
    return topology_matches(sc.get("allowedTopologies"), node_labels)


@dataclass(frozen=True)
class PodVolumes:
    """How a Pod's waiting claims get volumes on one Node: ``static`` (volume, claim) pairs, the
    volume to be given the claim's ``claimRef``; ``provision``, the claims to be annotated with
    ``volume.kubernetes.io/selected-node`` so that their class provisions them."""

    static: tuple[tuple[Obj, Obj], ...] = ()
    provision: tuple[Obj, ...] = ()


def plan_pod_volumes(claims: PodVolumeClaims, node_name: str, node_labels: dict[str, Any],
                     listers: VolumeListers) -> PodVolumes | None:
    """The volumes the Pod's waiting (WaitForFirstConsumer) claims would get on this Node, or None
    when some claim can have none: its ``selected-node`` names another Node, or no Available volume
    fits it here and its class cannot provision here. Claims are matched smallest request first.

    Mirrors: binder.go findMatchingVolumes and checkVolumeProvisions.

    Raises:
        VolumeBindingError: a claim to provision without a class, or whose class does not exist.
    """
    to_match: list[Obj] = []
    to_provision: list[Obj] = []
    for pvc in claims.delayed:
        selected = ((pvc.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
        if selected is None:
            to_match.append(pvc)
        elif selected != node_name:
            return None
        else:
            to_provision.append(pvc)
    static: list[tuple[Obj, Obj]] = []
    if to_match:
        candidates = list(listers.volumes())
        taken: set[str] = set()
        for pvc in sorted(to_match, key=requested_bytes):
            pv = _match_volume(pvc, candidates, taken, node_labels)
            if pv is None:
                to_provision.append(pvc)
            else:
                taken.add(pv["metadata"]["name"])
                static.append((pv, pvc))
    for pvc in to_provision:
        if not _can_provision(pvc, listers, node_labels):
            return None
    return PodVolumes(tuple(static), tuple(to_provision))


def filter_reasons(claims: PodVolumeClaims, node_name: str, node_labels: dict[str, Any],
                   listers: VolumeListers) -> list[str]:
    """VolumeBinding's Filter on one Node: ``[]`` when the Node passes, else the reasons in
    upstream's order (see the module docstring).

    Raises:
        VolumeBindingError: a waiting claim without a class, or whose class does not exist.
    """
    bound_ok = found = True
    for pvc in claims.bound:
        pv = listers.volume(str(pvc["spec"]["volumeName"]))
        if pv is None:
            found = False
            break
        if not volume_node_affinity_matches(pv, node_labels):
            bound_ok = False
            break
    unbound_ok = not claims.delayed or plan_pod_volumes(claims, node_name, node_labels, listers) is not None
    reasons = []
    if not bound_ok:
        reasons.append(REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(REASON_BIND_CONFLICT)
    if not found:
        reasons.append(REASON_PV_NOT_EXIST)
    return reasons
