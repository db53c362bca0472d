"""Wire strings the Volcano controllers and admission plugins use: label and annotation keys,
events, actions, phases and states, with the exact upstream spelling.

The wire strings are defined once, in :mod:`pumice.api.volcano.constants`; this module re-exports
the ones the controllers use under the same names and adds the controller-only keys.

Mirrors: volcano-sh/apis pkg/apis/batch/v1alpha1/labels.go, job.go; pkg/apis/bus/v1alpha1/
actions.go, events.go; pkg/apis/scheduling/v1beta1/labels.go, types.go.
"""

from __future__ import annotations

from pumice.api.volcano.constants import (
    BATCH_API_VERSION,
    COOLDOWN_TIME,
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER_NAME,
    DEFAULT_TASK_SPEC,
    GROUP_MIN_MEMBER_ANNOTATION_KEY,
    JDB_MAX_UNAVAILABLE,
    JDB_MIN_AVAILABLE,
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    JOB_RETRY_COUNT_KEY,
    JOB_VERSION,
    KUBE_GROUP_NAME_ANNOTATION_KEY,
    KUBE_HIERARCHY_ANNOTATION_KEY,
    KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY,
    NUMA_POLICY_KEY,
    POD_GROUP_NAME_PREFIX,
    POD_PREEMPTABLE,
    POD_TEMPLATE_KEY,
    QUEUE_NAME_ANNOTATION_KEY,
    QUEUE_NAME_KEY,
    REVOCABLE_ZONE,
    ROOT_QUEUE,
    SCHEDULING_API_VERSION,
    TASK_INDEX,
    TASK_SPEC_KEY,
    Action,
    Event,
    JobPhase,
    PodGroupPhase,
    QueueState,
)

__all__ = [
    "BATCH_API_VERSION",
    "COOLDOWN_TIME",
    "DEFAULT_QUEUE",
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_TASK_SPEC",
    "GROUP_MIN_MEMBER_ANNOTATION_KEY",
    "JDB_MAX_UNAVAILABLE",
    "JDB_MIN_AVAILABLE",
    "JOB_NAMESPACE_KEY",
    "JOB_NAME_KEY",
    "JOB_RETRY_COUNT_KEY",
    "JOB_VERSION",
    "KUBE_GROUP_NAME_ANNOTATION_KEY",
    "KUBE_HIERARCHY_ANNOTATION_KEY",
    "KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY",
    "NUMA_POLICY_KEY",
    "POD_GROUP_NAME_PREFIX",
    "POD_PREEMPTABLE",
    "POD_TEMPLATE_KEY",
    "QUEUE_NAME_ANNOTATION_KEY",
    "QUEUE_NAME_KEY",
    "REVOCABLE_ZONE",
    "ROOT_QUEUE",
    "SCHEDULING_API_VERSION",
    "TASK_INDEX",
    "TASK_SPEC_KEY",
    "Action",
    "Event",
    "JobPhase",
    "PodGroupPhase",
    "QueueState",
]




# --- controller-only keys and defaults ---------------------------------------------------------
OUT_OF_SYNC_KEY = "volcano.sh/controller-out-of-sync"
DEFAULT_MAX_RETRY = 3


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


#: Job plugins the controller knows (upstream plugins factory).
JOB_PLUGINS: tuple[str, ...] = ("env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank")
