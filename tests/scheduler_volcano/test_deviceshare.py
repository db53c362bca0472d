"""deviceshare (gpushare devices): GPU sharing fitted per card, with hand-made cases.

Cases follow volcano pkg/scheduler/api/devices/nvidia/gpushare (predicateGPUbyMemory,
predicateGPUbyNumber) and plugins/deviceshare: a card's idle memory is its memory minus what the
Pods on it (by their ``volcano.sh/gpu-index``) ask for.
"""

from __future__ import annotations

import pytest

from pumice.api import Obj
from pumice.scheduler.volcano.api.gpushare import GPU_INDEX, GPUDevices
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.cache.snapshot import build_snapshot, run_session
from pumice.scheduler.volcano.framework.arguments import ignored_arguments
from pumice.scheduler.volcano.framework.interface import RecordingCache
from pumice.scheduler.volcano.plugins import PLUGINS
from pumice.testing.volcano import build_conf, node, plugin, pod, podgroup, queue

MEM, NUM = "volcano.sh/gpu-memory", "volcano.sh/gpu-number"


def gpu_node(name: str, cards: int, per_card: int = 1000) -> Obj:
    return node(name, {"cpu": "16", "memory": "64Gi", "pods": "110", MEM: str(cards * per_card), NUM: str(cards)})


def gpu_pod(name: str, *, mem: int = 0, num: int = 0, node_name: str = "", index: str | None = None,
            phase: str = "Pending") -> Obj:
    res = {"cpu": "1", "memory": "1Gi", **({MEM: str(mem)} if mem else {}), **({NUM: str(num)} if num else {})}
    p = pod(name, group=f"pg-{name}", requests=res, node=node_name, phase=phase,
            annotations={GPU_INDEX: index} if index is not None else None)
    p["spec"]["containers"][0]["resources"]["limits"] = {k: v for k, v in res.items() if k in (MEM, NUM)}
    return p


def tiers(deviceshare: bool) -> list:
    base = [plugin("gang", all=True), plugin("predicates", all=True), plugin("nodeorder", all=True)]
    if deviceshare:
        base.insert(1, plugin("deviceshare", {"deviceshare.GPUSharingEnable": True, "deviceshare.GPUNumberEnable": True},
                              all=True))
    return [base]


class AnnotatingCache(RecordingCache):
    """Records each bind's node and the annotations its Binding would carry."""

    def __init__(self) -> None:
        super().__init__()
        self.annotations: dict[str, dict[str, str]] = {}

    def bind(self, task: TaskInfo, node_name: str) -> None:
        super().bind(task, node_name)
        self.annotations[task.key] = dict(task.pod_annotations)


def session(objects: list[Obj], *, deviceshare: bool = True, vectorize: bool = True) -> tuple[AnnotatingCache, object]:
    objs = [queue("c1"), *objects]
    for o in objects:
        if o["kind"] == "Pod" and not o["spec"].get("nodeName"):
            objs.append(podgroup(o["metadata"]["annotations"]["scheduling.k8s.io/group-name"], min_member=1))
        elif o["kind"] == "Pod":
            objs.append(podgroup(o["metadata"]["annotations"]["scheduling.k8s.io/group-name"], min_member=1,
                                 phase="Running"))
    cache = AnnotatingCache()
    res = run_session(build_snapshot(objs), build_conf(["allocate"], tiers(deviceshare)), cache=cache,
                      vectorize=vectorize)
    return cache, res


