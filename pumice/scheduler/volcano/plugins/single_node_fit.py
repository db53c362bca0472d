"""single-node-fit: do not admit a job that holds a task no node could ever run.

Pumice's extension (upstream Volcano has none; Kueue's and YuniKorn's admission make the same
check, see ../shared/reference/peers.md). A Pending job is refused at enqueue (vote Reject) when
one of its Pending tasks requests more of some resource than the allocatable of every Ready node,
even an empty one. Such a job stays Pending with a Warning event ``Unschedulable``
("task <t> requests <dim> <n>, more than any node's allocatable (largest: <m>)") instead of being
admitted: admitted (Inqueue) jobs reserve their minResources in proportion's and capacity's queue
accounting, so an impossible job would keep the jobs behind it out of the queue forever.

Only Pods that exist are judged: a job with no Pending Pod yet (a PodGroup created before its
Pods, or a Volcano Job, whose controller creates its Pods only once the PodGroup is Inqueue) has
nothing to judge and is enqueued as without the plugin; allocate's fit errors then report a Pod no
node can hold.

Opt in by listing ``single-node-fit`` in a tier (first tier recommended); it takes no arguments.
"""

from __future__ import annotations

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.resource import PODS, Resource
from pumice.scheduler.volcano.api.types import TaskStatus, Vote
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "single-node-fit"


def never_fits(task_req: Resource, largest: Resource) -> str | None:
    """The first dimension (cpu, memory, then scalars by name) where ``task_req`` exceeds
    ``largest`` (the per-dimension maximum allocatable over the nodes), or None."""
    for dim in task_req.resource_names():
        if dim == PODS:
            continue
        if task_req.get(dim) > largest.get(dim) + 1e-9:
            return dim
    return None


class SingleNodeFitPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        largest = Resource()
        for n in ssn.node_list:
            largest = largest.max_with(n.allocatable)

        def enqueueable(job: JobInfo) -> int:
            for t in sorted(job.tasks_in(TaskStatus.Pending), key=lambda t: t.name):
                dim = never_fits(t.resreq, largest)
                if dim is not None:
                    ssn.record_pod_group_event(
                        job, "Warning", "Unschedulable",
                        f"task {t.name} requests {dim} {t.resreq.get(dim):g}, more than any node's allocatable "
                        f"(largest: {largest.get(dim):g})")
                    return Vote.REJECT
            return Vote.ABSTAIN

        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)

    def on_session_close(self, ssn: Session) -> None:
        pass


parse_arguments = parser(NoArguments)


new = SingleNodeFitPlugin
