"""Every extension point declared once: its config switch and how tiers combine verdicts.

Mirrors: volcano pkg/scheduler/framework/session_plugins.go (the dispatchers) and
pkg/scheduler/conf/scheduler_conf.go (the switches). The combine rules are data here; the
dispatchers in :mod:`session` implement each rule once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Combine(enum.Enum):
    FIRST_NONZERO = "first non-zero comparison wins, then the built-in tie-break"
    ALL_PASS = "all must pass; the first failure is returned"
    SUM = "scores summed over all plugins in all tiers"
    FIRST = "the first plugin returning a value wins"
    INTERSECT_VICTIMS = "intersection within a tier; the first tier with a non-nil set decides"
    OR = "any true makes it true"
    AND = "all must be true (none registered: true)"
    VOTE = "any Reject: false; a Permit in a tier: true; all Abstain: next tier; default true"
    NOTIFY = "all called"
    STARVING = "AND within the first tier that has any function; none: false"
    FIRST_INVALID = "the first failing result is returned"
    UNION_VICTIMS = "union within a tier; the first tier with a non-empty set wins"


@dataclass(frozen=True)
class ExtensionPoint:
    name: str
    switch: str | None
    combine: Combine


_P = ExtensionPoint
POINTS: dict[str, ExtensionPoint] = {
    p.name: p
    for p in (
        _P("jobOrder", "enableJobOrder", Combine.FIRST_NONZERO),
        _P("queueOrder", "enableQueueOrder", Combine.FIRST_NONZERO),
        _P("victimQueueOrder", None, Combine.FIRST_NONZERO),
        _P("taskOrder", "enableTaskOrder", Combine.FIRST_NONZERO),
        _P("predicate", "enablePredicate", Combine.ALL_PASS),
        _P("prePredicate", "enablePredicate", Combine.ALL_PASS),
        _P("nodeOrder", "enableNodeOrder", Combine.SUM),
        _P("batchNodeOrder", "enableNodeOrder", Combine.SUM),
        _P("bestNode", "enableBestNode", Combine.FIRST),
        _P("preemptable", "enablePreemptable", Combine.INTERSECT_VICTIMS),
        _P("reclaimable", "enableReclaimable", Combine.INTERSECT_VICTIMS),
        _P("overused", "enabledOverused", Combine.OR),
        _P("allocatable", "enabledAllocatable", Combine.AND),
        _P("preemptive", "enablePreemptive", Combine.AND),
        _P("jobReady", "enableJobReady", Combine.AND),
        _P("jobPipelined", "enableJobPipelined", Combine.VOTE),
        _P("jobEnqueueable", "enableJobEnqueued", Combine.VOTE),
        _P("jobEnqueued", "enableJobEnqueued", Combine.NOTIFY),
        _P("jobValid", None, Combine.FIRST_INVALID),
        _P("jobStarving", "enableJobStarving", Combine.STARVING),
        _P("victimTasks", "enabledVictim", Combine.UNION_VICTIMS),
        _P("hyperNodeOrder", "enabledHyperNodeOrder", Combine.SUM),
        _P("hyperNodeGradientForJob", "enabledHyperNodeGradient", Combine.FIRST),
        _P("hyperNodeGradientForSubJob", "enabledHyperNodeGradient", Combine.FIRST),
        _P("unifiedEvictable", None, Combine.INTERSECT_VICTIMS),
        _P("subJobReady", "enabledSubJobReady", Combine.AND),
        _P("subJobPipelined", "enabledSubJobPipelined", Combine.VOTE),
        _P("subJobOrder", "enabledSubJobOrder", Combine.FIRST_NONZERO),
        # pumice's own (no upstream point): quota room the reclaim action must make besides node room
        _P("reclaimFits", "enabledAllocatable", Combine.AND),
    )
}