@pytest.mark.parametrize("vectorize", [True, False])
def test_a_one_card_pod_cannot_span_two_half_free_cards(vectorize: bool) -> None:
    # n1: two cards with 0.5 used on each (pooled: a whole card's memory is free); n2 has none
    objects = [gpu_node("n1", 2),
               gpu_pod("a", mem=500, node_name="n1", index="0", phase="Running"),
               gpu_pod("b", mem=500, node_name="n1", index="1", phase="Running"),
               gpu_pod("q", mem=1000)]
    pooled, _ = session(objects, deviceshare=False, vectorize=vectorize)
    assert pooled.binds == {"c1/q": "n1"}  # the Node's total alone lets it in
    per_card, res = session(objects, vectorize=vectorize)
    assert per_card.binds == {}
    assert "GpuShare no enough gpu memory on node n1" in res.fit_errors["c1/pg-q"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("vectorize", [True, False])
def test_shared_pods_take_the_first_card_that_fits_and_whole_card_pods_idle_cards(vectorize: bool) -> None:
    # by hand: a (600) -> card 0; b (600) does not fit card 0's 400 -> card 1; c (400) -> card 0
    # (lowest id with room); d asks for 2 whole cards: cards 2 and 3 are the idle ones
    objects = [gpu_node("n1", 4), gpu_pod("a", mem=600), gpu_pod("b", mem=600), gpu_pod("c", mem=400),
               gpu_pod("d", num=2)]
    cache, _ = session(objects, vectorize=vectorize)
    assert cache.binds == {"c1/a": "n1", "c1/b": "n1", "c1/c": "n1", "c1/d": "n1"}
    got = {k: v[GPU_INDEX] for k, v in cache.annotations.items()}
    assert got == {"c1/a": "0", "c1/b": "1", "c1/c": "0", "c1/d": "2,3"}
    assert all("volcano.sh/predicate-time" in v for v in cache.annotations.values())


def test_a_whole_card_pod_avoids_shared_cards_and_a_card_held_whole_has_no_memory() -> None:
    # three cards: 0 holds a 0.6 share, 1 a gpu-number Pod, 2 is idle. The Node's pooled
    # gpu-number (3 - 1) would let a 2-card Pod in, but only card 2 is idle; a 0.5 Pod fits
    # neither card 0 (0.4 idle) nor card 1 (held whole), so it takes card 2
    objects = [gpu_node("n1", 3),
               gpu_pod("s", mem=600, node_name="n1", index="0", phase="Running"),
               gpu_pod("w", num=1, node_name="n1", index="1", phase="Running"),
               gpu_pod("two", num=2), gpu_pod("half", mem=500)]
    cache, res = session(objects)
    assert cache.binds == {"c1/half": "n1"}
    assert cache.annotations["c1/half"][GPU_INDEX] == "2"
    assert "GpuNumber no enough gpu number on node n1" in res.fit_errors["c1/pg-two"]  # type: ignore[attr-defined]


def test_cards_from_the_node_and_unhealthy_ids() -> None:
    n = gpu_node("n1", 4, per_card=16000)
    n["metadata"]["annotations"] = {"volcano.sh/gpu-unhealthy-ids": "1,3"}
    devs = GPUDevices.from_node(n)
    assert devs is not None and sorted(devs.devices) == [0, 2] and devs.devices[0].memory == 16000
    assert GPUDevices.from_node(node("plain", "4,8Gi")) is None


def test_arguments_are_upstreams() -> None:
    PLUGINS["deviceshare"].parse({"deviceshare.GPUSharingEnable": "true", "deviceshare.ScheduleWeight": 10})
    with ignored_arguments() as ignored:  # vGPU is not implemented: ignored, named in the load's warnings
        assert PLUGINS["deviceshare"].parse({"deviceshare.VGPUEnable": True}) == PLUGINS["deviceshare"].parse({})
    assert ignored == ["unknown argument 'deviceshare.VGPUEnable' ignored"]
    with ignored_arguments() as ignored:  # upstream's GetBool: logged, the default kept
        assert PLUGINS["deviceshare"].parse({"deviceshare.GPUNumberEnable": "maybe"}) == PLUGINS["deviceshare"].parse({})
    assert ignored == ["deviceshare.GPUNumberEnable: expected a boolean, got 'maybe'; the default is used"]
