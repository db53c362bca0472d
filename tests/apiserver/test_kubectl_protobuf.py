"""Real kubectl's generator commands, which send built-in kinds as protobuf
(``application/vnd.kubernetes.protobuf``), describe, which asks for protobuf responses, and what
needs /openapi/v2 (protobuf) and /openapi/v3 schemas: ``apply -f`` of a ``kind: List``, the
``get -o yaml | apply -f`` round trip, ``explain``, apply's strategic merge patches."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pumice.testing.cluster import HttpServer, serve_http

pytestmark = pytest.mark.kubectl


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("kubectl-pb")) as s:
        yield s


def get(kubectl, *args: str) -> dict:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def test_create_namespace(kubectl) -> None:
    assert "namespace/team-a created" in kubectl("create", "namespace", "team-a").stdout
    assert get(kubectl, "namespace", "team-a")["status"]["phase"] == "Active"


def test_create_deployment(kubectl) -> None:
    out = kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80").stdout
    assert "deployment.apps/web created" in out
    d = get(kubectl, "deployment", "web")
    assert d["spec"]["replicas"] == 2
    c = d["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "nginx:1.27" and c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert d["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert d["spec"]["selector"] == {"matchLabels": {"app": "web"}}


def test_create_job(kubectl) -> None:
    assert "job.batch/once created" in kubectl("create", "job", "once", "--image=busybox", "--", "true").stdout
    j = get(kubectl, "job", "once")
    assert j["spec"]["template"]["spec"]["containers"][0]["command"] == ["true"]
    assert j["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_create_configmap_and_secret(kubectl) -> None:
    kubectl("create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=b=two")
    assert get(kubectl, "configmap", "cfg")["data"] == {"a": "1", "b": "two"}
    kubectl("create", "secret", "generic", "sec", "--from-literal=password=s3cr3t")
    s = get(kubectl, "secret", "sec")
    assert s["data"] == {"password": "czNjcjN0"} and s["type"] == "Opaque"


def test_create_service_defaults_target_port_to_port(kubectl) -> None:
    assert "service/svc1 created" in kubectl("create", "service", "clusterip", "svc1", "--tcp=8080").stdout
    svc = get(kubectl, "service", "svc1")
    assert svc["spec"]["ports"][0]["port"] == 8080
    assert svc["spec"]["ports"][0]["targetPort"] == 8080


def test_create_priorityclass_and_role(kubectl) -> None:
    kubectl("create", "priorityclass", "high", "--value=1000", "--description=important")
    assert get(kubectl, "priorityclass", "high")["value"] == 1000
    kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods")
    rules = get(kubectl, "role", "reader")["rules"]
    assert rules == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]


def test_run_then_describe_asks_protobuf(kubectl) -> None:
    assert "pod/runner created" in kubectl("run", "runner", "--image=busybox", "--", "sleep", "60").stdout
    out = kubectl("describe", "pod", "runner").stdout
    assert "Name:" in out and "runner" in out and "busybox" in out


def test_expose_a_deployment(kubectl) -> None:
    kubectl("create", "deployment", "api", "--image=nginx", "--port=8080")
    assert "service/api exposed" in kubectl("expose", "deployment", "api", "--port=80", "--target-port=8080").stdout
    svc = get(kubectl, "service", "api")
    assert svc["spec"]["selector"] == {"app": "api"}
    assert svc["spec"]["ports"][0]["targetPort"] == 8080


LIST = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: in-list}
  data: {a: "1"}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: listed}
  spec:
    selector: {matchLabels: {app: listed}}
    template:
      metadata: {labels: {app: listed}}
      spec:
        containers:
        - {name: main, image: nginx, resources: {limits: {cpu: 1}}}
"""


def test_apply_a_list(kubectl) -> None:
    out = kubectl("apply", "-f", "-", stdin=LIST).stdout
    assert "configmap/in-list created" in out and "deployment.apps/listed created" in out


def test_get_yaml_of_a_list_applies_back(kubectl) -> None:
    kubectl("create", "configmap", "rt1", "--from-literal=k=v")
    kubectl("create", "configmap", "rt2", "--from-literal=k=w")
    listed = kubectl("get", "configmap", "rt1", "rt2", "-o", "yaml").stdout
    assert "kind: List" in listed
    out = kubectl("apply", "-f", "-", stdin=listed).stdout
    assert "configmap/rt1" in out and "configmap/rt2" in out


def test_explain_reads_the_openapi_v3_schemas(kubectl) -> None:
    out = kubectl("explain", "pods.spec.containers").stdout
    assert "FIELD: containers <[]Container>" in out and "imagePullPolicy" in out
    assert "schedulerName" in kubectl("explain", "deployment.spec.template.spec").stdout
    assert "headGroupSpec" in kubectl("explain", "raycluster.spec").stdout


def test_apply_removing_a_container_removes_it(kubectl) -> None:
    two = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: two-containers}
spec:
  selector: {matchLabels: {app: two}}
  template:
    metadata: {labels: {app: two}}
    spec:
      containers:
      - {name: a, image: busybox}
      - {name: b, image: busybox}
"""
    kubectl("apply", "-f", "-", stdin=two)
    one = two.replace("      - {name: b, image: busybox}\n", "")
    kubectl("apply", "-f", "-", stdin=one)
    d = get(kubectl, "deployment", "two-containers")
    assert [c["name"] for c in d["spec"]["template"]["spec"]["containers"]] == ["a"]


def test_client_side_validation_of_a_list_reads_openapi_v2(kubectl) -> None:
    bad = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: bad}\n"
           "  bogus: 2\n")
    p = kubectl("create", "-f", "-", stdin=bad, check=False)
    assert p.returncode != 0
    assert 'unknown field "bogus" in io.k8s.api.core.v1.ConfigMap' in p.stderr


def test_a_kind_that_is_not_served_is_no_match_not_an_openapi_failure(kubectl) -> None:
    p = kubectl("apply", "-f", "-", stdin="apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f}\n", check=False)
    assert p.returncode != 0
    assert 'no matches for kind "Foo"' in p.stderr and "openapi" not in p.stderr
