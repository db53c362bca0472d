"""The HPA controller's metric-based scaling, reconcile by reconcile on a fake clock: a
Deployment's scale, its Pods and their PodMetrics fed in, the HPA's status, conditions and Events
read back. Ports of upstream's horizontal_test.go / replica_calculator_test.go cases where named."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pumice._util.clock import FakeClock, rfc3339
from pumice.api import Obj
from pumice.api.scheme import DEPLOYMENT
from pumice.api.selectors import LabelSelector
from pumice.client.base import ApiError
from pumice.controllers.kube.horizontal import HorizontalReconciler
from pumice.controllers.kube.replica_calculator import (
    MetricsError,
    PodMetric,
    ReplicaCalculator,
    calculate_pod_requests,
)
from pumice.runtime import Request

T0 = 1_780_000_000.0
SCALE_PATH = "/apis/apps/v1/namespaces/default/deployments/web/scale"
CPU_UP = "cpu resource utilization (percentage of request) above target"


def pod(name: str, *, cpu: str = "100m", phase: str = "Running", ready: bool = True, started: float = T0 - 3600,
        ready_since: float = T0 - 3500, labels: dict[str, str] | None = None) -> Obj:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]},
            "status": {"phase": phase, "startTime": rfc3339(started),
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": rfc3339(ready_since)}]}}


def usage(name: str, cpu: str, memory: str = "50Mi", at: float = T0 - 10) -> Obj:
    return {"metadata": {"name": name, "namespace": "default"}, "timestamp": rfc3339(at), "window": "15s",
            "containers": [{"name": "c", "usage": {"cpu": cpu, "memory": memory}}]}


class Store:
    """An informer's store over a list (``get``, ``list`` by namespace and selector)."""

    def __init__(self, *objs: Obj) -> None:
        self.objs = list(objs)
        self.store = self

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return next((o for o in self.objs if o["metadata"]["name"] == name), None)

    def list(self, namespace: str | None = None, selector: LabelSelector | None = None) -> list[Obj]:
        return [o for o in self.objs if selector is None or selector.matches(o["metadata"].get("labels"))]


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, etype: str, reason: str, message: str) -> None:
        self.seen.append((etype, reason, message))


class Cluster:
    """The API calls the controller makes: the Deployment's scale (GET/PUT), resolving its kind,
    the HPA status write (into the HPA store)."""

    def __init__(self, replicas: int, hpas: Store) -> None:
        self.replicas = replicas
        self.hpas = hpas
        self.writes: list[int] = []

    async def resolve(self, api_version: str, kind: str) -> Any:
        if (api_version, kind) != ("apps/v1", "Deployment"):
            raise ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"', {})
        return DEPLOYMENT

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if path == "/apis/apps":
            return {"preferredVersion": {"version": "v1"}, "versions": [{"version": "v1"}]}
        assert path == SCALE_PATH, path
        if method == "PUT":
            self.replicas = body["spec"]["replicas"]
            self.writes.append(self.replicas)
        return {"kind": "Scale", "spec": {"replicas": self.replicas},
                "status": {"replicas": self.replicas, "selector": "app=web"}}

    async def update_status(self, obj: Obj) -> Obj:
        self.hpas.objs = [obj if o["metadata"]["name"] == obj["metadata"]["name"] else o for o in self.hpas.objs]
        return obj


class Metrics:
    """PodMetrics fed by the test."""

    def __init__(self, *items: Obj) -> None:
        self.items = list(items)

    async def pod_metrics(self, namespace: str, selector: str) -> list[Obj]:
        assert selector == "app=web"
        return copy.deepcopy(self.items)


def hpa(spec: Obj) -> Obj:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 10, **spec}}


CPU_50 = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]


class Rig:
    def __init__(self, spec: Obj, replicas: int, pods: list[Obj], metrics: list[Obj]) -> None:
        self.clock = FakeClock(T0)
        self.hpas = Store(hpa(spec))
        self.cluster = Cluster(replicas, self.hpas)
        self.pods = Store(*pods)
        self.metrics = Metrics(*metrics)
        self.events = Events()
        self.r = HorizontalReconciler(self.cluster, hpas=self.hpas, pods=self.pods, metrics=self.metrics,  # type: ignore[arg-type]
                                      clock=self.clock, recorder=self.events)  # type: ignore[arg-type]

    async def sync(self, after: float = 0.0) -> Obj:
        self.clock.advance(after)
        await self.r.reconcile(Request("default", "web"))
        out = self.hpas.get("default", "web")
        assert out is not None
        return dict(out.get("status") or {})


