"""drf and hierarchical drf: ported from volcano pkg/scheduler/plugins/drf/hdrf_test.go.

Upstream's check in TestHDRF compares a map with a Resource and so can never fail; here the
expected per-job allocations are asserted for real. Upstream builds both plugins in one tier,
which its config loader refuses (drf hierarchy + proportion); the CLI run splits them into two
tiers, which keeps drf's queue order first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pumice.cli.volcano import command
from pumice.scheduler.volcano.conf import ConfigError, parse_conf
from pumice.testing.volcano import (
    conf_yaml,
    node,
    plugin,
    pod,
    podgroup,
    queue,
    run_scenario,
    write_manifests,
)

ORIGIN = "volcano pkg/scheduler/plugins/drf/hdrf_test.go"
DRF = plugin("drf", enableHierarchy=True, enableQueueOrder=True, enableJobOrder=True)
PROP = plugin("proportion", enableJobEnqueued=True, enableQueueOrder=True, enableReclaimable=True)


def make_pods(n: int, cpu: str, mem: str, group: str) -> list:
    return [pod(f"{group}-p{i}", namespace="default", group=group, requests=f"{cpu},{mem}") for i in range(n)]


def hq(name: str, path: str, weights: str) -> dict:
    return queue(name, hierarchy=path, hierarchy_weights=weights)


RESCALING = [
    podgroup("pg1", namespace="default", queue="root-sci"),
    podgroup("pg21", namespace="default", queue="root-eng-dev"),
    podgroup("pg22", namespace="default", queue="root-eng-prod"),
    *make_pods(10, "1", "1G", "pg1"),
    *make_pods(10, "1", "0G", "pg21"),
    *make_pods(10, "0", "1G", "pg22"),
    hq("root-sci", "root/sci", "100/50"),
    hq("root-eng-dev", "root/eng/dev", "100/50/50"),
    hq("root-eng-prod", "root/eng/prod", "100/50/50"),
    node("n", "10,10G,pods=50"),
]
BLOCKING = [
    podgroup("pg1", namespace="default", queue="root-pg1"),
    podgroup("pg2", namespace="default", queue="root-pg2"),
    podgroup("pg31", namespace="default", queue="root-pg3-pg31"),
    podgroup("pg32", namespace="default", queue="root-pg3-pg31"),
    podgroup("pg4", namespace="default", queue="root-pg4"),
    *make_pods(30, "1", "0G", "pg1"),
    *make_pods(30, "1", "0G", "pg2"),
    *make_pods(30, "1", "0G", "pg31"),
    *make_pods(30, "0", "1G", "pg32"),
    *make_pods(30, "0", "1G", "pg4"),
    hq("root-pg1", "root/pg1", "100/25"),
    hq("root-pg2", "root/pg2", "100/25"),
    hq("root-pg3-pg31", "root/pg3/pg31", "100/25/50"),
    hq("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
    hq("root-pg4", "root/pg4", "100/25"),
    node("n", "30,30G,pods=500"),
]

CASES = [
    ("rescaling test", RESCALING, {"pg1": 5, "pg21": 5, "pg22": 5}),
    ("blocking nodes test", BLOCKING, {"pg1": 10, "pg2": 10, "pg31": 10, "pg32": 15, "pg4": 15}),
]


def _per_job(binds: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in binds:
        g = k.split("/")[1].rsplit("-p", 1)[0]
        out[g] = out.get(g, 0) + 1
    return out


@pytest.mark.parametrize(
    ("name", "objects", "expected"),
    [pytest.param(*c, marks=pytest.mark.upstream(f"{ORIGIN}: {c[0]}"), id=c[0]) for c in CASES],
)
def test_hdrf_upstream_case(name: str, objects: list, expected: dict, tmp_path: Path) -> None:
    res = run_scenario(objects, actions=["allocate"], tiers=[[DRF, PROP]])
    assert _per_job(res.binds) == expected
    again = run_scenario(objects, actions=["allocate"], tiers=[[DRF, PROP]], vectorize=False)
    assert again.binds == res.binds
    d = tmp_path / "m"
    write_manifests(d, objects)
    conf = tmp_path / "c.conf"
    conf.write_text(conf_yaml(["allocate"], [[DRF], [PROP]]))
    out = CliRunner().invoke(command, ["session", "-f", str(d), "--config", str(conf)])
    assert out.exit_code == 0, out.output
    assert _per_job(json.loads(out.stdout)["binds"]) == expected


def test_loader_refuses_drf_hierarchy_and_proportion_in_one_tier() -> None:
    text = conf_yaml(["allocate"], [[DRF, PROP]])
    with pytest.raises(ConfigError, match="cannot be in one tier"):
        parse_conf(text)


def test_drf_orders_jobs_by_dominant_share() -> None:
    objs = [node("n1", "4,4Gi,pods=10"), queue("c1")]
    objs += [podgroup("big"), podgroup("small")]
    objs += [pod("big-run", group="big", requests="2,2Gi", node="n1", phase="Running")]
    objs += [pod("big-p-1", group="big", requests="1,1Gi"), pod("small-p-1", group="small", requests="1,1Gi")]
    res = run_scenario(objs, actions=["allocate"], tiers=[[plugin("drf", enableJobOrder=True), "predicates"]])
    assert res.binds == {"c1/small-p-1": "n1", "c1/big-p-1": "n1"}
    res = run_scenario([*objs[:-1], pod("small-p-1", group="small", requests="2,2Gi")], actions=["allocate"], tiers=[[plugin("drf", enableJobOrder=True), "predicates"]])
    assert res.binds == {"c1/small-p-1": "n1"}
