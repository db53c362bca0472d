"""Wire strings and defaults of the KubeRay operator: label and annotation keys, ports, env names,
state names, reasons and timings.

Every value is the exact upstream string (they are interface facts: users select on these labels,
dashboards read these states).

Mirrors: kuberay ray-operator/controllers/ray/utils/constant.go and
ray-operator/apis/ray/v1/{raycluster,rayjob}_types.go.
"""

from __future__ import annotations

from enum import StrEnum

from pumice.api.ray.constants import (
    APPLICATION_NAME,
    CLIENT_PORT_NAME,
    COMPONENT_NAME,
    DASHBOARD_PORT_NAME,
    DEFAULT_CLIENT_PORT,
    DEFAULT_DASHBOARD_AGENT_LISTEN_PORT,
    DEFAULT_DASHBOARD_PORT,
    DEFAULT_GCS_SERVER_PORT,
    DEFAULT_METRICS_PORT,
    DEFAULT_SERVING_PORT,
    DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION_KEY,
    ENABLE_SERVE_SERVICE_KEY,
    GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER,
    GCS_SERVER_PORT_NAME,
    HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY,
    HEAD_GROUP_NAME,
    KUBERAY_VERSION_KEY,
    KUBERNETES_APPLICATION_NAME_LABEL_KEY,
    KUBERNETES_CREATED_BY_LABEL_KEY,
    METRICS_PORT_NAME,
    NUM_WORKER_GROUPS_KEY,
    RAY_CLUSTER_HEADLESS_SERVICE_LABEL_KEY,
    RAY_CLUSTER_LABEL_KEY,
    RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY,
    RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY,
    RAY_FT_ENABLED_ANNOTATION_KEY,
    RAY_GANG_SCHEDULING_ENABLED_LABEL_KEY,
    RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION_KEY,
    RAY_HOST_INDEX_KEY,
    RAY_ID_LABEL_KEY,
    RAY_IS_RAY_NODE_LABEL_KEY,
    RAY_JOB_SUBMISSION_MODE_LABEL_KEY,
    RAY_NODE_GROUP_LABEL_KEY,
    RAY_NODE_TYPE_LABEL_KEY,
    RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY,
    RAY_ORIGINATED_FROM_CRD_LABEL_KEY,
    RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY,
    RAY_PRIORITY_CLASS_NAME_LABEL_KEY,
    RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION,
    RAY_WORKER_REPLICA_INDEX_KEY,
    RAY_WORKER_REPLICA_NAME_KEY,
    SERVING_PORT_NAME,
    SUBMITTER_GROUP_NAME,
    TERMINAL_JOB_DEPLOYMENT_STATUSES,
    TERMINAL_JOB_STATUSES,
    UPGRADE_STRATEGY_RECREATE_HASH_KEY,
    AuthMode,
    ClusterState,
    DeletionPolicyType,
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
    ManagedBy,
    RayClusterConditionReason,
    RayClusterConditionType,
    RayNodeType,
)

__all__ = [
    "APPLICATION_NAME",
    "CLIENT_PORT_NAME",
    "COMPONENT_NAME",
    "DASHBOARD_PORT_NAME",
    "DEFAULT_CLIENT_PORT",
    "DEFAULT_DASHBOARD_AGENT_LISTEN_PORT",
    "DEFAULT_DASHBOARD_PORT",
    "DEFAULT_GCS_SERVER_PORT",
    "DEFAULT_METRICS_PORT",
    "DEFAULT_SERVING_PORT",
    "DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION_KEY",
    "ENABLE_SERVE_SERVICE_KEY",
    "GCS_FAULT_TOLERANCE_REDIS_CLEANUP_FINALIZER",
    "GCS_SERVER_PORT_NAME",
    "HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY",
    "HEAD_GROUP_NAME",
    "KUBERAY_VERSION_KEY",
    "KUBERNETES_APPLICATION_NAME_LABEL_KEY",
    "KUBERNETES_CREATED_BY_LABEL_KEY",
    "METRICS_PORT_NAME",
    "NUM_WORKER_GROUPS_KEY",
    "RAY_CLUSTER_HEADLESS_SERVICE_LABEL_KEY",
    "RAY_CLUSTER_LABEL_KEY",
    "RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY",
    "RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY",
    "RAY_FT_ENABLED_ANNOTATION_KEY",
    "RAY_GANG_SCHEDULING_ENABLED_LABEL_KEY",
    "RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION_KEY",
    "RAY_HOST_INDEX_KEY",
    "RAY_ID_LABEL_KEY",
    "RAY_IS_RAY_NODE_LABEL_KEY",
    "RAY_JOB_SUBMISSION_MODE_LABEL_KEY",
    "RAY_NODE_GROUP_LABEL_KEY",
    "RAY_NODE_TYPE_LABEL_KEY",
    "RAY_ORIGINATED_FROM_CRD_LABEL_KEY",
    "RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY",
    "RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY",
    "RAY_PRIORITY_CLASS_NAME_LABEL_KEY",
    "RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION",
    "RAY_WORKER_REPLICA_INDEX_KEY",
    "RAY_WORKER_REPLICA_NAME_KEY",
    "SERVING_PORT_NAME",
    "SUBMITTER_GROUP_NAME",
    "TERMINAL_JOB_DEPLOYMENT_STATUSES",
    "TERMINAL_JOB_STATUSES",
    "UPGRADE_STRATEGY_RECREATE_HASH_KEY",
    "AuthMode",
    "CRDType",
    "ClusterState",
    "DeletionPolicyType",
    "JobDeploymentStatus",
    "JobFailedReason",
    "JobStatus",
    "JobSubmissionMode",
    "ManagedBy",
    "RayClusterConditionReason",
    "RayClusterConditionType",
    "RayNodeType",
]

