"""The admission chain and the built-in admission plugins.

:class:`AdmissionChain` runs every mutating plugin that handles a request, in registration order,
then every validating plugin. Plugins follow :mod:`pumice.api.admission`; a plugin object may be
both mutating and validating (it then runs in both phases).

Built-in plugins (installed by :class:`~pumice.apiserver.server.APIServer` unless told otherwise):
- :class:`NamespaceLifecycle`: namespaced objects may be created only in an existing namespace
  that is not terminating; ``default``, ``kube-system`` and ``kube-public`` cannot be deleted.
- :class:`Priority`: resolves a Pod's ``spec.priorityClassName`` (or the globalDefault class)
  into ``spec.priority`` and ``spec.preemptionPolicy``; at most one globalDefault PriorityClass.
- :class:`ServiceAccount`: defaults a Pod's ``spec.serviceAccountName`` to ``default`` and, unless
  ``automountServiceAccountToken`` (Pod, then ServiceAccount) is false, adds the projected
  ``kube-api-access-<5 chars>`` volume (a bound token, ``kube-root-ca.crt``'s ``ca.crt`` and the
  namespace) mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every container.
  Deviates: a missing ServiceAccount does not refuse the Pod (kube-apiserver answers 403); the Pod
  then gets no token volume, so Pods created before the ServiceAccount controller ran still start.

- :class:`DefaultTolerationSeconds`: every Pod tolerates the ``node.kubernetes.io/not-ready`` and
  ``node.kubernetes.io/unreachable`` NoExecute taints for 300 s unless it already tolerates them.
- :class:`DefaultStorageClass`: PersistentVolumeClaims without a class get the default one.
- :class:`StorageObjectInUseProtection`: new PersistentVolumeClaims and PersistentVolumes get the
  ``kubernetes.io/pvc-protection`` / ``kubernetes.io/pv-protection`` finalizer, which the
  ``pvc-protection`` and ``pv-protection`` controllers take off once the object is unused.
- LimitRanger and ResourceQuota (:mod:`pumice.apiserver.quota`).

Mirrors: k8s.io/apiserver pkg/admission (chainAdmissionHandler), kubernetes plugin/pkg/admission
namespace/lifecycle, priority, serviceaccount, defaulttolerationseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pumice.api.admission import AdmissionError, AdmissionRequest, FieldCause, ObjectReader, forbidden
from pumice.api.storage import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER
from pumice.api.taints import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE
from pumice.api.validation import SYSTEM_PRIORITY_CLASS_VALUES

__all__ = [
    "DEFAULT_TOLERATION_SECONDS",
    "IMMORTAL_NAMESPACES",
    "SYSTEM_PRIORITY_CLASSES",
    "AdmissionChain",
    "DefaultIngressClass",
    "DefaultStorageClass",
    "DefaultTolerationSeconds",
    "NamespaceLifecycle",
    "Priority",
    "ServiceAccount",
    "StorageObjectInUseProtection",
    "builtin_plugins",
]

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")

#: PriorityClasses every kube-apiserver creates at start
SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = (
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-node-critical"},
     "value": SYSTEM_PRIORITY_CLASS_VALUES["system-node-critical"],
     "description": "Used for system critical pods that must not be moved from their current node."},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-cluster-critical"},
     "value": SYSTEM_PRIORITY_CLASS_VALUES["system-cluster-critical"],
     "description": "Used for system critical pods that must run in the cluster, but can be moved to another node if "
                    "necessary."},
)


@dataclass
class AdmissionChain:
    """Ordered mutating and validating plugins (change them through :meth:`add` and
    :meth:`remove` only).

    Which plugins handle a request is asked once per ``(operation, kind, subresource)`` and
    remembered until the next :meth:`add` or :meth:`remove`: ``handles`` is a function of those
    three and of the plugin's own configuration (see :class:`pumice.api.admission.MutatingPlugin`).
    """

    mutating: list[Any] = field(default_factory=list)
    validating: list[Any] = field(default_factory=list)
    _handling: dict[tuple[bool, str, Any, str], tuple[Any, ...]] = field(default_factory=dict, repr=False,
                                                                           compare=False)

    def add(self, plugin: Any) -> None:
        """Register a plugin: in the mutating phase when it has ``admit``, in the validating
        phase when it has ``validate``.

        Raises:
            TypeError: when it has neither.
        """
        added = False
        if callable(getattr(plugin, "admit", None)):
            self.mutating.append(plugin)
            added = True
        if callable(getattr(plugin, "validate", None)):
            self.validating.append(plugin)
            added = True
        if not added:
            raise TypeError(f"admission plugin {plugin!r} has neither admit() nor validate()")
        self._handling.clear()

    def remove(self, name: str) -> None:
        self.mutating = [p for p in self.mutating if getattr(p, "name", None) != name]
        self.validating = [p for p in self.validating if getattr(p, "name", None) != name]
        self._handling.clear()

    def names(self) -> list[str]:
        seen: dict[str, None] = {}
        for p in self.mutating + self.validating:
            seen[getattr(p, "name", type(p).__name__)] = None
        return list(seen)

    def handling(self, req: AdmissionRequest, *, mutating: bool) -> tuple[Any, ...]:
        """The plugins of one phase that handle ``req``, in registration order."""
        key = (mutating, req.operation, req.kind, req.subresource)
        try:
            return self._handling[key]
        except KeyError:
            plugins = self.mutating if mutating else self.validating
            found = self._handling[key] = tuple(p for p in plugins if p.handles(req))
            return found

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        for p in self.handling(req, mutating=True):
            await p.admit(req, reader)

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        for p in self.handling(req, mutating=False):
            await p.validate(req, reader)


class NamespaceLifecycle:
    """No new content in a namespace that is missing or terminating (checked in the mutating
    phase, so before the object's validation: a 403/404 comes before a 422), and no deleting
    the immortal namespaces.

    Mirrors: kubernetes plugin/pkg/admission/namespace/lifecycle Lifecycle.Admit (upstream runs
    it as a mutating plugin for every operation; here the delete check is in the validating
    phase, the one a DELETE runs).
    """

    name = "NamespaceLifecycle"

    def handles(self, req: AdmissionRequest) -> bool:
        if req.kind.group == "" and req.kind.plural == "namespaces":
            return req.operation == "DELETE"
        return req.kind.namespaced and req.operation == "CREATE" and req.subresource == ""

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.operation != "CREATE":
            return
        ns_kind = reader.kind("v1", "Namespace")
        if ns_kind is None or req.namespace is None:
            return
        ns = await reader.get(ns_kind, req.namespace)
        if ns is None:
            raise AdmissionError(f'namespaces "{req.namespace}" not found', code=404)
        if ns.get("metadata", {}).get("deletionTimestamp") or ns.get("status", {}).get("phase") == "Terminating":
            denial = forbidden(req, f"unable to create new content in namespace {req.namespace} because it is "
                                    "being terminated")
            denial.causes.append(FieldCause("metadata.namespace", f"namespace {req.namespace} is being terminated",
                                            "NamespaceTerminating"))
            raise denial

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.operation == "DELETE" and req.name in IMMORTAL_NAMESPACES:
            raise AdmissionError(f'namespaces "{req.name}" is forbidden: this namespace may not be deleted',
                                 code=403)


class Priority:
    name = "Priority"

    def handles(self, req: AdmissionRequest) -> bool:
        if req.subresource:
            return False
        if req.kind.group == "" and req.kind.plural == "pods":
            return req.operation == "CREATE"
        return req.kind.group == "scheduling.k8s.io" and req.kind.plural == "priorityclasses" and \
            req.operation in ("CREATE", "UPDATE")

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.kind.plural != "pods" or req.obj is None:
            return
        spec = req.obj.setdefault("spec", {})
        pc_kind = reader.kind("scheduling.k8s.io/v1", "PriorityClass")
        if pc_kind is None:
            return
        pc_name = spec.get("priorityClassName")
        pc: dict[str, Any] | None = None
        if pc_name:
            pc = await reader.get(pc_kind, pc_name)
            if pc is None:
                raise forbidden(req, f"no PriorityClass with name {pc_name} was found")
        else:
            defaults = [p for p in await reader.list(pc_kind) if p.get("globalDefault")]
            if defaults:
                defaults.sort(key=lambda p: (int(p.get("value", 0)), p["metadata"]["name"]))
                pc = defaults[0]
                spec["priorityClassName"] = pc["metadata"]["name"]
        value = int(pc.get("value", 0)) if pc else 0
        if "priority" in spec and spec["priority"] is not None and int(spec["priority"]) != value:
            raise forbidden(req, f"the integer value of priority ({spec['priority']}) must not be provided in pod "
                                 f"spec; priority admission controller computed {value} from the given PriorityClass "
                                 "name")
        spec["priority"] = value
        if pc is not None:
            spec["preemptionPolicy"] = pc.get("preemptionPolicy") or "PreemptLowerPriority"
        else:
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.kind.plural != "priorityclasses" or req.obj is None or not req.obj.get("globalDefault"):
            return
        for other in await reader.list(req.kind):
            if other.get("globalDefault") and other["metadata"]["name"] != req.name:
                raise forbidden(req, f"PriorityClass {other['metadata']['name']} is already marked as default. "
                                     "Only one default can exist")


#: where the token volume is mounted in every container
SERVICE_ACCOUNT_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
#: the lifetime the kubelet asks for (kube-apiserver extends such tokens, see TokenRequest)
KUBELET_TOKEN_SECONDS = 3607
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def _volume_suffix(pod: dict[str, Any]) -> str:
    """Five characters from utilrand's alphabet, derived from the Pod's namespace, name and uid
    (deterministic, unlike upstream's random suffix)."""
    import hashlib

    md = pod.get("metadata") or {}
    digest = hashlib.sha256(f"{md.get('namespace')}/{md.get('name')}/{md.get('uid')}".encode()).digest()
    return "".join(_SUFFIX_CHARS[b % len(_SUFFIX_CHARS)] for b in digest[:5])


def token_volume(name: str) -> dict[str, Any]:
    """The projected ServiceAccount volume the admission plugin adds (upstream's shape)."""
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": KUBELET_TOKEN_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}},
    ]}}


