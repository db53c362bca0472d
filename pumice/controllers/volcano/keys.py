"""Wire strings the Volcano controllers and admission plugins use: label and annotation keys,
events, actions, phases and states, with the exact upstream spelling.

The wire strings are defined once, in :mod:`pumice.api.volcano.constants`; this module gives them
the names the controllers use (and adds the resource kinds and controller-only keys), so the
controllers do not depend on the shape of the typed API module.

Mirrors: volcano-sh/apis pkg/apis/batch/v1alpha1/labels.go, job.go; pkg/apis/bus/v1alpha1/
actions.go, events.go; pkg/apis/scheduling/v1beta1/labels.go, types.go.
"""

from __future__ import annotations

from pumice.api.volcano import constants as _c

# --- labels, annotations, defaults, events, actions, phases ------------------------------------
# Each wire string is defined once, in pumice.api.volcano.constants; these are the names the
# controllers use for them.
VCJOB_API_VERSION = _c.BATCH_API_VERSION
COOLDOWN_TIME = _c.COOLDOWN_TIME
DEFAULT_QUEUE = _c.DEFAULT_QUEUE
DEFAULT_SCHEDULER_NAME = _c.DEFAULT_SCHEDULER_NAME
DEFAULT_TASK_SPEC = _c.DEFAULT_TASK_SPEC
GROUP_MIN_MEMBER_ANNOTATION_KEY = _c.GROUP_MIN_MEMBER_ANNOTATION_KEY
JDB_MAX_UNAVAILABLE = _c.JDB_MAX_UNAVAILABLE
JDB_MIN_AVAILABLE = _c.JDB_MIN_AVAILABLE
JOB_NAME_KEY = _c.JOB_NAME_KEY
JOB_NAMESPACE_KEY = _c.JOB_NAMESPACE_KEY
JOB_RETRY_COUNT_KEY = _c.JOB_RETRY_COUNT_KEY
NUMA_POLICY_KEY = _c.NUMA_POLICY_KEY
POD_PREEMPTABLE = _c.POD_PREEMPTABLE
POD_TEMPLATE_KEY = _c.POD_TEMPLATE_KEY
QUEUE_NAME_ANNOTATION_KEY = _c.QUEUE_NAME_ANNOTATION_KEY
QUEUE_NAME_KEY = _c.QUEUE_NAME_KEY
REVOCABLE_ZONE = _c.REVOCABLE_ZONE
ROOT_QUEUE = _c.ROOT_QUEUE
SCHEDULING_API_VERSION = _c.SCHEDULING_API_VERSION
TASK_SPEC_KEY = _c.TASK_SPEC_KEY
TASK_INDEX_KEY = _c.TASK_INDEX
JOB_VERSION_KEY = _c.JOB_VERSION
PODGROUP_NAME_PREFIX = _c.POD_GROUP_NAME_PREFIX
KUBE_GROUP_NAME_KEY = _c.KUBE_GROUP_NAME_ANNOTATION_KEY
HIERARCHY_KEY = _c.KUBE_HIERARCHY_ANNOTATION_KEY
HIERARCHY_WEIGHTS_KEY = _c.KUBE_HIERARCHY_WEIGHT_ANNOTATION_KEY

Event = _c.Event
Action = _c.Action
JobPhase = _c.JobPhase
PodGroupPhase = _c.PodGroupPhase
QueueState = _c.QueueState


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
