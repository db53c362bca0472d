"""networking.k8s.io/v1 Ingress, IngressClass and NetworkPolicy (trial 15 F-3): served, defaulted
and validated as kube-apiserver serves them. The expected causes were taken from a real
kube-apiserver (v1.34.4, built by tools/build_kube.py; the networking rules match 1.32.3's except
where a test says so) answering the same requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ApiError as LightkubeApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.networking_v1 import (
    HTTPIngressPath,
    HTTPIngressRuleValue,
    IngressBackend,
    IngressRule,
    IngressServiceBackend,
    IngressSpec,
    NetworkPolicySpec,
    ServiceBackendPort,
)
from lightkube.resources.networking_v1 import Ingress, IngressStatus, NetworkPolicy

from pumice.api.scheme import Scheme
from pumice.client.base import ApiError
from pumice.testing.cluster import HttpServer, LocalCluster, serve_http
from pumice.testing.kubectl import Kubectl

NS = "/apis/networking.k8s.io/v1/namespaces/default"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
BACKEND = {"service": {"name": "web", "port": {"number": 80}}}


def ingress(name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "default", **metadata}, "spec": spec}


def network_policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def ingress_class(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": name}, "spec": spec}


def path(p: str, path_type: str | None = "Prefix", backend: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"path": p, "backend": backend or BACKEND}
    if path_type is not None:
        out["pathType"] = path_type
    return out


def rules(*paths: dict[str, Any], host: str = "") -> dict[str, Any]:
    rule: dict[str, Any] = {"http": {"paths": list(paths)}}
    if host:
        rule["host"] = host
    return {"rules": [rule]}


async def causes_of(cluster: LocalCluster, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiError) as e:
        await cluster.client.create(obj)
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    return [(c["field"], c["reason"], c["message"]) for c in e.value.status["details"]["causes"]]


# ---- served, with upstream's names ---------------------------------------------------------------


def test_the_builtin_scheme_serves_the_networking_group_as_kube_apiserver() -> None:
    s = Scheme.builtin()
    ing = s.resolve("ing")
    assert ing is not None and (ing.kind, ing.namespaced, ing.subresources, ing.categories) == (
        "Ingress", True, ("status",), ())
    netpol = s.resolve("netpol")
    assert netpol is not None and (netpol.kind, netpol.namespaced, netpol.subresources) == ("NetworkPolicy", True, ())
    ic = s.resolve("ingressclasses.networking.k8s.io")
    assert ic is not None and (ic.kind, ic.namespaced, ic.short_names) == ("IngressClass", False, ())


async def test_discovery_lists_the_networking_resources_with_the_ingress_status(cluster: LocalCluster,
                                                                                 http: httpx2.AsyncClient) -> None:
    doc = (await http.get("/apis/networking.k8s.io/v1")).json()
    got = {r["name"]: (r["kind"], r["namespaced"], r.get("shortNames", [])) for r in doc["resources"]}
    assert got == {"ingresses": ("Ingress", True, ["ing"]), "ingresses/status": ("Ingress", True, []),
                   "ingressclasses": ("IngressClass", False, []),
                   "networkpolicies": ("NetworkPolicy", True, ["netpol"])}


# ---- defaults and what the server writes ---------------------------------------------------------


async def test_network_policy_defaults_policy_types_protocols_and_the_empty_pod_selector(cluster: LocalCluster) -> None:
    out = await cluster.client.create(network_policy("np1", {"egress": [{}], "ingress": [{"ports": [{"port": 80}]}]}))
    assert out["spec"] == {"egress": [{}], "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}],
                           "podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    assert out["metadata"]["generation"] == 1
    only_ingress = await cluster.client.create(network_policy("np2", {"podSelector": {"matchLabels": {"a": "b"}}}))
    assert only_ingress["spec"]["policyTypes"] == ["Ingress"]
    given = await cluster.client.create(network_policy("np3", {"egress": [{}], "policyTypes": ["Egress"]}))
    assert given["spec"]["policyTypes"] == ["Egress"]


async def test_ingress_starts_with_an_empty_load_balancer_status_and_counts_spec_changes(cluster: LocalCluster) -> None:
    created = await cluster.client.create(ingress("i1", rules(path("/"))) | {
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}})
    assert created["status"] == {"loadBalancer": {}}
    assert created["metadata"]["generation"] == 1
    created["spec"]["ingressClassName"] = "nginx"
    updated = await cluster.client.update(created)
    assert updated["metadata"]["generation"] == 2
    updated["metadata"]["labels"] = {"a": "b"}
    assert (await cluster.client.update(updated))["metadata"]["generation"] == 2


async def test_ingress_class_parameters_default_to_cluster_scope(cluster: LocalCluster) -> None:
    out = await cluster.client.create(ingress_class("c1", {"controller": "example.com/ingress",
                                                           "parameters": {"kind": "Foo", "name": "bar"}}))
    assert out["spec"]["parameters"] == {"kind": "Foo", "name": "bar", "scope": "Cluster"}
    assert out["metadata"]["generation"] == 1


# ---- validation ----------------------------------------------------------------------------------


async def test_ingress_needs_rules_or_a_default_backend(cluster: LocalCluster) -> None:
    assert await causes_of(cluster, ingress("bad", {})) == [
        ("spec", "FieldValueInvalid", "Invalid value: null: either `defaultBackend` or `rules` must be specified")]


async def test_ingress_path_type_is_required_and_one_of_upstreams(cluster: LocalCluster) -> None:
    assert await causes_of(cluster, ingress("bad", rules(path("/", None), path("/", "Foo")))) == [
        ("spec.rules[0].http.paths[0].pathType", "FieldValueRequired", "Required value: pathType must be specified"),
        ("spec.rules[0].http.paths[1].pathType", "FieldValueNotSupported",
         'Unsupported value: "Foo": supported values: "Exact", "ImplementationSpecific", "Prefix"')]


async def test_exact_and_prefix_paths_are_absolute_and_clean(cluster: LocalCluster) -> None:
    at = "spec.rules[0].http.paths"
    assert await causes_of(cluster, ingress("bad", rules(path("a//b/..", "Exact"),
                                                         path("a", "ImplementationSpecific")))) == [
        (f"{at}[0].path", "FieldValueInvalid", 'Invalid value: "a//b/..": must be an absolute path'),
        (f"{at}[0].path", "FieldValueInvalid", "Invalid value: \"a//b/..\": must not contain '//'"),
        (f"{at}[0].path", "FieldValueInvalid", "Invalid value: \"a//b/..\": cannot end with '/..'"),
        (f"{at}[1].path", "FieldValueInvalid", 'Invalid value: "a": must be an absolute path')]


async def test_ingress_hosts_are_dns_names_wildcards_allowed(cluster: LocalCluster) -> None:
    assert await causes_of(cluster, ingress("bad", rules(path("/"), host="1.2.3.4"))) == [
        ("spec.rules[0].host", "FieldValueInvalid", 'Invalid value: "1.2.3.4": must be a DNS name, not an IP address')]
    assert await causes_of(cluster, ingress("bad", rules(path("/"), host="Foo_bar"))) == [
        ("spec.rules[0].host", "FieldValueInvalid", 'Invalid value: "Foo_bar": ' + SUBDOMAIN)]
    [(field, _, message)] = await causes_of(cluster, ingress("bad", rules(path("/"), host="a.*.com")))
    assert field == "spec.rules[0].host"
    assert message.startswith("Invalid value: \"a.*.com\": a wildcard DNS-1123 subdomain must start with '*.', "
                              "followed by a valid DNS subdomain")
    wild = await cluster.client.create(ingress("wild", rules(path("/"), host="*.example.com")))
    assert wild["spec"]["rules"][0]["host"] == "*.example.com"


@pytest.mark.parametrize(("backend", "expected"), [
    ({}, [("spec.defaultBackend", "FieldValueInvalid", 'Invalid value: "": resource or service backend is required')]),
    ({"service": {}}, [("spec.defaultBackend.service.name", "FieldValueRequired", "Required value"),
                       ("spec.defaultBackend", "FieldValueRequired",
                        "Required value: port name or number is required")]),
    ({"service": {"name": "s", "port": {"number": 80, "name": "http"}}},
     [("spec.defaultBackend", "FieldValueInvalid", 'Invalid value: "": cannot set both port name & port number')]),
    ({"service": {"name": "s", "port": {"name": "HTTP_x"}}},
     [("spec.defaultBackend.service.port.name", "FieldValueInvalid",
       'Invalid value: "HTTP_x": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)')]),
    ({"service": {"name": "1abc", "port": {"number": 70000}}},
     [("spec.defaultBackend.service.name", "FieldValueInvalid",
       "Invalid value: \"1abc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
       "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
       "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"),
      ("spec.defaultBackend.service.port.number", "FieldValueInvalid",
       "Invalid value: 70000: must be between 1 and 65535, inclusive")]),
    ({"service": {"name": "s", "port": {"number": 1}}, "resource": {"kind": "K", "name": "n"}},
     [("spec.defaultBackend", "FieldValueInvalid", 'Invalid value: "": cannot set both resource and service backends')]),
    # kube-apiserver 1.34 drops the details "kind is required"; 1.32, which pumice follows, has them
    ({"resource": {"apiGroup": "Foo", "kind": "", "name": "a/b"}},
     [("spec.defaultBackend.resource.apiGroup", "FieldValueInvalid", 'Invalid value: "Foo": ' + SUBDOMAIN),
      ("spec.defaultBackend.resource.kind", "FieldValueRequired", "Required value: kind is required"),
      ("spec.defaultBackend.resource.name", "FieldValueInvalid", "Invalid value: \"a/b\": may not contain '/'")]),
])
async def test_ingress_backends_as_upstream(cluster: LocalCluster, backend: dict[str, Any],
                                           expected: list[tuple[str, str, str]]) -> None:
    assert await causes_of(cluster, ingress("bad", {"defaultBackend": backend})) == expected


async def test_ingress_tls_class_name_and_the_class_annotation(cluster: LocalCluster) -> None:
    got = await causes_of(cluster, ingress("bad", {"defaultBackend": BACKEND, "ingressClassName": "Bad",
                                                   "tls": [{"hosts": ["Foo", "*.ok.com"], "secretName": "Bad_Name"}]}))
    assert got == [("spec.tls[0].hosts[0]", "FieldValueInvalid", 'Invalid value: "Foo": ' + SUBDOMAIN),
                   ("spec.tls[0].secretName", "FieldValueInvalid", 'Invalid value: "Bad_Name": ' + SUBDOMAIN),
                   ("spec.ingressClassName", "FieldValueInvalid", 'Invalid value: "Bad": ' + SUBDOMAIN)]
    annotated = ingress("bad", {"defaultBackend": BACKEND, "ingressClassName": "a"},
                        annotations={"kubernetes.io/ingress.class": "b"})
    assert await causes_of(cluster, annotated) == [
        ("annotations.kubernetes.io/ingress.class", "FieldValueInvalid",
         'Invalid value: "b": must match `ingressClassName` when both are specified')]


async def test_ingress_status_writes_are_checked_and_spec_is_kept(cluster: LocalCluster,
                                                                  http: httpx2.AsyncClient) -> None:
    await cluster.client.create(ingress("lb", rules(path("/"))))
    url = f"{NS}/ingresses/lb/status"
    headers = {"Content-Type": "application/merge-patch+json"}
    bad = {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3"}, {"hostname": "1.2.3.4"}]}}}
    r = await http.patch(url, content=json.dumps(bad), headers=headers)
    assert r.status_code == 422
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        ("status.loadBalancer.ingress[0].ip", 'Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or '
                                               "2001:db8::ffff)"),
        ("status.loadBalancer.ingress[1].hostname", 'Invalid value: "1.2.3.4": must be a DNS name, not an IP address')]
    good = {"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.7"}]}}, "spec": {"ingressClassName": "ignored"}}
    r = await http.patch(url, content=json.dumps(good), headers=headers)
    assert r.status_code == 200
    assert r.json()["status"] == good["status"] and "ingressClassName" not in r.json()["spec"]
    assert r.json()["metadata"]["generation"] == 1


async def test_network_policy_ports_as_upstream(cluster: LocalCluster) -> None:
    ports = [{"protocol": "ICMP", "port": 0, "endPort": 70000}, {"port": "http", "endPort": 90}, {"endPort": 3},
             {"port": 90, "endPort": 80}]
    at = "spec.ingress[0].ports"
    assert await causes_of(cluster, network_policy("bad", {"ingress": [{"ports": ports}]})) == [
        (f"{at}[0].protocol", "FieldValueNotSupported", 'Unsupported value: "ICMP": supported values: "TCP", "UDP", '
                                                         '"SCTP"'),
        (f"{at}[0].port", "FieldValueInvalid", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        (f"{at}[0].endPort", "FieldValueInvalid", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        (f"{at}[1].endPort", "FieldValueInvalid", "Invalid value: 90: may not be specified when `port` is non-numeric"),
        (f"{at}[2].endPort", "FieldValueInvalid", "Invalid value: 3: may not be specified when `port` is not specified"),
        (f"{at}[3].endPort", "FieldValueInvalid", "Invalid value: 90: must be greater than or equal to `port`")]


async def test_network_policy_peers_and_ip_blocks_as_upstream(cluster: LocalCluster) -> None:
    peers = [{}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}, {"ipBlock": {"cidr": ""}},
             {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "11.0.0.0/8", "x", "10.0.0.0/8"]}},
             {"ipBlock": {"cidr": "zz"}}]
    at = "spec.egress[0].to"
    cidr = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
    assert await causes_of(cluster, network_policy("bad", {"egress": [{"to": peers}]})) == [
        (f"{at}[0]", "FieldValueRequired", "Required value: must specify a peer"),
        (f"{at}[1]", "FieldValueForbidden", "Forbidden: may not specify both ipBlock and another peer"),
        (f"{at}[2].ipBlock.cidr", "FieldValueRequired", "Required value"),
        (f"{at}[3].ipBlock.except[1]", "FieldValueInvalid", 'Invalid value: "11.0.0.0/8": must be a strict subset of '
                                                           "`cidr`"),
        (f"{at}[3].ipBlock.except[2]", "FieldValueInvalid", f'Invalid value: "x": {cidr}'),
        (f"{at}[3].ipBlock.except[3]", "FieldValueInvalid", 'Invalid value: "10.0.0.0/8": must be a strict subset of '
                                                           "`cidr`"),
        (f"{at}[4].ipBlock.cidr", "FieldValueInvalid", f'Invalid value: "zz": {cidr}')]


async def test_network_policy_selector_and_policy_types_as_upstream(cluster: LocalCluster) -> None:
    selector = {"matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k", "operator": "Exists", "values": ["a"]},
                                     {"key": "k", "operator": "Foo"}]}
    at = "spec.podSelector.matchExpressions"
    assert await causes_of(cluster, network_policy("bad", {"podSelector": selector})) == [
        (f"{at}[0].values", "FieldValueRequired", "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        (f"{at}[1].values", "FieldValueForbidden",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        (f"{at}[2].operator", "FieldValueInvalid", 'Invalid value: "Foo": not a valid selector operator')]
    assert await causes_of(cluster, network_policy("bad", {"policyTypes": ["Ingress", "Foo"]})) == [
        ("spec.policyTypes[1]", "FieldValueNotSupported", 'Unsupported value: "Foo": supported values: "Ingress", '
                                                           '"Egress"')]
    assert await causes_of(cluster, network_policy("bad", {"policyTypes": ["Ingress", "Egress", "Ingress"]})) == [
        ("spec.policyTypes", "FieldValueInvalid",
         'Invalid value: ["Ingress","Egress","Ingress"]: may not specify more than two policyTypes')]


async def test_an_invalid_network_policy_update_lists_each_cause_twice_and_shows_it_once(cluster: LocalCluster) -> None:
    """As kube-apiserver: ValidateUpdate checks the spec twice; the message is deduplicated."""
    np = await cluster.client.create(network_policy("np-upd", {}))
    np["spec"]["policyTypes"] = ["Foo"]
    with pytest.raises(ApiError) as e:
        await cluster.client.update(np)
    unsupported = 'Unsupported value: "Foo": supported values: "Ingress", "Egress"'
    assert e.value.message == f'NetworkPolicy.networking.k8s.io "np-upd" is invalid: spec.policyTypes[0]: {unsupported}'
    assert [c["message"] for c in e.value.status["details"]["causes"]] == [unsupported, unsupported]


async def test_ingress_class_controller_and_parameters_as_upstream(cluster: LocalCluster) -> None:
    got = await causes_of(cluster, ingress_class("bad", {"controller": "nodomain", "parameters": {
        "kind": "K", "name": "n", "scope": "Foo"}}))
    assert got == [("spec.controller", "FieldValueInvalid",
                    'Invalid value: "nodomain": must be a domain-prefixed path (such as "acme.io/foo")'),
                   ("spec.parameters.scope", "FieldValueNotSupported",
                    'Unsupported value: "Foo": supported values: "Cluster", "Namespace"')]
    assert await causes_of(cluster, ingress_class("bad", {})) == [("spec.controller", "FieldValueRequired",
                                                                   "Required value")]
    assert await causes_of(cluster, ingress_class("bad", {"controller": "a.io/" + "b" * 250})) == [
        ("spec.controller", "FieldValueTooLong", "Too long: may not be more than 250 bytes")]
    namespaced = {"controller": "a.io/b", "parameters": {"kind": "K", "name": "n", "scope": "Namespace"}}
    assert await causes_of(cluster, ingress_class("bad", namespaced)) == [
        ("spec.parameters.namespace", "FieldValueRequired", "Required value: `parameters.scope` is set to 'Namespace'")]
    cluster_scoped = {"controller": "a.io/b", "parameters": {"kind": "K", "name": "n", "namespace": "x"}}
    assert await causes_of(cluster, ingress_class("bad", cluster_scoped)) == [
        ("spec.parameters.namespace", "FieldValueForbidden", "Forbidden: `parameters.scope` is set to 'Cluster'")]


async def test_ingress_class_controller_is_immutable(cluster: LocalCluster) -> None:
    ic = await cluster.client.create(ingress_class("c2", {"controller": "example.com/a"}))
    ic["spec"]["controller"] = "example.com/b"
    with pytest.raises(ApiError) as e:
        await cluster.client.update(ic)
    assert e.value.status["details"]["causes"] == [
        {"field": "spec.controller", "reason": "FieldValueInvalid",
         "message": 'Invalid value: "example.com/b": field is immutable'}]


# ---- tables --------------------------------------------------------------------------------------


async def test_tables_have_kube_apiservers_columns(cluster: LocalCluster, http: httpx2.AsyncClient) -> None:
    four = {"rules": [{"host": h} for h in ("a.com", "", "b.com", "c.com", "d.com")], "tls": [{"hosts": ["a.com"]}],
            "ingressClassName": "nginx"}
    await cluster.client.create(ingress("t1", four))
    await http.patch(f"{NS}/ingresses/t1/status", headers={"Content-Type": "application/merge-patch+json"},
                     content=json.dumps({"status": {"loadBalancer": {"ingress": [
                         {"ip": "10.0.0.9"}, {"hostname": "lb.example.com"}, {"ip": "10.0.0.10"}]}}}))
    await cluster.client.create(ingress("t2", {"defaultBackend": BACKEND}))
    await cluster.client.create(network_policy("t3", {"podSelector": {"matchLabels": {"app": "x"}}}))
    await cluster.client.create(ingress_class("t4", {"controller": "example.com/a", "parameters": {
        "apiGroup": "k8s.example.com", "kind": "Params", "name": "p"}}))
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"

    async def rows(url: str) -> tuple[list[str], list[list[Any]]]:
        doc = (await http.get(url, headers={"Accept": table})).json()
        return [c["name"] for c in doc["columnDefinitions"]], [r["cells"][:-1] for r in doc["rows"]]

    assert await rows(f"{NS}/ingresses") == (["Name", "Class", "Hosts", "Address", "Ports", "Age"], [
        ["t1", "nginx", "a.com,b.com,c.com + 2 more...", "10.0.0.10,10.0.0.9,lb.example.com", "80, 443"],
        ["t2", "<none>", "*", "", "80"]])
    assert await rows(f"{NS}/networkpolicies") == (["Name", "Pod-Selector", "Age"], [["t3", "app=x"]])
    assert await rows("/apis/networking.k8s.io/v1/ingressclasses") == (
        ["Name", "Controller", "Parameters", "Age"], [["t4", "example.com/a", "Params.k8s.example.com/p"]])


# ---- the clients users have ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("networking")) as s:
        yield s


def test_official_client_networking_v1_api(srv: HttpServer) -> None:
    api = k8s.NetworkingV1Api(k8s_config.new_client_from_config(config_file=str(srv.kubeconfig)))
    created = api.create_namespaced_ingress("default", ingress("oc1", rules(path("/api"), host="a.example.com")))
    assert created.spec.rules[0].http.paths[0].backend.service.port.number == 80
    assert created.status.load_balancer.ingress is None
    status = api.patch_namespaced_ingress_status("oc1", "default", {"status": {"loadBalancer": {"ingress": [
        {"ip": "10.0.0.5", "ports": [{"port": 443, "protocol": "TCP"}]}]}}})
    assert status.status.load_balancer.ingress[0].ip == "10.0.0.5"
    np = api.create_namespaced_network_policy("default", network_policy("oc2", {"egress": [{"ports": [{"port": 53}]}]}))
    assert np.spec.policy_types == ["Ingress", "Egress"] and np.spec.egress[0].ports[0].protocol == "TCP"
    ic = api.create_ingress_class(ingress_class("oc3", {"controller": "example.com/x"}))
    assert ic.spec.controller == "example.com/x"
    assert "oc3" in [i.metadata.name for i in api.list_ingress_class().items]
    assert {n.metadata.name for n in api.list_network_policy_for_all_namespaces().items} == {"oc2"}
    with pytest.raises(ApiException) as e:
        api.create_namespaced_ingress("default", ingress("oc4", rules(path("rel", "Exact"))))
    assert e.value.status == 422
    assert json.loads(e.value.body)["details"]["causes"][0]["field"] == "spec.rules[0].http.paths[0].path"
    api.delete_namespaced_ingress("oc1", "default")
    assert [i.metadata.name for i in api.list_namespaced_ingress("default").items] == []


async def test_lightkube_networking_v1_resources(srv: HttpServer) -> None:
    lk = AsyncClient(KubeConfig.from_file(srv.kubeconfig))
    backend = IngressBackend(service=IngressServiceBackend(name="web", port=ServiceBackendPort(number=8080)))
    ing = Ingress(metadata=ObjectMeta(name="lk1", namespace="default"), spec=IngressSpec(rules=[IngressRule(
        host="lk.example.com", http=HTTPIngressRuleValue(paths=[HTTPIngressPath(path="/", pathType="Prefix",
                                                                               backend=backend)]))]))
    created = await lk.create(ing)
    assert created.metadata.generation == 1 and created.spec.rules[0].host == "lk.example.com"
    lb = {"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}}
    patched = await lk.patch(IngressStatus, "lk1", lb, namespace="default")
    assert patched.status.loadBalancer.ingress[0].hostname == "lb.example.com"
    np = await lk.create(NetworkPolicy(metadata=ObjectMeta(name="lk2", namespace="default"), spec=NetworkPolicySpec(
        podSelector={"matchLabels": {"app": "x"}})))
    assert np.spec.policyTypes == ["Ingress"]
    assert "lk2" in [n.metadata.name async for n in lk.list(NetworkPolicy, namespace="default")]
    with pytest.raises(LightkubeApiError) as e:
        await lk.create(NetworkPolicy(metadata=ObjectMeta(name="lk3", namespace="default"),
                                      spec=NetworkPolicySpec(podSelector={}, policyTypes=["Sideways"])))
    assert e.value.status.code == 422
    await lk.close()


# ---- kubectl -------------------------------------------------------------------------------------


CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, labels: {{set: pr}}}}\ndata: {{a: \"1\"}}\n"


@pytest.mark.kubectl
def test_kubectl_apply_prune_with_the_default_allowlist_prunes(kubectl: Kubectl, tmp_path: Path) -> None:
    """Trial 15 F-3: kubectl resolves its default prune set (networking.k8s.io/v1 Ingress among
    them) through discovery before it prunes; one kind missing failed the whole command."""
    for name in ("p1", "p2", "p3"):
        (tmp_path / f"{name}.yaml").write_text(CM.format(name=name))
    kubectl("apply", "-f", str(tmp_path), "-l", "set=pr", "--prune")
    (tmp_path / "p3.yaml").unlink()
    out = kubectl("apply", "-f", str(tmp_path), "-l", "set=pr", "--prune").stdout
    assert "configmap/p3 pruned" in out
    assert kubectl("get", "cm", "-l", "set=pr", "-o", "name").stdout.split() == ["configmap/p1", "configmap/p2"]


@pytest.mark.kubectl
def test_kubectl_create_ingress_and_get_the_networking_kinds(kubectl: Kubectl) -> None:
    kubectl("create", "ingress", "web", "--rule=foo.com/bar*=svc1:8080,tls=my-cert", "--class=nginx")
    kubectl("create", "ingress", "simple", "--rule=/path=svc:80")
    got = json.loads(kubectl("get", "ing", "web", "-o", "json").stdout)
    assert got["spec"] == {"ingressClassName": "nginx", "rules": [{"host": "foo.com", "http": {"paths": [
        {"backend": {"service": {"name": "svc1", "port": {"number": 8080}}}, "path": "/bar", "pathType": "Prefix"}]}}],
        "tls": [{"hosts": ["foo.com"], "secretName": "my-cert"}]}
    kubectl("apply", "-f", "-", stdin=json.dumps(network_policy("deny", {})))
    kubectl("apply", "-f", "-", stdin=json.dumps(ingress_class("nginx", {"controller": "k8s.io/ingress-nginx"})))
    out = kubectl("get", "ing,netpol,ingressclass").stdout
    assert "ingress.networking.k8s.io/web      nginx    foo.com" in out
    assert "networkpolicy.networking.k8s.io/deny   <none>" in out
    assert "ingressclass.networking.k8s.io/nginx   k8s.io/ingress-nginx   <none>" in out
    names = kubectl("api-resources", "--api-group=networking.k8s.io", "-o", "name").stdout.split()
    assert names == ["ingressclasses.networking.k8s.io", "ingresses.networking.k8s.io",
                     "networkpolicies.networking.k8s.io"]


@pytest.mark.kubectl
def test_kubectl_explain_ingress_spec(kubectl: Kubectl) -> None:
    out = kubectl("explain", "ingress.spec").stdout
    assert "KIND:       Ingress" in out and "FIELD: spec <IngressSpec>" in out
    for field in ("defaultBackend\t<IngressBackend>", "ingressClassName\t<string>", "rules\t<[]IngressRule>",
                  "tls\t<[]IngressTLS>"):
        assert field in out


# ---- admission -----------------------------------------------------------------------------------


async def test_an_ingress_without_a_class_gets_the_default_ingress_class(cluster: LocalCluster) -> None:
    """DefaultIngressClass admission: only on create, only without a class name or the deprecated
    annotation."""
    default = {"ingressclass.kubernetes.io/is-default-class": "true"}
    await cluster.client.create(ingress_class("other", {"controller": "example.com/other"}))
    plain = await cluster.client.create(ingress("before", {"defaultBackend": BACKEND}))
    assert "ingressClassName" not in plain["spec"]
    await cluster.client.create(ingress_class("nginx", {"controller": "k8s.io/ingress-nginx"})
                                | {"metadata": {"name": "nginx", "annotations": default}})
    got = await cluster.client.create(ingress("after", {"defaultBackend": BACKEND}))
    assert got["spec"]["ingressClassName"] == "nginx"
    chosen = await cluster.client.create(ingress("chosen", {"defaultBackend": BACKEND, "ingressClassName": "other"}))
    assert chosen["spec"]["ingressClassName"] == "other"
    annotated = await cluster.client.create(ingress("annotated", {"defaultBackend": BACKEND},
                                                    annotations={"kubernetes.io/ingress.class": "other"}))
    assert "ingressClassName" not in annotated["spec"]
    plain["metadata"]["labels"] = {"a": "b"}
    assert "ingressClassName" not in (await cluster.client.update(plain))["spec"]


async def test_the_class_annotation_without_a_class_name_is_warned_on_create(http: httpx2.AsyncClient) -> None:
    body = ingress("warned", {"defaultBackend": BACKEND}, annotations={"kubernetes.io/ingress.class": "nginx"})
    r = await http.post(f"{NS}/ingresses", json=body)
    assert r.status_code == 201
    assert r.headers.get_list("warning") == [
        '299 - "annotation \\"kubernetes.io/ingress.class\\" is deprecated, please use \'spec.ingressClassName\' '
        'instead"']
    both = ingress("quiet", {"defaultBackend": BACKEND, "ingressClassName": "nginx"},
                   annotations={"kubernetes.io/ingress.class": "nginx"})
    r = await http.post(f"{NS}/ingresses", json=both)
    assert r.status_code == 201 and "warning" not in r.headers
