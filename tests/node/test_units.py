"""Pure helpers of the node agent: $(VAR) expansion, Pod requests, Service names, CRI log lines."""

from __future__ import annotations

import pytest

from pumice.node import podspec
from pumice.node.logs import LogRequest, parse_line, read_records, render
from pumice.node.network import IPAM, hosts_content
from pumice.node.services import ServiceDirectory


@pytest.mark.upstream("kubernetes third_party/forked/golang/expansion/expand_test.go TestMapReference")
@pytest.mark.parametrize(("value", "expected"), [
    ("$(VAR_A)", "A"),
    ("___$(VAR_B)___", "___B___"),
    ("$(VAR_A)-$(VAR_B)", "A-B"),
    ("$$(VAR_A)", "$(VAR_A)"),
    ("$(UNKNOWN)", "$(UNKNOWN)"),
    ("$VAR_A", "$VAR_A"),
    ("$(VAR_A", "$(VAR_A"),
    ("$$$$(VAR_A)", "$$(VAR_A)"),
])
def test_var_expansion_follows_kubernetes_rules(value: str, expected: str) -> None:
    assert podspec.expand(value, {"VAR_A": "A", "VAR_B": "B"}) == expected


def test_pod_requests_take_the_larger_of_init_max_and_container_sum() -> None:
    pod = {"spec": {
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}}},
                       {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
        "overhead": {"cpu": "100m"},
    }}
    assert podspec.pod_requests(pod) == {"cpu": 2100, "memory": 3 * 1024**3}


def test_env_values_expand_earlier_variables_only() -> None:
    c = {"name": "c", "env": [{"name": "B", "value": "$(A)-b"}, {"name": "A", "value": "a"},
                             {"name": "C", "value": "$(A)-c"}]}
    env = podspec.container_env({"metadata": {}}, c, lambda k, n: None, base={}, node_allocatable={})
    assert env == {"B": "$(A)-b", "A": "a", "C": "a-c"}


def test_service_names_resolve_to_ready_endpoints_or_selected_pods() -> None:
    d = ServiceDirectory(api_address="10.244.0.1")
    d.set("services", {"metadata": {"name": "head", "namespace": "ray"},
                       "spec": {"clusterIP": "None", "selector": {"app": "head"}}})
    d.set("pods", {"metadata": {"uid": "u1", "namespace": "ray", "labels": {"app": "head"}},
                   "status": {"podIP": "10.244.0.5", "conditions": [{"type": "Ready", "status": "True"}]}})
    d.set("pods", {"metadata": {"uid": "u2", "namespace": "ray", "labels": {"app": "head"}},
                   "status": {"podIP": "10.244.0.6"}})
    names = ["head.ray.svc.cluster.local", "head.ray.svc", "head.ray"]
    assert d.entries("ray")[1] == ("10.244.0.5", [*names, "head"])
    assert d.entries("default")[1] == ("10.244.0.5", names)
    assert d.entries("default")[0][1][0] == "kubernetes.default.svc.cluster.local"
    d.set("endpoints", {"metadata": {"name": "head", "namespace": "ray"},
                        "subsets": [{"addresses": [{"ip": "10.244.0.9"}], "notReadyAddresses": [{"ip": "10.244.0.6"}]}]})
    assert [ip for ip, _ in d.entries("ray")[1:]] == ["10.244.0.9"]


def test_the_kubernetes_service_resolves_to_where_the_agent_exposes_the_api_server() -> None:
    for api_address in ("10.244.0.1", ""):  # netns mode, host mode
        d = ServiceDirectory(api_address=api_address)
        d.set("services", {"metadata": {"name": "kubernetes", "namespace": "default"},
                           "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]}})
        d.set("endpoints", {"metadata": {"name": "kubernetes", "namespace": "default"},
                            "subsets": [{"addresses": [{"ip": "192.0.2.2"}],
                                         "ports": [{"name": "https", "port": 6443}]}]})
        want = [(api_address, ["kubernetes.default.svc.cluster.local", "kubernetes.default.svc", "kubernetes.default",
                               "kubernetes"])] if api_address else []
        assert d.entries("default") == want


def test_hosts_file_lists_the_pod_and_the_services() -> None:
    text = hosts_content("10.244.0.2", "web-0", "web-0.web.default.svc.cluster.local",
                         [("10.244.0.3", ["db.default.svc.cluster.local", "db"])],
                         [{"ip": "1.2.3.4", "hostnames": ["foo"]}])
    lines = text.splitlines()
    assert "10.244.0.2\tweb-0.web.default.svc.cluster.local web-0" in lines
    assert "10.244.0.3\tdb.default.svc.cluster.local db" in lines
    assert lines[-1] == "1.2.3.4\tfoo"


def test_ipam_hands_out_each_address_once_and_reuses_released_ones() -> None:
    ipam = IPAM("10.0.0.0/30", reserved=["10.0.0.1"])
    assert ipam.allocate("a") == "10.0.0.2"
    assert ipam.allocate("a") == "10.0.0.2"
    with pytest.raises(Exception, match="no free address"):
        ipam.allocate("b")
    ipam.release("a")
    assert ipam.allocate("b") == "10.0.0.2"


def test_cri_log_records_render_with_tail_and_timestamps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "0.log"
    f.write_bytes(b"2024-01-01T00:00:00.000000001Z stdout F one\n"
                  b"2024-01-01T00:00:01.000000000Z stderr P tw\n"
                  b"2024-01-01T00:00:01.500000000Z stderr F o\n"
                  b"2024-01-01T00:00:02.000000000Z stdout F three\n"
                  b"2024-01-01T00:00:03.000000000Z stdout F partial-without-newline")
    records, _ = read_records(str(f), None)
    assert b"".join(render(records, LogRequest())) == b"one\ntwo\nthree\n"
    records, _ = read_records(str(f), 2)
    assert b"".join(render(records, LogRequest())) == b"two\nthree\n"
    out = b"".join(render(records[-1:], LogRequest(timestamps=True)))
    assert out == b"2024-01-01T00:00:02.000000000Z three\n"
    assert parse_line(b"garbage") is None
