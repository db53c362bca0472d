"""The predicates plugin's VolumeBinding (``predicate.VolumeBindingEnable``, default true), as
upstream Volcano runs kube's plugin: PreFilter at the pre-predicate (a refusal is recorded on
every Node as "plugin VolumeBinding pre-predicates failed <message>"), Filter per Node; the same
implementation as the default scheduler's (pumice.scheduler.default.volumebinding). Through the
API server: the live scheduler keeps a Pod with a missing or unbound claim Pending with the
upstream message, and binds it once its claim is bound; a WaitForFirstConsumer claim is
provisioned on its Pod's Node before the Pod is bound (PreBind in the cache's binder)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from pumice._util.clock import default_clock
from pumice.api import Obj
from pumice.api.scheme import PERSISTENT_VOLUME_CLAIM
from pumice.controllers.kube import setup
from pumice.node.provisioner import LocalPathProvisioner
from pumice.runtime import Manager
from pumice.scheduler.volcano.conf import PluginOption
from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.node import wait_for
from pumice.testing.volcano import node, pod, podgroup, queue, run_scenario

HOST = "kubernetes.io/hostname"


def predicates(enabled: bool | None = None) -> PluginOption:
    args = {} if enabled is None else {"predicate.VolumeBindingEnable": enabled}
    return PluginOption.all_on("predicates", arguments=args)


def claim_pod(name: str, *claims: str, **kw: Any) -> Obj:
    p = pod(name, group=f"pg-{name}", requests="1,1Gi", **kw)
    p["spec"]["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return p


def pvc(name: str, *, volume: str = "", cls: str = "standard") -> Obj:
    md: Obj = {"name": name, "namespace": "c1"}
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "storageClassName": cls}
    if volume:
        md["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": spec,
            "status": {"phase": "Bound" if volume else "Pending"}}


def pv(name: str, *, hosts: list[str] | None = None, cls: str = "standard") -> Obj:
    spec: Obj = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                 "hostPath": {"path": f"/tmp/{name}"}}
    if hosts:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOST, "operator": "In", "values": hosts}]}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": "Available"}}


STANDARD = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard"},
            "provisioner": "pumice.dev/local-path", "volumeBindingMode": "Immediate"}


def cluster(*pods: Obj) -> list[Obj]:
    objs: list[Obj] = [node(n, "8,16Gi,pods=110", labels={HOST: n}) for n in ("n1", "n2", "n3")]
    objs += [queue("c1"), STANDARD, pvc("data"), pvc("local-data", volume="local-n2"), pv("local-n2", hosts=["n2"])]
    for p in pods:
        objs += [podgroup(str(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"]), min_member=1), p]
    return objs


@pytest.mark.parametrize("vectorize", [True, False])
def test_missing_and_unbound_claims_are_refused_at_the_pre_predicate(vectorize: bool) -> None:
    objs = cluster(claim_pod("missing", "nosuchclaim"), claim_pod("unbound", "data"), claim_pod("plain"))
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", predicates()]], vectorize=vectorize)
    assert set(res.binds) == {"c1/plain"}
    assert res.unschedulable["c1/missing"][1] == (
        '0/3 nodes are unavailable: 3 plugin VolumeBinding pre-predicates failed persistentvolumeclaim '
        '"nosuchclaim" not found.')
    assert res.unschedulable["c1/unbound"][1] == (
        "0/3 nodes are unavailable: 3 plugin VolumeBinding pre-predicates failed pod has unbound immediate "
        "PersistentVolumeClaims.")


@pytest.mark.parametrize("vectorize", [True, False])
def test_a_bound_claim_s_volume_affinity_picks_the_node(vectorize: bool) -> None:
    objs = cluster(*(claim_pod(f"user{i}", "local-data") for i in range(3)))
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", predicates()]], vectorize=vectorize)
    assert res.binds == {f"c1/user{i}": "n2" for i in range(3)}
    # the volume's Node is full: the other Nodes are refused for the volume, not for resources
    full = [o for o in objs if o.get("kind") != "Node"]
    full += [node("n1", "8,16Gi,pods=110", labels={HOST: "n1"}), node("n2", "0,16Gi,pods=110", labels={HOST: "n2"}),
             node("n3", "8,16Gi,pods=110", labels={HOST: "n3"})]
    res = run_scenario(full, actions=["allocate"], tiers=[["gang", predicates()]], vectorize=vectorize)
    assert res.binds == {}
    assert "2 node(s) had volume node affinity conflict" in res.unschedulable["c1/user0"][1]


def test_volume_binding_off_lets_every_pod_through() -> None:
    objs = cluster(claim_pod("missing", "nosuchclaim"), claim_pod("unbound", "data"))
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", predicates(False)]])
    assert set(res.binds) == {"c1/missing", "c1/unbound"}


def test_a_snapshot_without_claim_objects_skips_the_check() -> None:
    """A snapshot built from objects with no claim, volume or class has no listers: nothing to
    check against (the live cache always has them)."""
    objs = [node("n1", "8,16Gi,pods=110"), queue("c1"), podgroup("pg-missing", min_member=1),
            claim_pod("missing", "nosuchclaim")]
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", predicates()]])
    assert res.binds == {"c1/missing": "n1"}


async def _three_nodes_and_queue(client: Any) -> None:
    """Namespace c1, Nodes n1-n3 (8 cpu, 16Gi, 110 Pods; Ready) and Queue c1."""
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
    for o in [node(n, "8,16Gi,pods=110", labels={HOST: n}) for n in ("n1", "n2", "n3")] + [queue("c1")]:
        created = await client.create(o)
        if o["kind"] == "Node":
            created["status"] = o["status"]
            await client.update_status(created)


async def test_the_live_scheduler_keeps_claim_pods_pending_until_their_claim_binds() -> None:
    async with local_cluster() as c:
        client = c.client
        await _three_nodes_and_queue(client)
        claim = pvc("data")
        claim.pop("status")
        await client.create(claim)
        for p in (claim_pod("pvcmissing", "nosuchclaim"), claim_pod("pvcunbound", "data")):
            name = p["metadata"]["name"]
            await client.create(podgroup(f"pg-{name}", min_member=1, phase="Inqueue"))
            p["metadata"].pop("uid", None)
            await client.create(p)
        pods = client.scheme.resolve("pods")
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        mgr = Manager(c.new_client(), graceful_shutdown_timeout=2.0)
        mgr_task: asyncio.Task[None] | None = None
        try:
            sched.run_once()
            await sched.cache.flush()

            async def conditions() -> dict[str, str]:
                out = {}
                for name in ("pvcmissing", "pvcunbound"):
                    got = await client.get(pods, name, "c1")
                    cond = next((x for x in (got.get("status") or {}).get("conditions") or []
                                 if x["type"] == "PodScheduled"), None)
                    out[name] = cond["message"] if cond and cond["status"] == "False" else ""
                return out

            async def both_refused() -> bool:
                return all((await conditions()).values())

            await wait_for(both_refused)
            msgs = await conditions()
            assert msgs["pvcmissing"] == ('0/3 nodes are unavailable: 3 plugin VolumeBinding pre-predicates failed '
                                          'persistentvolumeclaim "nosuchclaim" not found.')
            assert msgs["pvcunbound"] == ("0/3 nodes are unavailable: 3 plugin VolumeBinding pre-predicates failed "
                                          "pod has unbound immediate PersistentVolumeClaims.")
            # a volume and the binder: the claim binds, the next cycle binds its Pod
            await client.create(pv("pv1"))
            setup(mgr, controllers=["persistentvolume-binder"])
            mgr_task = asyncio.create_task(mgr.start())

            async def claim_bound() -> bool:  # as the scheduler's cache sees it
                got = sched.cache.informers["PersistentVolumeClaim"].store.get("c1", "data")
                return got is not None and (got.get("status") or {}).get("phase") == "Bound"

            await wait_for(claim_bound)
            assert (await client.get(PERSISTENT_VOLUME_CLAIM, "data", "c1"))["spec"]["volumeName"] == "pv1"
            sched.run_once()
            await sched.cache.flush()

            async def pod_bound() -> bool:
                return bool((await client.get(pods, "pvcunbound", "c1"))["spec"].get("nodeName"))

            await wait_for(pod_bound)
            assert not (await client.get(pods, "pvcmissing", "c1"))["spec"].get("nodeName")
        finally:
            await sched.cache.stop()
            if mgr_task is not None:
                mgr.stop()
                await asyncio.wait_for(mgr_task, 30)


async def test_the_live_scheduler_provisions_a_wait_for_first_consumer_claim_on_its_pod_s_node() -> None:
    """The cache's binder runs VolumeBinding's PreBind: the claim gets ``selected-node``, the
    binder and the local-path provisioner make and bind its volume, then the Pod is bound."""
    async with local_cluster() as c:
        client = c.client
        await _three_nodes_and_queue(client)
        await client.create({**STANDARD, "metadata": {"name": "wffc"}, "volumeBindingMode": "WaitForFirstConsumer"})
        claim = pvc("data", cls="wffc")
        claim.pop("status")
        await client.create(claim)
        p = claim_pod("consumer", "data")
        await client.create(podgroup("pg-consumer", min_member=1, phase="Inqueue"))
        p["metadata"].pop("uid", None)
        await client.create(p)
        pods = client.scheme.resolve("pods")
        mgr = Manager(c.new_client(), graceful_shutdown_timeout=2.0)
        setup(mgr, controllers=["persistentvolume-binder"])
        mgr_task = asyncio.create_task(mgr.start())
        prov_task = asyncio.create_task(LocalPathProvisioner(c.new_client(), Path("/nonexistent/pv"), default_clock(),
                                                             make_dirs=False).run())
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        try:
            sched.run_once()

            async def pod_bound() -> bool:
                return bool((await client.get(pods, "consumer", "c1"))["spec"].get("nodeName"))

            await wait_for(pod_bound)
            placed = (await client.get(pods, "consumer", "c1"))["spec"]["nodeName"]
            got = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "c1")
            assert got["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == placed
            assert got["status"]["phase"] == "Bound"
        finally:
            await sched.cache.stop()
            prov_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await prov_task
            mgr.stop()
            await asyncio.wait_for(mgr_task, 30)
