"""pumice.api.storage: StorageClass allowedTopologies and a claim's selector against volumes."""

from __future__ import annotations

import logging

import pytest

from pumice.api.storage import topology_matches, volume_fits, why_not_for_pod


def test_allowed_topologies_an_empty_term_selects_no_node() -> None:
    """review 12 F4: `allowedTopologies: [{}]` admitted every Node; upstream's
    MatchTopologySelectorTerms skips an empty term (it selects nothing)."""
    labels = {"zone": "a"}
    assert topology_matches(None, labels)
    assert topology_matches([], labels)
    assert not topology_matches([{}], labels)
    assert not topology_matches([{"matchLabelExpressions": []}], labels)
    zone_a = {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}
    assert topology_matches([{}, zone_a], labels)
    assert not topology_matches([zone_a], {"zone": "b"})


def test_a_claim_selector_that_does_not_parse_matches_no_volume_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pv = {"metadata": {"name": "pv1", "labels": {"tier": "fast"}},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "s"}}
    pvc = {"metadata": {"name": "c", "namespace": "ns"},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "s",
                    "resources": {"requests": {"storage": "1Gi"}},
                    "selector": {"matchExpressions": [{"key": "tier", "operator": "Bogus", "values": ["fast"]}]}}}
    with caplog.at_level(logging.WARNING, logger="pumice.api.storage"):
        assert not volume_fits(pv, pvc)
    assert any("claim ns/c: error creating internal label selector" in r.getMessage() for r in caplog.records)
    pvc["spec"]["selector"] = {"matchLabels": {"tier": "fast"}}
    assert volume_fits(pv, pvc)


def test_why_not_for_pod_is_none_for_the_pods_own_claim_and_kubes_words_otherwise() -> None:
    # review 19 R-6: volume_is_for_pod returned "" when the claim *was* the Pod's
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}
    mine = {"metadata": {"name": "p-data", "namespace": "ns",
                         "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "u1", "controller": True}]}}
    assert why_not_for_pod(pod, mine) is None
    other = {"metadata": {**mine["metadata"], "ownerReferences": [{"uid": "u2", "controller": True}]}}
    assert why_not_for_pod(pod, other) == "PVC ns/p-data was not created for pod ns/p (pod is not owner)"
    elsewhere = {"metadata": {**mine["metadata"], "namespace": "other"}}
    assert why_not_for_pod(pod, elsewhere) == "PVC other/p-data was not created for pod ns/p (pod is not owner)"
