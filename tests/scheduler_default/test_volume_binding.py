"""VolumeBinding in the default scheduler: a Pod whose claim is missing, unbound with Immediate
binding, being deleted or Lost is refused at PreFilter with upstream's texts; bound claims' volume
node affinity and WaitForFirstConsumer claims filter Nodes; both cores agree; through the API
server, a refused Pod is scheduled once the PersistentVolume binder binds its claim, and a
WaitForFirstConsumer claim gets its volume on its Pod's Node (provisioned, or a local volume)
before the Pod is bound.
Ports kube-scheduler v1.32 volume_binding_test.go's PreFilter cases (no PVC -> Skip, missing
claim, unbound Immediate claim, claim being deleted, Lost claim, ephemeral volume)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from pumice._util.clock import default_clock
from pumice.api import Obj
from pumice.api.scheme import EVENT, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD
from pumice.controllers.kube import setup
from pumice.node.provisioner import LocalPathProvisioner
from pumice.runtime import Manager
from pumice.scheduler.default.core import LoopCore
from pumice.scheduler.default.podinfo import PodInfo
from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.scheduler.default.vector import VectorCore
from pumice.scheduler.default.volumebinding import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    PodVolumeClaims,
    VolumeBindingError,
    filter_reasons,
    has_claim_volumes,
    pre_filter,
)
from pumice.testing.cluster import local_cluster
from pumice.testing.node import wait_for

from .builders import node, pod

HOST = "kubernetes.io/hostname"


class Listers:
    """A :class:`VolumeListers` over plain lists."""

    def __init__(self, claims: Iterable[Obj] = (), volumes: Iterable[Obj] = (), classes: Iterable[Obj] = ()) -> None:
        self.claims = {(c["metadata"].get("namespace", "default"), c["metadata"]["name"]): c for c in claims}
        self.pvs = {v["metadata"]["name"]: v for v in volumes}
        self.classes = {c["metadata"]["name"]: c for c in classes}

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self.claims.get((namespace, name))

    def volume(self, name: str) -> Obj | None:
        return self.pvs.get(name)

    def storage_class(self, name: str) -> Obj | None:
        return self.classes.get(name)

    def volumes(self) -> Iterable[Obj]:
        return list(self.pvs.values())


def claim(name: str, *, cls: str = "standard", volume: str = "", bound: bool = False, phase: str = "Pending",
          deleting: bool = False, owner_uid: str | None = None, size: str = "1Gi") -> Obj:
    md: Obj = {"name": name, "namespace": "default"}
    if bound:
        md["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner_uid:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}]
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                 "storageClassName": cls}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": spec,
            "status": {"phase": "Bound" if bound else phase}}


def volume(name: str, *, cls: str = "standard", hosts: list[str] | None = None, size: str = "1Gi",
           claim_ref: str | None = None, phase: str = "Available") -> Obj:
    spec: Obj = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                 "hostPath": {"path": f"/tmp/{name}"}}
    if hosts is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOST, "operator": "In", "values": hosts}]}]}}
    if claim_ref:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": claim_ref}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": phase}}


def storage_class(name: str, *, mode: str = "Immediate", provisioner: str = "pumice.dev/local-path",
                  topologies: list[Obj] | None = None) -> Obj:
    sc: Obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
               "provisioner": provisioner, "volumeBindingMode": mode}
    if topologies is not None:
        sc["allowedTopologies"] = topologies
    return sc


def with_claims(p: Obj, *names: str) -> Obj:
    p["spec"]["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(names)]
    return p


def fit_message(n: int, reason: str) -> str:
    return (f"0/{n} nodes are available: {reason}. preemption: 0/{n} nodes are available: "
            f"{n} Preemption is not helpful for scheduling.")


STANDARD = storage_class("standard")
LOCAL = storage_class("local", mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")


# ----- PreFilter on plain values ------------------------------------------------------------

def test_a_pod_without_claim_volumes_is_skipped() -> None:
    p = pod("p")
    p["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    assert not has_claim_volumes(p)
    assert has_claim_volumes(with_claims(pod("q"), "data"))
    assert has_claim_volumes({"spec": {"volumes": [{"name": "e", "ephemeral": {}}]}})


@pytest.mark.parametrize(("objects", "message"), [
    ([], 'persistentvolumeclaim "data" not found'),
    ([claim("data")], REASON_UNBOUND_IMMEDIATE),
    ([claim("data", cls="")], REASON_UNBOUND_IMMEDIATE),  # no class: Immediate
    ([claim("data", cls="gone")], REASON_UNBOUND_IMMEDIATE),  # a class that does not exist: Immediate
    ([claim("data", deleting=True, bound=True, volume="pv1")], 'persistentvolumeclaim "data" is being deleted'),
    ([claim("data", volume="pv1", phase="Lost")],
     'persistentvolumeclaim "data" bound to non-existent persistentvolume "pv1"'),
    # named volume but the binder has not finished: counts as unbound Immediate, even for WFFC
    ([claim("data", cls="local", volume="pv1")], REASON_UNBOUND_IMMEDIATE),
])
def test_prefilter_refuses_with_upstream_s_messages(objects: list[Obj], message: str) -> None:
    assert pre_filter(with_claims(pod("p"), "data"), Listers(objects, classes=[STANDARD, LOCAL])) == message


def test_prefilter_ephemeral_volume_claims() -> None:
    p = pod("p")
    p["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    uid = p["metadata"]["uid"]
    assert pre_filter(p, Listers()) == \
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"'
    assert pre_filter(p, Listers([claim("p-scratch", owner_uid="someone-else")], classes=[STANDARD])) == \
        "PVC default/p-scratch was not created for pod default/p (pod is not owner)"
    got = pre_filter(p, Listers([claim("p-scratch", owner_uid=uid, bound=True, volume="pv1")], classes=[STANDARD]))
    assert isinstance(got, PodVolumeClaims) and [c["metadata"]["name"] for c in got.bound] == ["p-scratch"]


def test_prefilter_passes_bound_and_waiting_claims_on_to_the_filter() -> None:
    got = pre_filter(with_claims(pod("p"), "a", "b"),
                     Listers([claim("a", bound=True, volume="pv1"), claim("b", cls="local")], classes=[STANDARD, LOCAL]))
    assert isinstance(got, PodVolumeClaims)
    assert [c["metadata"]["name"] for c in got.bound] == ["a"] and [c["metadata"]["name"] for c in got.delayed] == ["b"]


# ----- Filter on plain values ---------------------------------------------------------------

def test_filter_checks_bound_volumes_node_affinity_and_existence() -> None:
    claims = PodVolumeClaims(bound=(claim("a", bound=True, volume="pv1"),))
    lst = Listers(volumes=[volume("pv1", hosts=["n1"])])
    assert filter_reasons(claims, "n1", {HOST: "n1"}, lst) == []
    assert filter_reasons(claims, "n2", {HOST: "n2"}, lst) == [REASON_NODE_CONFLICT]
    assert filter_reasons(claims, "n1", {HOST: "n1"}, Listers()) == [REASON_PV_NOT_EXIST]


def test_filter_finds_a_volume_or_a_provisioner_for_waiting_claims() -> None:
    waiting = PodVolumeClaims(delayed=(claim("b", cls="local"),))
    lst = Listers(volumes=[volume("pv-n1", cls="local", hosts=["n1"]), volume("small", cls="local", size="1Mi")],
                  classes=[LOCAL])
    assert filter_reasons(waiting, "n1", {HOST: "n1"}, lst) == []
    assert filter_reasons(waiting, "n2", {HOST: "n2"}, lst) == [REASON_BIND_CONFLICT]
    # a class that provisions admits every Node its allowedTopologies admit
    zoned = storage_class("zoned", mode="WaitForFirstConsumer", topologies=[
        {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}])
    w2 = PodVolumeClaims(delayed=(claim("c", cls="zoned"),))
    assert filter_reasons(w2, "n1", {"zone": "a"}, Listers(classes=[zoned])) == []
    assert filter_reasons(w2, "n2", {"zone": "b"}, Listers(classes=[zoned])) == [REASON_BIND_CONFLICT]
    # a claim whose selected-node names another Node
    sel = claim("d", cls="zoned")
    sel["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n1"}
    assert filter_reasons(PodVolumeClaims(delayed=(sel,)), "n2", {"zone": "a"}, Listers(classes=[zoned])) == \
        [REASON_BIND_CONFLICT]
    with pytest.raises(VolumeBindingError, match='failed to find storage class "zoned"'):
        filter_reasons(w2, "n1", {"zone": "a"}, Listers())


def test_two_waiting_claims_do_not_share_one_volume() -> None:
    waiting = PodVolumeClaims(delayed=(claim("a", cls="local"), claim("b", cls="local")))
    one = Listers(volumes=[volume("pv1", cls="local")], classes=[LOCAL])
    assert filter_reasons(waiting, "n1", {}, one) == [REASON_BIND_CONFLICT]
    two = Listers(volumes=[volume("pv1", cls="local"), volume("pv2", cls="local")], classes=[LOCAL])
    assert filter_reasons(waiting, "n1", {}, two) == []


@pytest.mark.parametrize("core_type", [LoopCore, VectorCore])
def test_both_cores_refuse_the_volume_filter_s_nodes_after_resource_fit(core_type: type) -> None:
    core = core_type(seed=0)
    for n in (node("n0", cpu="1"), node("n1"), node("n2")):
        core.set_node(n)
    info = dataclasses.replace(PodInfo.from_pod(pod("p", cpu="2")),
                               volume_reasons={"n0": (REASON_NODE_CONFLICT,), "n1": (REASON_NODE_CONFLICT,)})
    assert core.schedule(info).node == "n2"
    refused = dataclasses.replace(info, volume_reasons={n: (REASON_NODE_CONFLICT,) for n in ("n0", "n1", "n2")})
    d = core.schedule(refused)
    # n0 fails NodeResourcesFit first (a filter stops at the first plugin that refuses)
    assert d.node is None and d.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had volume node affinity conflict. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.")


# ----- through the API server ---------------------------------------------------------------

async def _until(cond: Any, what: str, timeout: float = 20.0) -> None:
    """:func:`pumice.testing.node.wait_for`, failing with ``what`` in the message."""
    try:
        await wait_for(cond, timeout)
    except AssertionError as e:
        raise AssertionError(f"not within {timeout} s: {what}") from e


def _scheduled_condition(p: Obj) -> Obj | None:
    return next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None)


async def test_missing_and_unbound_claims_keep_pods_pending_until_the_binder_binds() -> None:
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        for n in ("n0", "n1", "n2"):
            await client.create(node(n))
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        await sched.start()
        mgr: Manager | None = None
        mgr_task: asyncio.Task[None] | None = None
        try:
            missing = with_claims(pod("pvcmissing"), "nosuchclaim")
            unbound = with_claims(pod("pvcunbound"), "data")
            plain = pod("plain")
            for p in (missing, unbound, plain):
                p["metadata"].pop("uid")
            await client.create(claim("data"))  # class standard (Immediate); no binder runs yet
            for p in (missing, unbound, plain):
                await client.create(p)

            async def refused(name: str) -> Obj | None:
                got = await client.get(POD, name, "default")
                c = _scheduled_condition(got)
                return got if c is not None and c["status"] == "False" else None

            async def both_refused() -> bool:
                return bool(await refused("pvcmissing") and await refused("pvcunbound"))

            await _until(both_refused, "both claim Pods refused")
            got = await client.get(POD, "pvcmissing", "default")
            cond = _scheduled_condition(got)
            assert cond is not None and cond["reason"] == "Unschedulable"
            assert cond["message"] == fit_message(3, 'persistentvolumeclaim "nosuchclaim" not found')
            got = await client.get(POD, "pvcunbound", "default")
            assert (_scheduled_condition(got) or {})["message"] == fit_message(3, REASON_UNBOUND_IMMEDIATE)
            assert not got["spec"].get("nodeName")
            assert (await client.get(POD, "plain", "default"))["spec"].get("nodeName")

            async def event_recorded() -> bool:
                events = (await client.list(EVENT, "default")).items
                return any(e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "pvcmissing"
                           and 'persistentvolumeclaim "nosuchclaim" not found' in e["message"] for e in events)

            await _until(event_recorded, "a FailedScheduling Event for the missing claim")

            # a volume, and the binder: the claim binds and the parked Pod is scheduled
            await client.create(volume("pv1"))
            mgr = Manager(cluster.new_client(), graceful_shutdown_timeout=2.0)
            setup(mgr, controllers=["persistentvolume-binder"])
            mgr_task = asyncio.create_task(mgr.start())

            async def bound() -> bool:
                return bool((await client.get(POD, "pvcunbound", "default"))["spec"].get("nodeName"))

            await _until(bound, "the Pod scheduled once its claim is bound")
            pvc = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
            assert pvc["spec"]["volumeName"] == "pv1" and pvc["status"]["phase"] == "Bound"
            assert not (await client.get(POD, "pvcmissing", "default"))["spec"].get("nodeName")
        finally:
            await sched.stop()
            if mgr is not None and mgr_task is not None:
                mgr.stop()
                await asyncio.wait_for(mgr_task, 30)


async def test_a_bound_local_volume_takes_its_pod_to_its_node() -> None:
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        for n in ("n0", "n1", "n2"):
            await client.create(node(n))
        await client.create(volume("local-n2", cls="", hosts=["n2"], claim_ref="data"))
        c = claim("data", cls="", volume="local-n2")
        await client.create(c)
        mgr = Manager(cluster.new_client(), graceful_shutdown_timeout=2.0)
        setup(mgr, controllers=["persistentvolume-binder"])
        mgr_task = asyncio.create_task(mgr.start())
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        await sched.start()
        try:
            async def claim_bound() -> bool:
                pvc = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
                return (pvc.get("status") or {}).get("phase") == "Bound"

            await _until(claim_bound, "the claim bound to its pre-bound volume")
            assert (await client.get(PERSISTENT_VOLUME, "local-n2"))["status"]["phase"] == "Bound"
            for i in range(3):
                p = with_claims(pod(f"user{i}"), "data")
                p["metadata"].pop("uid")
                await client.create(p)

            async def nodes() -> list[str]:
                return [str((await client.get(POD, f"user{i}", "default"))["spec"].get("nodeName") or "")
                        for i in range(3)]

            async def all_bound() -> bool:
                return all(await nodes())

            await _until(all_bound, "three Pods of the claim scheduled")
            assert await nodes() == ["n2", "n2", "n2"]
        finally:
            await sched.stop()
            mgr.stop()
            await asyncio.wait_for(mgr_task, 30)


async def _wffc_cluster(cluster: Any) -> tuple[Manager, asyncio.Task[None], asyncio.Task[None], DefaultScheduler]:
    """Three Nodes, the PersistentVolume binder, the local-path provisioner (no directories) and
    the default scheduler."""
    for n in ("n0", "n1", "n2"):
        await cluster.client.create(node(n))
    mgr = Manager(cluster.new_client(), graceful_shutdown_timeout=2.0)
    setup(mgr, controllers=["persistentvolume-binder"])
    mgr_task = asyncio.create_task(mgr.start())
    prov = LocalPathProvisioner(cluster.new_client(), Path("/nonexistent/pv"), default_clock(), make_dirs=False)
    prov_task = asyncio.create_task(prov.run())
    sched = DefaultScheduler(cluster.new_client(), seed=1)
    await sched.start()
    return mgr, mgr_task, prov_task, sched


async def _stop(mgr: Manager, mgr_task: asyncio.Task[None], prov_task: asyncio.Task[None],
                sched: DefaultScheduler) -> None:
    await sched.stop()
    prov_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await prov_task
    mgr.stop()
    await asyncio.wait_for(mgr_task, 30)


async def test_a_wait_for_first_consumer_claim_is_provisioned_on_its_pod_s_node() -> None:
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        await client.create(storage_class("wffc", mode="WaitForFirstConsumer"))
        await client.create(claim("data", cls="wffc"))
        mgr, mgr_task, prov_task, sched = await _wffc_cluster(cluster)
        try:
            async def waiting_event() -> bool:
                return any(e["reason"] == "WaitForFirstConsumer" and e["involvedObject"]["name"] == "data"
                           and e["message"] == "waiting for first consumer to be created before binding"
                           for e in (await client.list(EVENT, "default")).items)

            await _until(waiting_event, "the binder waits for the first consumer")
            assert (await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default"))["status"]["phase"] == "Pending"
            # a consumer that fits no Node: the claim names it while it waits
            big = with_claims(pod("big", cpu="64"), "data")
            big["metadata"].pop("uid")
            await client.create(big)

            async def names_the_pod() -> bool:
                return any(e["reason"] == "WaitForPodScheduled" and e["involvedObject"]["name"] == "data"
                           and e["message"] == "waiting for pod big to be scheduled"
                           for e in (await client.list(EVENT, "default")).items)

            await _until(names_the_pod, "the binder names the unscheduled consumer")
            assert "volume.kubernetes.io/selected-node" not in (
                (await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default"))["metadata"].get("annotations") or {})
            p = with_claims(pod("consumer", cpu="100m"), "data")
            p["metadata"].pop("uid")
            await client.create(p)

            async def scheduled() -> bool:
                return bool((await client.get(POD, "consumer", "default"))["spec"].get("nodeName"))

            await _until(scheduled, "the consumer scheduled after its claim was provisioned")
            placed = (await client.get(POD, "consumer", "default"))["spec"]["nodeName"]
            pvc = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
            assert pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == placed
            assert pvc["status"]["phase"] == "Bound" and pvc["spec"]["volumeName"] == f"pvc-{pvc['metadata']['uid']}"
        finally:
            await _stop(mgr, mgr_task, prov_task, sched)


async def test_a_wait_for_first_consumer_claim_gets_the_local_volume_of_its_pod_s_node() -> None:
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        await client.create(LOCAL)
        for n in ("n0", "n1", "n2"):
            await client.create(volume(f"local-{n}", cls="local", hosts=[n]))
        await client.create(claim("data", cls="local"))
        mgr, mgr_task, prov_task, sched = await _wffc_cluster(cluster)
        try:
            p = with_claims(pod("consumer", cpu="100m", node_selector={HOST: "n1"}), "data")
            p["metadata"].pop("uid")
            await client.create(p)

            async def scheduled() -> bool:
                return bool((await client.get(POD, "consumer", "default"))["spec"].get("nodeName"))

            await _until(scheduled, "the consumer scheduled after its claim was bound")
            assert (await client.get(POD, "consumer", "default"))["spec"]["nodeName"] == "n1"
            pvc = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
            assert pvc["spec"]["volumeName"] == "local-n1" and pvc["status"]["phase"] == "Bound"
            for other in ("local-n0", "local-n2"):
                assert not (await client.get(PERSISTENT_VOLUME, other))["spec"].get("claimRef")
        finally:
            await _stop(mgr, mgr_task, prov_task, sched)


async def test_a_claim_waiting_in_prebind_holds_no_bind_slot() -> None:
    """review 12 F2: PreBind of a WaitForFirstConsumer claim nobody provisions waits up to the bind
    timeout; it held one of the scheduler's bind slots meanwhile, so as many stuck claims as slots
    stopped every other Pod's bind. With one slot, a plain Pod must still bind."""
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        await client.create(storage_class("ebs", mode="WaitForFirstConsumer", provisioner="ebs.csi.aws.com"))
        await client.create(claim("data", cls="ebs"))
        for n in ("n0", "n1"):
            await client.create(node(n))
        mgr = Manager(cluster.new_client(), graceful_shutdown_timeout=2.0)
        setup(mgr, controllers=["persistentvolume-binder"])
        mgr_task = asyncio.create_task(mgr.start())
        sched = DefaultScheduler(cluster.new_client(), seed=1, max_binds_in_flight=1)
        await sched.start()
        try:
            stuck = with_claims(pod("stuck", cpu="100m"), "data")
            stuck["metadata"].pop("uid")
            await client.create(stuck)

            async def claim_selected() -> bool:  # PreBind has begun: the claim names its Node
                pvc = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
                return "volume.kubernetes.io/selected-node" in ((pvc["metadata"].get("annotations")) or {})

            await _until(claim_selected, "the stuck Pod's PreBind selects a Node for its claim")
            plain = pod("plain", cpu="100m")
            plain["metadata"].pop("uid")
            await client.create(plain)

            async def plain_bound() -> bool:
                return bool((await client.get(POD, "plain", "default"))["spec"].get("nodeName"))

            await _until(plain_bound, "the plain Pod binds while the claim waits")
            assert not (await client.get(POD, "stuck", "default"))["spec"].get("nodeName")
        finally:
            await sched.stop()
            mgr.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(mgr_task, 30)