class ServiceAccount:
    """Mirrors: kubernetes plugin/pkg/admission/serviceaccount/admission.go (Admit,
    mountServiceAccountToken)."""

    name = "ServiceAccount"

    def handles(self, req: AdmissionRequest) -> bool:
        return req.kind.group == "" and req.kind.plural == "pods" and req.operation == "CREATE" and not req.subresource

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None:
            return
        if ((req.obj.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/config.mirror"):
            return
        spec = req.obj.setdefault("spec", {})
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
        spec["serviceAccount"] = spec["serviceAccountName"]
        sa_kind = reader.kind("v1", "ServiceAccount")
        if sa_kind is None or req.namespace is None:
            return
        sa = await reader.get(sa_kind, spec["serviceAccountName"], req.namespace)
        if sa is None:
            return
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = sa.get("automountServiceAccountToken")
        if automount is False:
            return
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or []),
                      *(spec.get("ephemeralContainers") or [])]
        needing = [c for c in containers
                   if not any(m.get("mountPath") == SERVICE_ACCOUNT_MOUNT_PATH for m in c.get("volumeMounts") or [])]
        if not needing:
            return
        volumes = spec.setdefault("volumes", [])
        existing = next((v.get("name") for v in volumes if str(v.get("name", "")).startswith("kube-api-access-")), None)
        vol_name = existing or f"kube-api-access-{_volume_suffix(req.obj)}"
        if existing is None:
            volumes.append(token_volume(vol_name))
        for c in needing:
            c.setdefault("volumeMounts", []).append(
                {"name": vol_name, "readOnly": True, "mountPath": SERVICE_ACCOUNT_MOUNT_PATH})


