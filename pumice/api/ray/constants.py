"""ray.io wire strings: states, condition types and reasons, label and annotation keys, ports.

Every value is the exact upstream string.

Mirrors: kuberay ray-operator/apis/ray/v1/{raycluster,rayjob,rayservice}_types.go and
ray-operator/controllers/ray/utils/constant.go.
"""

from __future__ import annotations

from enum import StrEnum

GROUP = "ray.io"
VERSION = "v1"
API_VERSION = "ray.io/v1"


# --- RayCluster -------------------------------------------------------------------------------


class ClusterState(StrEnum):
    """``RayCluster.status.state`` (deprecated upstream but still written)."""

    READY = "ready"
    SUSPENDED = "suspended"
    FAILED = "failed"  # kept for compatibility; never written by the controller


class RayClusterConditionType(StrEnum):
    """``RayCluster.status.conditions[].type``."""

    HEAD_POD_READY = "HeadPodReady"
    RAY_CLUSTER_PROVISIONED = "RayClusterProvisioned"
    # Upstream's Go constant is RayClusterReplicaFailure; its wire value is "ReplicaFailure".
    RAY_CLUSTER_REPLICA_FAILURE = "ReplicaFailure"
    RAY_CLUSTER_SUSPENDING = "RayClusterSuspending"
    RAY_CLUSTER_SUSPENDED = "RayClusterSuspended"


class RayClusterConditionReason(StrEnum):
    """Reasons of the RayCluster conditions."""

    ALL_POD_RUNNING_AND_READY_FIRST_TIME = "AllPodRunningAndReadyFirstTime"
    RAY_CLUSTER_PODS_PROVISIONING = "RayClusterPodsProvisioning"
    HEAD_POD_NOT_FOUND = "HeadPodNotFound"
    HEAD_POD_RUNNING_AND_READY = "HeadPodRunningAndReady"
    FAILED_CREATE_HEAD_POD = "FailedCreateHeadPod"
    FAILED_DELETE_HEAD_POD = "FailedDeleteHeadPod"
    FAILED_CREATE_WORKER_POD = "FailedCreateWorkerPod"
    FAILED_DELETE_WORKER_POD = "FailedDeleteWorkerPod"
    FAILED_DELETE_ALL_PODS = "FailedDeleteAllPods"


class RayNodeType(StrEnum):
    """Value of the ``ray.io/node-type`` label."""

    HEAD = "head"
    WORKER = "worker"
    REDIS_CLEANUP = "redis-cleanup"


class UpscalingMode(StrEnum):
    DEFAULT = "Default"
    AGGRESSIVE = "Aggressive"
    CONSERVATIVE = "Conservative"


class AutoscalerVersion(StrEnum):
    V1 = "v1"
    V2 = "v2"


class RayClusterUpgradeType(StrEnum):
    RECREATE = "Recreate"
    NONE = "None"


class GcsFaultToleranceBackend(StrEnum):
    REDIS = "redis"
    ROCKSDB = "rocksdb"


class GCSStorageDeletionPolicy(StrEnum):
    """``gcsFaultToleranceOptions.storage.deletionPolicy`` (rocksdb backend's PVC)."""

    DELETE_WITH_CLUSTER = "DeleteWithCluster"
    RETAIN = "Retain"


class IngressPathType(StrEnum):
    """``headGroupSpec.ingressOptions.pathType``."""

    EXACT = "Exact"
    PREFIX = "Prefix"
    IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


class NetworkPolicyMode(StrEnum):
    """``spec.networkPolicy.mode`` (CRD default ``DenyAll``)."""

    DENY_ALL = "DenyAll"
    DENY_ALL_INGRESS = "DenyAllIngress"
    DENY_ALL_EGRESS = "DenyAllEgress"


class AuthMode(StrEnum):
    DISABLED = "disabled"
    TOKEN = "token"


