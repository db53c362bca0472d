"""Which kinds exist: group, version, kind, plural, scope, short names, subresources.

The API server serves the built-in kinds listed here plus every CustomResourceDefinition applied
to it; clients (informers, controllers, kubectl helpers) resolve ``(apiVersion, kind)`` to a URL
through the same table. Custom kinds are added at run time with :meth:`Scheme.add`.

Mirrors: the kube-apiserver discovery documents (``/api/v1``, ``/apis/<g>/<v>``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ResourceKind:
    """One served resource.

    Attributes:
        group: API group, ``""`` for core.
        version: e.g. ``"v1"``.
        kind: e.g. ``"Pod"``.
        plural: URL segment, e.g. ``"pods"``.
        namespaced: True for namespaced kinds.
        singular: lower-case singular name.
        short_names: kubectl short names (``po``).
        categories: kubectl categories (``all``).
        subresources: e.g. ``("status", "binding", "eviction", "log")``.
        list_kind: e.g. ``"PodList"``.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = (
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
    )

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        """URL path for this kind: collection, object, or subresource.

        ``namespace`` is ignored for cluster-scoped kinds; when None on a namespaced kind the path
        is the all-namespaces collection.
        """
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if sub:
                base += f"/{sub}"
        return base


_NO_DELETECOLLECTION = ("create", "delete", "get", "list", "patch", "update", "watch")

# --- built-in kinds (served by the API server from the start) ---------------------------------
NAMESPACE = ResourceKind("", "v1", "Namespace", "namespaces", namespaced=False, short_names=("ns",),
                         subresources=("status", "finalize"), verbs=_NO_DELETECOLLECTION)
POD = ResourceKind("", "v1", "Pod", "pods", short_names=("po",), categories=("all",),
                   subresources=("status", "binding", "eviction", "log", "exec", "attach", "portforward",
                                 "proxy", "ephemeralcontainers"))
NODE = ResourceKind("", "v1", "Node", "nodes", namespaced=False, short_names=("no",),
                    subresources=("status", "proxy"))
SERVICE = ResourceKind("", "v1", "Service", "services", short_names=("svc",), categories=("all",),
                       subresources=("status", "proxy"), verbs=_NO_DELETECOLLECTION)
ENDPOINTS = ResourceKind("", "v1", "Endpoints", "endpoints", short_names=("ep",), singular="endpoints")
CONFIG_MAP = ResourceKind("", "v1", "ConfigMap", "configmaps", short_names=("cm",))
SECRET = ResourceKind("", "v1", "Secret", "secrets")
SERVICE_ACCOUNT = ResourceKind("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",),
                               subresources=("token",))
PERSISTENT_VOLUME_CLAIM = ResourceKind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims",
                                       short_names=("pvc",), subresources=("status",))
PERSISTENT_VOLUME = ResourceKind("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False,
                                 short_names=("pv",), subresources=("status",))
REPLICATION_CONTROLLER = ResourceKind("", "v1", "ReplicationController", "replicationcontrollers",
                                      short_names=("rc",), categories=("all",), subresources=("status", "scale"))
RESOURCE_QUOTA = ResourceKind("", "v1", "ResourceQuota", "resourcequotas", short_names=("quota",),
                              subresources=("status",))
LIMIT_RANGE = ResourceKind("", "v1", "LimitRange", "limitranges", short_names=("limits",))
EVENT = ResourceKind("", "v1", "Event", "events", short_names=("ev",))
POD_TEMPLATE = ResourceKind("", "v1", "PodTemplate", "podtemplates")
#: core/v1 ComponentStatus: computed on each read from the health of pumice's own parts (list and
#: get only; deprecated upstream since 1.19, which every answer's Warning header says)
COMPONENT_STATUS = ResourceKind("", "v1", "ComponentStatus", "componentstatuses", namespaced=False,
                                short_names=("cs",), verbs=("get", "list"))
DEPLOYMENT = ResourceKind("apps", "v1", "Deployment", "deployments", short_names=("deploy",), categories=("all",),
                          subresources=("status", "scale"))
REPLICA_SET = ResourceKind("apps", "v1", "ReplicaSet", "replicasets", short_names=("rs",), categories=("all",),
                           subresources=("status", "scale"))
STATEFUL_SET = ResourceKind("apps", "v1", "StatefulSet", "statefulsets", short_names=("sts",), categories=("all",),
                            subresources=("status", "scale"))
