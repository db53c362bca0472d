"""Label-based HyperNode discovery and node counts as pure functions."""

from __future__ import annotations

import pytest

from pumice.api.volcano.topology import real_node_count
from pumice.controllers.volcano.hypernode import discover, hypernode_name, parse_label_topology_types

CONF = """\
networkTopologyDiscovery:
  - source: ufm
    enabled: true
    config: {endpoint: https://ufm:8080}
  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        topologyA2:
          - nodeLabel: "volcano.sh/tor"
          - nodeLabel: "kubernetes.io/hostname"
        topologyA3:
          - nodeLabel: "volcano.sh/hypercluster"
          - nodeLabel: "volcano.sh/hypernode"
          - nodeLabel: "kubernetes.io/hostname"
        dup:
          - nodeLabel: "a"
          - nodeLabel: "a"
        averyveryverylongtypename:
          - nodeLabel: "b"
          - nodeLabel: "kubernetes.io/hostname"
"""


def node(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": {k.replace("__", "/").replace("_", "."): v for k, v in labels.items()}}}


def test_the_upstream_example_config_gives_tiers_bottom_up_and_skips_bad_types() -> None:
    assert parse_label_topology_types(CONF) == {
        "topologyA2": ["volcano.sh/tor"],
        "topologyA3": ["volcano.sh/hypernode", "volcano.sh/hypercluster"],
    }


def test_a_bad_config_is_one_error_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"volcano-controller\.conf: invalid YAML"):
        parse_label_topology_types("networkTopologyDiscovery: [")


def test_discovery_builds_one_hypernode_per_label_value_and_stops_a_chain_at_a_missing_label() -> None:
    types = {"t": ["volcano.sh/hypernode", "volcano.sh/hypercluster"]}
    nodes = [node("n0", volcano_sh__hypernode="g0", volcano_sh__hypercluster="c0"),
             node("n1", volcano_sh__hypernode="g0", volcano_sh__hypercluster="c0"),
             node("n2", volcano_sh__hypernode="g1"),
             node("n3")]
    got = discover(nodes, types, [])
    g0, g1, c0 = (hypernode_name("t", 1, "volcano.sh/hypernode", "g0"), hypernode_name("t", 1, "volcano.sh/hypernode", "g1"),
                  hypernode_name("t", 2, "volcano.sh/hypercluster", "c0"))
    assert set(got) == {g0, g1, c0}
    assert got[g0]["spec"] == {"tier": 1, "tierName": "volcano.sh/hypernode", "members": [
        {"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}, {"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}]}
    assert got[c0]["spec"]["members"] == [{"type": "HyperNode", "selector": {"exactMatch": {"name": g0}}}]
    assert got[g0]["metadata"]["labels"] == {"volcano.sh/hypernode": "g0", "volcano.sh/network-topology-source": "label"}
    assert g0.startswith("hypernode-t-tier1-") and len(g0) == len("hypernode-t-tier1-") + 5
    counts = real_node_count(got, {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes})
    assert counts == {g0: 2, g1: 1, c0: 2}


def test_an_existing_discovered_hypernode_keeps_its_name() -> None:
    old = {"metadata": {"name": "hypernode-t-tier1-abcde",
                        "labels": {"volcano.sh/tor": "x", "volcano.sh/network-topology-source": "label"}}}
    got = discover([node("n0", volcano_sh__tor="x")], {"t": ["volcano.sh/tor"]}, [old])
    assert list(got) == ["hypernode-t-tier1-abcde"]
