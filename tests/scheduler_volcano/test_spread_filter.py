"""The predicates plugin's PodTopologySpread filter (a Pod's DoNotSchedule constraints), as
upstream Volcano runs kube's plugin: PreFilter at the pre-predicate, Filter per Node; the same
implementation as the default scheduler's (pumice.scheduler.default.spread)."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api import Obj
from pumice.scheduler.volcano.conf import PluginOption
from pumice.testing.volcano import node, pod, podgroup, queue, run_scenario

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def spread_pod(name: str, key: str = HOST, skew: int = 1, **kw: Any) -> Obj:
    p = pod(name, group="pg1", requests="1,1Gi", labels={"app": "web"}, **kw)
    p["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}]
    return p


def hosts(*names: str, **labels: str) -> list[Obj]:
    return [node(n, "8,16Gi,pods=110", labels={HOST: n, **labels}) for n in names]


def predicates(enabled: bool = True) -> PluginOption:
    return PluginOption.all_on("predicates", arguments={"predicate.PodTopologySpreadEnable": enabled})


@pytest.mark.parametrize("vectorize", [True, False])
def test_a_gang_spreads_one_task_per_node_in_one_session(vectorize: bool) -> None:
    """Each task's PreFilter counts the tasks this session already placed."""
    objs = [*hosts("n1", "n2", "n3"), queue("c1"), podgroup("pg1", min_member=3)]
    objs += [spread_pod(f"w{i}") for i in range(3)]
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", predicates()]], vectorize=vectorize)
    assert sorted(res.binds.values()) == ["n1", "n2", "n3"]
    # with the filter switched off, the same gang packs onto one Node (nothing else spreads it)
    off = run_scenario(objs, actions=["allocate"], tiers=[["gang", predicates(False)]], vectorize=vectorize)
    assert len(off.binds) == 3 and len(set(off.binds.values())) < 3


def _running(name: str, on: str) -> Obj:
    return pod(name, group="pg1", requests="1,1Gi", labels={"app": "web"}, node=on, phase="Running")


@pytest.mark.parametrize("vectorize", [True, False])
def test_a_task_goes_to_the_least_loaded_domain_or_stays_pending_with_upstream_s_reasons(vectorize: bool) -> None:
    """n1 holds two matching Pods, n2 none, ``bare`` has no hostname label."""
    base = [node("bare", "8,16Gi,pods=110"), queue("c1"), podgroup("pg1", min_member=1),
            _running("old0", "n1"), _running("old1", "n1"), spread_pod("new")]
    res = run_scenario([*hosts("n1", "n2"), *base], actions=["allocate"], tiers=[["gang", predicates()]],
                       vectorize=vectorize)
    assert res.binds == {"c1/new": "n2"}  # n1 would be 2 + 1 - 0 > 1; bare lacks the key
    no_room = [node("n1", "8,16Gi,pods=110", labels={HOST: "n1"}), node("n2", "0,16Gi,pods=110", labels={HOST: "n2"})]
    res = run_scenario([*no_room, *base], actions=["allocate"], tiers=[["gang", predicates()]], vectorize=vectorize)
    assert res.binds == {}
    assert res.unschedulable["c1/new"][1] == (
        "0/3 nodes are unavailable: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread constraints, "
        "1 node(s) didn't match pod topology spread constraints (missing required label).")


@pytest.mark.parametrize("vectorize", [True, False])
def test_min_domains_over_zones(vectorize: bool) -> None:
    """Two zones where the constraint asks for three: the global minimum is 0, so each zone
    takes one matching Pod and the third task waits."""
    objs = [node("a", "8,16Gi,pods=110", labels={ZONE: "za"}), node("b", "8,16Gi,pods=110", labels={ZONE: "zb"}),
            queue("c1"), podgroup("pg1", min_member=1)]
    objs += [spread_pod(f"w{i}", ZONE) for i in range(3)]
    for p in objs[-3:]:
        p["spec"]["topologySpreadConstraints"][0]["minDomains"] = 3
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", predicates()]], vectorize=vectorize)
    assert sorted(res.binds.values()) == ["a", "b"]
    (waiting,) = [k for k in ("c1/w0", "c1/w1", "c1/w2") if k not in res.binds]
    assert res.unschedulable[waiting][1] == "0/2 nodes are unavailable: 2 node(s) didn't match pod topology spread constraints."
