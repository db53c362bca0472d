"""Volcano wire strings: phases, states, events, actions, condition types and reasons,
label and annotation keys. Every value is the exact upstream string.

Mirrors: volcano-sh/apis pkg/apis/scheduling/v1beta1/types.go, labels.go;
pkg/apis/batch/v1alpha1/job.go, labels.go; pkg/apis/bus/v1alpha1/{actions,events}.go.
"""

from __future__ import annotations

from enum import StrEnum

SCHEDULING_GROUP = "scheduling.volcano.sh"
SCHEDULING_API_VERSION = "scheduling.volcano.sh/v1beta1"
BATCH_GROUP = "batch.volcano.sh"
BATCH_API_VERSION = "batch.volcano.sh/v1alpha1"
BUS_GROUP = "bus.volcano.sh"
BUS_API_VERSION = "bus.volcano.sh/v1alpha1"

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"
DEFAULT_SCHEDULER_NAME = "volcano"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    INQUEUE = "Inqueue"
    COMPLETED = "Completed"


class PodGroupConditionType(StrEnum):
    UNSCHEDULABLE = "Unschedulable"
    SCHEDULED = "Scheduled"


class PodGroupConditionReason(StrEnum):
    NOT_ENOUGH_RESOURCES = "NotEnoughResources"
    NOT_ENOUGH_PODS = "NotEnoughTasks"
    NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
    POD_FAILED = "PodFailed"
    POD_DELETED = "PodDeleted"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class QueueAction(StrEnum):
    """Queue-controller actions (``bus.volcano.sh`` Command ``action`` for queues)."""

    SYNC_QUEUE = "SyncQueue"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


class JobPhase(StrEnum):
    """``batch.volcano.sh`` Job ``status.state.phase``."""

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


class Event(StrEnum):
    """Lifecycle-policy events (``spec.policies[].event``)."""

    ANY = "*"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    JOB_UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    JOB_UPDATED = "JobUpdated"
    TASK_FAILED = "TaskFailed"


class Action(StrEnum):
    """Lifecycle-policy and Command actions; the last five are controller-internal."""

    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"
    ENQUEUE_JOB = "EnqueueJob"
    SYNC_QUEUE = "SyncQueue"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


class DequeueStrategy(StrEnum):
    FIFO = "fifo"
    TRAVERSE = "traverse"


class NetworkTopologyMode(StrEnum):
    HARD = "hard"
    SOFT = "soft"


class ConcurrencyPolicy(StrEnum):
    """CronJob ``spec.concurrencyPolicy``."""

    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


CRON_JOB_SCHEDULED_TIMESTAMP_ANNOTATION = "volcano.sh/cronjob-scheduled-timestamp"


class MemberType(StrEnum):
    """HyperNode ``spec.members[].type``."""

    NODE = "Node"
    HYPER_NODE = "HyperNode"


TOPOLOGY_API_VERSION = "topology.volcano.sh/v1alpha1"
FLOW_API_VERSION = "flow.volcano.sh/v1alpha1"
SHARD_API_VERSION = "shard.volcano.sh/v1alpha1"
WARMUP_NODE_LABEL = "node.volcano.sh/warmup"
CREATED_BY_JOB_TEMPLATE = "volcano.sh/createdByJobTemplate"
CREATED_BY_JOB_FLOW = "volcano.sh/createdByJobFlow"
JOB_ALLOCATED_HYPERNODE_ANNOTATION = "volcano.sh/job-allocated-hypernode"
"""PodGroup annotation: the lowest HyperNode spanning the job's placements (api/well_known_labels.go)."""
PARTITION_ID_LABEL = "volcano.sh/partition-id"
NETWORK_TOPOLOGY_SOURCE_LABEL = "volcano.sh/network-topology-source"


class TopologyPolicy(StrEnum):
    NONE = "none"
    BEST_EFFORT = "best-effort"
    RESTRICTED = "restricted"
    SINGLE_NUMA_NODE = "single-numa-node"


# --- annotation and label keys ------------------------------------------------------------------

KUBE_GROUP_NAME_ANNOTATION_KEY = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_NAME_ANNOTATION_KEY = "scheduling.volcano.sh/group-name"
QUEUE_NAME_ANNOTATION_KEY = "scheduling.volcano.sh/queue-name"
GROUP_MIN_MEMBER_ANNOTATION_KEY = "scheduling.volcano.sh/group-min-member"
POD_PREEMPTABLE = "volcano.sh/preemptable"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
TASK_PRIORITY_ANNOTATION_KEY = "volcano.sh/task-priority"
NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"
KUBE_HIERARCHY_ANNOTATION_KEY = "volcano.sh/hierarchy"
KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY = "volcano.sh/hierarchy-weights"
SLA_WAITING_TIME_KEY = "volcano.sh/sla-waiting-time"

TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_NAME_KEY = "volcano.sh/job-name"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
JOB_VERSION = "volcano.sh/job-version"
JOB_TYPE_KEY = "volcano.sh/job-type"
POD_TEMPLATE_KEY = "volcano.sh/template-uid"
JOB_RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
JOB_FORWARDING_KEY = "volcano.sh/job-forwarding"
FORWARD_CLUSTER_KEY = "volcano.sh/forward-cluster"
ORG_POD_DELETED = "volcano.sh/org-pod-deleted"
DEFAULT_TASK_SPEC = "default"
POD_GROUP_NAME_PREFIX = "podgroup-"