DAEMON_SET = ResourceKind("apps", "v1", "DaemonSet", "daemonsets", short_names=("ds",), categories=("all",),
                          subresources=("status",))
CONTROLLER_REVISION = ResourceKind("apps", "v1", "ControllerRevision", "controllerrevisions")
JOB = ResourceKind("batch", "v1", "Job", "jobs", categories=("all",), subresources=("status",))
BATCH_CRON_JOB = ResourceKind("batch", "v1", "CronJob", "cronjobs", short_names=("cj",), categories=("all",),
                        subresources=("status",))
POD_DISRUPTION_BUDGET = ResourceKind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets",
                                     short_names=("pdb",), subresources=("status",))
STORAGE_CLASS = ResourceKind("storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False,
                             short_names=("sc",))
API_SERVICE = ResourceKind("apiregistration.k8s.io", "v1", "APIService", "apiservices", namespaced=False,
                           subresources=("status",))
# storage.k8s.io/v1 data kinds of CSI drivers and their sidecars (stored, not acted on)
CSI_DRIVER = ResourceKind("storage.k8s.io", "v1", "CSIDriver", "csidrivers", namespaced=False)
CSI_NODE = ResourceKind("storage.k8s.io", "v1", "CSINode", "csinodes", namespaced=False)
VOLUME_ATTACHMENT = ResourceKind("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", namespaced=False,
                                 subresources=("status",))
CSI_STORAGE_CAPACITY = ResourceKind("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities")
#: autoscaling/v2 HorizontalPodAutoscaler (stored in this form) and its v1 version (kubectl 1.32's
#: ``kubectl autoscale`` posts v1)
HORIZONTAL_POD_AUTOSCALER = ResourceKind("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers",
                                         short_names=("hpa",), categories=("all",), subresources=("status",))
HORIZONTAL_POD_AUTOSCALER_V1 = ResourceKind("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers",
                                            short_names=("hpa",), categories=("all",), subresources=("status",))
LEASE = ResourceKind("coordination.k8s.io", "v1", "Lease", "leases")
PRIORITY_CLASS = ResourceKind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False,
                              short_names=("pc",))
ROLE = ResourceKind("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLE_BINDING = ResourceKind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
CLUSTER_ROLE = ResourceKind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDING = ResourceKind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
                                    namespaced=False)
EVENTS_V1_EVENT = ResourceKind("events.k8s.io", "v1", "Event", "events", short_names=("ev",))
ENDPOINT_SLICE = ResourceKind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
# networking.k8s.io/v1: stored, not enforced (no ingress controller, no network policy agent)
INGRESS = ResourceKind("networking.k8s.io", "v1", "Ingress", "ingresses", short_names=("ing",), subresources=("status",))
INGRESS_CLASS = ResourceKind("networking.k8s.io", "v1", "IngressClass", "ingressclasses", namespaced=False)
NETWORK_POLICY = ResourceKind("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", short_names=("netpol",))
_CREATE_ONLY = ("create",)
#: core/v1 ``bindings``: POST a Binding to bind the Pod it names, as ``pods/<name>/binding``
#: (kube-apiserver's LegacyBindingREST; create only)
BINDING = ResourceKind("", "v1", "Binding", "bindings", verbs=_CREATE_ONLY)
#: autoscaling/v1 Scale: the body of every ``<resource>/scale`` subresource (its errors name it;
#: not served as a resource of its own)
SCALE = ResourceKind("autoscaling", "v1", "Scale", "scales", verbs=("get", "patch", "update"))
#: policy/v1 Eviction: the body of ``pods/<name>/eviction`` (its errors name it)
EVICTION = ResourceKind("policy", "v1", "Eviction", "evictions", verbs=_CREATE_ONLY)
NODE_METRICS = ResourceKind("metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", namespaced=False, verbs=("get", "list"))
POD_METRICS = ResourceKind("metrics.k8s.io", "v1beta1", "PodMetrics", "pods", verbs=("get", "list"))
TOKEN_REVIEW = ResourceKind("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False,
                            verbs=_CREATE_ONLY)
SELF_SUBJECT_REVIEW = ResourceKind("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews",
                                   namespaced=False, verbs=_CREATE_ONLY)
