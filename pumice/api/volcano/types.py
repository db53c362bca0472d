"""Typed models of the Volcano kinds: scheduling.volcano.sh/v1beta1 Queue and PodGroup,
batch.volcano.sh/v1alpha1 Job, bus.volcano.sh/v1alpha1 Command, topology.volcano.sh/v1alpha1
HyperNode.

Wire names are upstream's camelCase JSON names. Resource lists are quantity maps
(``{"cpu": "2", "memory": "4Gi"}``). Embedded Kubernetes types are lightkube's models, published
in the CRDs as opaque objects.

Mirrors: volcano-sh/apis pkg/apis/scheduling/v1beta1/types.go, pkg/apis/batch/v1alpha1/job.go,
pkg/apis/bus/v1alpha1/types.go, pkg/apis/topology/v1alpha1/hypernode_types.go.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from lightkube.models.core_v1 import ObjectReference as KubeObjectReference
from lightkube.models.core_v1 import PersistentVolumeClaimSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector

from pumice.api._structs import TopLevel as _TopLevel
from pumice.api._structs import Wire as _Wire
from pumice.api._structs import from_wire as from_wire
from pumice.api._structs import to_wire as to_wire
from pumice.api.ray.types import Condition
from pumice.api.schema import DateTime, Int32, Int64, ResourceList, crd_default, extra
from pumice.api.volcano import constants as c

DNS1123_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


NonNegInt32 = Annotated[Int32, extra(minimum=0)]


class NetworkTopologySpec(_Wire):
    highest_tier_allowed: Annotated[int, extra(minimum=0)] | None = None
    highest_tier_name: Annotated[str, extra(maxLength=253)] | None = None
    mode: Annotated[str, crd_default(enum=[m.value for m in c.NetworkTopologyMode])] = "hard"


# --- Queue ------------------------------------------------------------------------------------


class NodeGroupAffinity(_Wire):
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None
    required_during_scheduling_ignored_during_execution: list[str] | None = None


class QueueAffinity(_Wire):
    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAffinity | None = None


class Cluster(_Wire):
    name: str | None = None
    weight: Int32 | None = None
    capacity: ResourceList | None = None


class Guarantee(_Wire):
    resource: ResourceList | None = None


class QueueSpec(_Wire):
    """``Queue.spec``; ``weight`` 1..65535, ``capability``/``deserved`` quantity maps."""

    weight: Annotated[Int32, crd_default(minimum=1, maximum=65535)] = 1
    capability: ResourceList | None = None
    deserved: ResourceList | None = None
    guarantee: Guarantee | None = None
    reclaimable: bool | None = None
    parent: Annotated[str, extra(maxLength=253, pattern=DNS1123_SUBDOMAIN_PATTERN)] | None = None
    priority: NonNegInt32 | None = None
    dequeue_strategy: Annotated[str, crd_default(enum=[m.value for m in c.DequeueStrategy])] = "traverse"
    affinity: QueueAffinity | None = None
    extend_clusters: list[Cluster] | None = None
    type: Annotated[str, extra(maxLength=253)] | None = None


class Reservation(_Wire):
    nodes: list[str] | None = None
    resource: ResourceList | None = None


class QueueStatus(_Wire):
    """``Queue.status``: state, allocated, reservation, and the PodGroup counts by phase that the
    schema keeps but Volcano's queue controller no longer writes (since v1.11 they are gauges; see
    :mod:`pumice.controllers.volcano.queue`)."""

    state: Annotated[str, extra(enum=[m.value for m in c.QueueState])] | None = None
    pending: NonNegInt32 | None = None
    running: NonNegInt32 | None = None
    unknown: NonNegInt32 | None = None
    inqueue: NonNegInt32 | None = None
    completed: NonNegInt32 | None = None
    allocated: ResourceList | None = None
    reservation: Reservation | None = None


class Queue(_TopLevel):
    __api_version__ = c.SCHEDULING_API_VERSION
    spec: QueueSpec | None = None
    status: QueueStatus | None = None


# --- PodGroup ---------------------------------------------------------------------------------


class SubGroupPolicySpec(_Wire):
    name: Annotated[str, extra(maxLength=253)] | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_size: Annotated[Int32, crd_default(minimum=1)] = 1
    min_sub_groups: Annotated[Int32, crd_default(minimum=0)] = 0
    label_selector: LabelSelector | None = None
    match_label_keys: Annotated[list[str], extra(**{"x-kubernetes-list-type": "atomic"})] | None = None


class PodGroupSpec(_Wire):
    """``PodGroup.spec``: gang size, per-role minimums and the queue."""

    min_member: NonNegInt32 | None = None
    min_task_member: dict[str, Int32] | None = None
    min_resources: ResourceList | None = None
    queue: Annotated[
        str, crd_default(maxLength=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
    ] = c.DEFAULT_QUEUE
    priority_class_name: Annotated[str, extra(maxLength=253)] | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_policy: list[SubGroupPolicySpec] | None = None


class PodGroupCondition(_Wire):
    type: str | None = None
    status: str | None = None
    transition_id: str | None = msgspec.field(default=None, name="transitionID")
    last_transition_time: DateTime | None = None
    reason: str | None = None
    message: str | None = None


class PodGroupStatus(_Wire):
    phase: Annotated[str, extra(enum=["Pending", "Running", "Unknown", "Inqueue", "Completed"])] | None = None
    conditions: list[PodGroupCondition] | None = None
    running: NonNegInt32 | None = None
    succeeded: NonNegInt32 | None = None
    failed: NonNegInt32 | None = None
    position_in_queue: Annotated[int, extra(minimum=1)] | None = None
    """pumice's extension (no upstream field): the waiting job's 1-based place in its queue,
    written by the ``queue-position`` scheduler plugin (Kueue's ``positionInClusterQueue``)."""


class PodGroup(_TopLevel):
    __api_version__ = c.SCHEDULING_API_VERSION
    spec: PodGroupSpec | None = None
    status: PodGroupStatus | None = None


# --- batch Job --------------------------------------------------------------------------------

_EVENTS = [e.value for e in c.Event]


class LifecyclePolicy(_Wire):
    action: str | None = None
    event: Annotated[str, extra(enum=_EVENTS)] | None = None
    events: list[Annotated[str, extra(enum=_EVENTS)]] | None = None
    exit_code: Int32 | None = None
    timeout: str | None = None  # Go duration, e.g. "10m"


class DependsOn(_Wire):
    name: list[str] | None = None
    iteration: str | None = None


class PartitionPolicySpec(_Wire):
    total_partitions: Annotated[Int32, extra(minimum=1)]
    partition_size: Annotated[Int32, extra(minimum=1)]
    network_topology: NetworkTopologySpec | None = None
    min_partitions: Annotated[Int32, crd_default(minimum=0)] = 0


class TaskSpec(_Wire):
    name: Annotated[str, extra(maxLength=63, pattern=DNS1123_LABEL_PATTERN)] | None = None
    replicas: NonNegInt32 | None = None
    min_available: NonNegInt32 | None = None
    template: PodTemplateSpec | None = None
    policies: list[LifecyclePolicy] | None = None
    topology_policy: Annotated[str, extra(enum=[p.value for p in c.TopologyPolicy])] | None = None
    max_retry: NonNegInt32 | None = None
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicySpec | None = None


class VolumeSpec(_Wire):
    mount_path: Annotated[str, extra(minLength=1, pattern="^[^:]+$")]
    volume_claim_name: str | None = None
    volume_claim: PersistentVolumeClaimSpec | None = None


class JobSpec(_Wire):
    """``batch.volcano.sh`` Job spec."""

    scheduler_name: Annotated[str, extra(maxLength=63)] | None = None
    min_available: NonNegInt32 | None = None
    volumes: list[VolumeSpec] | None = None
    tasks: Annotated[list[TaskSpec], extra(minItems=1)] | None = None
    policies: list[LifecyclePolicy] | None = None
    plugins: dict[str, list[str]] | None = None
    running_estimate: str | None = None
    queue: Annotated[
        str, crd_default(maxLength=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
    ] = c.DEFAULT_QUEUE
    max_retry: Annotated[Int32, crd_default(minimum=0)] = 3
    ttl_seconds_after_finished: NonNegInt32 | None = None
    priority_class_name: Annotated[str, extra(maxLength=253, pattern=DNS1123_SUBDOMAIN_PATTERN)] | None = None
    min_success: Annotated[Int32, extra(minimum=1)] | None = None
    network_topology: NetworkTopologySpec | None = None


class JobState(_Wire):
    phase: Annotated[str, extra(enum=[p.value for p in c.JobPhase])] | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: DateTime | None = None


class TaskState(_Wire):
    phase: dict[str, Int32] | None = None


class JobCondition(_Wire):
    status: str
    last_transition_time: DateTime | None = None


class JobStatus(_Wire):
    """``batch.volcano.sh`` Job status; ``taskStatusCount[task].phase[podPhase]`` is a count."""

    state: JobState | None = None
    min_available: NonNegInt32 | None = None
    task_status_count: dict[str, TaskState] | None = None
    pending: NonNegInt32 | None = None
    running: NonNegInt32 | None = None
    succeeded: NonNegInt32 | None = None
    failed: NonNegInt32 | None = None
    terminating: NonNegInt32 | None = None
    unknown: NonNegInt32 | None = None
    version: NonNegInt32 | None = None
    retry_count: NonNegInt32 | None = None
    running_duration: str | None = None
    controlled_resources: dict[str, str] | None = None
    conditions: list[JobCondition] | None = None


class Job(_TopLevel):
    __api_version__ = c.BATCH_API_VERSION
    spec: JobSpec | None = None
    status: JobStatus | None = None


# --- batch CronJob ----------------------------------------------------------------------------


class JobTemplateSpec(_Wire):
    """``JobTemplateSpec``: the metadata (labels, annotations) and spec of the Job a CronJob creates."""

    metadata: Annotated[dict[str, Any], extra(type="object", **{"x-kubernetes-preserve-unknown-fields": True})] | None = None
    spec: JobSpec | None = None


class CronJobSpec(_Wire):
    schedule: str
    job_template: JobTemplateSpec
    time_zone: str | None = None
    starting_deadline_seconds: Annotated[Int64, extra(minimum=0)] | None = None
    concurrency_policy: Annotated[str, crd_default(enum=[p.value for p in c.ConcurrencyPolicy])] = "Allow"
    suspend: Annotated[bool, crd_default()] = False
    successful_jobs_history_limit: Annotated[Int32, crd_default(minimum=0)] = 3
    failed_jobs_history_limit: Annotated[Int32, crd_default(minimum=0)] = 1


class CronJobStatus(_Wire):
    active: list[KubeObjectReference] | None = None
    last_schedule_time: DateTime | None = None
    last_successful_time: DateTime | None = None


class CronJob(_TopLevel):
    """``batch.volcano.sh`` CronJob: creates a Volcano Job from ``spec.jobTemplate`` on a cron
    ``spec.schedule``."""

    __api_version__ = c.BATCH_API_VERSION
    spec: CronJobSpec | None = None
    status: CronJobStatus | None = None


# --- flow JobTemplate / JobFlow ---------------------------------------------------------------


class JobTemplate(_TopLevel):
    """``flow.volcano.sh`` JobTemplate: a stored Job spec a JobFlow instantiates."""

    __api_version__ = c.FLOW_API_VERSION
    spec: JobSpec | None = None
    status: dict[str, Any] | None = None


class HttpGet(_Wire):
    task_name: str | None = None
    path: str | None = None
    port: int | None = None
    http_header: dict[str, Any] | None = None


class TcpSocket(_Wire):
    port: int
    task_name: str | None = None


class TaskStatusProbe(_Wire):
    task_name: str | None = None
    phase: str | None = None


class Probe(_Wire):
    http_get_list: list[HttpGet] | None = None
    tcp_socket_list: list[TcpSocket] | None = None
    task_status_list: list[TaskStatusProbe] | None = None


class FlowDependsOn(_Wire):
    targets: list[str] | None = None
    probe: Probe | None = None


class Patch(_Wire):
    spec: JobSpec | None = None


class Flow(_Wire):
    name: str
    depends_on: FlowDependsOn | None = None
    patch: Patch | None = None


class JobFlowSpec(_Wire):
    flows: list[Flow] | None = None
    job_retain_policy: Annotated[str, extra(enum=["retain", "delete"])] | None = None


class JobFlow(_TopLevel):
    """``flow.volcano.sh`` JobFlow: Jobs from JobTemplates, each started once the Jobs it
    ``dependsOn`` have Completed."""

    __api_version__ = c.FLOW_API_VERSION
    spec: JobFlowSpec | None = None
    status: dict[str, Any] | None = None


# --- shard NodeShard --------------------------------------------------------------------------


class NodeShardSpec(_Wire):
    nodes_desired: list[str]


class NodeShardStatus(_Wire):
    last_update_time: DateTime | None = None
    nodes_in_use: list[str] | None = None
    nodes_to_remove: list[str] | None = None
    nodes_to_add: list[str] | None = None


class NodeShard(_TopLevel):
    """``shard.volcano.sh`` NodeShard: the Nodes one scheduler may use (one per scheduler)."""

    __api_version__ = c.SHARD_API_VERSION
    spec: NodeShardSpec | None = None
    status: NodeShardStatus | None = None


# --- bus Command ------------------------------------------------------------------------------


class OwnerReference(_Wire):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class Command(_TopLevel):
    """``bus.volcano.sh`` Command: an ``action`` aimed at ``target`` (a Job or Queue)."""

    __api_version__ = c.BUS_API_VERSION
    action: str | None = None
    target: Annotated[OwnerReference, extra(**{"x-kubernetes-map-type": "atomic"})] | None = None
    reason: str | None = None
    message: str | None = None


# --- topology HyperNode -----------------------------------------------------------------------


class ExactMatch(_Wire):
    name: Annotated[str, extra(minLength=1, maxLength=253, pattern=DNS1123_SUBDOMAIN_PATTERN)]


class RegexMatch(_Wire):
    pattern: Annotated[str, extra(minLength=1)]


class MemberSelector(_Wire):
    """Exactly one of the three (the CRD's CEL rules; pumice checks them at admission)."""

    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None


class MemberSpec(_Wire):
    type: Annotated[str, extra(enum=[t.value for t in c.MemberType])]
    selector: MemberSelector | None = None


class HyperNodeSpec(_Wire):
    tier: Annotated[int, extra(minimum=0)]
    tier_name: Annotated[str, extra(maxLength=253)] | None = None
    members: Annotated[list[MemberSpec], extra(minItems=1)] | None = None


class HyperNodeStatus(_Wire):
    conditions: list[Condition] | None = None
    node_count: Annotated[Int64, extra(minimum=0)] | None = None


class HyperNode(_TopLevel):
    """``topology.volcano.sh`` HyperNode: a group of Nodes (tier 1) or HyperNodes (higher tiers)
    that share a network level; lower tier = closer."""

    __api_version__ = c.TOPOLOGY_API_VERSION
    spec: HyperNodeSpec | None = None
    status: HyperNodeStatus | None = None
