"""The admission webhook server (issue 13): the same Volcano plugins the embedded API server runs,
answering AdmissionReviews as kube-apiserver sends them, and the configurations and install
manifests that point a cluster at it."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import os
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import pytest
import yaml
from click.testing import CliRunner

from pumice._util.tls import self_signed
from pumice.api.crds import builtin_crds
from pumice.api.patch import json_patch
from pumice.cli.main import main
from pumice.client.base import ApiError
from pumice.client.transport import DirectASGI
from pumice.controllers.volcano import admission_plugins
from pumice.controllers.volcano.admission.jobs import mutate_job
from pumice.controllers.webhook import build_app, default_webhooks, webhook_configurations
from pumice.testing.cluster import local_cluster


def vcjob(name: str, tasks: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    c = {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}]}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"tasks": [{"template": {"spec": c}, **t} for t in tasks], **spec}}


def review(obj: dict[str, Any], *, operation: str = "CREATE", uid: str = "r-1") -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": group, "version": version, "kind": obj["kind"]},
                        "resource": {"group": group, "version": version, "resource": "jobs"},
                        "namespace": obj["metadata"].get("namespace"), "name": obj["metadata"]["name"],
                        "operation": operation, "object": obj, "oldObject": None, "dryRun": False,
                        "userInfo": {"username": "alice"}}}


async def post(app: Any, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, data = await DirectASGI(app).request("POST", path, b"", [(b"content-type", b"application/json")],
                                                 msgspec.json.encode(body))
    return status, msgspec.json.decode(data) if data.startswith(b"{") else {"text": data.decode()}


async def test_validate_denies_what_the_embedded_api_server_denies_with_the_same_message() -> None:
    bad = vcjob("toomany", [{"name": "w", "replicas": 2, "minAvailable": 3}])
    mutate_job(bad)  # as the mutating webhook left it, which the embedded server runs first
    mutating, validating = admission_plugins()
    async with local_cluster(admission=[*mutating, *validating]) as c:
        with pytest.raises(ApiError) as embedded:
            await c.client.create(bad)
        app = build_app(default_webhooks(), c.client)
        status, answer = await post(app, "/jobs/validate", review(bad))
    assert status == 200
    resp = answer["response"]
    assert resp["uid"] == "r-1" and resp["allowed"] is False
    assert "'minAvailable' is greater than 'replicas' in task: w, job: toomany" in resp["status"]["message"]
    assert f'admission webhook "validatejob.volcano.sh" denied the request: {resp["status"]["message"]}' in str(
        embedded.value)


async def test_mutate_answers_a_json_patch_that_applies_the_webhook_defaults() -> None:
    raw = vcjob("unnamed", [{"replicas": 2}, {"replicas": 1}])
    async with local_cluster() as c:
        app = build_app(default_webhooks(), c.client)
        status, answer = await post(app, "/jobs/mutate", review(raw))
    resp = answer["response"]
    assert status == 200 and resp["allowed"] is True and resp["patchType"] == "JSONPatch"
    patched = json_patch(raw, msgspec.json.decode(base64.b64decode(resp["patch"])))
    expected = msgspec.json.decode(msgspec.json.encode(raw))
    mutate_job(expected)
    assert patched == expected
    assert [t["name"] for t in patched["spec"]["tasks"]] == ["default0", "default1"]


async def test_every_configured_webhook_path_is_served_and_a_bad_body_is_a_400() -> None:
    hooks = default_webhooks()
    configs = webhook_configurations(hooks, namespace="pumice-system", service="pumice-webhook",
                                     ca_bundle=b"-----BEGIN CERTIFICATE-----\n")
    entries = [w for cfg in configs for w in cfg["webhooks"]]
    assert sorted(w["name"] for w in entries) == sorted(h.name for h in hooks)
    assert {"mutatejob.volcano.sh", "validatejob.volcano.sh", "validatequeue.volcano.sh",
            "mutatepod.volcano.sh"} <= {w["name"] for w in entries}
    async with local_cluster() as c:
        app = build_app(hooks, c.client)
        for w in entries:
            path = w["clientConfig"]["service"]["path"]
            status, answer = await post(app, path, review(vcjob("ok", [{"name": "t", "replicas": 1}]),
                                                          uid=w["name"]))
            assert status == 200 and answer["response"]["uid"] == w["name"], path
        status, answer = await post(app, "/jobs/validate", {"kind": "NotAReview"})
    assert status == 400 and "bad AdmissionReview" in answer["text"]


def test_install_prints_crds_rbac_per_component_webhook_and_deployments() -> None:
    result = CliRunner().invoke(main, ["install", "--print", "--namespace", "ops", "--image", "registry.example/pumice:1"])
    assert result.exit_code == 0, result.output
    out = result.output
    objs = list(yaml.load_all(out, Loader=yaml.CSafeLoader))
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objs]
    assert kinds[0] == ("Namespace", "ops")
    assert sum(1 for k, _ in kinds if k == "CustomResourceDefinition") == len(builtin_crds())
    roles = {o["metadata"]["name"]: o["rules"] for o in objs if o["kind"] == "ClusterRole"}
    assert set(roles) == {"pumice-controller-manager", "pumice-scheduler", "pumice-webhook"}
    scheduler_can = {(g, r, v) for rule in roles["pumice-scheduler"] for g in rule["apiGroups"]
                     for r in rule["resources"] for v in rule["verbs"]}
    assert ("", "pods/binding", "create") in scheduler_can
    assert not any(r == "secrets" for _, r, _ in scheduler_can)  # least privilege: the scheduler reads no Secret
    assert all("*" not in rule["verbs"] for rules in roles.values() for rule in rules)
    deps = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Deployment"}
    assert set(deps) == {"pumice-controller-manager", "pumice-scheduler", "pumice-webhook"}
    cm = deps["pumice-controller-manager"]["spec"]["template"]["spec"]
    assert cm["serviceAccountName"] == "pumice-controller-manager"
    assert "--leader-elect" in cm["containers"][0]["args"] and cm["containers"][0]["image"] == "registry.example/pumice:1"
    assert "livenessProbe" in cm["containers"][0]
    secret = next(o for o in objs if o["kind"] == "Secret")
    mutating = next(o for o in objs if o["kind"] == "MutatingWebhookConfiguration")
    ca = mutating["webhooks"][0]["clientConfig"]["caBundle"]
    assert ca == secret["data"]["tls.crt"]
    assert mutating["webhooks"][0]["clientConfig"]["service"] == {
        "namespace": "ops", "name": "pumice-webhook", "path": "/jobs/mutate", "port": 443}


async def test_pumice_webhook_serves_https_with_the_given_certificate(tmp_path: Path) -> None:
    api = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "apiserver", "--data-dir", str(tmp_path / "api"),
                            "--port", "0"], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert api.stdout is not None and "listening on" in api.stdout.readline()
    cert, key = self_signed("pumice-webhook", ["127.0.0.1", "localhost"], now=dt.datetime.now(dt.UTC))
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hook = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "webhook", "--kubeconfig",
                             str(tmp_path / "api" / "kubeconfig"), "--host", "127.0.0.1", "--port", str(port),
                             "--tls-cert-file", str(tmp_path / "tls.crt"), "--tls-private-key-file",
                             str(tmp_path / "tls.key")], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert hook.stderr is not None
        line = hook.stderr.readline()
        assert "pumice webhook serving" in line, line
        async with httpx2.AsyncClient(verify=ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))) as http:
            bad = vcjob("toomany", [{"name": "w", "replicas": 1, "minAvailable": 2}])
            r = await http.post(f"https://127.0.0.1:{port}/jobs/validate", json=review(bad))
            assert r.status_code == 200 and r.json()["response"]["allowed"] is False
            assert (await http.get(f"https://127.0.0.1:{port}/healthz")).text == "ok"
    finally:
        hook.terminate()
        api.terminate()
        await asyncio.to_thread(hook.wait, 15)
        await asyncio.to_thread(api.wait, 15)
    assert hook.returncode == 0


def _raw_review(kind: str, group: str, version: str, obj: Any, *, old: Any = None, operation: str = "CREATE") -> Any:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u4", "operation": operation, "kind": {"group": group, "version": version, "kind": kind},
                        "namespace": "default", "object": obj, "oldObject": old}}


_JOB = ("Job", "batch.volcano.sh", "v1alpha1")
_PG = ("PodGroup", "scheduling.volcano.sh", "v1beta1")
_QUEUE = ("Queue", "scheduling.volcano.sh", "v1beta1")
_TASKS = "json: cannot unmarshal string into Go struct field JobSpec.spec.tasks of type []v1alpha1.TaskSpec"


@pytest.mark.parametrize(("path", "kind", "obj", "message"), [
    ("/jobs/mutate", _JOB, {"metadata": {"name": "j"}, "spec": {"tasks": "x"}}, _TASKS),
    ("/jobs/validate", _JOB, {"spec": {"tasks": "x"}}, _TASKS),
    ("/jobs/mutate", _JOB, {"metadata": {"name": "j"}, "spec": "x"},
     "json: cannot unmarshal string into Go struct field Job.spec of type v1alpha1.JobSpec"),
    ("/jobs/mutate", _JOB, "x", "json: cannot unmarshal string into Go value of type v1alpha1.Job"),
    ("/podgroups/mutate", _PG, {"metadata": {"name": "j"}, "spec": []},
     "json: cannot unmarshal array into Go struct field PodGroup.spec of type v1beta1.PodGroupSpec"),
    # wrong scalar types were let through and defaulted as if absent
    ("/jobs/mutate", _JOB, {"metadata": {"name": "j"}, "spec": {"tasks": [{"replicas": "2"}]}},
     "json: cannot unmarshal string into Go struct field TaskSpec.spec.tasks.replicas of type int32"),
    ("/jobs/mutate", _JOB, {"metadata": {"name": "j"}, "spec": {"minAvailable": 1.5}},
     "json: cannot unmarshal number 1.5 into Go struct field JobSpec.spec.minAvailable of type int32"),
    ("/jobs/mutate", _JOB, {"metadata": {"name": "j"}, "spec": {"tasks": [{"replicas": 3000000000}]}},
     "json: cannot unmarshal number 3000000000 into Go struct field TaskSpec.spec.tasks.replicas of type int32"),
    ("/jobs/mutate", _JOB, {"metadata": {"name": "j"}, "spec": {"tasks": [{"template": {"spec": {"containers": "x"}}}]}},
     "json: cannot unmarshal string into Go struct field PodSpec.spec.tasks.template.spec.containers of type []v1.Container"),
    ("/queues/mutate", _QUEUE, {"metadata": {"name": "q"}, "spec": {"weight": "x"}},
     "json: cannot unmarshal string into Go struct field QueueSpec.spec.weight of type int32"),
    ("/pods/mutate", ("Pod", "", "v1"),
     {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "env": [{"name": "A", "value": 5}]}]}},
     "json: cannot unmarshal number into Go struct field EnvVar.spec.containers.env.value of type string"),
])
async def test_an_object_of_the_wrong_json_type_is_refused_with_go_s_decode_error(
        path: str, kind: tuple[str, str, str], obj: Any, message: str) -> None:
    """trial 12 F-5: the webhook answered 500 (a traceback in its log) to an object whose field
    had the wrong JSON type, and let wrong scalar types through defaulted. Upstream's webhooks
    decode the object into the Go type first and refuse a failure with the decoder's text."""
    async with local_cluster() as c:
        app = build_app(default_webhooks(), c.client)
        status, answer = await post(app, path, _raw_review(*kind, obj))
    assert status == 200, answer
    assert answer["response"] == {"uid": "u4", "allowed": False, "status": {"message": message}}


async def test_an_old_object_of_the_wrong_json_type_is_refused_too() -> None:
    good = vcjob("j", [{"name": "w", "replicas": 1}])
    async with local_cluster() as c:
        app = build_app(default_webhooks(), c.client)
        status, answer = await post(app, "/jobs/validate", _raw_review(*_JOB, good, old={"spec": {"tasks": "x"}},
                                                                       operation="UPDATE"))
        assert (status, answer["response"]["allowed"], answer["response"]["status"]["message"]) == (200, False, _TASKS)
        status, answer = await post(app, "/jobs/validate", _raw_review(*_JOB, good, old=good, operation="UPDATE"))
        assert (status, answer["response"]["allowed"]) == (200, True)