def conditions(status: Obj) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}


async def test_cpu_above_target_scales_a_deployment_up_to_the_scale_up_limit() -> None:
    # 2 Pods requesting 100m use 200m each: 200% of a 50% target -> 8, limited to max(2 x 2, 4)
    rig = Rig({"metrics": CPU_50}, 2, [pod("p0"), pod("p1")], [usage("p0", "200m"), usage("p1", "200m")])
    status = await rig.sync()
    assert rig.cluster.writes == [4]
    assert ("Normal", "SuccessfulRescale", f"New size: 4; reason: {CPU_UP}") in rig.events.seen
    assert (status["currentReplicas"], status["desiredReplicas"]) == (2, 4)
    assert status["currentMetrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "current": {"averageValue": "200m", "averageUtilization": 200}}}]
    assert status["lastScaleTime"] == rfc3339(T0)
    assert conditions(status) == {"AbleToScale": ("True", "SucceededRescale"),
                                  "ScalingActive": ("True", "ValidMetricFound"),
                                  "ScalingLimited": ("True", "ScaleUpLimit")}
    active = next(c for c in status["conditions"] if c["type"] == "ScalingActive")
    assert active["message"] == ("the HPA was able to successfully calculate a replica count from cpu resource "
                                 "utilization (percentage of request)")


async def test_usage_within_the_tolerance_leaves_the_replicas() -> None:
    # 54% of a 50% target is a ratio of 1.08, inside the 0.1 tolerance
    rig = Rig({"metrics": CPU_50}, 2, [pod("p0"), pod("p1")], [usage("p0", "54m"), usage("p1", "54m")])
    status = await rig.sync()
    assert rig.cluster.writes == []
    assert (status["desiredReplicas"], conditions(status)["AbleToScale"]) == (2, ("True", "ReadyForNewScale"))
    assert conditions(status)["ScalingLimited"] == ("False", "DesiredWithinRange")


async def test_the_downscale_stabilization_window_holds_a_scale_down_for_300_seconds() -> None:
    pods = [pod(f"p{i}") for i in range(4)]
    rig = Rig({"metrics": CPU_50}, 4, pods, [usage(f"p{i}", "10m") for i in range(4)])
    status = await rig.sync()  # 10% of 50% -> 1, but 4 was recommended within the window
    assert rig.cluster.writes == []
    assert conditions(status)["AbleToScale"] == ("True", "ScaleDownStabilized")
    assert status["desiredReplicas"] == 4
    await rig.sync(after=200)
    assert rig.cluster.writes == []
    status = await rig.sync(after=101)  # the recommendations of 4 are now older than 300 s
    assert rig.cluster.writes == [1]
    assert ("Normal", "SuccessfulRescale", "New size: 1; reason: All metrics below target") in rig.events.seen
    assert conditions(status)["AbleToScale"] == ("True", "SucceededRescale")


async def test_a_pods_scale_up_policy_limits_the_rate_per_period() -> None:
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
                "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
    pods = [pod(f"p{i}") for i in range(6)]
    rig = Rig({"metrics": CPU_50, "behavior": behavior}, 2, pods, [usage(f"p{i}", "200m") for i in range(6)])
    status = await rig.sync()
    assert rig.cluster.writes == [3]
    assert conditions(status)["ScalingLimited"] == ("True", "ScaleUpLimit")
    await rig.sync(after=30)  # the +1 of 30 s ago uses this period's allowance
    assert rig.cluster.writes == [3]
    await rig.sync(after=31)
    assert rig.cluster.writes == [3, 4]


async def test_a_disabled_scale_down_policy_keeps_the_replicas() -> None:
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
                "scaleDown": {"stabilizationWindowSeconds": 0, "selectPolicy": "Disabled",
                              "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
    rig = Rig({"metrics": CPU_50, "behavior": behavior}, 3, [pod(f"p{i}") for i in range(3)],
              [usage(f"p{i}", "5m") for i in range(3)])
    status = await rig.sync()
    assert rig.cluster.writes == []
    assert conditions(status)["ScalingLimited"] == ("True", "ScaleDownLimit")


async def test_an_average_value_memory_target_scales_on_raw_usage() -> None:
    metrics = [{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                            "averageValue": "100Mi"}}}]
    rig = Rig({"metrics": metrics}, 2, [pod("p0"), pod("p1")],
              [usage("p0", "1m", "300Mi"), usage("p1", "1m", "300Mi")])
    status = await rig.sync()
    assert rig.cluster.writes == [4]  # 3 x 2 = 6, limited to 4
    assert status["currentMetrics"] == [{"type": "Resource", "resource": {
        "name": "memory", "current": {"averageValue": "314572800"}}}]
    assert ("Normal", "SuccessfulRescale", "New size: 4; reason: memory resource above target") in rig.events.seen


