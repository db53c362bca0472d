"""Cases ported from upstream's RayCluster controller unit tests at the snapshot of
reference/kuberay-2.md (kuberay master feeaf72fa, ray-operator/controllers/ray/
raycluster_controller_unit_test.go); each test keeps upstream's name."""

from __future__ import annotations

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common import gcs_ft as gcsft
from pumice.controllers.ray.raycluster import RayClusterOptions, RayClusterReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

ORIGIN = "kuberay ray-operator/controllers/ray/raycluster_controller_unit_test.go"
FIN = "ray.io/gcs-ft-redis-cleanup-finalizer"


@pytest.mark.parametrize(("name", "annotation", "want"), [
    pytest.param(n, a, w, marks=pytest.mark.upstream(f"{ORIGIN}: TestGetGCSFTDeletionTimeout / {n}"), id=n)
    for n, a, w in [
        ("no annotation returns default", None, 300),
        ("valid annotation", "120", 120),
        ("non-numeric annotation falls back to default", "not-a-number", 300),
        ("zero annotation falls back to default", "0", 300),
        ("negative annotation falls back to default", "-5", 300),
        ("1-second annotation (minimum valid)", "1", 1),
    ]])
def test_get_gcs_ft_deletion_timeout(name: str, annotation: str | None, want: int) -> None:
    cl: Obj = {"metadata": {"annotations": {"ray.io/gcs-ft-deletion-timeout": annotation} if annotation else {}}}
    assert gcsft.deletion_timeout_seconds(cl) == want


def _ft_cluster() -> Obj:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["metadata"]["annotations"] = {"ray.io/ft-enabled": "true"}
    return cl


@pytest.mark.parametrize(("name", "enabled", "want_finalizers"), [
    pytest.param(n, e, f, marks=pytest.mark.upstream(f"{ORIGIN}: Test_RedisCleanupFeatureFlag / {n}"), id=n)
    for n, e, f in [("Enable GCS FT Redis cleanup", True, 1), ("Disable GCS FT Redis cleanup", False, 0),
                    ("Feature flag is not set", None, 1)]])
async def test_redis_cleanup_feature_flag(name: str, enabled: bool | None, want_finalizers: int) -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = await client.create(_ft_cluster())
    opts = RayClusterOptions() if enabled is None else RayClusterOptions(enable_gcs_ft_redis_cleanup=enabled)
    rc = RayClusterReconciler(client, options=opts)
    req = Request("default", cl["metadata"]["name"])
    await rc.reconcile(req)
    got = await client.get(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    assert len(got["metadata"].get("finalizers") or []) == want_finalizers
    pods = (await client.list(scheme.POD, "default")).items
    if want_finalizers:
        assert got["metadata"]["finalizers"] == [FIN]
        assert pods == [], "the pass that adds the finalizer creates nothing else"
        await rc.reconcile(req)
        assert (await client.list(scheme.POD, "default")).items
    else:
        assert pods


@pytest.mark.upstream(f"{ORIGIN}: Test_RedisCleanupSkippedForEmbeddedBackend")
async def test_redis_cleanup_skipped_for_embedded_backend() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}
    await client.create(cl)
    await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
    got = await client.get(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    assert not got["metadata"].get("finalizers")


@pytest.mark.upstream(f"{ORIGIN}: Test_StaleRedisCleanupFinalizerRemovedForEmbeddedBackend")
async def test_stale_redis_cleanup_finalizer_removed_for_embedded_backend() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}
    cl["metadata"]["finalizers"] = [FIN]
    await client.create(cl)
    await client.delete(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
    with pytest.raises(Exception, match="not found"):
        await client.get(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    assert (await client.list(scheme.JOB, "default")).items == []


@pytest.mark.upstream(f"{ORIGIN}: Test_ReconcileManagedBy")
async def test_reconcile_managed_by() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    for managed_by, want_pods in (("ray.io/kuberay-operator", True), ("kueue.x-k8s.io/multikueue", False)):
        cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
        cl["metadata"]["name"] = "mb-" + ("kuberay" if want_pods else "kueue")
        cl["spec"]["managedBy"] = managed_by
        await client.create(cl)
        await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
        pods = (await client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={cl['metadata']['name']}")).items
        assert bool(pods) is want_pods


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_AutoscalerServiceAccount")
async def test_reconcile_autoscaler_service_account() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.autoscaler.yaml", "RayCluster")
    await client.create(cl)
    await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
    sa = await client.get(scheme.SERVICE_ACCOUNT, cl["metadata"]["name"], "default")
    assert sa["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_AutoscalerRoleBinding")
async def test_reconcile_autoscaler_role_binding() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.autoscaler.yaml", "RayCluster")
    await client.create(cl)
    await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
    rb = await client.get(scheme.ROLE_BINDING, cl["metadata"]["name"], "default")
    assert rb["subjects"][0]["name"] == cl["metadata"]["name"]