SELF_SUBJECT_ACCESS_REVIEW = ResourceKind("authorization.k8s.io", "v1", "SelfSubjectAccessReview",
                                          "selfsubjectaccessreviews", namespaced=False, verbs=_CREATE_ONLY)
SUBJECT_ACCESS_REVIEW = ResourceKind("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews",
                                     namespaced=False, verbs=_CREATE_ONLY)
LOCAL_SUBJECT_ACCESS_REVIEW = ResourceKind("authorization.k8s.io", "v1", "LocalSubjectAccessReview",
                                           "localsubjectaccessreviews", verbs=_CREATE_ONLY)
SELF_SUBJECT_RULES_REVIEW = ResourceKind("authorization.k8s.io", "v1", "SelfSubjectRulesReview",
                                         "selfsubjectrulesreviews", namespaced=False, verbs=_CREATE_ONLY)
CUSTOM_RESOURCE_DEFINITION = ResourceKind(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False,
    short_names=("crd", "crds"), subresources=("status",))

BUILTIN_KINDS: tuple[ResourceKind, ...] = (
    NAMESPACE, POD, NODE, SERVICE, ENDPOINTS, CONFIG_MAP, SECRET, SERVICE_ACCOUNT, EVENT, DEPLOYMENT, REPLICA_SET,
    JOB, LEASE, PRIORITY_CLASS, ROLE, ROLE_BINDING, CLUSTER_ROLE, CLUSTER_ROLE_BINDING, EVENTS_V1_EVENT,
    ENDPOINT_SLICE, CUSTOM_RESOURCE_DEFINITION,
    PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, REPLICATION_CONTROLLER, RESOURCE_QUOTA, LIMIT_RANGE, STATEFUL_SET,
    DAEMON_SET, CONTROLLER_REVISION, BATCH_CRON_JOB, POD_DISRUPTION_BUDGET, STORAGE_CLASS, API_SERVICE,
    BINDING, TOKEN_REVIEW, SELF_SUBJECT_REVIEW, SELF_SUBJECT_ACCESS_REVIEW, SUBJECT_ACCESS_REVIEW, LOCAL_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_RULES_REVIEW, NODE_METRICS, POD_METRICS, INGRESS, INGRESS_CLASS, NETWORK_POLICY, POD_TEMPLATE,
    COMPONENT_STATUS, CSI_DRIVER, CSI_NODE, VOLUME_ATTACHMENT, CSI_STORAGE_CAPACITY, HORIZONTAL_POD_AUTOSCALER,
    HORIZONTAL_POD_AUTOSCALER_V1,
)

# --- custom kinds (served once their CRDs are installed; names, scope and subresources as the
# upstream CRDs: kuberay ray-operator/config/crd/bases, volcano config/crd/volcano/bases) ---------
RAY_CLUSTER = ResourceKind("ray.io", "v1", "RayCluster", "rayclusters", categories=("all",), subresources=("status",))
RAY_JOB = ResourceKind("ray.io", "v1", "RayJob", "rayjobs", categories=("all",), subresources=("status",))
RAY_SERVICE = ResourceKind("ray.io", "v1", "RayService", "rayservices", categories=("all",), subresources=("status",))
QUEUE = ResourceKind("scheduling.volcano.sh", "v1beta1", "Queue", "queues", namespaced=False,
                     short_names=("q", "queue-v1beta1"), subresources=("status",))
# upstream's PodGroup CRD has no status subresource: status is written with the whole object
POD_GROUP = ResourceKind("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups",
                         short_names=("pg", "podgroup-v1beta1"))
SCHEDULER_PLUGINS_POD_GROUP = ResourceKind("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups",
                                           subresources=("status",))
"""kubernetes-sigs/scheduler-plugins coscheduling PodGroup (KubeRay's scheduler-plugins adapter
creates it; served only where its CRD is installed)."""
VCJOB = ResourceKind("batch.volcano.sh", "v1alpha1", "Job", "jobs", short_names=("vcjob", "vj"),
                     subresources=("status",))
COMMAND = ResourceKind("bus.volcano.sh", "v1alpha1", "Command", "commands")
CRON_JOB = ResourceKind("batch.volcano.sh", "v1alpha1", "CronJob", "cronjobs", short_names=("cronvcjob", "cronvj"),
                        subresources=("status",))
JOB_TEMPLATE = ResourceKind("flow.volcano.sh", "v1alpha1", "JobTemplate", "jobtemplates", short_names=("jt",),
                            subresources=("status",))