#: kube-apiserver's --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds
DEFAULT_TOLERATION_SECONDS = 300


class DefaultTolerationSeconds:
    """A Pod created or updated without a toleration of the ``node.kubernetes.io/not-ready``
    (resp. ``node.kubernetes.io/unreachable``) NoExecute taint gets ``{key, operator: Exists,
    effect: NoExecute, tolerationSeconds: 300}`` appended to ``spec.tolerations``, not-ready first.
    A toleration counts when its key is that taint's or empty and its effect is NoExecute or
    empty (its operator and value are not looked at, as upstream). Subresources are left alone.

    So a Pod on a Node that stopped reporting is evicted 300 s after the taint, not at once (the
    taint eviction in :mod:`pumice.controllers.kube.nodelifecycle`).

    Mirrors: kubernetes plugin/pkg/admission/defaulttolerationseconds/admission.go (Plugin.Admit;
    Handler for Create and Update).
    """

    name = "DefaultTolerationSeconds"

    def handles(self, req: AdmissionRequest) -> bool:
        return req.kind.group == "" and req.kind.plural == "pods" and req.operation in ("CREATE", "UPDATE") and \
            not req.subresource

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None:
            return
        spec = req.obj.setdefault("spec", {})
        tolerations = spec.get("tolerations") or []
        missing = []
        for key in (TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE):
            if not any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
                       for t in tolerations):
                missing.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
        if missing:
            spec["tolerations"] = [*tolerations, *missing]


ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"


def newest_default_class(classes: list[dict[str, Any]], annotations: tuple[str, ...]) -> str | None:
    """The name of the default class among ``classes`` (StorageClasses or IngressClasses, wire
    form): those with one of ``annotations`` set to ``"true"``, the newest by creationTimestamp
    (RFC 3339 seconds, so equal for classes made in one second), ties by the smallest name;
    None when none is annotated.

    Mirrors: kubernetes pkg/volume/util GetDefaultClass (IsDefaultAnnotation: the GA and the beta
    annotation) and plugin/pkg/admission/network/defaultingressclass GetDefaultClass."""
    defaults = [c for c in classes
                if any(((c.get("metadata") or {}).get("annotations") or {}).get(a) == "true" for a in annotations)]
    defaults.sort(key=lambda c: c["metadata"]["name"])
    defaults.sort(key=lambda c: c["metadata"].get("creationTimestamp") or "", reverse=True)
    return str(defaults[0]["metadata"]["name"]) if defaults else None


