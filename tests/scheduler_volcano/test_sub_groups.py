"""Sub-group scheduling: ``subGroupPolicy`` sub-jobs placed each with its own minimum and its own
``networkTopology`` (every sub-group inside one HyperNode of its allowed tier), under the job's.

The ``upstream`` cases port volcano pkg/scheduler/actions/allocate/allocate_test.go
TestAllocateWithPartitionPolicyNetworkTopology (plugins gang, predicates,
network-topology-aware; one tier). Upstream checks the bind count only where it sets
``MinimalBindCheck``; the placements it lists there anyway are checked too (``partial``). The
rest are pumice's own scenarios, including a vcjob ``partitionPolicy`` turned into sub-groups
by the job controller's builder. Every case runs twice, on the vectorised and the plain path,
and through ``pumice volcano session`` (``run_both``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.testing.volcano import Case, hypernode, node, plugin, pod, podgroup, queue, run_case, sub_group

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/actions/allocate/allocate_test.go TestAllocateWithPartitionPolicyNetworkTopology"
UPSTREAM_TIERS = [[
    plugin("gang", enableJobOrder=True, enableJobReady=True, enableJobPipelined=True, enableJobStarving=True,
           enabledSubJobReady=True, enabledSubJobOrder=True),
    plugin("predicates", enablePredicate=True),
    plugin("network-topology-aware", enableNodeOrder=True, enabledHyperNodeOrder=True, enabledHyperNodeGradient=True),
]]
N = "2,4Gi,pods=10"


def pg(min_member: int, mode: str | None, tier: int | None, groups: list[dict], allocated: str | None = None) -> dict:
    return podgroup("pg1", queue="q1", min_member=min_member, topology=mode, tier=tier if mode else None,
                    allocated_hypernode=allocated if allocated is not None else ("" if mode else None), sub_groups=groups)


def p(name: str, labels: dict[str, str], *, node_name: str = "", req: str = "2,4G", selector: dict | None = None) -> dict:
    return pod(name, group="pg1", requests=req, labels=labels, node=node_name, phase="Running" if node_name else "Pending",
               node_selector=selector)


def upstream_case(name: str, objects: list[dict], *, binds: int, bind_map: dict[str, str] | None = None,
                  partial: dict[str, str] | None = None) -> Case:
    c = Case(name, [queue("q1"), *objects], ["allocate"], UPSTREAM_TIERS, binds=bind_map)
    c.bind_num = binds  # type: ignore[attr-defined]
    c.partial = partial or {}  # type: ignore[attr-defined]
    return c


UPSTREAM = [
    upstream_case('podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate job when resources are enough',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='soft', tier=0)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'worker'}),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 0, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 0, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 1, hypernodes=['s0', 's1'])],
                  binds=3),
    upstream_case('podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate job when minavailable < replicas',
                  [pg(1, 'hard', 1, [sub_group('task1', ['volcano.sh/task-spec'], topology='soft', tier=0)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('podgroup hard network topology constrain and subGroup soft network topology constrain, two available hyperNodes, can allocate job to nodes with affinity',
                  [pg(1, 'hard', 1, [sub_group('task1', ['volcano.sh/task-spec'], topology='soft', tier=0)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, selector={'nodeRole': 'master'}),
                   node('s0-n1', N),
                   node('s1-n2', N, labels={'nodeRole': 'master'}),
                   hypernode('s0', 0, nodes=['s0-n1']),
                   hypernode('s1', 0, nodes=['s1-n2'])],
                  binds=1, bind_map={'c1/p1': 's1-n2'}),
    upstream_case('podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough',
                  [pg(2, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='soft', tier=0)], allocated='s2'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=1),
    upstream_case('podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough and minavailable = replicas',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='soft', tier=0)], allocated='s2'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=1),
    upstream_case('podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job rescheduled, can allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
                  [pg(2, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='soft', tier=0)], allocated='s1'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s3-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s3-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s3-n1', N),
                   node('s3-n2', N),
                   node('s4-n1', N),
                   node('s4-n2', N),
                   node('s5-n1', N),
                   node('s5-n2', N),
                   node('s6-n1', N),
                   node('s6-n2', N),
                   hypernode('s3', 1, nodes=['s3-n1', 's3-n2']),
                   hypernode('s4', 1, nodes=['s4-n1', 's4-n2']),
                   hypernode('s5', 1, nodes=['s5-n1', 's5-n2']),
                   hypernode('s6', 1, nodes=['s6-n1', 's6-n2']),
                   hypernode('s1', 2, hypernodes=['s3', 's4']),
                   hypernode('s2', 2, hypernodes=['s5', 's6']),
                   hypernode('s0', 3, hypernodes=['s1', 's2'])],
                  binds=1),
    # upstream also lists c1/p1 -> s1-n3 here without checking it (MinimalBindCheck): p1 is one of
    # the two masters of sub-group task1 (size 2, hard tier 1), which only s0 can hold.
    upstream_case('podgroup soft network topology constrain and subGroup hard network topology constrain, can allocate job when resources are enough',
                  [pg(3, 'soft', 0, [sub_group('task1', ['volcano.sh/task-spec'], size=2, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'master'}),
                   p('p3', {'volcano.sh/task-instance': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=3),
    upstream_case('podgroup soft network topology constrain and subGroup hard network topology constrain, can allocate job when minavailable < replicas',
                  [pg(1, 'soft', 0, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('podgroup soft network topology constrain and subGroup hard network topology constrain, can not allocate job when cross highestTierAllowed tier',
                  [pg(3, 'soft', 0, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'worker'}),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   p('p4', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=0),
    upstream_case('podgroup soft network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when resources are enough',
                  [pg(2, 'soft', 0, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)], allocated='s2'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s1-n3'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=1, partial={'c1/p3': 's1-n4'}),
    upstream_case('podgroup soft network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
                  [pg(2, 'soft', 0, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=2)], allocated='s1'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s3-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s3-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}, node_name='s4-n1'),
                   p('p4', {'volcano.sh/task-spec': 'worker'}, node_name='s4-n2'),
                   p('p5', {'volcano.sh/task-spec': 'worker'}),
                   node('s3-n1', N),
                   node('s3-n2', N),
                   node('s4-n1', N),
                   node('s4-n2', N),
                   node('s5-n1', N),
                   node('s5-n2', N),
                   node('s6-n1', N),
                   node('s6-n2', N),
                   hypernode('s3', 1, nodes=['s3-n1', 's3-n2']),
                   hypernode('s4', 1, nodes=['s4-n1', 's4-n2']),
                   hypernode('s5', 1, nodes=['s5-n1', 's5-n2']),
                   hypernode('s6', 1, nodes=['s6-n1', 's6-n2']),
                   hypernode('s1', 2, hypernodes=['s3', 's4']),
                   hypernode('s2', 2, hypernodes=['s5', 's6']),
                   hypernode('s0', 3, hypernodes=['s1', 's2'])],
                  binds=0),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job when highestTierAllowed not reached',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'worker'}),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=3),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=2, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-instance': 'worker'}),
                   p('p3', {'volcano.sh/task-instance': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=3, partial={'c1/p1': 's1-n3'}),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job when multi hyperNodes are available',
                  [pg(2, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job when minavailable < replicas',
                  [pg(1, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}),
                   p('p2', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, two available hyperNodes, can allocate job to nodes with affinity',
                  [pg(2, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s1-n3'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=1, partial={'c1/p3': 's1-n4'}),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and minavailable = replicas',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=2)], allocated='s0'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=1),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and hyperNodesInfo has three tier',
                  [pg(2, 'hard', 3, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=2)], allocated='s3'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s3-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s3-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s3-n1', N),
                   node('s3-n2', N),
                   node('s4-n1', N),
                   node('s4-n2', N),
                   node('s5-n1', N),
                   node('s5-n2', N),
                   node('s6-n1', N),
                   node('s6-n2', N),
                   hypernode('s3', 1, nodes=['s3-n1', 's3-n2']),
                   hypernode('s4', 1, nodes=['s4-n1', 's4-n2']),
                   hypernode('s5', 1, nodes=['s5-n1', 's5-n2']),
                   hypernode('s6', 1, nodes=['s6-n1', 's6-n2']),
                   hypernode('s1', 2, hypernodes=['s3', 's4']),
                   hypernode('s2', 2, hypernodes=['s5', 's6']),
                   hypernode('s0', 3, hypernodes=['s1', 's2'])],
                  binds=1),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier',
                  [pg(2, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=1)], allocated='s0'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=0),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier',
                  [pg(2, 'hard', 3, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=2)], allocated='s3'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s3-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s3-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}, node_name='s4-n1'),
                   p('p4', {'volcano.sh/task-spec': 'worker'}, node_name='s4-n2'),
                   p('p5', {'volcano.sh/task-spec': 'worker'}),
                   node('s3-n1', N),
                   node('s3-n2', N),
                   node('s4-n1', N),
                   node('s4-n2', N),
                   node('s5-n1', N),
                   node('s5-n2', N),
                   node('s6-n1', N),
                   node('s6-n2', N),
                   hypernode('s3', 1, nodes=['s3-n1', 's3-n2']),
                   hypernode('s4', 1, nodes=['s4-n1', 's4-n2']),
                   hypernode('s5', 1, nodes=['s5-n1', 's5-n2']),
                   hypernode('s6', 1, nodes=['s6-n1', 's6-n2']),
                   hypernode('s1', 2, hypernodes=['s3', 's4']),
                   hypernode('s2', 2, hypernodes=['s5', 's6']),
                   hypernode('s0', 3, hypernodes=['s1', 's2'])],
                  binds=0),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job rescheduled, can allocate job when LCAHyperNode is empty',
                  [pg(2, 'hard', 3, [sub_group('task1', ['volcano.sh/task-spec'], topology='hard', tier=2)], allocated='s0'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4'])],
                  binds=1),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy with minSubGroups',
                  [pg(5, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], min_sub_groups=1, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=2, min_sub_groups=2, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, req='2,4Gi'),
                   p('p2', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p3', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p4', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   p('p5', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   node('s2-n5', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 1, nodes=['s2-n5']),
                   hypernode('s3', 2, hypernodes=['s0', 's1', 's2'])],
                  binds=5, partial={'c1/p1': 's2-n5'}),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy with minSubGroups and minavailable = replicas',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], min_sub_groups=1, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=2, min_sub_groups=1, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, req='2,4Gi'),
                   p('p2', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p3', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p4', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   p('p5', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=3, partial={'c1/p1': 's1-n3'}),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job according to the network topology constrain of subGroup policy with minSubGroups and hypernode resources meet minSubGroups',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], min_sub_groups=2, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=2, min_sub_groups=1, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, req='2,4Gi'),
                   p('p2', {'volcano.sh/task-spec': 'master2'}, req='2,4Gi'),
                   p('p3', {'volcano.sh/task-spec': 'master3'}, req='2,4Gi'),
                   p('p4', {'volcano.sh/task-spec': 'master4'}, req='2,4Gi'),
                   p('p5', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p6', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p7', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   p('p8', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=4),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can not allocate job when minMember is not satisfied',
                  [pg(5, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], min_sub_groups=1, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=2, min_sub_groups=1, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, req='2,4Gi'),
                   p('p2', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p3', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p4', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   p('p5', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=0),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain, can not allocate job when minSubGroups is not satisfied',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], min_sub_groups=1, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=2, min_sub_groups=2, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, req='2,4Gi'),
                   p('p2', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p3', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p4', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   p('p5', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=0),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, two available hyperNodes, can allocate job to nodes with affinity',
                  [pg(2, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], size=2, min_sub_groups=1, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s1-n3'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=1, partial={'c1/p3': 's1-n4'}),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, can not allocate job when hypernode resources are insufficient.',
                  [pg(2, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], size=2, min_sub_groups=1, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s1-n3'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}, node_name='s1-n4'),
                   p('p4', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=0),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and minAvailable = replicas',
                  [pg(4, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], size=2, min_sub_groups=2, topology='hard', tier=2)], allocated='s0'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   p('p4', {'volcano.sh/task-spec': 'master'}),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups and tasks in job rescheduled, can allocate job when subGroup is rescheduled',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], min_sub_groups=2, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=2, min_sub_groups=1, topology='hard', tier=1)]),
                   p('p1', {'volcano.sh/task-spec': 'master'}, req='2,4Gi'),
                   p('p2', {'volcano.sh/task-spec': 'master2'}, req='2,4Gi'),
                   p('p3', {'volcano.sh/task-spec': 'master3'}, node_name='s0-n1', req='2,4Gi'),
                   p('p4', {'volcano.sh/task-spec': 'master4'}, node_name='s0-n2', req='2,4Gi'),
                   p('p5', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p6', {'volcano.sh/task-instance': 'worker'}, req='2,4Gi'),
                   p('p7', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   p('p8', {'volcano.sh/task-instance': 'worker2'}, req='2,4Gi'),
                   node('s0-n1', N),
                   node('s0-n2', N),
                   node('s1-n3', N),
                   node('s1-n4', N),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('rescheduling scenario: SubJob with multiple pending tasks, GetMinResources returns sum of all pending tasks resources',
                  [pg(4, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], size=4, topology='hard', tier=1)], allocated='s0'),
                   p('p1', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   p('p4', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', '4,8Gi,pods=10'),
                   node('s0-n2', '4,8Gi,pods=10'),
                   node('s1-n3', '4,8Gi,pods=10'),
                   node('s1-n4', '4,8Gi,pods=10'),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('rescheduling scenario: SubJob with single pending task',
                  [pg(3, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], size=3, topology='hard', tier=1)], allocated='s0'),
                   p('p1', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', '4,8Gi,pods=10'),
                   node('s0-n2', '4,8Gi,pods=10'),
                   node('s1-n3', '4,8Gi,pods=10'),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=1),
    upstream_case('rescheduling scenario: multiple SubJobs with different pending task counts',
                  [pg(6, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], size=3, topology='hard', tier=1), sub_group('task2', ['volcano.sh/task-instance'], size=3, topology='hard', tier=1)], allocated='s2'),
                   p('p1', {'volcano.sh/task-spec': 'master'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'master'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'master'}),
                   p('p4', {'volcano.sh/task-instance': 'worker'}, node_name='s1-n3'),
                   p('p5', {'volcano.sh/task-instance': 'worker'}),
                   p('p6', {'volcano.sh/task-instance': 'worker'}),
                   node('s0-n1', '4,8Gi,pods=10'),
                   node('s0-n2', '4,8Gi,pods=10'),
                   node('s1-n3', '4,8Gi,pods=10'),
                   node('s1-n4', '4,8Gi,pods=10'),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=3),
    upstream_case('rescheduling scenario: pending tasks with different resource requirements',
                  [pg(3, 'hard', 1, [sub_group('task1', ['volcano.sh/task-spec'], size=3, topology='hard', tier=1)], allocated='s0'),
                   p('p1-running', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n1'),
                   p('p2-pending-small', {'volcano.sh/task-spec': 'worker'}),
                   p('p3-pending-large', {'volcano.sh/task-spec': 'worker'}, req='4,8G'),
                   node('s0-n1', '10,20Gi,pods=10'),
                   node('s0-n2', '10,20Gi,pods=10'),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2'])],
                  binds=2),
    upstream_case('rescheduling scenario: insufficient resources for pending tasks allocation',
                  [pg(3, 'hard', 1, [sub_group('task1', ['volcano.sh/task-spec'], size=3, topology='hard', tier=1)], allocated='s0'),
                   p('p1', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n1', req='4,4G'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, req='4,4G'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}, req='4,4G'),
                   node('s0-n1', '4,8Gi,pods=10'),
                   node('s0-n2', '4,8Gi,pods=10'),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2'])],
                  binds=0),
    upstream_case('rescheduling scenario: SubJob rescheduling within tier-2 HyperNode constraint',
                  [pg(4, 'hard', 2, [sub_group('task1', ['volcano.sh/task-spec'], size=4, topology='hard', tier=2)], allocated='s2'),
                   p('p1', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n1'),
                   p('p2', {'volcano.sh/task-spec': 'worker'}, node_name='s0-n2'),
                   p('p3', {'volcano.sh/task-spec': 'worker'}),
                   p('p4', {'volcano.sh/task-spec': 'worker'}),
                   node('s0-n1', '4,8Gi,pods=10'),
                   node('s0-n2', '4,8Gi,pods=10'),
                   node('s1-n3', '4,8Gi,pods=10'),
                   node('s1-n4', '4,8Gi,pods=10'),
                   hypernode('s0', 1, nodes=['s0-n1', 's0-n2']),
                   hypernode('s1', 1, nodes=['s1-n3', 's1-n4']),
                   hypernode('s2', 2, hypernodes=['s0', 's1'])],
                  binds=2),
    upstream_case('no network topology at job or subgroup level but has SubJobPolicy, can allocate job successfully',
                  [pg(2, None, None, [sub_group('worker', ['volcano.sh/task-spec'], min_sub_groups=2)]),
                   p('p1', {'volcano.sh/task-spec': 'worker-0'}),
                   p('p2', {'volcano.sh/task-spec': 'worker-1'}),
                   node('n1', N),
                   node('n2', N)],
                  binds=2),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, UPSTREAM))
def test_upstream_partition_policy_network_topology(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)
    out = run_case(case)
    assert len(out["binds"]) == case.bind_num, out["binds"]  # type: ignore[attr-defined]
    for k, v in case.partial.items():  # type: ignore[attr-defined]
        assert out["binds"].get(k) == v, out["binds"]


# ----- pumice's own scenarios ------------------------------------------------------------------
def racks(n_racks: int, per_rack: int = 2, cpu: int = 4) -> list[dict]:
    """``n_racks`` leaves r0.. of ``per_rack`` nodes (tier 1) under one spine (tier 2)."""
    out: list[dict] = [queue("q1")]
    for r in range(n_racks):
        names = [f"r{r}-n{i}" for i in range(per_rack)]
        out += [node(n, f"{cpu},16Gi,pods=10") for n in names]
        out.append(hypernode(f"r{r}", 1, nodes=names))
    out.append(hypernode("spine", 2, hypernodes=[f"r{r}" for r in range(n_racks)]))
    return out


def partitioned_job(partitions: int, size: int, min_partitions: int, *, cpu: str = "4", tier: int = 1,
                    busy: bool = False) -> list[dict]:
    """A vcjob task ``worker`` with ``partitionPolicy`` (``partitions`` x ``size`` Pods, hard
    ``tier``), turned into its PodGroup ``subGroupPolicy`` by the job controller's builder."""
    from pumice.controllers.volcano.job.builders import sub_group_policy

    task = {"name": "worker", "replicas": partitions * size,
            "partitionPolicy": {"totalPartitions": partitions, "partitionSize": size, "minPartitions": min_partitions,
                                "networkTopology": {"mode": "hard", "highestTierAllowed": tier}}}
    out = [podgroup("job", queue="q1", min_member=min_partitions * size, topology="hard", tier=2,
                    sub_groups=[sub_group_policy(task)])]
    for i in range(partitions * size):
        out.append(pod(f"job-worker-{i}", group="job", requests=f"{cpu},1Gi",
                       labels={"volcano.sh/task-spec": "worker", "volcano.sh/partition-id": str(i // size)}))
    if busy:
        out += [podgroup("busy", queue="q1", min_member=1, phase="Running"),
                pod("busy-0", group="busy", requests="2,1Gi", node="r0-n0", phase="Running")]
    return out


TIERS = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"]]


def leaf_of(node_name: str) -> str:
    return node_name.split("-")[0]


def test_each_partition_lands_inside_one_rack(tmp_path: Path) -> None:
    # two partitions of two full-node Pods on two racks of two nodes: each partition takes a rack
    # of its own; one rack cannot hold both, and least-allocated alone would not keep them apart.
    case = Case("partitions in racks", [*racks(2), *partitioned_job(2, 2, 2)], ["allocate"], TIERS)
    run_both(case, tmp_path)
    binds = run_case(case)["binds"]
    assert len(binds) == 4
    for part in (0, 1):
        leaves = {leaf_of(binds[f"c1/job-worker-{2 * part + i}"]) for i in range(2)}
        assert len(leaves) == 1, binds


def test_a_partition_never_straddles_racks_even_when_the_job_would_fit(tmp_path: Path) -> None:
    # racks of 2 nodes, one with a 2-cpu Pod running: partitions of 3 Pods of 2 cpu fit a rack
    # only where 6 cpu are free. Three racks, r0 half-used (6 free), r1 and r2 empty (8 free): all
    # three partitions fit, each in its own rack, and none spans two.
    case = Case("partitions of three", [*racks(3), *partitioned_job(3, 3, 3, cpu="2", busy=True)], ["allocate"], TIERS)
    run_both(case, tmp_path)
    binds = run_case(case)["binds"]
    assert len(binds) == 9
    used = []
    for part in range(3):
        leaves = {leaf_of(binds[f"c1/job-worker-{3 * part + i}"]) for i in range(3)}
        assert len(leaves) == 1, binds
        used += leaves
    assert sorted(used) == ["r0", "r1", "r2"]


def test_min_partitions_binds_what_fits_and_no_partial_partition(tmp_path: Path) -> None:
    # two racks of three 2-cpu nodes, three partitions of two 2-cpu Pods, minPartitions 2. Packing
    # the job alone would put workers 0-2 in r0 and 3-5 in r1 (partition 1 split across racks).
    # Per partition: one fits in each rack, the third finds no rack with two free nodes and binds
    # nothing.
    case = Case("min partitions", [*racks(2, per_rack=3, cpu=2), *partitioned_job(3, 2, 2, cpu="2")], ["allocate"], TIERS)
    run_both(case, tmp_path)
    binds = run_case(case)["binds"]
    assert len(binds) == 4, binds
    by_part: dict[int, set[str]] = {}
    for key, n in binds.items():
        idx = int(key.rsplit("-", 1)[1])
        by_part.setdefault(idx // 2, set()).add(leaf_of(n))
    assert len(by_part) == 2 and all(len(v) == 1 for v in by_part.values()), binds
    assert set().union(*by_part.values()) == {"r0", "r1"}


def test_min_partitions_not_reachable_binds_nothing(tmp_path: Path) -> None:
    # minPartitions 3 with room for two: the gang is not ready, nothing binds.
    case = Case("min partitions unreachable", [*racks(2), *partitioned_job(3, 2, 3)], ["allocate"], TIERS, binds={})
    run_both(case, tmp_path)


# ----- upstream sub_job_info_test.go -----------------------------------------------------------
SUBJOB = "volcano pkg/scheduler/api/sub_job_info_test.go"
MATCH_CASES = [
    ("match label selector and collect match values",
     {"labelSelector": {"matchLabels": {"app": "test"}}, "matchLabelKeys": ["version", "env"]},
     {"app": "test", "version": "v1", "env": "dev"}, ["v1", "dev"]),
    ("no label selector with match keys", {"matchLabelKeys": ["zone"]}, {"zone": "zone-1"}, ["zone-1"]),
    ("no match keys returns empty slice", {"labelSelector": {"matchLabels": {"app": "test"}}}, {"app": "test"}, []),
    ("empty label selector matches all", {"labelSelector": {}, "matchLabelKeys": ["key"]}, {"key": "value"}, ["value"]),
    ("match expression selector",
     {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["test", "demo"]}]}, "matchLabelKeys": ["app"]},
     {"app": "demo"}, ["demo"]),
    ("multiple match keys with empty values", {"matchLabelKeys": ["a", "b"]}, {"a": "", "b": "val"}, None),
    ("invalid label selector", {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "invalid"}]}}, {"app": "test"}, None),
    ("pod labels do not match selector", {"labelSelector": {"matchLabels": {"app": "test"}}, "matchLabelKeys": ["version"]},
     {"app": "prod"}, None),
    ("missing label key in pod", {"matchLabelKeys": ["missing"]}, {"existing": "value"}, None),
    ("pod has no labels", {"matchLabelKeys": ["any"]}, {}, None),
]