async def test_a_container_resource_metric_reads_that_container() -> None:
    metrics = [{"type": "ContainerResource", "containerResource": {
        "name": "cpu", "container": "c", "target": {"type": "Utilization", "averageUtilization": 50}}}]
    rig = Rig({"metrics": metrics}, 2, [pod("p0"), pod("p1")], [usage("p0", "100m"), usage("p1", "100m")])
    status = await rig.sync()
    assert rig.cluster.writes == [4]
    assert status["currentMetrics"][0]["containerResource"] == {
        "name": "cpu", "container": "c", "current": {"averageValue": "100m", "averageUtilization": 100}}
    assert ("Normal", "SuccessfulRescale",
            "New size: 4; reason: cpu container resource utilization (percentage of request) above target") \
        in rig.events.seen


async def test_a_pods_metric_fails_as_without_a_custom_metrics_api_and_cpu_still_scales_up() -> None:
    pods_metric = {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                            "target": {"type": "AverageValue", "averageValue": "10"}}}
    rig = Rig({"metrics": [pods_metric, *CPU_50]}, 2, [pod("p0"), pod("p1")],
              [usage("p0", "200m"), usage("p1", "200m")])
    status = await rig.sync()
    assert rig.cluster.writes == [4]
    assert ("Warning", "FailedGetPodsMetric", "unable to get metric qps: unable to fetch metrics from custom metrics "
            "API: no custom metrics API (custom.metrics.k8s.io) registered") in rig.events.seen
    assert status["currentMetrics"][0] == {"type": ""}
    assert conditions(status)["ScalingActive"] == ("True", "ValidMetricFound")


async def test_without_metrics_for_any_pod_scaling_is_inactive() -> None:
    rig = Rig({"metrics": CPU_50}, 2, [pod("p0"), pod("p1")], [])
    status = await rig.sync()
    assert rig.cluster.writes == []
    cause = ("failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource "
             "metrics API")
    assert ("Warning", "FailedGetResourceMetric", cause) in rig.events.seen
    assert ("Warning", "FailedComputeMetricsReplicas",
            f"invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: {cause}") \
        in rig.events.seen
    assert conditions(status)["ScalingActive"] == ("False", "FailedGetResourceMetric")
    assert status["currentMetrics"] == [{"type": ""}]


async def test_a_scale_target_in_a_version_not_served_is_found_in_its_group() -> None:
    # review 16: upstream resolves the target's GroupKind (RESTMappings), so apps/v1beta2 works
    rig = Rig({"metrics": CPU_50, "scaleTargetRef": {"apiVersion": "apps/v1beta2", "kind": "Deployment",
                                                     "name": "web"}},
              2, [pod("p0"), pod("p1")], [usage("p0", "200m"), usage("p1", "200m")])
    status = await rig.sync()
    assert rig.cluster.writes == [4]
    rig.hpas.objs[0]["spec"]["scaleTargetRef"]["kind"] = "Nope"
    status = await rig.sync(after=15)
    assert ("Warning", "FailedGetScale", 'no matches for kind "Nope" in group "apps"') in rig.events.seen
    assert conditions(status)["AbleToScale"] == ("False", "FailedGetScale")


async def test_two_hpas_selecting_the_same_pods_are_an_ambiguous_selector() -> None:
    rig = Rig({"metrics": CPU_50}, 2, [pod("p0"), pod("p1")], [usage("p0", "200m"), usage("p1", "200m")])
    other = copy.deepcopy(rig.hpas.objs[0])
    other["metadata"]["name"] = "other"
    rig.hpas.objs.append(other)
    await rig.r.reconcile(Request("default", "other"))
    rig.hpas.objs = [o for o in rig.hpas.objs if o["metadata"]["name"] == "web"]
    status = await rig.sync()
    msg = "pods by selector app=web are controlled by multiple HPAs: [default/other default/web]"
    assert ("Warning", "AmbiguousSelector", msg) in rig.events.seen
    assert conditions(status)["ScalingActive"] == ("False", "AmbiguousSelector")


