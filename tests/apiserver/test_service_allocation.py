"""Service cluster IPs and node ports through the real API server (trial 12 F-11): allocated from
10.96.0.0/12 and 30000-32767, unique, freed on delete and type change, kept across a restart.

Ports kube-apiserver's behaviour: pkg/registry/core/service/storage (alloc.go, storage.go) and the
portallocator/ipallocator errors."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path
from typing import Any

import pytest

from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster, local_cluster

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


def svc(name: str, *, ns: str = "default", ports: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    spec["ports"] = ports if ports is not None else [{"port": 80}]
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def node_ports(obj: dict[str, Any]) -> list[int]:
    return [p["nodePort"] for p in obj["spec"]["ports"] if p.get("nodePort")]


async def services(c: LocalCluster) -> Any:
    return c.scheme.by_api_version_kind("v1", "Service")


async def refused(c: LocalCluster, obj: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as e:
        await c.client.create(obj)
    return e.value


async def test_a_nodeport_service_without_a_node_port_gets_one_in_range(cluster: LocalCluster) -> None:
    got = await cluster.client.create(svc("np", type="NodePort", ports=[{"name": "a", "port": 80},
                                                                        {"name": "b", "port": 81}]))
    ports = node_ports(got)
    assert len(ports) == 2 and len(set(ports)) == 2
    assert all(30000 <= p <= 32767 for p in ports)


async def test_a_load_balancer_gets_node_ports_unless_told_not_to(cluster: LocalCluster) -> None:
    lb = await cluster.client.create(svc("lb", type="LoadBalancer"))
    assert len(node_ports(lb)) == 1
    bare = await cluster.client.create(svc("lb2", type="LoadBalancer", allocateLoadBalancerNodePorts=False))
    assert node_ports(bare) == []


async def test_ports_with_one_port_number_share_a_node_port(cluster: LocalCluster) -> None:
    got = await cluster.client.create(svc("dns", type="NodePort", ports=[
        {"name": "tcp", "port": 53, "protocol": "TCP"}, {"name": "udp", "port": 53, "protocol": "UDP"}]))
    a, b = node_ports(got)
    assert a == b


async def test_a_taken_node_port_is_refused_with_upstreams_text(cluster: LocalCluster) -> None:
    await cluster.client.create(svc("np1", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
    e = await refused(cluster, svc("np2", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
    assert (e.code, e.reason) == (422, "Invalid")
    assert e.message == ('Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: '
                         "provided port is already allocated")
    assert e.status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.ports[0].nodePort",
                                              "message": "Invalid value: 30080: provided port is already allocated"}]


async def test_a_node_port_out_of_range_is_refused(cluster: LocalCluster) -> None:
    e = await refused(cluster, svc("np", type="NodePort", ports=[{"port": 80, "nodePort": 8080}]))
    assert e.message == ('Service "np" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not '
                         "in the valid range. The range of valid ports is 30000-32767")


async def test_a_service_gets_a_cluster_ip_and_its_family_fields(cluster: LocalCluster) -> None:
    got = await cluster.client.create(svc("web", selector={"app": "web"}))
    spec = got["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in SERVICE_CIDR
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")


async def test_headless_services_keep_none(cluster: LocalCluster) -> None:
    got = await cluster.client.create(svc("h", clusterIP="None", selector={"app": "h"}))
    spec = got["spec"]
    assert (spec["clusterIP"], spec["clusterIPs"]) == ("None", ["None"])
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    # headless without a selector: upstream assumes endpoints of either family
    bare = await cluster.client.create(svc("h2", clusterIP="None"))
    assert (bare["spec"]["ipFamilies"], bare["spec"]["ipFamilyPolicy"]) == (["IPv4", "IPv6"], "RequireDualStack")


async def test_an_external_name_service_gets_no_cluster_ip(cluster: LocalCluster) -> None:
    got = await cluster.client.create(svc("ext", type="ExternalName", externalName="db.example.com", ports=[]))
    assert not {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"} & set(got["spec"])


async def test_a_taken_or_foreign_cluster_ip_is_refused_with_upstreams_text(cluster: LocalCluster) -> None:
    ok = await cluster.client.create(svc("cip", clusterIP="10.96.0.5"))
    assert ok["spec"]["clusterIPs"] == ["10.96.0.5"]
    e = await refused(cluster, svc("cip2", clusterIP="10.96.0.5"))
    assert e.message == ('Service "cip2" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.5"}: '
                         "failed to allocate IP 10.96.0.5: provided IP is already allocated")
    e = await refused(cluster, svc("cip3", clusterIP="10.0.0.5"))  # the simulated Nodes' range
    assert e.message == ('Service "cip3" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.5"}: '
                         "failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. "
                         "The range of valid IPs is 10.96.0.0/12")


async def test_dual_stack_and_ipv6_are_refused_on_this_single_stack_cluster(cluster: LocalCluster) -> None:
    e = await refused(cluster, svc("ds", ipFamilyPolicy="RequireDualStack"))
    assert e.message == ('Service "ds" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
                         "this cluster is not configured for dual-stack services")
    e = await refused(cluster, svc("v6", ipFamilies=["IPv6"]))
    assert e.message == 'Service "v6" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'


async def test_delete_frees_the_node_port_and_the_cluster_ip(cluster: LocalCluster) -> None:
    kind = await services(cluster)
    await cluster.client.create(svc("a", type="NodePort", clusterIP="10.96.0.7", ports=[{"port": 80, "nodePort": 30081}]))
    await cluster.client.delete(kind, "a", "default")
    again = await cluster.client.create(svc("b", type="NodePort", clusterIP="10.96.0.7",
                                            ports=[{"port": 80, "nodePort": 30081}]))
    assert (again["spec"]["clusterIP"], node_ports(again)) == ("10.96.0.7", [30081])


async def test_a_failed_create_keeps_nothing(cluster: LocalCluster) -> None:
    await cluster.client.create(svc("a"))
    # AlreadyExists after allocation: the requested values go back
    e = await refused(cluster, svc("a", type="NodePort", clusterIP="10.96.0.9", ports=[{"port": 80, "nodePort": 30090}]))
    assert e.code == 409
    # invalid after allocation (a bad selector): the same
    e = await refused(cluster, svc("bad", type="NodePort", clusterIP="10.96.0.9", selector={"a": "-"},
                                   ports=[{"port": 80, "nodePort": 30090}]))
    assert e.code == 422 and "spec.selector" in e.message
    got = await cluster.client.create(svc("b", type="NodePort", clusterIP="10.96.0.9",
                                          ports=[{"port": 80, "nodePort": 30090}]))
    assert node_ports(got) == [30090]


async def test_a_dry_run_shows_values_and_takes_none(cluster: LocalCluster) -> None:
    dry = await cluster.client.create(svc("a", type="NodePort", clusterIP="10.96.0.11",
                                          ports=[{"name": "w", "port": 80, "nodePort": 30091}, {"name": "x", "port": 81}]),
                                      dry_run=True)
    assert node_ports(dry)[0] == 30091 and len(node_ports(dry)) == 2
    real = await cluster.client.create(svc("b", type="NodePort", clusterIP="10.96.0.11",
                                           ports=[{"port": 80, "nodePort": 30091}]))
    assert node_ports(real) == [30091]


async def test_changing_the_type_to_cluster_ip_drops_and_frees_node_ports(cluster: LocalCluster) -> None:
    kind = await services(cluster)
    await cluster.client.create(svc("a", type="NodePort", ports=[{"port": 80, "nodePort": 30082}]))
    changed = await cluster.client.patch(kind, "a", {"spec": {"type": "ClusterIP"}}, "default")
    assert node_ports(changed) == []
    got = await cluster.client.create(svc("b", type="NodePort", ports=[{"port": 80, "nodePort": 30082}]))
    assert node_ports(got) == [30082]


async def test_changing_the_type_to_node_port_allocates(cluster: LocalCluster) -> None:
    kind = await services(cluster)
    await cluster.client.create(svc("a"))
    changed = await cluster.client.patch(kind, "a", {"spec": {"type": "NodePort"}}, "default")
    assert len(node_ports(changed)) == 1


async def test_external_name_and_back_releases_and_allocates_the_cluster_ip(cluster: LocalCluster) -> None:
    kind = await services(cluster)
    await cluster.client.create(svc("a", clusterIP="10.96.0.13"))
    ext = await cluster.client.patch(kind, "a", {"spec": {"type": "ExternalName", "externalName": "x.example.com"}},
                                     "default")
    assert "clusterIP" not in ext["spec"]
    other = await cluster.client.create(svc("b", clusterIP="10.96.0.13"))
    assert other["spec"]["clusterIP"] == "10.96.0.13"
    back = await cluster.client.patch(kind, "a", {"spec": {"type": "ClusterIP", "externalName": None}}, "default")
    assert ipaddress.ip_address(back["spec"]["clusterIP"]) in SERVICE_CIDR
    assert back["spec"]["clusterIP"] != "10.96.0.13"


async def test_resubmitting_a_manifest_keeps_the_allocated_values(cluster: LocalCluster) -> None:
    first = await cluster.client.create(svc("a", type="NodePort", ports=[{"name": "http", "port": 80}]))
    again = svc("a", type="NodePort", ports=[{"name": "http", "port": 80}])
    again["metadata"]["resourceVersion"] = first["metadata"]["resourceVersion"]
    updated = await cluster.client.update(again)
    assert node_ports(updated) == node_ports(first)
    assert updated["spec"]["clusterIP"] == first["spec"]["clusterIP"]


async def test_changing_a_node_port_frees_the_old_one(cluster: LocalCluster) -> None:
    kind = await services(cluster)
    await cluster.client.create(svc("a", type="NodePort", ports=[{"port": 80, "nodePort": 30083}]))
    await cluster.client.patch(kind, "a", {"spec": {"ports": [{"port": 80, "nodePort": 30084}]}}, "default")
    e = await refused(cluster, svc("b", type="NodePort", ports=[{"port": 80, "nodePort": 30084}]))
    assert "provided port is already allocated" in e.message
    got = await cluster.client.create(svc("c", type="NodePort", ports=[{"port": 80, "nodePort": 30083}]))
    assert node_ports(got) == [30083]


async def test_a_local_load_balancer_gets_a_health_check_node_port_freed_when_it_leaves(cluster: LocalCluster) -> None:
    kind = await services(cluster)
    lb = await cluster.client.create(svc("lb", type="LoadBalancer", externalTrafficPolicy="Local"))
    hc = lb["spec"]["healthCheckNodePort"]
    assert 30000 <= hc <= 32767 and hc not in node_ports(lb)
    e = await refused(cluster, svc("np", type="NodePort", ports=[{"port": 80, "nodePort": hc}]))
    assert "provided port is already allocated" in e.message
    moved = await cluster.client.patch(kind, "lb", {"spec": {"externalTrafficPolicy": "Cluster"}}, "default")
    assert "healthCheckNodePort" not in moved["spec"]
    got = await cluster.client.create(svc("np", type="NodePort", ports=[{"port": 80, "nodePort": hc}]))
    assert node_ports(got) == [hc]


async def test_concurrent_creates_get_distinct_values(cluster: LocalCluster) -> None:
    made = await asyncio.gather(*(cluster.client.create(svc(f"s{i}", type="NodePort")) for i in range(24)))
    assert len({node_ports(s)[0] for s in made}) == 24
    assert len({s["spec"]["clusterIP"] for s in made}) == 24


async def test_allocation_is_deterministic() -> None:
    picks = []
    for _ in range(2):
        async with local_cluster(install_crds=False) as c:
            made = [await c.client.create(svc(f"s{i}", type="NodePort")) for i in range(3)]
            picks.append([(s["spec"]["clusterIP"], node_ports(s)) for s in made])
    assert picks[0] == picks[1]


async def test_allocations_survive_a_restart(tmp_path: Path) -> None:
    async with local_cluster(data_dir=tmp_path, install_crds=False) as c:
        first = await c.client.create(svc("np1", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
        auto = await c.client.create(svc("np2", type="NodePort"))
    async with local_cluster(data_dir=tmp_path, install_crds=False) as c:
        e = await refused(c, svc("np3", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
        assert "provided port is already allocated" in e.message
        e = await refused(c, svc("np4", clusterIP=first["spec"]["clusterIP"]))
        assert "provided IP is already allocated" in e.message
        later = await c.client.create(svc("np5", type="NodePort"))
        assert node_ports(later) != node_ports(auto)
        assert later["spec"]["clusterIP"] not in (first["spec"]["clusterIP"], auto["spec"]["clusterIP"])


async def test_a_create_refused_for_its_node_port_gives_back_its_cluster_ip(cluster: LocalCluster) -> None:
    await cluster.client.create(svc("a", type="NodePort", ports=[{"port": 80, "nodePort": 30092}]))
    e = await refused(cluster, svc("b", type="NodePort", clusterIP="10.96.0.15", ports=[{"port": 80, "nodePort": 30092}]))
    assert e.code == 422
    got = await cluster.client.create(svc("c", clusterIP="10.96.0.15"))
    assert got["spec"]["clusterIP"] == "10.96.0.15"


async def test_the_ranges_are_the_servers_options() -> None:
    async with local_cluster(install_crds=False, service_cluster_ip_range="10.100.0.0/28",
                             service_node_port_range=(31000, 31001)) as c:
        got = await c.client.create(svc("a", type="NodePort"))
        assert ipaddress.ip_address(got["spec"]["clusterIP"]) in ipaddress.ip_network("10.100.0.0/28")
        assert node_ports(got)[0] in (31000, 31001)
        e = await refused(c, svc("b", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
        assert e.message.endswith("provided port is not in the valid range. The range of valid ports is 31000-31001")
        await c.client.create(svc("c", type="NodePort"))
        e = await refused(c, svc("d", type="NodePort"))  # both ports taken
        assert (e.code, e.reason) == (500, "InternalError")
        assert e.message == "Internal error occurred: failed to allocate a nodePort: range is full"


async def test_bad_node_ports_in_an_update_are_422_not_500(cluster: LocalCluster) -> None:
    """A nodePort given twice with one protocol in an update, and a requested health check port
    that is taken: upstream answers 500 InternalError from its allocator; pumice answers 422 with
    the field (the client's input is at fault) and keeps what was stored."""
    kind = await services(cluster)
    await cluster.client.create(svc("dup", type="NodePort", ports=[{"port": 80, "name": "a"}]))
    before = await cluster.client.get(kind, "dup", "default")
    two = [{"port": 80, "name": "a", "nodePort": 30090}, {"port": 81, "name": "b", "nodePort": 30090}]
    with pytest.raises(ApiError) as info:
        await cluster.client.patch(kind, "dup", {"spec": {"ports": two}}, "default")
    e = info.value
    assert (e.code, e.reason) == (422, "Invalid")
    assert "spec.ports[1].nodePort: Duplicate value: 30090" in e.message
    after = await cluster.client.get(kind, "dup", "default")
    assert after["spec"] == before["spec"] and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # the refused update took nothing: 30090 is free for another Service
    got = await cluster.client.create(svc("free", type="NodePort", ports=[{"port": 80, "nodePort": 30090}]))
    assert node_ports(got) == [30090]

    e = await refused(cluster, svc("lb", type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30090))
    assert (e.code, e.reason) == (422, "Invalid")
    assert ("spec.healthCheckNodePort: Invalid value: 30090: failed to allocate requested HealthCheck NodePort: "
            "provided port is already allocated") in e.message


async def test_a_local_load_balancer_may_not_change_its_health_check_node_port(cluster: LocalCluster) -> None:
    """review 12 F1: the change was stored without taking the new port (a NodePort Service could
    then get it too) and the old one stayed taken. Upstream refuses it (alloc.go)."""
    kind = await services(cluster)
    lb = await cluster.client.create(svc("lbhc", type="LoadBalancer", externalTrafficPolicy="Local"))
    hc = lb["spec"]["healthCheckNodePort"]
    other = 32700 if hc != 32700 else 32701
    with pytest.raises(ApiError) as info:
        await cluster.client.patch(kind, "lbhc", {"spec": {"healthCheckNodePort": other}}, "default")
    assert (info.value.code, info.value.reason) == (422, "Invalid")
    assert (f"spec.healthCheckNodePort: Invalid value: {other}: cannot change healthCheckNodePort on loadBalancer "
            "service with externalTraffic=Local during update") in info.value.message
    assert (await cluster.client.get(kind, "lbhc", "default"))["spec"]["healthCheckNodePort"] == hc
    got = await cluster.client.create(svc("np-other", type="NodePort", ports=[{"port": 80, "nodePort": other}]))
    assert node_ports(got) == [other]
    e = await refused(cluster, svc("np-hc", type="NodePort", ports=[{"port": 80, "nodePort": hc}]))
    assert "provided port is already allocated" in e.message


async def test_a_health_check_node_port_needs_a_local_load_balancer(cluster: LocalCluster) -> None:
    """review 12 F3: a ClusterIP Service with healthCheckNodePort was stored (the port not taken,
    so another Service could be given it). Upstream validateServiceExternalTrafficPolicy."""
    e = await refused(cluster, svc("hc-cip", healthCheckNodePort=30600))
    assert (e.code, e.reason) == (422, "Invalid")
    assert ("spec.healthCheckNodePort: Invalid value: 30600: may only be set when `type` is 'LoadBalancer' and "
            "`externalTrafficPolicy` is 'Local'") in e.message
    e = await refused(cluster, svc("hc-lb", type="LoadBalancer", healthCheckNodePort=30601))
    assert "may only be set when" in e.message
