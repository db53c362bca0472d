"""task-topology: affinity/anti-affinity between task roles of one job (basic form).

Job annotations ``volcano.sh/task-topology-affinity`` and ``volcano.sh/task-topology-anti-affinity``
list role groups (``"ps,worker;chief"``). Node order prefers nodes already holding tasks of an
affine role of the same job and avoids nodes holding an anti-affine role.

Mirrors: volcano pkg/scheduler/plugins/task-topology (simplified: scoring only; upstream also
reorders tasks into buckets).
"""

from __future__ import annotations

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, parser
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "task-topology"
AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"


class TaskTopologyArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    weight: int = arg("task-topology.weight", 10)


def _groups(v: str) -> list[set[str]]:
    return [set(x.strip() for x in g.split(",") if x.strip()) for g in v.split(";") if g.strip()]


class TaskTopologyPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: TaskTopologyArgs) -> None:
        self.weight = args.weight

    def on_session_open(self, ssn: Session) -> None:
        def score(task: TaskInfo, node: NodeInfo) -> float:
            job = ssn.jobs.get(task.job)
            if job is None or not task.role:
                return 0.0
            ann = ((job.pod_group or {}).get("metadata") or {}).get("annotations") or {}
            aff, anti = _groups(ann.get(AFFINITY, "")), _groups(ann.get(ANTI_AFFINITY, ""))
            if not aff and not anti:
                return 0.0
            roles = [t.role for t in node.tasks.values() if t.job == task.job]
            s = 0.0
            for g in aff:
                if task.role in g:
                    s += sum(1 for r in roles if r in g)
            for g in anti:
                if task.role in g:
                    s -= sum(1 for r in roles if r in g)
            return s * self.weight

        ssn.add_node_order_fn(PLUGIN_NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        pass


parse_arguments = parser(TaskTopologyArgs)


new = TaskTopologyPlugin