# ---- the replica calculator ------------------------------------------------------------------------


def _metrics(**values: int) -> dict[str, PodMetric]:
    return {k: PodMetric(v, T0 - 10, 15) for k, v in values.items()}


def test_a_missing_pod_counts_at_its_full_request_on_a_scale_down_which_can_cancel_it() -> None:
    # upstream TestReplicaCalcMissingMetricsNoChangeLt-like: 40% of a 50% target would scale
    # down, but the Pod without metrics at 100% makes 60%: the direction would flip
    pods = [pod("a", cpu="1"), pod("b", cpu="1"), pod("c", cpu="1")]
    got = ReplicaCalculator().resource_replicas(3, 50, "cpu", pods, _metrics(a=300, b=500), T0)
    assert got == (3, 40, 400)


def test_unready_pods_count_at_zero_on_a_scale_up() -> None:
    # upstream TestReplicaCalcScaleUpUnreadyLessScale-like: b not Ready -> 0 on a scale-up
    pods = [pod("a", cpu="1"), pod("b", cpu="1", ready=False, started=T0 - 60, ready_since=T0 - 60),
            pod("c", cpu="1")]
    got = ReplicaCalculator().resource_replicas(3, 30, "cpu", pods, _metrics(a=400, b=900, c=500), T0)
    # ready a, c: 45% -> ratio 1.5; with b at 0: 30% of 3 Pods -> ratio 1.0: within tolerance
    assert got == (3, 45, 450)


def test_a_pending_pod_is_ignored_and_a_failed_one_dropped() -> None:
    pods = [pod("a", cpu="1"), pod("b", cpu="1", phase="Failed"), pod("c", cpu="1", phase="Pending")]
    got = ReplicaCalculator().resource_replicas(3, 50, "cpu", pods, _metrics(a=1000, b=1000), T0)
    # a at 200% of the target would scale up; Pending c counted at 0 makes it 100%: keep 3
    assert got[0] == 3


def test_a_container_without_a_request_is_an_error() -> None:
    p = pod("a")
    del p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    with pytest.raises(MetricsError, match="missing request for cpu in container c of Pod a"):
        ReplicaCalculator().resource_replicas(1, 50, "cpu", [p], _metrics(a=10), T0)


async def test_a_scale_up_tolerance_in_the_behavior_widens_the_band() -> None:
    # HPAConfigurableTolerance (beta, on since 1.35): 140% of the target is within a 0.5 scale-up tolerance
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "tolerance": "0.5",
                            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
                "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
    rig = Rig({"metrics": CPU_50, "behavior": behavior}, 2, [pod("p0"), pod("p1")],
              [usage("p0", "70m"), usage("p1", "70m")])
    status = await rig.sync()
    assert rig.cluster.writes == []
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 70
    del rig.hpas.objs[0]["spec"]["behavior"]["scaleUp"]["tolerance"]
    await rig.sync(after=15)
    assert rig.cluster.writes == [3]


def test_pod_level_requests_are_the_pods_request_unless_a_container_is_named() -> None:
    p = pod("a", cpu="100m")
    p["spec"]["resources"] = {"requests": {"cpu": "1"}}
    assert calculate_pod_requests([p], "", "cpu") == {"a": 1000}
    assert calculate_pod_requests([p], "c", "cpu") == {"a": 100}
    with pytest.raises(MetricsError, match="missing pod-level request for memory in Pod a"):
        calculate_pod_requests([p], "", "memory")
    with pytest.raises(MetricsError, match="container x not found in Pod a"):
        calculate_pod_requests([p], "x", "cpu")


# ---- ports of upstream's replica calculator cases --------------------------------------------------

RC = "kubernetes pkg/controller/podautoscaler/replica_calculator_test.go"


