"""ray.io/v1 wire types and constants (RayCluster, RayJob, RayService).

``from pumice.api.ray import constants as rc`` for the wire strings;
``from pumice.api.ray.types import RayCluster, to_wire, from_wire`` for the typed models.
"""

from pumice.api.ray.constants import (
    ClusterState,
    JobDeploymentStatus,
    JobStatus,
    JobSubmissionMode,
    RayClusterConditionType,
    RayNodeType,
)
from pumice.api.ray.types import RayCluster, RayJob, RayService, from_wire, to_wire

__all__ = [
    "ClusterState",
    "JobDeploymentStatus",
    "JobStatus",
    "JobSubmissionMode",
    "RayCluster",
    "RayClusterConditionType",
    "RayJob",
    "RayNodeType",
    "RayService",
    "from_wire",
    "to_wire",
]