class ManagedBy(StrEnum):
    """Allowed ``spec.managedBy`` values."""

    KUBERAY_OPERATOR = "ray.io/kuberay-operator"
    MULTIKUEUE = "kueue.x-k8s.io/multikueue"


# --- RayJob -----------------------------------------------------------------------------------


class JobStatus(StrEnum):
    """``RayJob.status.jobStatus``: the Ray job's status as Ray reports it (``""`` is New)."""

    NEW = ""
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


TERMINAL_JOB_STATUSES = frozenset({JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED})


class JobDeploymentStatus(StrEnum):
    """``RayJob.status.jobDeploymentStatus`` (``""`` is New)."""

    NEW = ""
    INITIALIZING = "Initializing"
    WAITING = "Waiting"
    RUNNING = "Running"
    COMPLETE = "Complete"
    FAILED = "Failed"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    RETRYING = "Retrying"
    VALIDATION_FAILED = "ValidationFailed"


TERMINAL_JOB_DEPLOYMENT_STATUSES = frozenset({JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED})


class JobFailedReason(StrEnum):
    """``RayJob.status.reason``."""

    SUBMISSION_FAILED = "SubmissionFailed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    PRE_RUNNING_DEADLINE_EXCEEDED = "PreRunningDeadlineExceeded"
    APP_FAILED = "AppFailed"
    JOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_EXCEEDED = "JobDeploymentStatusTransitionGracePeriodExceeded"
    JOB_STATUS_CHECK_TIMEOUT_EXCEEDED = "JobStatusCheckTimeoutExceeded"
    VALIDATION_FAILED = "ValidationFailed"


class JobSubmissionMode(StrEnum):
    K8S_JOB_MODE = "K8sJobMode"
    HTTP_MODE = "HTTPMode"
    INTERACTIVE_MODE = "InteractiveMode"
    SIDECAR_MODE = "SidecarMode"


class DeletionPolicyType(StrEnum):
    DELETE_CLUSTER = "DeleteCluster"
    DELETE_WORKERS = "DeleteWorkers"
    DELETE_SELF = "DeleteSelf"
    DELETE_NONE = "DeleteNone"


# --- RayService -------------------------------------------------------------------------------


class ServiceStatus(StrEnum):
    """``RayService.status.serviceStatus``."""

    NOT_RUNNING = ""
    RUNNING = "Running"


class RayServiceConditionType(StrEnum):
    READY = "Ready"
    UPGRADE_IN_PROGRESS = "UpgradeInProgress"
    ROLLBACK_IN_PROGRESS = "RollbackInProgress"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"


class RayServiceConditionReason(StrEnum):
    INITIALIZING = "Initializing"
    INITIALIZING_TIMEOUT = "InitializingTimeout"
    ZERO_SERVE_ENDPOINTS = "ZeroServeEndpoints"
    NON_ZERO_SERVE_ENDPOINTS = "NonZeroServeEndpoints"
    VALIDATION_FAILED = "ValidationFailed"
    BOTH_ACTIVE_PENDING_CLUSTERS_EXIST = "BothActivePendingClustersExist"
    NO_PENDING_CLUSTER = "NoPendingCluster"
    NO_ACTIVE_CLUSTER = "NoActiveCluster"
    SUSPEND_REQUESTED = "SuspendRequested"
    SUSPEND_IN_PROGRESS = "SuspendInProgress"
    SUSPEND_COMPLETE = "SuspendComplete"
    RAY_SERVICE_RESUMED = "RayServiceResumed"
    DESIRED_CLUSTER_SPEC_CHANGED = "DesiredClusterSpecChanged"


class ApplicationStatus(StrEnum):
    """Serve application status (``applicationStatuses[app].status``)."""

    NOT_STARTED = "NOT_STARTED"
    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DELETING = "DELETING"
    UNHEALTHY = "UNHEALTHY"


class DeploymentStatus(StrEnum):
    """Serve deployment status (``serveDeploymentStatuses[dep].status``)."""

    UPDATING = "UPDATING"
    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"


