"""What the three Ray controllers are set up with.

:func:`pumice.controllers.ray.setup` resolves the operator's flags once into a
:class:`RayOperatorOptions`; each controller's ``setup_with_manager(mgr, opts)`` classmethod
(:class:`~pumice.controllers.ray.raycluster.RayClusterReconciler`,
:class:`~pumice.controllers.ray.rayjob.RayJobReconciler`,
:class:`~pumice.controllers.ray.rayservice.RayServiceReconciler`) then builds its reconciler and
registers its watches, as the kube and Volcano controllers do.

Mirrors: kuberay ray-operator/main.go (one options struct for the reconcilers) and each
controller's ``SetupWithManager``.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.api import Obj
from pumice.controllers.ray.batchscheduler import BatchScheduler, DefaultBatchScheduler
from pumice.controllers.ray.dashboard import DashboardClientFactory, ServeProxyHealthCheck
from pumice.controllers.ray.raycluster import RayClusterOptions
from pumice.controllers.ray.rayjob import RayJobOptions
from pumice.controllers.ray.rayservice import RayServiceOptions

log = logging.getLogger(__name__)

__all__ = ["CONFIGURATION_API_VERSION", "ConfigurationError", "KubeRayConfiguration", "RayOperatorOptions",
           "parse_watch_namespace"]


@dataclass(frozen=True)
class RayOperatorOptions:
    """The KubeRay operator's configuration, resolved once for all three controllers.

    Attributes:
        batch_scheduler_name: ``--batch-scheduler`` (None: no batch scheduler).
        batch_scheduler: the adapter built from it (shared by RayCluster and RayJob).
        dashboard_client_factory: ``(ray_cluster, dashboard_url) -> RayDashboardClient`` (None:
            HTTP to the head Pod IP).
        reconcile_concurrency: workers per controller.
        rng: the generator each controller draws its own seed from, in setup order
            (RayCluster, RayJob, RayService), so a seeded operator names children reproducibly.
        raycluster, rayjob, rayservice: each controller's switches (``rayservice`` None: from
            the environment, ``ENABLE_ZERO_DOWNTIME``).
        serve_proxy_healthy: ``(head Pod, port) -> bool`` for the ``ray.io/serve`` label (None:
            HTTP GET ``/-/healthz``).
        watch_namespaces: the namespaces whose objects the three controllers reconcile (None: all),
            from :func:`parse_watch_namespace`.
    """

    batch_scheduler_name: str | None = None
    batch_scheduler: BatchScheduler = field(default_factory=DefaultBatchScheduler)
    dashboard_client_factory: DashboardClientFactory | None = None
    reconcile_concurrency: int = 1
    rng: random.Random = field(default_factory=random.Random)
    raycluster: RayClusterOptions = field(default_factory=RayClusterOptions)
    rayjob: RayJobOptions = field(default_factory=RayJobOptions)
    rayservice: RayServiceOptions | None = None
    serve_proxy_healthy: ServeProxyHealthCheck | None = None
    watch_namespaces: frozenset[str] | None = None

    def controller(self, mgr: Any, name: str) -> Any:
        """``mgr.controller(name)``, watching only :attr:`watch_namespaces` when set."""
        builder = mgr.controller(name)
        if self.watch_namespaces is not None:
            builder = builder.in_namespaces(self.watch_namespaces)
        return builder

    def child_rng(self) -> random.Random:
        """A generator for one controller, seeded by the next draw of :attr:`rng`."""
        return random.Random(self.rng.random())


#: ``apiVersion`` of KubeRay's operator configuration file (its ``--config``).
CONFIGURATION_API_VERSION = "config.ray.io/v1alpha1"
#: Keys of upstream's Configuration that change what the operator reconciles, which pumice's
#: controller-manager takes as flags or does not have: refused, unless the value is the one that
#: changes nothing (upstream's Helm chart writes ``useKubernetesProxy: false`` by default).
_NOT_HERE = {
    "batchScheduler": "use --batch-scheduler", "enableBatchScheduler": "use --batch-scheduler volcano",
    "useKubernetesProxy": "use --use-kubernetes-proxy",
}
_NO_OP = {"batchScheduler": "", "enableBatchScheduler": False, "useKubernetesProxy": False}
#: Keys that only shape the operator process (leader election, metrics, concurrency, client rate,
#: logging): upstream's Helm chart writes several of them by default, so they are read past with
#: one WARNING naming the flag that does it here.
_PROCESS_ONLY = {
    "enableLeaderElection": "--leader-elect", "leaderElectionNamespace": "--leader-elect-resource-namespace",
    "reconcileConcurrency": "none", "metricsAddr": "--health-port", "probeAddr": "--health-port",
    "enableMetrics": "--health-port", "logFile": "none", "logFileEncoder": "none", "logStdoutEncoder": "none",
    "qps": "none", "burst": "none",
}


def parse_watch_namespace(value: str) -> frozenset[str] | None:
    """KubeRay's ``--watch-namespace`` / ``watchNamespace``: namespaces separated by commas, as
    written (no spaces trimmed); None (all namespaces) when the value is empty or names an empty
    namespace, since upstream hands each entry to controller-runtime's cache as a namespace key and
    the empty key there means every namespace.

    Mirrors: kuberay ray-operator/main.go (strings.Split of config.WatchNamespace into
    cache.Options.DefaultNamespaces)."""
    names = value.split(",")
    return None if "" in names else frozenset(names)


class ConfigurationError(ValueError):
    """A KubeRay operator configuration document pumice cannot use; the message says why."""


@dataclass(frozen=True)
class KubeRayConfiguration:
    """The part of KubeRay's operator configuration (``kind: Configuration``, apiVersion
    ``config.ray.io/v1alpha1``) that shapes the RayCluster's Pods and the RayJob's end.

    Attributes:
        head_sidecar_containers / worker_sidecar_containers: ``headSidecarContainers`` /
            ``workerSidecarContainers`` (Container wire dicts).
        default_container_envs: ``defaultContainerEnvs`` (EnvVar wire dicts).
        default_pod_annotations / default_pod_labels: ``defaultPodAnnotations`` / ``defaultPodLabels``.
        delete_rayjob_after_job_finishes: ``deleteRayJobAfterJobFinishes``.
        watch_namespace: ``watchNamespace`` (None: not in the file; see
            :func:`parse_watch_namespace`).

    Mirrors: kuberay ray-operator/apis/config/v1alpha1/configuration_types.go and main.go (which
    hands these to the reconcilers' options).
    """

    head_sidecar_containers: tuple[Obj, ...] = ()
    worker_sidecar_containers: tuple[Obj, ...] = ()
    default_container_envs: tuple[Obj, ...] = ()
    default_pod_annotations: Mapping[str, str] = field(default_factory=dict)
    default_pod_labels: Mapping[str, str] = field(default_factory=dict)
    delete_rayjob_after_job_finishes: bool = False
    watch_namespace: str | None = None

    @classmethod
    def from_document(cls, doc: Any) -> KubeRayConfiguration:
        """Parse a decoded YAML document (a key whose value is null counts as absent; a key that
        only shapes the operator process, such as ``enableLeaderElection`` or ``logStdoutEncoder``,
        is ignored with one WARNING).

        Raises:
            ConfigurationError: not a ``config.ray.io/v1alpha1`` Configuration; a key of upstream's
                Configuration that changes what is reconciled and is one of the controller-manager's
                flags or not supported here
                (the message says which flag to use); an unknown key (the known ones listed); a
                value of the wrong type.
        """
        if not isinstance(doc, dict):
            raise ConfigurationError(f"a KubeRay configuration is a mapping, got {type(doc).__name__}")
        if (doc.get("apiVersion"), doc.get("kind")) != (CONFIGURATION_API_VERSION, "Configuration"):
            raise ConfigurationError(f"a KubeRay configuration has apiVersion {CONFIGURATION_API_VERSION} and kind "
                                     f"Configuration, got {doc.get('apiVersion')!r} {doc.get('kind')!r}")
        lists = {"headSidecarContainers": "head_sidecar_containers",
                 "workerSidecarContainers": "worker_sidecar_containers",
                 "defaultContainerEnvs": "default_container_envs"}
        maps = {"defaultPodAnnotations": "default_pod_annotations", "defaultPodLabels": "default_pod_labels"}
        known = sorted([*lists, *maps, "deleteRayJobAfterJobFinishes", "watchNamespace"])
        out: dict[str, Any] = {}
        for key, value in doc.items():
            if key in ("apiVersion", "kind") or value is None:
                continue  # (a null is Go's nil: the key unset, as upstream's decoder reads it)
            if key in _PROCESS_ONLY:
                flag = _PROCESS_ONLY[key]
                log.warning("KubeRay configuration: %s is not read by pumice's controller-manager (%s); ignored", key,
                            f"its flag: {flag}" if flag != "none" else "no such setting here")
                continue
            if key in _NOT_HERE:
                if key in _NO_OP and value == _NO_OP[key] and type(value) is type(_NO_OP[key]):
                    continue
                raise ConfigurationError(f"{key}: {_NOT_HERE[key]} (pumice controller-manager)")
            if key in lists:
                if not isinstance(value, list) or not all(isinstance(x, dict) and isinstance(x.get("name"), str)
                                                          for x in value):
                    raise ConfigurationError(f"{key}: a list of objects with a name, got {value!r}")
                out[lists[key]] = tuple(value)
            elif key in maps:
                if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                          for k, v in value.items()):
                    raise ConfigurationError(f"{key}: a map of strings to strings, got {value!r}")
                out[maps[key]] = dict(value)
            elif key == "deleteRayJobAfterJobFinishes":
                if not isinstance(value, bool):
                    raise ConfigurationError(f"{key}: true or false, got {value!r}")
                out["delete_rayjob_after_job_finishes"] = value
            elif key == "watchNamespace":
                if not isinstance(value, str):
                    raise ConfigurationError(f"{key}: namespaces separated by commas, got {value!r}")
                out["watch_namespace"] = value
            else:
                raise ConfigurationError(f"unknown key {key!r} in the KubeRay configuration; known: {', '.join(known)}")
        return cls(**out)

    def setup_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`pumice.controllers.ray.setup`: ``raycluster_options`` and
        ``rayjob_options`` carrying this configuration over the defaults."""
        rc = RayClusterOptions()
        pod = dataclasses.replace(rc.pod, head_sidecar_containers=self.head_sidecar_containers,
                                  worker_sidecar_containers=self.worker_sidecar_containers,
                                  default_container_envs=self.default_container_envs)
        out: dict[str, Any] = {
            "raycluster_options": dataclasses.replace(rc, pod=pod,
                                                      default_pod_annotations=dict(self.default_pod_annotations),
                                                      default_pod_labels=dict(self.default_pod_labels)),
            "rayjob_options": RayJobOptions(delete_rayjob_after_job_finishes=self.delete_rayjob_after_job_finishes)}
        if self.watch_namespace is not None:
            out["watch_namespace"] = self.watch_namespace
        return out