def _upstream_case(levels: list[tuple[int, int]], readiness: list[bool] | None = None, container: str = "",
                   target: int = 30) -> tuple[int, int, int]:
    """replicaCalcTestCase.runTest for cpu: Pods test-pod-<i> with two containers requesting 1 cpu
    each, start time and Ready transition at the zero time, PodMetrics with a 1 min window."""
    pods, items = [], []
    for i, (c1, c2) in enumerate(levels):
        p = pod(f"test-pod-{i}", ready=True if readiness is None else readiness[i], started=0.0, ready_since=0.0)
        p["spec"]["containers"] = [{"name": n, "resources": {"requests": {"cpu": "1.0"}}}
                                   for n in ("container1", "container2")]
        pods.append(p)
        items.append({"metadata": {"name": f"test-pod-{i}", "namespace": "default"}, "timestamp": rfc3339(T0),
                      "window": "1m0s", "containers": [{"name": "container1", "usage": {"cpu": f"{c1}m"}},
                                                       {"name": "container2", "usage": {"cpu": f"{c2}m"}}]})
    from pumice.controllers.kube.replica_calculator import pod_metrics_info
    return ReplicaCalculator().resource_replicas(len(levels), target, "cpu", pods,
                                                 pod_metrics_info(items, "cpu", container), T0, container)


@pytest.mark.upstream(f"{RC} TestReplicaCalcScaleUp")
def test_upstream_replica_calc_scale_up() -> None:
    assert _upstream_case([(300, 300), (500, 500), (700, 700)]) == (5, 50, 1000)


@pytest.mark.upstream(f"{RC} TestReplicaCalcContainerScaleUp")
def test_upstream_replica_calc_container_scale_up() -> None:
    assert _upstream_case([(1000, 300), (1000, 500), (1000, 700)], container="container2") == (5, 50, 500)


@pytest.mark.upstream(f"{RC} TestReplicaCalcScaleUpUnreadyLessScale")
def test_upstream_replica_calc_scale_up_unready_less_scale() -> None:
    assert _upstream_case([(300, 300), (500, 500), (700, 700)], [False, True, True]) == (4, 60, 1200)


@pytest.mark.upstream(f"{RC} TestReplicaCalcScaleUpUnreadyNoScale")
def test_upstream_replica_calc_scale_up_unready_no_scale() -> None:
    assert _upstream_case([(400, 400), (500, 500), (700, 700)], [True, False, False]) == (3, 40, 800)


def _pods(value: int, period: int = 60) -> Obj:
    return {"type": "Pods", "value": value, "periodSeconds": period}


def _percent(value: int, period: int = 60) -> Obj:
    return {"type": "Percent", "value": value, "periodSeconds": period}


@pytest.mark.parametrize(("up", "current", "ups", "downs", "rules", "limit"), [
    (True, 5, [], [], {"policies": [_pods(4)]}, 9),
    (True, 5, [(2, -30)], [], {"policies": [_pods(4)]}, 7),  # 2 added 30 s ago count against the period
    (True, 5, [], [], {"selectPolicy": "Disabled", "policies": [_pods(4)]}, 5),
    (True, 5, [], [], {"selectPolicy": "Min", "policies": [_pods(4), _pods(2)]}, 7),
    (True, 10, [], [], {"policies": [_percent(50)]}, 15),
    (True, 3, [], [], {"policies": [_percent(10)]}, 4),  # a percent scale-up rounds up
    (False, 10, [], [], {"policies": [_percent(20)]}, 8),
    (False, 10, [], [(1, -30)], {"policies": [_percent(20)]}, 8),  # from 11 at the period's start
    (False, 100, [], [], {"policies": [_percent(10), _pods(5)]}, 90),
    (False, 100, [], [], {"selectPolicy": "Min", "policies": [_percent(10), _pods(15)]}, 90),
    (False, 10, [], [], {"selectPolicy": "Disabled", "policies": [_percent(20)]}, 10),
    (False, 10, [(3, -61)], [], {"policies": [_pods(4)]}, 6),  # an event older than the period is out
])
def test_the_policies_limit_a_step_as_upstreams_scale_limits(up: bool, current: int, ups: list, downs: list,
                                                              rules: Obj, limit: int) -> None:
    from pumice.controllers.kube.horizontal import _ScaleEvent

    r = HorizontalReconciler(None, hpas=None, clock=FakeClock(T0), recorder=None)  # type: ignore[arg-type]
    got = r._scale_limit(current, [_ScaleEvent(c, T0 + at) for c, at in ups],
                         [_ScaleEvent(c, T0 + at) for c, at in downs], rules, up)
    assert got == limit