# --- label keys ---------------------------------------------------------------------------------

KUBERAY_VERSION = "nightly"


#: ``spec.managedBy`` value of objects this operator reconciles.

# --- annotation keys ----------------------------------------------------------------------------

# --- finalizers ---------------------------------------------------------------------------------
RAYJOB_STOP_JOB_FINALIZER = "ray.io/rayjob-finalizer"
RAYSERVICE_FINALIZER = "ray.io/rayservice-finalizer"

# --- ports --------------------------------------------------------------------------------------
DEFAULT_SERVICE_APP_PROTOCOL = "tcp"
DEFAULT_CLUSTER_DOMAIN = "cluster.local"

# --- containers ---------------------------------------------------------------------------------
RAY_CONTAINER_INDEX = 0
SUBMITTER_CONTAINER_NAME = "ray-job-submitter"
WAIT_GCS_READY_INIT_CONTAINER = "wait-gcs-ready"
SHARED_MEMORY_VOLUME_NAME = "shared-mem"
SHARED_MEMORY_VOLUME_MOUNT_PATH = "/dev/shm"

# --- probes -------------------------------------------------------------------------------------
READINESS_PROBE = {"initialDelaySeconds": 10, "timeoutSeconds": 2, "headTimeoutSeconds": 5,
                   "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 10}
LIVENESS_PROBE = {"initialDelaySeconds": 30, "timeoutSeconds": 2, "headTimeoutSeconds": 5,
                  "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 120}
RAY_NODE_HEALTH_PATH = "/api/healthz"
RAY_AGENT_RAYLET_HEALTH_PATH = "api/local_raylet_healthz"
RAY_DASHBOARD_GCS_HEALTH_PATH = "api/gcs_healthz"
BASE_WGET_HEALTH_COMMAND = "wget --tries 1 -T {timeout} -q -O- http://localhost:{port}/{path} | grep success"
BASE_PYTHON_HEALTH_COMMAND = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout={timeout}); "
    "exit(0 if b'success' in r.read() else 1)\""
)
RAY_DASHBOARD_GCS_HEALTH_CHECK_TIMEOUT_SECONDS = 10

# --- timings (seconds) --------------------------------------------------------------------------
RAYCLUSTER_DEFAULT_REQUEUE_SECONDS = 300.0
RAYCLUSTER_REQUEUE_AFTER_CHANGE_SECONDS = 2.0
RAYJOB_DEFAULT_REQUEUE_SECONDS = 3.0
RAYJOB_SUBMITTER_FINISHED_TIMEOUT_SECONDS = 30.0
RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS = 300.0
RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS = 300.0
SCALE_EXPECTATION_CREATE_TIMEOUT_SECONDS = 30.0
DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS = 300
DELETION_RULE_REQUEUE_SLACK_SECONDS = 2.0
RAYSERVICE_DEFAULT_REQUEUE_SECONDS = 2.0
RAYSERVICE_CLUSTER_DELETION_DELAY_SECONDS = 60
SERVE_PROXY_HEALTH_PATH = "/-/healthz"
DEFAULT_SERVE_APP_NAME = "default"

# --- misc ---------------------------------------------------------------------------------------
MAX_RAYCLUSTER_NAME_LENGTH = 53
MAX_RAYJOB_NAME_LENGTH = 47
MAX_INT32 = 2147483647


class CRDType(StrEnum):
    """``ray.io/originated-from-crd`` values."""

    RAY_CLUSTER = "RayCluster"
    RAY_JOB = "RayJob"
    RAY_SERVICE = "RayService"


def is_job_terminal(status: str) -> bool:
    return status in TERMINAL_JOB_STATUSES


def is_job_deployment_terminal(status: str) -> bool:
    return status in TERMINAL_JOB_DEPLOYMENT_STATUSES
