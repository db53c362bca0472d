"""The scheduler's object model: Resource, TaskInfo, JobInfo, NodeInfo, QueueInfo, ClusterInfo.

Mirrors: volcano pkg/scheduler/api.
"""

from pumice.api.volcano.constants import PodGroupPhase, QueueState
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeError, NodeInfo
from pumice.scheduler.volcano.api.queue_info import ClusterInfo, QueueInfo
from pumice.scheduler.volcano.api.resource import MIN_RESOURCE, Dimension, Resource, exceeded_part, share
from pumice.scheduler.volcano.api.task_info import TaskInfo, TransactionContext, pod_request
from pumice.scheduler.volcano.api.types import (
    FitError,
    FitErrors,
    Status,
    StatusCode,
    TaskStatus,
    ValidateResult,
    Vote,
)

__all__ = [
    "MIN_RESOURCE",
    "ClusterInfo",
    "Dimension",
    "FitError",
    "FitErrors",
    "JobInfo",
    "NodeError",
    "NodeInfo",
    "PodGroupPhase",
    "QueueInfo",
    "QueueState",
    "Resource",
    "Status",
    "StatusCode",
    "TaskInfo",
    "TaskStatus",
    "TransactionContext",
    "ValidateResult",
    "Vote",
    "exceeded_part",
    "pod_request",
    "share",
]
