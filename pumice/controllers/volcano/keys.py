"""Wire strings the Volcano controllers and admission plugins use: label and annotation keys,
events, actions, phases and states, with the exact upstream spelling.

These live here (not only in :mod:`pumice.api.volcano`) so the controllers do not depend on the
shape of the typed API module; the values are the wire strings and must match upstream.

Mirrors: volcano-sh/apis pkg/apis/batch/v1alpha1/labels.go, job.go; pkg/apis/bus/v1alpha1/
actions.go, events.go; pkg/apis/scheduling/v1beta1/labels.go, types.go.
"""

from __future__ import annotations

from enum import StrEnum

from pumice.api.scheme import ResourceKind

# --- kinds -------------------------------------------------------------------------------------
VCJOB = ResourceKind("batch.volcano.sh", "v1alpha1", "Job", "jobs", short_names=("vcjob", "vj"),
                     subresources=("status",))
# upstream's PodGroup CRD has no status subresource: status is written with the whole object
PODGROUP = ResourceKind("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups",
                        short_names=("pg", "podgroup-v1beta1"))
QUEUE = ResourceKind("scheduling.volcano.sh", "v1beta1", "Queue", "queues", namespaced=False,
                     short_names=("q", "queue-v1beta1"), subresources=("status",))
COMMAND = ResourceKind("bus.volcano.sh", "v1alpha1", "Command", "commands")
POD = ResourceKind("", "v1", "Pod", "pods", subresources=("status", "binding", "eviction", "log"))
NAMESPACE = ResourceKind("", "v1", "Namespace", "namespaces", namespaced=False)
SERVICE = ResourceKind("", "v1", "Service", "services")
CONFIGMAP = ResourceKind("", "v1", "ConfigMap", "configmaps")
SECRET = ResourceKind("", "v1", "Secret", "secrets")
NETWORKPOLICY = ResourceKind("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies")
PRIORITYCLASS = ResourceKind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses",
                             namespaced=False)
REPLICASET = ResourceKind("apps", "v1", "ReplicaSet", "replicasets")
BATCHJOB = ResourceKind("batch", "v1", "Job", "jobs")

VCJOB_API_VERSION = "batch.volcano.sh/v1alpha1"
SCHEDULING_API_VERSION = "scheduling.volcano.sh/v1beta1"

# --- labels and annotations --------------------------------------------------------------------
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
JOB_NAME_KEY = "volcano.sh/job-name"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
JOB_VERSION_KEY = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
POD_TEMPLATE_KEY = "volcano.sh/template-uid"
OUT_OF_SYNC_KEY = "volcano.sh/controller-out-of-sync"
PODGROUP_NAME_PREFIX = "podgroup-"
KUBE_GROUP_NAME_KEY = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION_KEY = "scheduling.volcano.sh/queue-name"
GROUP_MIN_MEMBER_ANNOTATION_KEY = "scheduling.volcano.sh/group-min-member"
HIERARCHY_KEY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_KEY = "volcano.sh/hierarchy-weights"
POD_PREEMPTABLE = "volcano.sh/preemptable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"
DEFAULT_SCHEDULER_NAME = "volcano"
DEFAULT_MAX_RETRY = 3
DEFAULT_TASK_SPEC = "default"


class Event(StrEnum):
    """bus/v1alpha1 Event."""

    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    JOB_UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    JOB_UPDATED = "JobUpdated"


class Action(StrEnum):
    """bus/v1alpha1 Action."""

    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"
    ENQUEUE = "EnqueueJob"
    SYNC_QUEUE = "SyncQueue"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


#: Events a policy may name (upstream policyEventMap, the allowed ones), in a fixed order.
POLICY_EVENTS: tuple[Event, ...] = (
    Event.ANY, Event.POD_FAILED, Event.POD_EVICTED, Event.POD_PENDING, Event.JOB_UNKNOWN,
    Event.TASK_COMPLETED, Event.TASK_FAILED, Event.JOB_UPDATED,
)
#: Actions a policy may name (upstream policyActionMap, the allowed ones), in a fixed order.
POLICY_ACTIONS: tuple[Action, ...] = (
    Action.ABORT_JOB, Action.RESTART_JOB, Action.RESTART_TASK, Action.RESTART_POD,
    Action.RESTART_PARTITION, Action.TERMINATE_JOB, Action.COMPLETE_JOB, Action.RESUME_JOB,
)


class JobPhase(StrEnum):
    """batch/v1alpha1 JobPhase."""

    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    INQUEUE = "Inqueue"
    COMPLETED = "Completed"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


#: Job plugins the controller knows (upstream plugins factory).
JOB_PLUGINS: tuple[str, ...] = ("env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank")
