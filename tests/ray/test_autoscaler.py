"""In-tree autoscaler, operator side (kuberay-2.md §12.1-12.2): the sidecar, its options, the
ray-logs volume, the v1/v2 switch and the per-cluster ServiceAccount, Role and RoleBinding."""

from __future__ import annotations

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common import pod as podb
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

NAME = "raycluster-autoscaler"


def sample() -> Obj:
    cl = load_sample("ray-cluster.autoscaler.yaml", "RayCluster")
    cl["metadata"]["uid"] = "u-1"
    return cl


def test_head_gets_the_autoscaler_sidecar_with_the_samples_options() -> None:
    head = podb.build_head_pod(sample())
    spec = head["spec"]
    assert spec["serviceAccountName"] == NAME
    ray, sidecar = spec["containers"]
    assert sidecar == {
        "name": "autoscaler", "image": "rayproject/ray:2.52.0", "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}},
            {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "RAY_HEAD_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "KUBERAY_CRD_VER", "value": "v1"},
            {"name": "KUBERAY_GEN_AUTOSCALER_START_CMD",
             "value": "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"},
        ],
        "command": ["/bin/bash", "-c", "--"],
        "args": ["ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"],
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}},
        "securityContext": {},
        "volumeMounts": [{"name": "ray-logs", "mountPath": "/tmp/ray"}],
    }
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in ray["volumeMounts"]
    assert {"name": "ray-logs", "emptyDir": {}} in spec["volumes"]
    assert "--no-monitor" in ray["args"][0]
    assert not any(e["name"] == "RAY_enable_autoscaler_v2" for e in ray.get("env") or [])


def test_autoscaler_options_replace_and_append_as_upstream() -> None:
    cl = sample()
    cl["spec"]["autoscalerOptions"] = {
        "image": "my/autoscaler:1", "command": ["python"], "args": ["-m", "x"],
        "env": [{"name": "AUTOSCALER_MAX_CONCURRENT_LAUNCHES", "value": "2"}],
        "envFrom": [{"configMapRef": {"name": "cm"}}], "volumeMounts": [{"name": "v", "mountPath": "/v"}],
        "version": "v2"}
    head = podb.build_head_pod(cl)
    ray, sidecar = head["spec"]["containers"]
    assert (sidecar["image"], sidecar["command"], sidecar["args"]) == ("my/autoscaler:1", ["python"], ["-m", "x"])
    assert sidecar["env"][-1] == {"name": "AUTOSCALER_MAX_CONCURRENT_LAUNCHES", "value": "2"}
    assert len(sidecar["env"]) == 6 and sidecar["envFrom"] == [{"configMapRef": {"name": "cm"}}]
    assert sidecar["volumeMounts"] == [{"name": "v", "mountPath": "/v"}, {"name": "ray-logs", "mountPath": "/tmp/ray"}]
    assert {"name": "RAY_enable_autoscaler_v2", "value": "true"} in ray["env"]
    assert head["spec"]["restartPolicy"] == "Never"
    worker = podb.build_worker_pod(cl, cl["spec"]["workerGroupSpecs"][0])
    assert worker["spec"]["restartPolicy"] == "Never"


def test_a_user_named_service_account_is_used() -> None:
    cl = sample()
    cl["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "my-sa"
    assert podb.build_head_pod(cl)["spec"]["serviceAccountName"] == "my-sa"


async def test_reconcile_creates_service_account_role_and_binding_once() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    events: list[tuple[str, str, str]] = []

    class Rec:
        def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
            events.append((type, reason, message))

    rc = RayClusterReconciler(client, recorder=Rec())
    await client.create(sample())
    await rc.reconcile(Request("default", NAME))
    await rc.reconcile(Request("default", NAME))
    sa = await client.get(scheme.SERVICE_ACCOUNT, NAME, "default")
    role = await client.get(scheme.ROLE, NAME, "default")
    rb = await client.get(scheme.ROLE_BINDING, NAME, "default")
    assert sa["metadata"]["labels"] == {"ray.io/cluster": NAME, "app.kubernetes.io/name": "kuberay",
                                        "app.kubernetes.io/created-by": "kuberay-operator"}
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
                             {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
                             {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]}]
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": "default"}]
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME}
    created = [r for _, r, _ in events if r.startswith("Created") and "Pod" not in r and r != "CreatedService"]
    assert created == ["CreatedServiceAccount", "CreatedRole", "CreatedRoleBinding"]


async def test_a_missing_user_named_service_account_is_a_warning_and_no_pods() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    events: list[tuple[str, str, str]] = []

    class Rec:
        def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
            events.append((type, reason, message))

    cl = sample()
    cl["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "my-sa"
    await client.create(cl)
    rc = RayClusterReconciler(client, recorder=Rec())
    with pytest.raises(LookupError, match="ServiceAccount my-sa is not found"):
        await rc.reconcile(Request("default", NAME))
    assert [t for t, r, _ in events if r == "AutoscalerServiceAccountNotFound"] == ["Warning"]
    assert (await client.list(scheme.POD, "default")).items == []