JOB_FLOW = ResourceKind("flow.volcano.sh", "v1alpha1", "JobFlow", "jobflows", short_names=("jf",), subresources=("status",))
NODE_SHARD = ResourceKind("shard.volcano.sh", "v1alpha1", "NodeShard", "nodeshards", namespaced=False, short_names=("nsh",),
                          subresources=("status",))
HYPER_NODE = ResourceKind("topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", namespaced=False,
                          short_names=("hn",), subresources=("status",))

CUSTOM_KINDS: tuple[ResourceKind, ...] = (
    RAY_CLUSTER, RAY_JOB, RAY_SERVICE, QUEUE, POD_GROUP, VCJOB, COMMAND, HYPER_NODE, CRON_JOB, JOB_TEMPLATE, JOB_FLOW, NODE_SHARD
)


@dataclass
class Scheme:
    """A mutable, thread-safe registry of served kinds, keyed by ``(group, version, plural)``.

    Lookups: :meth:`by_api_version_kind` (``("v1", "Pod")``), :meth:`by_plural`
    (``("", "v1", "pods")``), :meth:`resolve` (kubectl-style names: ``po``, ``pods.v1.``,
    ``rayjobs.ray.io``).
    """

    _by_plural: dict[tuple[str, str, str], ResourceKind] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # kinds served per group, kept by add and remove, so that "is this group served" (asked on
    # every /apis request) does not walk every kind
    _group_kinds: dict[str, int] = field(default_factory=dict)

    @classmethod
    def builtin(cls) -> Scheme:
        s = cls()
        for rk in BUILTIN_KINDS:
            s.add(rk)
        return s

    def add(self, rk: ResourceKind) -> None:
        key = (rk.group, rk.version, rk.plural)
        with self._lock:
            if key not in self._by_plural:
                self._group_kinds[rk.group] = self._group_kinds.get(rk.group, 0) + 1
            self._by_plural[key] = rk

    def resolve_or_add(self, name: str, fallback: ResourceKind) -> ResourceKind:
        """The kind ``name`` resolves to (see :meth:`resolve`); when none does, ``fallback``,
        which is added (a client that has not discovered a CRD yet still knows its kind)."""
        rk = self.resolve(name)
        if rk is None:
            self.add(fallback)
            return fallback
        return rk

    def remove(self, group: str, version: str, plural: str) -> None:
        with self._lock:
            if self._by_plural.pop((group, version, plural), None) is not None:
                left = self._group_kinds[group] - 1
                if left:
                    self._group_kinds[group] = left
                else:
                    del self._group_kinds[group]

    def serves_group(self, group: str) -> bool:
        """Whether some served kind is in API group ``group`` (``""``: the core group)."""
        return group in self._group_kinds

    def __iter__(self) -> Iterator[ResourceKind]:
        with self._lock:
            return iter(list(self._by_plural.values()))

    def by_plural(self, group: str, version: str, plural: str) -> ResourceKind | None:
        return self._by_plural.get((group, version, plural))

    def by_api_version_kind(self, api_version: str, kind: str) -> ResourceKind | None:
        group, _, version = api_version.rpartition("/")
        for rk in self:
            if rk.group == group and rk.version == version and rk.kind == kind:
                return rk
        return None

    def group_versions(self) -> list[tuple[str, str]]:
        """Served (group, version) pairs, core first, then groups in name order."""
        gvs = sorted({(rk.group, rk.version) for rk in self})
        return gvs

    def kinds_in(self, group: str, version: str) -> list[ResourceKind]:
        return sorted((rk for rk in self if rk.group == group and rk.version == version),
                      key=lambda r: r.plural)

    def resolve(self, name: str) -> ResourceKind | None:
        """Resolve a kubectl-style resource name (plural, singular, short name or kind,
        optionally qualified with ``.group``)."""
        lowered = name.lower()
        base, _, group = lowered.partition(".")
        for rk in self:
            if group and rk.group != group and f"{rk.version}.{rk.group}" != group:
                continue
            if base in (rk.plural, rk.singular_name, rk.kind.lower(), *rk.short_names):
                return rk
        return None


def iter_kinds(kinds: Iterable[ResourceKind]) -> list[str]:
    """Human list ``pods, nodes, ...`` for error messages."""
    return sorted(rk.plural for rk in kinds)
