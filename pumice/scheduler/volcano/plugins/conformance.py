"""conformance: never evict critical pods (system-*-critical classes, kube-system).

Mirrors: volcano pkg/scheduler/plugins/conformance/conformance.go.
"""

from __future__ import annotations

from pumice.api.validation import SYSTEM_PRIORITY_CLASS_VALUES
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import Vote
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "conformance"
_CRITICAL = frozenset(SYSTEM_PRIORITY_CLASS_VALUES)


def not_critical(evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
    out = [
        t
        for t in evictees
        if ((t.pod.get("spec") or {}).get("priorityClassName") or "") not in _CRITICAL and t.namespace != "kube-system"
    ]
    return out, Vote.PERMIT


def evictable(preemptor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
    return not_critical(evictees)


class ConformancePlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_preemptable_fn(PLUGIN_NAME, evictable)
        ssn.add_reclaimable_fn(PLUGIN_NAME, evictable)
        ssn.add_unified_evictable_fn(PLUGIN_NAME, lambda _ctx, cands: not_critical(cands))

    def on_session_close(self, ssn: Session) -> None:
        pass


parse_arguments = parser(NoArguments)


new = ConformancePlugin
