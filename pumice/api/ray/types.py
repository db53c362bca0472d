"""Typed models of the ray.io/v1 kinds: RayCluster, RayJob, RayService (spec and status).

Wire names are the upstream camelCase JSON names; ``msgspec.convert(obj_dict, RayCluster)`` decodes
a wire dict (unknown fields are ignored) and :func:`pumice.api.ray.to_wire` encodes one back.
Embedded Kubernetes types (PodTemplateSpec, Service, EnvVar, ...) are lightkube's msgspec models;
the CRD generator publishes them as opaque objects (``x-kubernetes-preserve-unknown-fields``).

Fields with a CRD default carry :func:`~pumice.api.schema.crd_default`; upstream-required fields
have no Python default.

Mirrors: kuberay ray-operator/apis/ray/v1/raycluster_types.go, rayjob_types.go, rayservice_types.go.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from lightkube.models.core_v1 import (
    EnvFromSource,
    EnvVar,
    EnvVarSource,
    PodTemplateSpec,
    SecurityContext,
    Service,
    VolumeMount,
)
from lightkube.models.networking_v1 import IngressTLS, NetworkPolicyEgressRule, NetworkPolicyIngressRule

from pumice.api._structs import TopLevel
from pumice.api._structs import Wire as _Wire
from pumice.api._structs import from_wire as from_wire
from pumice.api._structs import to_wire as to_wire
from pumice.api.ray import constants as c
from pumice.api.schema import DateTime, Int32, Int64, Quantity, ResourceList, crd_default, extra

# --- shared -----------------------------------------------------------------------------------

CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


class Condition(_Wire):
    """``metav1.Condition``."""

    type: Annotated[str, extra(maxLength=316, pattern=CONDITION_TYPE_PATTERN)]
    status: Annotated[str, extra(enum=["True", "False", "Unknown"])]
    reason: Annotated[str, extra(maxLength=1024, minLength=1, pattern=CONDITION_REASON_PATTERN)]
    message: Annotated[str, extra(maxLength=32768)]
    last_transition_time: DateTime
    observed_generation: Annotated[Int64, extra(minimum=0)] | None = None


ConditionList = Annotated[
    list[Condition], extra(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})
]


class ResourceClaim(_Wire):
    name: str
    request: str | None = None


class ResourceRequirements(_Wire):
    """``corev1.ResourceRequirements`` (limits/requests as quantities)."""

    claims: (
        Annotated[
            list[ResourceClaim],
            extra(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}),
        ]
        | None
    ) = None
    limits: ResourceList | None = None
    requests: ResourceList | None = None


# --- RayCluster -------------------------------------------------------------------------------


class AuthOptions(_Wire):
    enable_k8s_token_auth: bool | None = msgspec.field(default=None, name="enableK8sTokenAuth")
    mode: Annotated[str, extra(enum=[m.value for m in c.AuthMode])] | None = None
    secret_name: str | None = None


class AutoscalerOptions(_Wire):
    """Options of the in-tree autoscaler sidecar."""

    args: list[str] | None = None
    command: list[str] | None = None
    env: list[EnvVar] | None = None
    env_from: list[EnvFromSource] | None = None
    idle_timeout_seconds: Int32 | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    resources: ResourceRequirements | None = None
    security_context: SecurityContext | None = None
    upscaling_mode: Annotated[str, extra(enum=[m.value for m in c.UpscalingMode])] | None = None
    version: Annotated[str, extra(enum=[m.value for m in c.AutoscalerVersion])] | None = None
    volume_mounts: list[VolumeMount] | None = None


#: The CEL rules (``x-kubernetes-validations``) of KubeRay's CRDs, evaluated by the API server
#: (pumice.apiserver.celrules). Mirrors: kuberay ray-operator/apis/ray/v1 (+kubebuilder:validation:XValidation).
_IMMUTABLE = {"rule": "self == oldSelf", "message": "the managedBy field is immutable"}
_MANAGED_BY_VALUES = {"rule": "self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",
                      "message": "the managedBy field value must be either 'ray.io/kuberay-operator' or "
                                 "'kueue.x-k8s.io/multikueue'"}
ManagedBy = Annotated[str, extra(**{"x-kubernetes-validations": [_IMMUTABLE, _MANAGED_BY_VALUES]})]
_BACKEND_IMMUTABLE = {"rule": "self == oldSelf", "message": "gcsFaultToleranceOptions.backend is immutable"}
_DELETION_STRATEGY_RULES = [
    {"rule": "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
     "message": "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same "
                "deletionStrategy"},
    {"rule": "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
     "message": "deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be "
                "empty)"},
]
_DELETION_CONDITION_RULES = [
    {"rule": "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
     "message": "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition."},
    {"rule": "has(self.jobStatus) || has(self.jobDeploymentStatus)",
     "message": "the deletion condition requires either the JobStatus or the JobDeploymentStatus field."},
]


class RedisCredential(_Wire):
    value: str | None = None
    value_from: EnvVarSource | None = None


class GcsEmbeddedStorage(_Wire):
    """``gcsFaultToleranceOptions.storage``: the PVC of the ``rocksdb`` backend (``size`` a
    quantity)."""

    access_modes: list[str] | None = None
    claim_name: str | None = None
    deletion_policy: Annotated[str, extra(enum=[m.value for m in c.GCSStorageDeletionPolicy])] | None = None
    size: Quantity | None = None
    storage_class_name: str | None = None
    sub_path: str | None = None


class GcsFaultToleranceOptions(_Wire):
    backend: Annotated[str, extra(enum=[m.value for m in c.GcsFaultToleranceBackend],
                                  **{"x-kubernetes-validations": [_BACKEND_IMMUTABLE]})] | None = None
    external_storage_namespace: str | None = None
    redis_address: str | None = None
    redis_password: RedisCredential | None = None
    redis_username: RedisCredential | None = None
    storage: GcsEmbeddedStorage | None = None


class IngressOptions(_Wire):
    """``headGroupSpec.ingressOptions``: the head Ingress's host, path (default ``/``), pathType
    (default ``Prefix``) and TLS."""

    host: str | None = None
    path: str | None = None
    path_type: Annotated[str, extra(enum=[m.value for m in c.IngressPathType])] | None = None
    tls: list[IngressTLS] | None = None


class HeadGroupSpec(_Wire):
    """``spec.headGroupSpec``: the head Pod template and ``ray start --head`` parameters."""

    template: PodTemplateSpec
    enable_ingress: bool | None = None
    head_service: Service | None = None
    ingress_options: IngressOptions | None = None
    labels: dict[str, str] | None = None
    ray_start_params: dict[str, str] | None = None
    resources: dict[str, str] | None = None
    service_type: str | None = None


class CollectorOptions(_Wire):
    """``historyServerOptions.collectorOptions``: the history server collector sidecar."""

    env: list[EnvVar] | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    resources: ResourceRequirements | None = None


class HistoryServerOptions(_Wire):
    collector_options: CollectorOptions | None = None


class NetworkPolicyRules(_Wire):
    """Ingress and egress rules appended to a generated NetworkPolicy."""

    egress_rules: list[NetworkPolicyEgressRule] | None = None
    ingress_rules: list[NetworkPolicyIngressRule] | None = None


class WorkerGroupNetworkPolicyRules(NetworkPolicyRules, kw_only=True):
    """:class:`NetworkPolicyRules` of one worker group (``groupName``)."""

    group_name: str


class NetworkPolicyConfig(_Wire):
    """``spec.networkPolicy``."""

    head: NetworkPolicyRules | None = None
    mode: Annotated[str, crd_default(enum=[m.value for m in c.NetworkPolicyMode])] = c.NetworkPolicyMode.DENY_ALL.value
    worker: NetworkPolicyRules | None = None
    worker_groups: (
        Annotated[
            list[WorkerGroupNetworkPolicyRules],
            extra(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["groupName"]}),
        ]
        | None
    ) = None


class TLSOptions(_Wire):
    enabled: bool | None = None


class ScaleStrategy(_Wire):
    workers_to_delete: list[str] | None = None


class WorkerGroupSpec(_Wire):
    """One ``spec.workerGroupSpecs[]`` entry; replica counts are Pods per host group."""

    group_name: str
    template: PodTemplateSpec
    min_replicas: Annotated[Int32, crd_default(required=True)] = 0
    max_replicas: Annotated[Int32, crd_default(required=True)] = c.DEFAULT_MAX_REPLICAS
    replicas: Annotated[Int32, crd_default()] = 0
    num_of_hosts: Annotated[Int32, crd_default()] = 1
    priority: Annotated[Int32, crd_default()] = 0
    idle_timeout_seconds: Int32 | None = None
    labels: dict[str, str] | None = None
    ray_start_params: dict[str, str] | None = None
    resources: dict[str, str] | None = None
    scale_strategy: ScaleStrategy | None = None
    suspend: bool | None = None


class RayClusterUpgradeStrategy(_Wire):
    type: Annotated[str, extra(enum=[m.value for m in c.RayClusterUpgradeType])] | None = None


class RayClusterSpec(_Wire):
    """``RayCluster.spec`` (also embedded as RayJob ``rayClusterSpec`` and RayService
    ``rayClusterConfig``)."""

    head_group_spec: HeadGroupSpec
    auth_options: AuthOptions | None = None
    autoscaler_options: AutoscalerOptions | None = None
    enable_in_tree_autoscaling: bool | None = None
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = None
    head_service_annotations: dict[str, str] | None = None
    history_server_options: HistoryServerOptions | None = None
    managed_by: ManagedBy | None = None
    network_policy: NetworkPolicyConfig | None = None
    ray_version: str | None = None
    suspend: bool | None = None
    tls_options: TLSOptions | None = None
    upgrade_strategy: RayClusterUpgradeStrategy | None = None
    worker_group_specs: list[WorkerGroupSpec] | None = None


class HeadInfo(_Wire):
    pod_ip: str | None = msgspec.field(default=None, name="podIP")
    pod_name: str | None = None
    service_ip: str | None = msgspec.field(default=None, name="serviceIP")
    service_name: str | None = None


class RayClusterStatus(_Wire):
    """``RayCluster.status``. CPU/memory/GPU/TPU are quantities (``"2"``, ``"4Gi"``)."""

    state: str | None = None
    reason: str | None = None
    desired_cpu: Quantity | None = msgspec.field(default=None, name="desiredCPU")
    desired_memory: Quantity | None = None
    desired_gpu: Quantity | None = msgspec.field(default=None, name="desiredGPU")
    desired_tpu: Quantity | None = msgspec.field(default=None, name="desiredTPU")
    last_update_time: Annotated[DateTime, extra(nullable=True)] | None = None
    state_transition_times: dict[str, DateTime] | None = None
    endpoints: dict[str, str] | None = None
    head: HeadInfo | None = None
    conditions: ConditionList | None = None
    ready_worker_replicas: Int32 | None = None
    available_worker_replicas: Int32 | None = None
    desired_worker_replicas: Int32 | None = None
    min_worker_replicas: Int32 | None = None
    max_worker_replicas: Int32 | None = None
    observed_generation: Int64 | None = None


class _TopLevel(TopLevel):
    """Base of the ray.io/v1 kinds (``apiVersion`` ``ray.io/v1``)."""

    __api_version__ = c.API_VERSION


class RayCluster(_TopLevel):
    spec: RayClusterSpec | None = None
    status: RayClusterStatus | None = None


# --- RayJob -----------------------------------------------------------------------------------


class DeletionPolicy(_Wire):
    policy: Annotated[str, extra(enum=[m.value for m in c.DeletionPolicyType])] | None = None


class DeletionCondition(_Wire):
    job_status: Annotated[str, extra(enum=["SUCCEEDED", "FAILED"])] | None = None
    job_deployment_status: Annotated[str, extra(enum=["Failed"])] | None = None
    ttl_seconds: Annotated[Int32, crd_default(minimum=0)] = 0


class DeletionRule(_Wire):
    policy: Annotated[str, extra(enum=[m.value for m in c.DeletionPolicyType])]
    condition: Annotated[DeletionCondition, extra(**{"x-kubernetes-validations": _DELETION_CONDITION_RULES})]


class DeletionStrategy(_Wire):
    deletion_rules: (
        Annotated[list[DeletionRule], extra(minItems=1, **{"x-kubernetes-list-type": "atomic"})] | None
    ) = None
    on_failure: DeletionPolicy | None = None
    on_success: DeletionPolicy | None = None


class SubmitterConfig(_Wire):
    backoff_limit: Int32 | None = None


class RayJobSpec(_Wire):
    """``RayJob.spec``; ``entrypointNumCpus``/``Gpus`` are floats, deadlines seconds."""

    active_deadline_seconds: Int32 | None = None
    backoff_limit: Annotated[Int32, crd_default()] = 0
    cluster_selector: dict[str, str] | None = None
    deletion_strategy: (
        Annotated[DeletionStrategy, extra(**{"x-kubernetes-validations": _DELETION_STRATEGY_RULES})] | None
    ) = None
    entrypoint: str | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: str | None = None
    job_id: str | None = None
    managed_by: ManagedBy | None = None
    metadata: dict[str, str] | None = None
    pre_running_deadline_seconds: Annotated[Int32, extra(minimum=1)] | None = None
    ray_cluster_spec: RayClusterSpec | None = None
    runtime_env_yaml: str | None = msgspec.field(default=None, name="runtimeEnvYAML")
    shutdown_after_job_finishes: bool | None = None
    submission_mode: Annotated[str, crd_default()] = c.JobSubmissionMode.K8S_JOB_MODE.value
    submitter_config: SubmitterConfig | None = None
    submitter_pod_template: PodTemplateSpec | None = None
    suspend: bool | None = None
    ttl_seconds_after_finished: Annotated[Int32, crd_default()] = 0


class RayJobInfo(_Wire):
    start_time: DateTime | None = None
    end_time: DateTime | None = None


class RayJobStatus(_Wire):
    """``RayJob.status``; ``dashboardURL`` is ``host:port`` without scheme."""

    dashboard_url: str | None = msgspec.field(default=None, name="dashboardURL")
    end_time: DateTime | None = None
    failed: Annotated[Int32, crd_default()] = 0
    job_deployment_status: str | None = None
    job_id: str | None = None
    job_status: str | None = None
    job_status_check_failure_start_time: DateTime | None = None
    message: str | None = None
    observed_generation: Int64 | None = None
    ray_cluster_name: str | None = None
    ray_cluster_status: RayClusterStatus | None = None
    ray_job_info: RayJobInfo | None = None
    reason: str | None = None
    start_time: DateTime | None = None
    succeeded: Annotated[Int32, crd_default()] = 0


class RayJob(_TopLevel):
    spec: RayJobSpec | None = None
    status: RayJobStatus | None = None


# --- RayService -------------------------------------------------------------------------------


class ClusterUpgradeOptions(_Wire):
    gateway_class_name: str
    interval_seconds: Int32
    step_size_percent: Int32
    max_surge_percent: Annotated[Int32, crd_default()] = 100


class RayServiceUpgradeStrategy(_Wire):
    cluster_upgrade_options: ClusterUpgradeOptions | None = None
    type: str | None = None


class RayServiceSpec(_Wire):
    ray_cluster_config: RayClusterSpec
    deployment_unhealthy_second_threshold: Int32 | None = None
    exclude_head_pod_from_serve_svc: bool | None = None
    managed_by: ManagedBy | None = None
    ray_cluster_deletion_delay_seconds: Annotated[Int32, extra(minimum=0)] | None = None
    serve_config_v2: str | None = None
    serve_service: Service | None = None
    service_unhealthy_second_threshold: Int32 | None = None
    suspend: bool | None = None
    upgrade_strategy: RayServiceUpgradeStrategy | None = None


class ServeDeploymentStatus(_Wire):
    message: str | None = None
    status: str | None = None


class AppStatus(_Wire):
    message: str | None = None
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] | None = None
    status: str | None = None


class RayServiceStatus(_Wire):
    """``activeServiceStatus`` / ``pendingServiceStatus``; percentages 0-100."""

    application_statuses: dict[str, AppStatus] | None = None
    last_traffic_migrated_time: DateTime | None = None
    ray_cluster_name: str | None = None
    ray_cluster_status: RayClusterStatus | None = None
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None


class RayServiceStatuses(_Wire):
    """``RayService.status``."""

    active_service_status: RayServiceStatus | None = None
    conditions: ConditionList | None = None
    last_update_time: DateTime | None = None
    num_serve_endpoints: Int32 | None = None
    observed_generation: Int64 | None = None
    pending_service_status: RayServiceStatus | None = None
    service_status: str | None = None


class RayService(_TopLevel):
    spec: RayServiceSpec | None = None
    status: RayServiceStatuses | None = None