class RayServiceUpgradeType(StrEnum):
    NEW_CLUSTER = "NewCluster"
    NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE = "NewClusterWithIncrementalUpgrade"
    NONE = "None"


# --- Labels and annotations -------------------------------------------------------------------

RAY_CLUSTER_LABEL_KEY = "ray.io/cluster"
RAY_NODE_TYPE_LABEL_KEY = "ray.io/node-type"
RAY_NODE_GROUP_LABEL_KEY = "ray.io/group"
RAY_IS_RAY_NODE_LABEL_KEY = "ray.io/is-ray-node"
RAY_ID_LABEL_KEY = "ray.io/identifier"
RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY = "ray.io/serve"
RAY_CLUSTER_HEADLESS_SERVICE_LABEL_KEY = "ray.io/headless-worker-svc"
RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY = "ray.io/originated-from-cr-name"
RAY_ORIGINATED_FROM_CRD_LABEL_KEY = "ray.io/originated-from-crd"
RAY_JOB_SUBMISSION_MODE_LABEL_KEY = "ray.io/job-submission-mode"
RAY_WORKER_REPLICA_INDEX_KEY = "ray.io/worker-group-replica-index"
RAY_WORKER_REPLICA_NAME_KEY = "ray.io/worker-group-replica-name"
RAY_HOST_INDEX_KEY = "ray.io/replica-host-index"
RAY_PRIORITY_CLASS_NAME_LABEL_KEY = "ray.io/priority-class-name"
RAY_GANG_SCHEDULING_ENABLED_LABEL_KEY = "ray.io/gang-scheduling-enabled"
KUBERNETES_APPLICATION_NAME_LABEL_KEY = "app.kubernetes.io/name"
KUBERNETES_CREATED_BY_LABEL_KEY = "app.kubernetes.io/created-by"
APPLICATION_NAME = "kuberay"
COMPONENT_NAME = "kuberay-operator"  # value of app.kubernetes.io/created-by
HEAD_GROUP_NAME = "headgroup"  # ray.io/group of the head Pod
SUBMITTER_GROUP_NAME = "submittergroup"

RAY_FT_ENABLED_ANNOTATION_KEY = "ray.io/ft-enabled"
RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY = "ray.io/external-storage-namespace"
RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION_KEY = "ray.io/gcs-ft-deletion-timeout"
RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY = "ray.io/overwrite-container-cmd"
DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION_KEY = "ray.io/disable-provisioned-head-restart"
HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY = "ray.io/hash-without-replicas-and-workers-to-delete"
NUM_WORKER_GROUPS_KEY = "ray.io/num-worker-groups"
KUBERAY_VERSION_KEY = "ray.io/kuberay-version"
UPGRADE_STRATEGY_RECREATE_HASH_KEY = "ray.io/upgrade-strategy-recreate-hash"
ENABLE_SERVE_SERVICE_KEY = "ray.io/enable-serve-service"
RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION = "ray.io/initializing-timeout"
VOLCANO_QUEUE_LABEL_KEY = "volcano.sh/queue-name"

GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"

# --- Ports ------------------------------------------------------------------------------------

DEFAULT_GCS_SERVER_PORT = 6379
DEFAULT_DASHBOARD_PORT = 8265
DEFAULT_CLIENT_PORT = 10001
DEFAULT_METRICS_PORT = 8080
DEFAULT_SERVING_PORT = 8000
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT = 52365
GCS_SERVER_PORT_NAME = "gcs-server"
DASHBOARD_PORT_NAME = "dashboard"
CLIENT_PORT_NAME = "client"
METRICS_PORT_NAME = "metrics"
SERVING_PORT_NAME = "serve"

#: Default ``workerGroupSpecs[].maxReplicas`` (math.MaxInt32).
DEFAULT_MAX_REPLICAS = 2147483647
