from __future__ import annotations

from pathlib import Path

import pytest

from pumice.simulate.nodes import NodeSpec


def two_nodes_two_slots() -> list[NodeSpec]:
    """Two Nodes of 2 cpu: four 1-cpu slots."""
    return [NodeSpec("n1", 2000, 4 * 1024**3, pods=10), NodeSpec("n2", 2000, 4 * 1024**3, pods=10)]


TWO_GANGS = """
kind: Workload
queues: [default]
arrivals:
  - at: 0
    duration: 100
    count: 2
    name: gang
    manifest:
      apiVersion: batch.volcano.sh/v1alpha1
      kind: Job
      spec:
        minAvailable: 3
        schedulerName: volcano
        queue: default
        tasks:
          - name: worker
            replicas: 3
            template:
              spec:
                restartPolicy: Never
                containers:
                  - name: main
                    image: pumice.io/simulated
                    resources: {requests: {cpu: "1", memory: 1Gi}}
"""

# Gang off: no gang plugin, and no proportion either, whose enqueue gate (a job enters only when its
# minResources fit the queue's share) would still keep the second job out as a whole.
GANG_OFF_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: nodeorder
"""


@pytest.fixture
def two_gangs(tmp_path: Path) -> Path:
    p = tmp_path / "two-gangs.yaml"
    p.write_text(TWO_GANGS)
    return p


@pytest.fixture
def gang_off_conf(tmp_path: Path) -> Path:
    p = tmp_path / "gang-off.conf"
    p.write_text(GANG_OFF_CONF)
    return p