@pytest.mark.parametrize(("name", "policy", "labels", "want"), [
    pytest.param(*c, marks=pytest.mark.upstream(f"{SUBJOB}: TestGetSubJobMatchValues: {c[0]}"), id=c[0]) for c in MATCH_CASES])
def test_upstream_sub_job_match_values(name: str, policy: dict, labels: dict, want: list[str] | None) -> None:
    from pumice.scheduler.volcano.api.sub_job_info import match_values

    assert match_values(policy, labels) == want


CONVERT_CASES = [
    ("soft mode is converted to hard mode", ("soft", None), 4, ("hard", 4)),
    ("hard mode is not changed", ("hard", 2), 4, ("hard", 2)),
    ("nil networkTopology is not changed", None, 4, None),
    ("soft mode with existing HighestTierAllowed is overwritten", ("soft", 1), 5, ("hard", 5)),
]


@pytest.mark.parametrize(("name", "before", "max_tier", "after"), [
    pytest.param(*c, marks=pytest.mark.upstream(f"{SUBJOB}: TestConvertToHardTopology: {c[0]}"), id=c[0]) for c in CONVERT_CASES])
def test_upstream_convert_to_hard_topology(name: str, before: tuple | None, max_tier: int, after: tuple | None) -> None:
    from pumice.scheduler.volcano.api.sub_job_info import NetworkTopology, new_sub_job

    policy = {"networkTopology": NetworkTopology(before[0], before[1])} if before else {}
    sub = new_sub_job("g", "u", "j", policy, None)
    sub.convert_to_hard_topology(max_tier)
    nt = sub.network_topology
    assert (None if nt is None else (nt.mode, nt.highest_tier_allowed)) == after
    if after is not None:
        assert sub.is_hard_topology_mode() == (True, after[1])


@pytest.mark.upstream(f"{SUBJOB}: TestNewSubJobInfo")
def test_upstream_new_sub_job_info() -> None:
    from pumice.scheduler.volcano.api.sub_job_info import new_sub_job

    sub = new_sub_job("job/p", "job/p-3-x", "job", {"subGroupSize": 4, "networkTopology": {"mode": "hard", "highestTierAllowed": 2}},
                      ["3", "x"])
    assert (sub.min_available, sub.match_index, sub.is_hard_topology_mode()) == (4, 3, (True, 2))
    plain = new_sub_job("job", "job", "job", None, None)
    assert (plain.min_available, plain.match_index, plain.network_topology) == (1, 0, None)
    assert new_sub_job("g", "u", "j", {}, ["abc"]).match_index == 0
