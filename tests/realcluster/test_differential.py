"""Differential conformance: the same requests to pumice's API server and to the real
kube-apiserver, and where their answers differ (``make realcluster``; not part of ``make test``:
the first build of kube-apiserver takes 10-40 minutes).

Both servers start empty: etcd + kube-apiserver alone (no controller manager, so no namespace,
ServiceAccount or garbage-collector controller acts behind the requests) built by
tools/build_kube.py, and ``pumice apiserver --no-crds`` on loopback. :data:`CORPUS` is a list of
:class:`Case` requests, sent in order to each server (later cases see what earlier ones created).
For every case the answers are compared on: the HTTP status code, ``Status.reason``,
``Status.message``, ``Status.details.causes`` (type and field), the ``Warning`` headers and, where
the case asks for it, the whole body of the answer after :func:`normalise` (uids, timestamps,
resourceVersions, allocated ClusterIPs, random name suffixes and Table ages masked).

A difference pumice keeps on purpose is written into its case's ``known`` map (aspect -> why);
the test then checks that the difference is still there, so a stale expectation is noticed. The
report of every difference (request, kube's answer, pumice's) is written to
``$PUMICE_DIFF_REPORT`` (default ``differential-report.json`` in the pytest temp dir) and printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.testing.kube_control_plane import KubeControlPlane
from pumice.testing.paths import shared_dir
from tests.reliability._procs import start_apiserver

if not os.environ.get("PUMICE_REALCLUSTER"):
    pytest.skip("real-cluster tests run with `make realcluster` (they build kube-apiserver)", allow_module_level=True)

import requests  # a dependency of the kubernetes client (dev extra)
import urllib3

pytestmark = pytest.mark.timeout(3600)

NS = "diff"
JSON = "application/json"
MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
ASPECTS = ("code", "reason", "message", "causes", "warnings", "body", "managedFields")


@dataclass(frozen=True)
class Case:
    """One request of the corpus.

    ``body``: a dict/list (sent as JSON), ``str``/``bytes`` (sent as is) or None. ``compare_body``:
    compare the normalised bodies of both answers, and apart from them their
    ``metadata.managedFields`` (else only code, reason, message, causes and warnings).
    ``retry_on``: resend (for up to 60 s) while the answer has this code (a CRD's kind is served
    once the CRD is Established, which kube-apiserver does asynchronously). ``known``: aspect (one
    of :data:`ASPECTS`) -> why pumice differs there on purpose.
    """

    name: str
    method: str
    path: str
    body: Any = None
    query: Mapping[str, str] = field(default_factory=dict)
    content_type: str = JSON
    accept: str = JSON
    compare_body: bool = False
    retry_on: int | None = None
    known: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Answer:
    code: int
    reason: str | None
    message: str | None
    causes: list[tuple[str, str]]
    warnings: list[str]
    body: Any
    managedFields: Any = None  # the aspect's wire name

    def aspect(self, name: str) -> Any:
        return getattr(self, name)


def ns_path(resource: str, name: str = "", group: str = "", version: str = "v1", ns: str = NS) -> str:
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/namespaces/{ns}/{resource}" + (f"/{name}" if name else "")


def cm(name: str, **data: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"diff": "yes"}},
            "data": data or {"a": "1"}}


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def template(app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def deployment(name: str, selector: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": selector or name}}, "template": template(name)}}


def job(name: str) -> dict[str, Any]:
    t = template(name)
    t["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": t}}


def cronjob(name: str, schedule: str = "*/5 * * * *") -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": job(name)["spec"]}}}


def service(name: str, port: int = 80) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": port}]}}


def crd_docs() -> list[dict[str, Any]]:
    """The upstream Volcano Queue/PodGroup/Job and KubeRay RayCluster CRDs from ../shared/samples."""
    samples = shared_dir() / "samples"
    files = [samples / "volcano/config/crd/volcano/bases" / f for f in (
        "scheduling.volcano.sh_queues.yaml", "scheduling.volcano.sh_podgroups.yaml", "batch.volcano.sh_jobs.yaml")]
    files.append(samples / "kuberay/ray.io_rayclusters.yaml")
    return [yaml.safe_load(f.read_text()) for f in files]


def _corpus() -> list[Case]:
    c: list[Case] = []
    cms = ns_path("configmaps")
    pods = ns_path("pods")
    # ---- namespaces
    c += [
        Case("namespace-create", "POST", "/api/v1/namespaces", {"metadata": {"name": NS}}, compare_body=True),
        Case("namespace-create-again", "POST", "/api/v1/namespaces", {"metadata": {"name": NS}}),
        Case("namespace-invalid-name", "POST", "/api/v1/namespaces", {"metadata": {"name": "Bad_Name"}}),
        Case("namespace-get", "GET", f"/api/v1/namespaces/{NS}", compare_body=True),
        Case("pod-before-serviceaccount", "POST", pods, pod("early"), known={
            "code": "pumice admits a Pod whose ServiceAccount is missing (no token volume), so Pods made before "
                    "the ServiceAccount controller ran still start (admission.py ServiceAccount, Deviates)",
            "reason": "as code", "message": "as code"}),
        Case("serviceaccount-create", "POST", ns_path("serviceaccounts"),
             {"metadata": {"name": "default"}}, compare_body=True),
    ]
    # ---- ConfigMaps: create, read, conflicts, validation
    c += [
        Case("cm-create", "POST", cms, cm("cm1"), compare_body=True),
        Case("cm-get", "GET", ns_path("configmaps", "cm1"), compare_body=True),
        Case("cm-create-again", "POST", cms, cm("cm1")),
        Case("cm-no-name", "POST", cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
        Case("cm-generate-name", "POST", cms, {"metadata": {"generateName": "gen-"}, "data": {"a": "b"}},
             compare_body=True),
        Case("cm-name-too-long", "POST", cms, cm("x" * 254)),
        Case("cm-bad-data-key", "POST", cms, cm("badkey", **{"not/valid": "x"})),
        Case("cm-data-wrong-type", "POST", cms, {"metadata": {"name": "wt"}, "data": {"a": 1}}),
        Case("cm-metadata-wrong-type", "POST", cms, {"metadata": "nope"}),
        Case("cm-not-json", "POST", cms, "{not json"),
        Case("cm-wrong-kind", "POST", cms, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wk"}}),
        Case("cm-wrong-kind-no-apiversion", "POST", cms, {"kind": "Pod", "metadata": {"name": "wk"}}),
        Case("deploy-wrong-kind", "POST", ns_path("deployments", group="apps"),
             {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "wk"}}),
        Case("cm-wrong-apiversion", "POST", cms, {"apiVersion": "apps/v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "wv"}}),
        Case("cm-namespace-mismatch", "POST", cms, {"metadata": {"name": "nsm", "namespace": "other"}}),
        Case("cm-unknown-field-strict", "POST", cms, {**cm("uf1"), "spec": {"x": 1}},
             query={"fieldValidation": "Strict"}),
        Case("cm-unknown-field-strict-nested", "POST", cms,
             {**cm("uf1"), "metadata": {"name": "uf1", "bogus": 1}}, query={"fieldValidation": "Strict"}),
        Case("cm-unknown-field-warn", "POST", cms, {**cm("uf2"), "spec": {"x": 1}},
             query={"fieldValidation": "Warn"}),
        Case("cm-unknown-field-ignore", "POST", cms, {**cm("uf3"), "spec": {"x": 1}},
             query={"fieldValidation": "Ignore"}),
        Case("cm-unknown-field-default", "POST", cms, {**cm("uf4"), "spec": {"x": 1}}),
        Case("cm-duplicate-field-strict", "POST", cms,
             '{"metadata":{"name":"dup"},"data":{"a":"1"},"data":{"b":"2"}}', query={"fieldValidation": "Strict"}),
        Case("cm-field-validation-bogus", "POST", cms, cm("fvb"), query={"fieldValidation": "Bogus"}),
        Case("cm-too-big-object", "POST", cms, cm("big", a="x" * (1024 * 1024 + 10))),
        Case("cm-huge-body", "POST", cms, cm("huge", a="x" * (3 * 1024 * 1024 + 10))),
        Case("cm-content-type-text", "POST", cms, json.dumps(cm("ct")), content_type="text/plain"),
        Case("cm-dry-run", "POST", cms, cm("dry"), query={"dryRun": "All"}, compare_body=True),
        Case("cm-dry-run-not-stored", "GET", ns_path("configmaps", "dry")),
        Case("cm-dry-run-bogus", "POST", cms, cm("dry2"), query={"dryRun": "Bogus"}),
        Case("cm-in-missing-namespace", "POST", ns_path("configmaps", ns="nope"), cm("x")),
    ]
    # ---- updates
    c += [
        Case("cm-update-stale-rv", "PUT", ns_path("configmaps", "cm1"),
             {**cm("cm1", a="2"), "metadata": {"name": "cm1", "resourceVersion": "1"}}),
        Case("cm-update-no-rv", "PUT", ns_path("configmaps", "cm1"), cm("cm1", a="3"), compare_body=True),
        Case("cm-update-missing", "PUT", ns_path("configmaps", "missing"), cm("missing")),
        Case("cm-update-name-mismatch", "PUT", ns_path("configmaps", "cm1"), cm("other")),
        Case("cm-update-bad-rv", "PUT", ns_path("configmaps", "cm1"),
             {**cm("cm1"), "metadata": {"name": "cm1", "resourceVersion": "abc"}}),
        Case("cm-update-immutable", "POST", cms, {**cm("imm"), "immutable": True}),
        Case("cm-update-immutable-data", "PUT", ns_path("configmaps", "imm"), {**cm("imm", a="9"), "immutable": True}),
    ]
    # ---- patches
    cm1 = ns_path("configmaps", "cm1")
    c += [
        Case("cm-patch-merge", "PATCH", cm1, {"data": {"m": "1"}}, content_type=MERGE, compare_body=True),
        Case("cm-patch-json", "PATCH", cm1, [{"op": "add", "path": "/data/j", "value": "1"}],
             content_type=JSONPATCH, compare_body=True),
        Case("cm-patch-json-test-fails", "PATCH", cm1, [{"op": "test", "path": "/data/j", "value": "nope"}],
             content_type=JSONPATCH),
        Case("cm-patch-json-bad-path", "PATCH", cm1, [{"op": "remove", "path": "/data/nothere"}],
             content_type=JSONPATCH),
        Case("cm-patch-json-bad-op", "PATCH", cm1, [{"op": "frob", "path": "/data/j"}], content_type=JSONPATCH),
        Case("cm-patch-json-not-list", "PATCH", cm1, {"op": "add"}, content_type=JSONPATCH),
        Case("cm-patch-strategic", "PATCH", cm1, {"data": {"s": "1"}}, content_type=STRATEGIC, compare_body=True),
        Case("cm-patch-strategic-bad-directive", "PATCH", cm1, {"data": {"$patch": "frob"}}, content_type=STRATEGIC),
        Case("cm-patch-merge-bad-json", "PATCH", cm1, "{", content_type=MERGE),
        Case("cm-patch-merge-wrong-type", "PATCH", cm1, {"data": {"x": 5}}, content_type=MERGE),
        Case("cm-patch-merge-rename", "PATCH", cm1, {"metadata": {"name": "other"}}, content_type=MERGE),
        Case("cm-patch-merge-stale-rv", "PATCH", cm1, {"metadata": {"resourceVersion": "1"}}, content_type=MERGE),
        Case("cm-patch-missing", "PATCH", ns_path("configmaps", "missing"), {"data": {"a": "b"}}, content_type=MERGE),
        Case("cm-patch-content-type-text", "PATCH", cm1, {"data": {}}, content_type="text/plain"),
        Case("cm-patch-content-type-json", "PATCH", cm1, {"data": {}}, content_type=JSON),
        Case("cm-apply-no-manager", "PATCH", ns_path("configmaps", "ap"),
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  a: b\n", content_type=APPLY),
        Case("cm-apply-create", "PATCH", ns_path("configmaps", "ap"),
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  a: b\n", content_type=APPLY,
             query={"fieldManager": "mgr-a"}, compare_body=True),
        Case("cm-apply-conflict", "PATCH", ns_path("configmaps", "ap"),
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  a: c\n", content_type=APPLY,
             query={"fieldManager": "mgr-b"}),
        Case("cm-apply-force", "PATCH", ns_path("configmaps", "ap"),
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  a: c\n", content_type=APPLY,
             query={"fieldManager": "mgr-b", "force": "true"}, compare_body=True),
        Case("cm-apply-force-on-merge", "PATCH", cm1, {"data": {}}, content_type=MERGE, query={"force": "true"}),
        Case("cm-apply-no-kind", "PATCH", ns_path("configmaps", "ap"), "metadata:\n  name: ap\n",
             content_type=APPLY, query={"fieldManager": "mgr-a"}),
        Case("cm-apply-name-mismatch", "PATCH", ns_path("configmaps", "ap"),
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n", content_type=APPLY,
             query={"fieldManager": "mgr-a"}),
    ]
    # ---- lists, selectors, pagination, Tables
    c += [
        Case("cm-list-label", "GET", cms, query={"labelSelector": "diff=yes"}, compare_body=True),
        Case("cm-list-label-set", "GET", cms, query={"labelSelector": "diff in (yes,no),!missing"}, compare_body=True),
        Case("cm-list-label-invalid", "GET", cms, query={"labelSelector": "a=(b"}),
        Case("cm-list-label-bad-value", "GET", cms, query={"labelSelector": "a=b c"}),
        Case("cm-list-field-name", "GET", cms, query={"fieldSelector": "metadata.name=cm1"}, compare_body=True),
        Case("cm-list-field-unsupported", "GET", cms, query={"fieldSelector": "spec.x=y"}),
        Case("cm-list-field-invalid", "GET", cms, query={"fieldSelector": "metadata.name"}),
        # the continue token is opaque and server-specific: masked (VOLATILE)
        Case("cm-list-limit", "GET", cms, query={"limit": "1", "labelSelector": "diff=yes"}, compare_body=True),
        Case("cm-list-continue-bogus", "GET", cms, query={"limit": "1", "continue": "bogus"}),
        Case("cm-list-limit-negative", "GET", cms, query={"limit": "-1", "labelSelector": "diff=yes"},
             compare_body=True),
        Case("cm-list-rv-match-bad", "GET", cms, query={"resourceVersionMatch": "Exact"}),
        Case("cm-list-rv-bogus", "GET", cms, query={"resourceVersion": "abc"}),
        Case("cm-list-all-namespaces-label", "GET", "/api/v1/configmaps", query={"labelSelector": "diff=yes"},
             compare_body=True),
        Case("cm-table-list", "GET", cms, query={"labelSelector": "diff=yes"}, accept=TABLE, compare_body=True),
        Case("cm-table-get", "GET", cm1, accept=TABLE, compare_body=True),
        Case("cm-table-include-object", "GET", cm1, accept=TABLE, query={"includeObject": "Object"},
             compare_body=True),
        Case("cm-accept-unsupported", "GET", cm1, accept="application/xml"),
        Case("cm-watch-bad-rv", "GET", cms, query={"watch": "1", "resourceVersion": "abc", "timeoutSeconds": "1"}),
        Case("cm-watch-bad-timeout", "GET", cms, query={"watch": "1", "timeoutSeconds": "x"}),
        Case("cm-get-bad-rv", "GET", cm1, query={"resourceVersion": "abc"}),
    ]
    # ---- unknown routes and methods
    c += [
        Case("unknown-resource", "GET", ns_path("foos")),
        Case("unknown-group", "GET", "/apis/nope.example.com/v1/foos"),
        Case("unknown-group-discovery", "GET", "/apis/nope.example.com", compare_body=True),
        Case("unknown-group-version-discovery", "GET", "/apis/nope.example.com/v1", compare_body=True),
        Case("unknown-group-post", "POST", "/apis/nope.example.com/v1/namespaces/diff/foos", {"a": 1}),
        Case("unknown-version", "GET", "/api/v2/namespaces"),
        Case("unknown-subresource", "GET", ns_path("configmaps", "cm1") + "/bogus"),
        Case("method-put-collection", "PUT", cms, cm("x")),
        Case("method-post-named", "POST", cm1, cm("cm1")),
        Case("method-delete-namespace-status", "DELETE", f"/api/v1/namespaces/{NS}/status"),
        Case("cluster-scoped-as-namespaced", "GET", "/api/v1/namespaces/diff/nodes"),
        Case("namespaced-without-namespace-post", "POST", "/api/v1/configmaps", cm("x")),
    ]
    # ---- Secrets
    secrets = ns_path("secrets")
    c += [
        Case("secret-create", "POST", secrets, {"metadata": {"name": "s1"}, "stringData": {"k": "v"},
                                                "data": {"b": "eA=="}}, compare_body=True),
        Case("secret-bad-base64", "POST", secrets, {"metadata": {"name": "s2"}, "data": {"k": "!!notbase64"}}),
        Case("secret-bad-type-change", "PUT", ns_path("secrets", "s1"),
             {"metadata": {"name": "s1"}, "type": "kubernetes.io/tls", "data": {}}),
        Case("secret-tls-missing-keys", "POST", secrets, {"metadata": {"name": "s3"}, "type": "kubernetes.io/tls"}),
    ]
    # ---- Pods
    c += [
        Case("pod-create", "POST", pods, pod("p1"), compare_body=True),
        Case("pod-no-containers", "POST", pods, {"metadata": {"name": "p2"}, "spec": {"containers": []}}),
        Case("pod-no-spec", "POST", pods, {"metadata": {"name": "p2"}}),
        Case("pod-empty-image", "POST", pods, {"metadata": {"name": "p3"},
                                               "spec": {"containers": [{"name": "c", "image": ""}]}}),
        Case("pod-bad-container-name", "POST", pods, {"metadata": {"name": "p4"},
                                                      "spec": {"containers": [{"name": "C_1", "image": "x"}]}}),
        Case("pod-duplicate-container", "POST", pods, {"metadata": {"name": "p5"}, "spec": {"containers": [
            {"name": "c", "image": "x"}, {"name": "c", "image": "x"}]}}),
        Case("pod-bad-restart-policy", "POST", pods, pod("p6", restartPolicy="Sometimes")),
        Case("pod-bad-resources", "POST", pods, {"metadata": {"name": "p7"}, "spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}}),
        Case("pod-bad-quantity", "POST", pods, {"metadata": {"name": "p8"}, "spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}]}}),
        Case("pod-bad-port", "POST", pods, {"metadata": {"name": "p9"}, "spec": {"containers": [
            {"name": "c", "image": "x", "ports": [{"containerPort": 70000}]}]}}),
        Case("pod-wrong-type-containers", "POST", pods, {"metadata": {"name": "p10"}, "spec": {"containers": "x"}}),
        Case("pod-unknown-field-strict", "POST", pods, {**pod("p11"), "spec": {
            "containers": [{"name": "c", "image": "x", "imagee": "y"}]}}, query={"fieldValidation": "Strict"}),
        Case("pod-unknown-field-warn", "POST", pods, {**pod("p12"), "spec": {
            "containers": [{"name": "c", "image": "x", "imagee": "y"}]}}, query={"fieldValidation": "Warn"}),
        Case("pod-update-image", "PATCH", ns_path("pods", "p1"), {"spec": {"containers": [
            {"name": "c", "image": "busybox:2"}]}}, content_type=STRATEGIC, compare_body=True),
        Case("pod-update-forbidden-field", "PATCH", ns_path("pods", "p1"), {"spec": {"restartPolicy": "Never"}},
             content_type=MERGE),
        Case("pod-patch-strategic-list-merge", "PATCH", ns_path("pods", "p1"), {"spec": {"containers": [
            {"name": "c", "env": [{"name": "E", "value": "1"}]}]}}, content_type=STRATEGIC),
        Case("pod-table-list", "GET", pods, query={"labelSelector": "app=p1"}, accept=TABLE, compare_body=True),
        Case("pod-list-field-phase", "GET", pods, query={"fieldSelector": "status.phase=Pending,spec.nodeName="}),
        Case("pod-list-field-unsupported", "GET", pods, query={"fieldSelector": "spec.hostname=x"}),
        Case("pod-binding-missing-target", "POST", ns_path("pods", "p1") + "/binding",
             {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"}, "target": {}}),
        Case("pod-status-get", "GET", ns_path("pods", "p1") + "/status", compare_body=True),
        Case("pod-log-no-node", "GET", ns_path("pods", "p1") + "/log"),
        Case("pod-eviction-bad-body", "POST", ns_path("pods", "p1") + "/eviction", {"kind": "Pod"}),
        Case("pod-delete-precondition-uid", "DELETE", ns_path("pods", "p1"),
             {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
        Case("pod-delete-precondition-rv", "DELETE", ns_path("pods", "p1"),
             {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}}),
        Case("pod-delete-bad-grace", "DELETE", ns_path("pods", "p1"), query={"gracePeriodSeconds": "x"}),
        Case("pod-delete-bad-propagation", "DELETE", ns_path("pods", "p1"), query={"propagationPolicy": "Sideways"}),
        Case("pod-delete-dry-run", "DELETE", ns_path("pods", "p1"), query={"dryRun": "All"}, compare_body=True),
        Case("pod-delete", "DELETE", ns_path("pods", "p1"), compare_body=True),
        Case("pod-get-terminating", "GET", ns_path("pods", "p1"), compare_body=True),
        Case("pod-delete-now", "DELETE", ns_path("pods", "p1"), query={"gracePeriodSeconds": "0"}, compare_body=True),
        Case("pod-get-deleted", "GET", ns_path("pods", "p1")),
    ]
    # ---- Services
    svcs = ns_path("services")
    c += [
        Case("svc-create", "POST", svcs, service("web"), compare_body=True),
        Case("svc-port-zero", "POST", svcs, service("zero", port=0)),
        Case("svc-no-ports", "POST", svcs, {"metadata": {"name": "np"}, "spec": {"selector": {"a": "b"}}}),
        Case("svc-bad-type", "POST", svcs, {**service("bt"), "spec": {**service("bt")["spec"], "type": "Weird"}}),
        Case("svc-bad-clusterip", "POST", svcs, {**service("bc"), "spec": {**service("bc")["spec"],
                                                                         "clusterIP": "1.2.3.4"}}),
        Case("svc-nodeport", "POST", svcs, {**service("npt"), "spec": {**service("npt")["spec"], "type": "NodePort"}},
             compare_body=True),
        Case("svc-headless", "POST", svcs, {**service("hl"), "spec": {**service("hl")["spec"], "clusterIP": "None"}},
             compare_body=True),
        Case("svc-change-clusterip", "PATCH", ns_path("services", "web"), {"spec": {"clusterIP": "10.96.0.99"}},
             content_type=MERGE),
        Case("svc-duplicate-port", "POST", svcs, {"metadata": {"name": "dp"}, "spec": {"ports": [
            {"port": 80, "name": "a"}, {"port": 80, "name": "a"}]}}),
        Case("svc-table-get", "GET", ns_path("services", "hl"), accept=TABLE, compare_body=True),
    ]
    # ---- apps/batch
    deps = ns_path("deployments", group="apps")
    jobs = ns_path("jobs", group="batch")
    cjs = ns_path("cronjobs", group="batch")
    c += [
        Case("deploy-create", "POST", deps, deployment("d1"), compare_body=True),
        Case("deploy-selector-mismatch", "POST", deps, deployment("d2", selector="other")),
        Case("deploy-selector-bad-operator", "POST", deps, {**deployment("d5"), "spec": {
            **deployment("d5")["spec"], "selector": {"matchExpressions": [
                {"key": "app", "operator": "Bogus", "values": ["d5"]}]}}}),
        Case("deploy-no-selector", "POST", deps, {"metadata": {"name": "d3"}, "spec": {"template": template("d3")}}),
        Case("deploy-negative-replicas", "POST", deps, {**deployment("d4"), "spec": {
            **deployment("d4")["spec"], "replicas": -1}}),
        Case("deploy-change-selector", "PATCH", ns_path("deployments", "d1", group="apps"),
             {"spec": {"selector": {"matchLabels": {"app": "d1", "x": "y"}}, "template": {
                 "metadata": {"labels": {"app": "d1", "x": "y"}}}}}, content_type=STRATEGIC),
        Case("deploy-scale-get", "GET", ns_path("deployments", "d1", group="apps") + "/scale", compare_body=True),
        Case("deploy-scale-negative", "PATCH", ns_path("deployments", "d1", group="apps") + "/scale",
             {"spec": {"replicas": -2}}, content_type=MERGE),
        Case("deploy-table-get", "GET", ns_path("deployments", "d1", group="apps"), accept=TABLE, compare_body=True),
        Case("job-create", "POST", jobs, job("j1"), compare_body=True),
        Case("job-bad-restart-policy", "POST", jobs, {**job("j2"), "spec": {"template": {
            **template("j2"), "spec": {**template("j2")["spec"], "restartPolicy": "Always"}}}}),
        Case("job-negative-backoff", "POST", jobs, {**job("j3"), "spec": {**job("j3")["spec"], "backoffLimit": -1}}),
        Case("job-indexed-no-completions", "POST", jobs, {**job("j4"), "spec": {
            **job("j4")["spec"], "completionMode": "Indexed"}}),
        Case("job-change-template", "PATCH", ns_path("jobs", "j1", group="batch"), {"spec": {"template": {
            "spec": {"containers": [{"name": "c", "image": "other"}]}}}}, content_type=STRATEGIC),
        Case("job-table-get", "GET", ns_path("jobs", "j1", group="batch"), accept=TABLE, compare_body=True),
        Case("job-delete-orphan", "DELETE", ns_path("jobs", "j1", group="batch"),
             query={"propagationPolicy": "Orphan"}, compare_body=True),
        Case("cronjob-create", "POST", cjs, cronjob("c1"), compare_body=True),
        Case("cronjob-bad-schedule", "POST", cjs, cronjob("c2", schedule="every minute")),
        Case("cronjob-bad-timezone", "POST", cjs, {**cronjob("c3"), "spec": {**cronjob("c3")["spec"],
                                                                          "timeZone": "Mars/Olympus"}}),
        Case("cronjob-tz-in-schedule", "POST", cjs, cronjob("c4", schedule="TZ=UTC */5 * * * *")),
        Case("cronjob-table-get", "GET", ns_path("cronjobs", "c1", group="batch"), accept=TABLE, compare_body=True),
        # a Job's labels: shared with a template that has labels, else left unset; manualSelector
        Case("job-create-labeled", "POST", jobs, {**job("j5"), "metadata": {"name": "j5", "labels": {"own": "x"}}},
             compare_body=True),
        Case("job-create-template-without-labels", "POST", jobs, {**job("j6"), "spec": {"template": {
            "spec": {**template("j6")["spec"], "restartPolicy": "Never"}}}}, compare_body=True),
        Case("job-create-manual-selector", "POST", jobs, {**job("j7"), "spec": {
            **job("j7")["spec"], "manualSelector": True, "selector": {"matchLabels": {"app": "j7"}}}},
             compare_body=True),
        Case("cronjob-create-template-without-metadata", "POST", cjs, {**cronjob("c5"), "spec": {
            "schedule": "@hourly", "jobTemplate": {"spec": {"template": {
                "spec": {**template("c5")["spec"], "restartPolicy": "OnFailure"}}}}}}, compare_body=True),
        # the zero status Go writes on create, kind by kind
        Case("replicaset-create", "POST", ns_path("replicasets", group="apps"), {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs1"},
            "spec": {"selector": {"matchLabels": {"app": "rs1"}}, "template": template("rs1")}}, compare_body=True),
        Case("statefulset-create", "POST", ns_path("statefulsets", group="apps"), {
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ss1"},
            "spec": {"selector": {"matchLabels": {"app": "ss1"}}, "serviceName": "ss1", "template": template("ss1")}},
             compare_body=True),
        Case("daemonset-create", "POST", ns_path("daemonsets", group="apps"), {
            "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds1"},
            "spec": {"selector": {"matchLabels": {"app": "ds1"}}, "template": template("ds1")}}, compare_body=True),
        Case("daemonset-change-template", "PATCH", ns_path("daemonsets", "ds1", group="apps"), {"spec": {"template": {
            "metadata": {"labels": {"app": "ds1", "v": "2"}}}}}, content_type=MERGE, compare_body=True),
        Case("daemonset-change-replicas-only", "PATCH", ns_path("daemonsets", "ds1", group="apps"),
             {"spec": {"minReadySeconds": 5}}, content_type=MERGE, compare_body=True),
        Case("replicationcontroller-create", "POST", ns_path("replicationcontrollers"), {
            "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc1"},
            "spec": {"selector": {"app": "rc1"}, "template": template("rc1")}}, compare_body=True),
        Case("pdb-create", "POST", ns_path("poddisruptionbudgets", group="policy"), {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb1"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}}, compare_body=True),
        Case("pvc-create", "POST", ns_path("persistentvolumeclaims"), {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pvc1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": ""}}, compare_body=True),
        Case("resourcequota-create", "POST", ns_path("resourcequotas"), {
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "rq1"},
            "spec": {"hard": {"pods": "100"}}}, compare_body=True),
        # quantities as kube-apiserver stores them: ParseQuantity(text).String() (a text Go's parser
        # finds canonical kept as written: 1e3, 1.500, 01), ResourceLists rounded up to milli-units
        Case("resourcequota-quantities", "POST", ns_path("resourcequotas"), {
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "rq2"},
            "spec": {"hard": {"requests.cpu": "2000m", "requests.memory": "1.5Gi", "pods": "1000",
                              "limits.cpu": "1.5e3", "limits.memory": "1e12", "services": "01",
                              "requests.ephemeral-storage": "1.5n",
                              "requests.storage": "2048Ki", "count/configmaps": "1.000k"}}}, compare_body=True),
        Case("pod-quantities", "POST", pods, {"metadata": {"name": "pq"}, "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"cpu": "1.500", "memory": "1024Mi", "example.com/a": "1e3"},
                "limits": {"cpu": "2000m", "memory": "4096Mi", "example.com/a": "1e3"}}}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1.5n"}}]}}, compare_body=True),
        Case("hpa-quantity-number-exponent", "POST", ns_path("horizontalpodautoscalers", group="autoscaling",
                                                              version="v2"),
             '{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "hq"}, '
             '"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, '
             '"maxReplicas": 3, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, '
             '"target": {"type": "AverageValue", "averageValue": 1E3}}}]}}', compare_body=True),
        Case("ingress-create", "POST", ns_path("ingresses", group="networking.k8s.io"), {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "in1"},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}, compare_body=True),
    ]
    # ---- Events
    ev = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p1", "namespace": NS},
          "reason": "Tested", "message": "hello", "type": "Normal", "source": {"component": "diff"}}
    c += [
        Case("event-create", "POST", ns_path("events"), ev, compare_body=True),
        Case("event-bad-type", "POST", ns_path("events"), {**ev, "metadata": {"name": "e2"}, "type": "Odd"}),
        Case("event-get-eventsv1", "GET", ns_path("events", "e1", group="events.k8s.io"), compare_body=True),
        Case("event-eventsv1-missing-fields", "POST", ns_path("events", group="events.k8s.io"),
             {"metadata": {"name": "e3"}}),
        Case("event-update", "PUT", ns_path("events", "e1"), {**ev, "message": "again"}, compare_body=True),
        Case("event-create-eventsv1", "POST", ns_path("events", group="events.k8s.io"), {
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e4"},
            "eventTime": "2026-01-02T03:04:05.000000Z", "reportingController": "diff/ctl",
            "reportingInstance": "diff-1", "action": "Testing", "reason": "Tested", "type": "Normal",
            "regarding": {"kind": "Pod", "name": "p1", "namespace": NS}}, compare_body=True),
        Case("event-get-eventsv1-as-core", "GET", ns_path("events", "e4"), compare_body=True),
    ]
    # ---- deletes
    c += [
        Case("cm-delete-precondition-uid", "DELETE", cm1,
             {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
        Case("cm-delete-precondition-rv", "DELETE", cm1, {"preconditions": {"resourceVersion": "1"}}),
        Case("cm-delete-dry-run", "DELETE", cm1, query={"dryRun": "All"}, compare_body=True),
        Case("cm-delete", "DELETE", cm1, compare_body=True),
        Case("cm-get-deleted", "GET", cm1),
        Case("cm-update-deleted", "PUT", cm1, cm("cm1")),
        Case("cm-delete-deleted", "DELETE", cm1),
        Case("cm-deletecollection", "DELETE", cms, query={"labelSelector": "diff=yes"}, compare_body=True),
        Case("cm-deletecollection-bad-selector", "DELETE", cms, query={"labelSelector": "a=(b"}),
        # what a DELETE answers: a Status where the object is gone at once (a ConfigMap's store
        # returns no object), the object where finalizers hold it, 202 only for orphanDependents=false
        Case("cm-create-held", "POST", cms, {"metadata": {"name": "held", "finalizers": ["diff.io/hold"]}},
             compare_body=True),
        Case("cm-delete-held-orphan-false", "DELETE", ns_path("configmaps", "held"), {"orphanDependents": False},
             compare_body=True),
        Case("cm-delete-held-again", "DELETE", ns_path("configmaps", "held"), query={"gracePeriodSeconds": "5"},
             compare_body=True),
        Case("cm-create-free", "POST", cms, {"metadata": {"name": "free"}}),
        Case("cm-delete-free-orphan-false", "DELETE", ns_path("configmaps", "free"), {"orphanDependents": False},
             compare_body=True),
        Case("svc-delete", "DELETE", ns_path("services", "hl"), compare_body=True),
        Case("deploy-delete-foreground", "DELETE", ns_path("deployments", "d1", group="apps"),
             query={"propagationPolicy": "Foreground"}, compare_body=True),
    ]
    # ---- CRDs from the upstream samples, then custom resources with schema errors
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for doc in crd_docs():
        c.append(Case(f"crd-create-{doc['metadata']['name']}", "POST", crds, doc, compare_body=True))
    queues = "/apis/scheduling.volcano.sh/v1beta1/queues"
    pgs = ns_path("podgroups", group="scheduling.volcano.sh", version="v1beta1")
    rcs = ns_path("rayclusters", group="ray.io")
    c += [
        Case("crd-invalid-name", "POST", crds, {"metadata": {"name": "wrong"}, "spec": {
            "group": "x.io", "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
        Case("crd-no-schema", "POST", crds, {"metadata": {"name": "things.x.io"}, "spec": {
            "group": "x.io", "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True}]}}),
        Case("queue-create", "POST", queues, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                              "metadata": {"name": "q1"}, "spec": {"weight": 1}}, compare_body=True,
             retry_on=404),
        Case("queue-quantities-as-written", "POST", queues, {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q6"},
            "spec": {"weight": 1, "capability": {"cpu": "1000m", "memory": "1024Mi"}}}, compare_body=True),
        Case("queue-wrong-type", "POST", queues, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                  "metadata": {"name": "q2"}, "spec": {"weight": "heavy"}}),
        Case("queue-unknown-field-strict", "POST", queues, {"apiVersion": "scheduling.volcano.sh/v1beta1",
                                                            "kind": "Queue", "metadata": {"name": "q3"},
                                                            "spec": {"weight": 1, "bogus": 1}},
             query={"fieldValidation": "Strict"}),
        Case("queue-unknown-field-warn", "POST", queues, {"apiVersion": "scheduling.volcano.sh/v1beta1",
                                                          "kind": "Queue", "metadata": {"name": "q4"},
                                                          "spec": {"weight": 1, "bogus": 1}},
             query={"fieldValidation": "Warn"}, compare_body=True),
        Case("queue-bad-enum-state", "POST", queues, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                      "metadata": {"name": "q5"}, "spec": {"weight": 1},
                                                      "status": {"state": "Whatever"}}),
        Case("queue-protobuf", "POST", queues, b"k8s\x00", content_type="application/vnd.kubernetes.protobuf"),
        Case("queue-strategic-patch", "PATCH", queues + "/q1", {"spec": {"weight": 2}}, content_type=STRATEGIC),
        Case("queue-merge-patch", "PATCH", queues + "/q1", {"spec": {"weight": 3}}, content_type=MERGE,
             compare_body=True),
        Case("queue-table-get", "GET", queues + "/q1", accept=TABLE, compare_body=True),
        Case("podgroup-create", "POST", pgs, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                              "metadata": {"name": "pg1"}, "spec": {"minMember": 2}},
             compare_body=True, retry_on=404),
        Case("podgroup-wrong-type", "POST", pgs, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                                  "metadata": {"name": "pg2"}, "spec": {"minMember": "two"}}),
        Case("podgroup-status-update", "PATCH", pgs + "/pg1/status", {"status": {"phase": "Running"}},
             content_type=MERGE, compare_body=True),
        Case("podgroup-wrong-kind", "POST", pgs, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                  "metadata": {"name": "pg3"}}),
        Case("podgroup-no-apiversion", "POST", pgs, {"kind": "PodGroup", "metadata": {"name": "pg4"}}),
        Case("raycluster-missing-required", "POST", rcs, {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                                          "metadata": {"name": "rc1"}, "spec": {"headGroupSpec": {}}},
             retry_on=404),
        Case("raycluster-wrong-type", "POST", rcs, {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                                    "metadata": {"name": "rc2"}, "spec": {"workerGroupSpecs": "x"}}),
        Case("crd-delete", "DELETE", crds + "/queues.scheduling.volcano.sh", compare_body=True),
    ]
    # ---- namespace deletion
    c += [
        Case("namespace-delete", "DELETE", f"/api/v1/namespaces/{NS}", compare_body=True),
        Case("cm-create-in-terminating-namespace", "POST", cms, cm("late")),
        Case("namespace-delete-default", "DELETE", "/api/v1/namespaces/default"),
        Case("namespace-delete-missing", "DELETE", "/api/v1/namespaces/nope"),
    ]
    return c


V134 = "kube-apiserver 1.34 changed this text; pumice keeps the 1.32 one it targets (README: kube-apiserver 1.32)"
KUBE_500 = ("kube-apiserver answers 500 (an internal error surfacing from its storage or codec) to this bad input; "
            "pumice answers the 4xx the input deserves")
LEFT = ("left: a real difference, not fixed in sessions 14-15 (see /work/notes/s14/diff15.md, "
        "/work/notes/s15/diff16.md)")

#: case name -> aspect -> why pumice differs there (each checked against the 1.32 sources)
KNOWN: dict[str, dict[str, str]] = {
    "cm-dry-run-bogus": {"message": V134 + " (field errors print a []string as Go's %#v, 1.34 as JSON)"},
    "svc-bad-clusterip": {"message": V134 + " (1.34's IPAddress allocator words the out-of-range error)"},
    "svc-duplicate-port": {"message": V134 + " (field errors print structs as Go's %#v, 1.34 as JSON)"},
    "job-change-template": {"message": V134 + " (field errors print structs as Go's %#v, 1.34 as JSON)"},
    "crd-no-schema": {"message": V134 + " (1.32 adds the detail 'schemas are required')"},
    "cm-update-bad-rv": {"code": KUBE_500, "reason": KUBE_500},
    "cm-watch-bad-rv": {"code": KUBE_500, "reason": KUBE_500},
    "cm-get-bad-rv": {"code": KUBE_500, "reason": KUBE_500},
    "cm-patch-strategic-bad-directive": {"code": KUBE_500, "reason": KUBE_500, "message": KUBE_500},
    "pod-binding-missing-target": {"code": KUBE_500, "reason": KUBE_500, "message": KUBE_500, "causes": KUBE_500},
    "queue-protobuf": {"code": "kube-apiserver 1.34.4 panics (nil dereference in schemaCoercingDecoder) on a protobuf "
                               "body for a custom resource and resets the stream; 1.32 and pumice answer 415",
                       "reason": "as code", "message": "as code"},
    "cm-wrong-apiversion": {"message": "kube-apiserver's text names its scheme by the source line of its build "
                                       "(pkg/runtime/scheme.go:110 here), which no client can rely on"},
    "pod-eviction-bad-body": {"message": "as cm-wrong-apiversion: the scheme's build-specific name"},
    "cm-patch-merge-wrong-type": {"message": "the patched object is quoted in the message with Go's struct field "
                                             "order; pumice quotes it with sorted keys"},
    "pod-update-forbidden-field": {"message": "the message ends with a diff of the two pod specs, printed from "
                                              "Go structs; pumice prints its own diff"},
    "pod-patch-strategic-list-merge": {"message": "as pod-update-forbidden-field"},
    "event-eventsv1-missing-fields": {"message": "kube-apiserver 1.34.4 validates an events.k8s.io/v1 create with "
                                                 "the core/v1 rules; pumice with the events/v1 ones. " + LEFT,
                                      "causes": "as message"},
    "crd-delete": {"body": "kube-apiserver deletes a CRD through the customresourcecleanup finalizer "
                           "(asynchronously); pumice removes it and its instances at once"},
}
for _crd in ("queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh", "jobs.batch.volcano.sh",
             "rayclusters.ray.io"):
    KNOWN[f"crd-create-{_crd}"] = {"body": "pumice accepts the names and establishes a CRD as it stores it; "
                                           "kube-apiserver's controllers do it a moment later (status empty in "
                                           "the create answer)"}
MANAGED_FIELDS = ("managedFields differ: kube-apiserver's CRD controllers write the CRD's status (their own "
                  "manager), pumice writes it as it stores the CRD")


#: the cases whose managedFields differ (the others' agree since ssa15's list and map markers and
#: diff17's field manager before PrepareForCreate)
MANAGED_FIELDS_DIFFER = frozenset({"crd-delete"})


def _with_known(cases: list[Case]) -> list[Case]:
    out = []
    for case in cases:
        known = dict(KNOWN.get(case.name, {}))
        if case.name in MANAGED_FIELDS_DIFFER:
            known["managedFields"] = MANAGED_FIELDS
        out.append(dataclasses.replace(case, known={**known, **case.known}))
    return out


CORPUS = _with_known(_corpus())

# ---------------------------------------------------------------- answers and their normal form

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
VOLATILE = {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "time", "continue",
            "lastTransitionTime", "firstTimestamp", "lastTimestamp", "eventTime", "clusterIP", "clusterIPs",
            "nodePort", "remainingItemCount"}
RANDOM_SUFFIX = re.compile(r"^(kube-api-access-|gen-)[a-z0-9]{5}$")


def normalise(value: Any, key: str = "") -> Any:
    """``value`` with its volatile parts masked: values under :data:`VOLATILE` keys become
    ``"<key>"`` (their presence still counts), uids inside strings ``<uid>``, five-character random
    name suffixes ``<rand>``, Table cells of ``Age`` columns ``<age>``."""
    if isinstance(value, dict):
        out = {k: (f"<{k}>" if k in VOLATILE and v not in (None, "", [], "None") else normalise(v, k))
               for k, v in value.items()}
        if value.get("kind") == "Table":
            # column descriptions are the API's field docs, which change from release to release
            for col in out.get("columnDefinitions") or []:
                col["description"] = "<doc>" if col.get("description") else col.get("description")
            ages = [i for i, col in enumerate(value.get("columnDefinitions") or []) if col.get("name") == "Age"]
            for row in out.get("rows") or []:
                for i in ages:
                    if i < len(row.get("cells", [])):
                        row["cells"][i] = "<age>"
        return out
    if isinstance(value, list):
        return [normalise(v, key) for v in value]
    if isinstance(value, str):
        value = UUID.sub("<uid>", value)
        value = re.sub(r'resourceVersion(=|: )"?\d+"?', r"resourceVersion\1<rv>", value)
        value = re.sub(r"ResourceVersion in record \(\d+\)", "ResourceVersion in record (<rv>)", value)
        return RANDOM_SUFFIX.sub(r"\1<rand>", value)
    return value


def take_managed_fields(value: Any) -> Any:
    """Remove every ``metadata.managedFields`` from ``value`` (in place, objects in lists and
    Table rows too); returns them, ``{path: managedFields}``."""
    found: dict[str, Any] = {}

    def walk(v: Any, path: str) -> None:
        if isinstance(v, dict):
            md = v.get("metadata")
            if isinstance(md, dict) and "managedFields" in md:
                found[path or "."] = md.pop("managedFields")
            for k, child in v.items():
                walk(child, f"{path}.{k}")
        elif isinstance(v, list):
            for i, child in enumerate(v):
                walk(child, f"{path}[{i}]")

    walk(value, "")
    return found


def differences(kube: Any, pumice: Any, path: str = "") -> list[str]:
    """Every place where two normalised JSON values differ, as ``path: kube=... pumice=...``."""
    if isinstance(kube, dict) and isinstance(pumice, dict):
        out: list[str] = []
        for k in sorted(set(kube) | set(pumice)):
            if k not in pumice:
                out.append(f"{path}.{k}: only kube = {json.dumps(kube[k])[:300]}")
            elif k not in kube:
                out.append(f"{path}.{k}: only pumice = {json.dumps(pumice[k])[:300]}")
            else:
                out += differences(kube[k], pumice[k], f"{path}.{k}")
        return out
    if isinstance(kube, list) and isinstance(pumice, list) and len(kube) == len(pumice):
        return [d for i, (a, b) in enumerate(zip(kube, pumice, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    if kube != pumice:
        return [f"{path or '.'}: kube = {json.dumps(kube)[:300]}, pumice = {json.dumps(pumice)[:300]}"]
    return []


class Target:
    """One API server: base URL, bearer token, TLS verification off (both are on loopback)."""

    def __init__(self, name: str, url: str, token: str) -> None:
        self.name = name
        self.url = url
        self.session = requests.Session()
        self.session.verify = False
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.session.headers["User-Agent"] = "pumice-differential/1.0"

    def send(self, case: Case) -> Answer:
        data: bytes | None
        if case.body is None:
            data = None
        elif isinstance(case.body, bytes):
            data = case.body
        elif isinstance(case.body, str):
            data = case.body.encode()
        else:
            data = json.dumps(case.body).encode()
        headers = {"Accept": case.accept}
        if data is not None:
            headers["Content-Type"] = case.content_type
        deadline = time.monotonic() + 60
        while True:
            try:
                r = self.session.request(case.method, self.url + case.path, params=dict(case.query), data=data,
                                         headers=headers, timeout=60, verify=False)
            except requests.ConnectionError as e:  # the server closed the connection without an answer
                return Answer(-1, None, type(e).__name__, [], [], None)
            if r.status_code != case.retry_on or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        try:
            body: Any = r.json()
        except ValueError:
            lines = [ln for ln in r.text.splitlines() if ln.strip()]
            try:
                body = [json.loads(ln) for ln in lines]  # a watch stream
            except ValueError:
                body = r.text[:500]
        status = body if isinstance(body, dict) and body.get("kind") == "Status" else {}
        details = status.get("details") or {}
        causes = sorted((str(c.get("reason", "")), str(c.get("field", ""))) for c in details.get("causes") or [])
        warns = [normalise(w) for w in r.raw.headers.getlist("Warning")]
        body = normalise(body)
        return Answer(r.status_code, status.get("reason"), normalise(status.get("message")), causes, warns,
                      body, take_managed_fields(body))


def _start_pumice(work: Path) -> tuple[subprocess.Popen[str], Target]:
    data = work / "pumice"
    data.mkdir(parents=True)
    proc, url = start_apiserver(data, extra=("--no-crds", "--durability", "relaxed",
                                             "--service-cluster-ip-range", "10.96.0.0/16"))
    cfg = yaml.safe_load((data / "kubeconfig").read_text())
    return proc, Target("pumice", url, cfg["users"][0]["user"]["token"])


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Answer, Answer]]]:
    work = tmp_path_factory.mktemp("differential")
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    with KubeControlPlane(work / "kube", controller_manager=False) as cp:
        proc, pumice = _start_pumice(work)
        try:
            kube = Target("kube", cp.url, cp.admin_token)
            got = {case.name: (kube.send(case), pumice.send(case)) for case in CORPUS}
        finally:
            proc.terminate()
            proc.wait(20)
    report = [{"case": case.name, "request": f"{case.method} {case.path}", "query": dict(case.query),
               "known": dict(case.known), "differences": compare(case, *got[case.name])}
              for case in CORPUS]
    out = Path(os.environ.get("PUMICE_DIFF_REPORT", work / "differential-report.json"))
    out.write_text(json.dumps(report, indent=1))
    differing = [r for r in report if r["differences"]]
    print(f"\ndifferential: {len(CORPUS)} cases, {len(differing)} with differences; report in {out}")
    for r in differing:
        print(f"-- {r['case']}: {r['request']} {r['query'] or ''}")
        for aspect, lines in r["differences"].items():
            mark = " (known)" if aspect in r["known"] else ""
            for ln in lines:
                print(f"   {aspect}{mark}: {ln}")
    yield got


def compare(case: Case, kube: Answer, pumice: Answer) -> dict[str, list[str]]:
    """aspect -> the differences between the two answers to ``case``."""
    out: dict[str, list[str]] = {}
    for aspect in ASPECTS:
        if aspect in ("body", "managedFields") and not (case.compare_body and 200 <= kube.code < 300):
            continue
        d = differences(kube.aspect(aspect), pumice.aspect(aspect))
        if d:
            out[aspect] = d
    return out


def test_the_corpus_names_are_unique() -> None:
    names = [c.name for c in CORPUS]
    assert len(names) == len(set(names))
    assert all(set(c.known) <= set(ASPECTS) for c in CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_pumice_answers_as_kube_apiserver(case: Case, answers: dict[str, tuple[Answer, Answer]]) -> None:
    kube, pumice = answers[case.name]
    found = compare(case, kube, pumice)
    unexpected = {a: d for a, d in found.items() if a not in case.known}
    gone = [a for a in case.known if a not in found]
    assert not unexpected, f"{case.method} {case.path}: " + "; ".join(f"{a}: {d}" for a, d in unexpected.items())
    assert not gone, f"known differences no longer there (remove them from the case): {gone}"