class DefaultStorageClass:
    """A PersistentVolumeClaim created without ``spec.storageClassName`` gets the default
    StorageClass (annotation ``storageclass.kubernetes.io/is-default-class: "true"``, or its beta
    form; :func:`newest_default_class`). An explicit ``""`` means "no class" and stays.

    Mirrors: kubernetes plugin/pkg/admission/storage/storageclass/setdefault/admission.go and
    pkg/volume/util GetDefaultClass.
    """

    name = "DefaultStorageClass"

    def handles(self, req: AdmissionRequest) -> bool:
        return req.kind.group == "" and req.kind.plural == "persistentvolumeclaims" and \
            req.operation == "CREATE" and not req.subresource

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None:
            return
        spec = req.obj.setdefault("spec", {})
        if spec.get("storageClassName") is not None:
            return
        # PersistentVolumeClaimHasClass: the beta annotation counts when present, even empty
        if "volume.beta.kubernetes.io/storage-class" in ((req.obj.get("metadata") or {}).get("annotations") or {}):
            return
        sc_kind = reader.kind("storage.k8s.io/v1", "StorageClass")
        if sc_kind is None:
            return
        chosen = newest_default_class(await reader.list(sc_kind), (ANN_DEFAULT_CLASS, ANN_BETA_DEFAULT_CLASS))
        if chosen is not None:
            spec["storageClassName"] = chosen


class StorageObjectInUseProtection:
    """A PersistentVolumeClaim or PersistentVolume created without its protection finalizer gets
    it appended (``kubernetes.io/pvc-protection``, ``kubernetes.io/pv-protection``), so deleting
    one that is in use leaves it Terminating until
    :mod:`pumice.controllers.kube.volumeprotection` finds it unused.

    Mirrors: kubernetes plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go.
    """

    name = "StorageObjectInUseProtection"

    def handles(self, req: AdmissionRequest) -> bool:
        return req.kind.group == "" and req.kind.plural in ("persistentvolumeclaims", "persistentvolumes") and \
            req.operation == "CREATE" and not req.subresource

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None:
            return
        finalizer = PVC_PROTECTION_FINALIZER if req.kind.plural == "persistentvolumeclaims" else \
            PV_PROTECTION_FINALIZER
        finalizers = req.obj.setdefault("metadata", {}).setdefault("finalizers", [])
        if finalizer not in finalizers:
            finalizers.append(finalizer)


ANN_DEFAULT_INGRESS_CLASS = "ingressclass.kubernetes.io/is-default-class"


class DefaultIngressClass:
    """An Ingress created without ``spec.ingressClassName`` and without the deprecated
    ``kubernetes.io/ingress.class`` annotation gets the default IngressClass (annotation
    ``ingressclass.kubernetes.io/is-default-class: "true"``; :func:`newest_default_class`).

    Mirrors: kubernetes plugin/pkg/admission/network/defaultingressclass/admission.go.
    """

    name = "DefaultIngressClass"

    def handles(self, req: AdmissionRequest) -> bool:
        return req.kind.group == "networking.k8s.io" and req.kind.plural == "ingresses" and \
            req.operation == "CREATE" and not req.subresource

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None:
            return
        spec = req.obj.setdefault("spec", {})
        if spec.get("ingressClassName") is not None:
            return
        if "kubernetes.io/ingress.class" in ((req.obj.get("metadata") or {}).get("annotations") or {}):
            return
        ic_kind = reader.kind("networking.k8s.io/v1", "IngressClass")
        if ic_kind is None:
            return
        chosen = newest_default_class(await reader.list(ic_kind), (ANN_DEFAULT_INGRESS_CLASS,))
        if chosen is not None:
            spec["ingressClassName"] = chosen


def builtin_plugins() -> list[Any]:
    """NamespaceLifecycle, LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds,
    DefaultStorageClass, StorageObjectInUseProtection, DefaultIngressClass, ResourceQuota, in
    kube-apiserver's order (pkg/kubeapiserver/options/plugins.go AllOrderedPlugins)."""
    from pumice.apiserver.quota import LimitRanger, ResourceQuota

    return [NamespaceLifecycle(), LimitRanger(), ServiceAccount(), Priority(), DefaultTolerationSeconds(),
            DefaultStorageClass(), StorageObjectInUseProtection(), DefaultIngressClass(), ResourceQuota()]
