"""HorizontalPodAutoscalers: ``kubectl autoscale`` (kubectl 1.32 posts autoscaling/v1), the v2
form they are stored in, kubectl's columns, and the HPA controller on a cluster without metrics:
replicas kept within min/max with upstream's conditions and Events, and the metric failure
conditions and Events upstream gives when the metrics APIs are unavailable. Object shapes and
422 causes were taken from a real kube-apiserver v1.34.4 answering the same requests."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api import meta
from pumice.api.scheme import DEPLOYMENT, EVENT, HORIZONTAL_POD_AUTOSCALER, HORIZONTAL_POD_AUTOSCALER_V1, POD
from pumice.client.base import ApiError

from .conftest import chain, deployment, eventually
from .test_kubectl import kubectl

V2 = "autoscaling/v2"
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
#: the API server's metrics.k8s.io answer when no node agent reports usage (the fake kubelet does not)
NO_USAGE = ("the server is currently unable to handle the request (no node agent reports resource usage: a "
            "simulated-runtime agent reports it only in-process, under pumice up, and a process-runtime agent needs "
            "a few seconds after start)")
CPU_FAILURE = ("failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from "
               f"resource metrics API: {NO_USAGE}")


def hpa(name: str, spec: dict[str, Any], api_version: str = V2) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in (obj.get("status") or {}).get("conditions") or []}


async def events_of(client: Any, name: str) -> dict[str, tuple[str, str]]:
    items = (await client.list(EVENT, "default")).items
    return {e["reason"]: (e["type"], e["message"]) for e in items
            if e["involvedObject"].get("kind") == "HorizontalPodAutoscaler" and e["involvedObject"]["name"] == name}


# ---- the API ---------------------------------------------------------------------------------------


async def test_an_hpa_is_defaulted_in_v2_and_served_in_v1_with_its_behavior_annotated() -> None:
    async with chain(nodes=1, manager=False) as env:
        out = await env.client.create(hpa("h4", {"scaleTargetRef": TARGET, "maxReplicas": 3, "behavior": {"scaleUp": {}}}))
        assert out["spec"]["minReplicas"] == 1
        assert out["spec"]["metrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
        assert out["spec"]["behavior"] == {
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                     {"type": "Percent", "value": 100, "periodSeconds": 15}]},
            "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
        assert out["status"] == {"desiredReplicas": 0, "currentMetrics": None}
        v1 = await env.client.get(HORIZONTAL_POD_AUTOSCALER_V1, "h4", "default")
        assert v1["apiVersion"] == "autoscaling/v1"
        assert (v1["spec"]["targetCPUUtilizationPercentage"], v1["status"]) == (
            80, {"desiredReplicas": 0, "currentReplicas": 0})
        assert "autoscaling.alpha.kubernetes.io/behavior" in v1["metadata"]["annotations"]
        created = await env.client.create(hpa("h6", {"scaleTargetRef": TARGET, "minReplicas": 2, "maxReplicas": 4,
                                                     "targetCPUUtilizationPercentage": 50}, "autoscaling/v1"))
        assert created["spec"]["targetCPUUtilizationPercentage"] == 50
        stored = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "h6", "default")
        assert stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50
        assert stored["status"] == {"desiredReplicas": 0, "currentMetrics": None}


async def test_hpa_causes_are_upstreams_in_both_versions() -> None:
    async with chain(nodes=1, manager=False) as env:
        with pytest.raises(ApiError) as e:
            await env.client.create(hpa("h1", {"scaleTargetRef": {"kind": "", "name": ""}, "minReplicas": 0,
                                               "maxReplicas": 0}))
        assert [(c["field"], c["message"]) for c in e.value.status["details"]["causes"]] == [
            ("spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
            ("spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
            ("spec.scaleTargetRef.kind", "Required value"), ("spec.scaleTargetRef.name", "Required value"),
            ("spec.scaleTargetRef.apiVersion", 'Invalid value: "": apiVersion must specify API group'),
            ("spec.metrics", "Forbidden: must specify at least one Object or External metric to support scaling to "
                             "zero replicas")]
        with pytest.raises(ApiError) as e:
            await env.client.create(hpa("h3", {"scaleTargetRef": TARGET, "maxReplicas": 3, "behavior": {"scaleDown": {
                "stabilizationWindowSeconds": 5000, "selectPolicy": "X",
                "policies": [{"type": "Pods", "value": 0, "periodSeconds": 0}]}}}))
        assert [(c["field"], c["reason"]) for c in e.value.status["details"]["causes"]] == [
            ("spec.behavior.scaleDown.stabilizationWindowSeconds", "FieldValueInvalid"),
            ("spec.behavior.scaleDown.selectPolicy", "FieldValueNotSupported"),
            ("spec.behavior.scaleDown.policies[0].value", "FieldValueInvalid"),
            ("spec.behavior.scaleDown.policies[0].periodSeconds", "FieldValueInvalid")]
        with pytest.raises(ApiError) as e:
            await env.client.create(hpa("h5", {"scaleTargetRef": TARGET, "maxReplicas": 3,
                                               "targetCPUUtilizationPercentage": 0}, "autoscaling/v1"))
        assert [(c["field"], c["message"]) for c in e.value.status["details"]["causes"]] == [
            ("spec.metrics[0].resource.target.averageUtilization", "Invalid value: 0: must be greater than 0")]


# ---- the controller --------------------------------------------------------------------------------


async def test_the_controller_scales_a_target_below_min_up_to_it_without_metrics() -> None:
    async with chain(nodes=1) as env:
        await env.client.create(deployment("web", 1))
        await env.client.create(hpa("web", {"scaleTargetRef": TARGET, "minReplicas": 3, "maxReplicas": 5}))

        async def scaled() -> bool:
            return (await env.client.get(DEPLOYMENT, "web", "default"))["spec"]["replicas"] == 3

        await eventually(scaled, what="the Deployment scaled to minReplicas")

        async def status_written() -> bool:
            st = (await env.client.get(HORIZONTAL_POD_AUTOSCALER, "web", "default")).get("status") or {}
            return st.get("desiredReplicas") == 3

        await eventually(status_written, what="the HPA status written")
        out = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "web", "default")
        assert (out["status"]["currentReplicas"], out["status"]["currentMetrics"]) == (1, None)
        assert "lastScaleTime" in out["status"]
        assert conditions(out) == {"AbleToScale": (
            "True", "SucceededRescale", "the HPA controller was able to update the target scale to 3")}

        async def told() -> bool:
            return "SuccessfulRescale" in await events_of(env.client, "web")

        await eventually(told, what="the SuccessfulRescale Event")
        assert (await events_of(env.client, "web"))["SuccessfulRescale"] == (
            "Normal", "New size: 3; reason: Current number of replicas below Spec.MinReplicas")


async def test_the_controller_scales_a_target_above_max_down_to_it() -> None:
    async with chain(nodes=1) as env:
        await env.client.create(deployment("web", 4))
        await env.client.create(hpa("web", {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 2}))

        async def scaled() -> bool:
            return (await env.client.get(DEPLOYMENT, "web", "default"))["spec"]["replicas"] == 2

        await eventually(scaled, what="the Deployment scaled to maxReplicas")

        async def told() -> bool:
            return "SuccessfulRescale" in await events_of(env.client, "web")

        await eventually(told, what="the SuccessfulRescale Event")
        assert (await events_of(env.client, "web"))["SuccessfulRescale"][1] == (
            "New size: 2; reason: Current number of replicas above Spec.MaxReplicas")


async def test_within_bounds_the_controller_says_it_cannot_read_metrics_and_leaves_replicas() -> None:
    async with chain(nodes=1) as env:
        await env.client.create(deployment("web", 2))
        await env.client.create(hpa("web", {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 5}))

        async def failed() -> bool:
            return conditions(await env.client.get(HORIZONTAL_POD_AUTOSCALER, "web", "default")).get(
                "ScalingActive", ("",))[0] == "False"

        await eventually(failed, what="ScalingActive False")
        out = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "web", "default")
        assert conditions(out) == {
            "AbleToScale": ("True", "SucceededGetScale", "the HPA controller was able to get the target's current scale"),
            "ScalingActive": ("False", "FailedGetResourceMetric",
                              f"the HPA was unable to compute the replica count: {CPU_FAILURE}")}
        assert (out["status"]["currentReplicas"], out["status"]["desiredReplicas"], out["status"]["currentMetrics"]) \
            == (2, 0, [{"type": ""}])
        assert "lastScaleTime" not in out["status"]
        assert (await env.client.get(DEPLOYMENT, "web", "default"))["spec"]["replicas"] == 2

        async def told() -> bool:
            return "FailedComputeMetricsReplicas" in await events_of(env.client, "web")

        await eventually(told, what="the FailedComputeMetricsReplicas Event")
        got = await events_of(env.client, "web")
        assert got["FailedGetResourceMetric"] == ("Warning", CPU_FAILURE)
        assert got["FailedComputeMetricsReplicas"] == (
            "Warning", f"invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: "
                       f"{CPU_FAILURE}")


class UsageOfPods:
    """PodMetrics for the Pods the HPA controller's informer holds: each container at ``cpu``,
    stamped one window after the Pod became Ready (so the cpu readiness check counts it)."""

    def __init__(self, pods: Any, cpu: str) -> None:
        self.pods = pods
        self.cpu = cpu

    async def pod_metrics(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        from pumice._util.clock import parse_rfc3339, rfc3339
        from pumice.api.selectors import parse_label_selector

        out = []
        for p in self.pods.store.list(namespace, parse_label_selector(selector)):
            ready = next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), None)
            if ready is None:
                continue
            at = parse_rfc3339(ready["lastTransitionTime"]) + 15
            out.append({"metadata": {"name": p["metadata"]["name"], "namespace": namespace},
                        "timestamp": rfc3339(at), "window": "15s",
                        "containers": [{"name": c["name"], "usage": {"cpu": self.cpu, "memory": "10Mi"}}
                                       for c in p["spec"]["containers"]]})
        return out


async def test_a_deployment_busy_above_its_cpu_target_is_scaled_up_through_its_scale() -> None:
    # the whole chain: HPA -> deployments/scale -> Deployment -> ReplicaSet -> Pods, with the
    # Pods' usage fed in place of metrics.k8s.io (200m of a 100m request, target 50% -> 8, limited to 4)
    async with chain(nodes=1) as env:
        await env.client.create(deployment("web", 2))

        async def running() -> bool:
            pods = (await env.client.list(POD, "default", label_selector="app=web")).items
            return len(pods) == 2 and all(meta.pod_is_ready(p) for p in pods)

        await eventually(running, what="2 Pods Ready")
        assert env.kube is not None and env.kube.horizontalpodautoscaling is not None
        ctrl = env.kube.horizontalpodautoscaling
        ctrl.metrics = UsageOfPods(ctrl.pods, "200m")
        await eventually(lambda: len(ctrl.pods.store.list("default")) == 2, what="the controller sees the Pods")
        await env.client.create(hpa("web", {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 10, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                         "averageUtilization": 50}}}]}))

        async def scaled() -> bool:
            return (await env.client.get(DEPLOYMENT, "web", "default"))["spec"]["replicas"] == 4

        await eventually(scaled, what="the Deployment scaled to 4")

        async def told() -> bool:
            return "SuccessfulRescale" in await events_of(env.client, "web")

        await eventually(told, what="the SuccessfulRescale Event")
        assert (await events_of(env.client, "web"))["SuccessfulRescale"] == (
            "Normal", "New size: 4; reason: cpu resource utilization (percentage of request) above target")
        out = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "web", "default")
        assert out["status"]["currentMetrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageValue": "200m", "averageUtilization": 200}}}]
        assert conditions(out)["ScalingLimited"][:2] == ("True", "ScaleUpLimit")


async def test_a_missing_target_is_failed_get_scale() -> None:
    async with chain(nodes=1) as env:
        await env.client.create(hpa("gone", {"scaleTargetRef": {**TARGET, "name": "gone"}, "maxReplicas": 2}))

        async def failed() -> bool:
            return "AbleToScale" in conditions(await env.client.get(HORIZONTAL_POD_AUTOSCALER, "gone", "default"))

        await eventually(failed, what="AbleToScale set")
        out = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "gone", "default")
        assert conditions(out)["AbleToScale"] == (
            "False", "FailedGetScale", 'the HPA controller was unable to get the target\'s current scale: '
                                       'deployments.apps "gone" not found')


# ---- kubectl ---------------------------------------------------------------------------------------


@pytest.mark.kubectl
async def test_kubectl_autoscale_creates_an_hpa_that_kubectl_gets_with_upstreams_columns(cluster: Any) -> None:
    srv, client = cluster
    await client.create(deployment("web", 1))
    code, out = await kubectl(srv.kubeconfig, "autoscale", "deployment", "web", "--min=2", "--max=4")
    assert code == 0 and "horizontalpodautoscaler.autoscaling/web autoscaled" in out, out

    async def scaled() -> bool:
        return (await client.get(DEPLOYMENT, "web", "default"))["spec"]["replicas"] == 2

    await eventually(scaled, what="the Deployment scaled to --min")
    code, out = await kubectl(srv.kubeconfig, "get", "hpa")
    rows = [ln.split() for ln in out.splitlines()]
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][:7] == ["web", "Deployment/web", "cpu:", "<unknown>/80%", "2", "4", "1"] or \
        rows[1][:7] == ["web", "Deployment/web", "cpu:", "<unknown>/80%", "2", "4", "2"], out
    code, out = await kubectl(srv.kubeconfig, "get", "all")
    assert "horizontalpodautoscaler.autoscaling/web" in out, out


@pytest.mark.parametrize(("annotation", "behavior"), [
    ("1", None), ("[]", None), ('"x"', None), ("null", None), ("{}", None), ('{"scaleUp": null}', None),
    ('{"scaleUp": 5}', None), ('{"scaleUp": {"stabilizationWindowSeconds": "7"}}', None), ("not json", None),
    ('{"ScaleUp": {"StabilizationWindowSeconds": 7, "Policies": [{"Type": "Pods", "Value": 1, "PeriodSeconds": 15}]}}',
     {"scaleUp": {"stabilizationWindowSeconds": 7, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}]}}),
    ('{"scaleDown": {"selectPolicy": "Min", "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}, '
     '"bogus": 1}',
     {"scaleDown": {"selectPolicy": "Min", "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}}),
])
async def test_a_v1_behavior_annotation_is_kept_only_when_it_decodes_into_the_behavior(
        annotation: str, behavior: dict[str, Any] | None) -> None:
    # upstream's v1 conversion json.Unmarshals the annotation into the Go struct (field names
    # case-insensitive, unknown ones ignored) and ignores it when that fails or gives the zero
    # value; pumice stored whatever JSON it held (spec.behavior: 1), which no typed client decodes
    async with chain(nodes=1, manager=False) as env:
        body = hpa("hb", {"scaleTargetRef": TARGET, "maxReplicas": 3}, "autoscaling/v1")
        body["metadata"]["annotations"] = {"autoscaling.alpha.kubernetes.io/behavior": annotation}
        await env.client.create(body)
        stored = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "hb", "default")
        assert stored["spec"].get("behavior") == behavior


CANNOT = 'HorizontalPodAutoscaler in version "v1" cannot be handled as a HorizontalPodAutoscaler: '
ALPHA = "autoscaling.alpha.kubernetes.io/"


@pytest.mark.parametrize(("key", "annotation", "why"), [
    ("conditions", "[1,2]", "json: cannot unmarshal number into Go value of type v1.HorizontalPodAutoscalerCondition"),
    ("conditions", '{"a":1}', "json: cannot unmarshal object into Go value of type []v1.HorizontalPodAutoscalerCondition"),
    ("conditions", '[{"type": 5}]', "json: cannot unmarshal number into Go struct field HorizontalPodAutoscalerCondition.type "
                                    "of type v1.HorizontalPodAutoscalerConditionType"),
    ("conditions", "{not json", "invalid character 'n' looking for beginning of object key string"),
    ("metrics", '"x"', "json: cannot unmarshal string into Go value of type []v1.MetricSpec"),
    ("current-metrics", "[true]", "json: cannot unmarshal bool into Go value of type v1.MetricStatus"),
])
async def test_a_v1_round_trip_annotation_that_does_not_decode_is_refused(key: str, annotation: str, why: str) -> None:
    # trial 16 F-4: upstream's v1 conversion fails when the metrics, current-metrics or conditions
    # annotation does not unmarshal (a 400); pumice stored conditions [1, 2] as the v2 status and
    # the HPA controller then failed every reconcile with an AttributeError
    async with chain(nodes=1, manager=False) as env:
        body = hpa("hc", {"scaleTargetRef": TARGET, "maxReplicas": 3}, "autoscaling/v1")
        body["metadata"]["annotations"] = {ALPHA + key: annotation}
        with pytest.raises(ApiError) as e:
            await env.client.create(body)
        assert (e.value.code, e.value.reason, e.value.message) == (400, "BadRequest", CANNOT + why)
        assert (await env.client.list(HORIZONTAL_POD_AUTOSCALER, "default")).items == []


async def test_a_v1_metrics_annotation_becomes_the_v2_metrics() -> None:
    # trial 16 F-4: the metrics annotation (v1 MetricSpecs) is converted into spec.metrics before the
    # cpu target, the 80% default only when there are none; pumice dropped it
    pods = '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]'
    external = ('[{"type":"External","external":{"metricName":"queue","targetValue":"5"}},'
                '{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1Gi"}}]')
    pods_v2 = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                               "averageValue": "10"}}}
    async with chain(nodes=1, manager=False) as env:
        for name, annotation, cpu in (("m1", pods, None), ("m2", pods, 50), ("m3", external, None)):
            spec: dict[str, Any] = {"scaleTargetRef": TARGET, "maxReplicas": 3}
            if cpu is not None:
                spec["targetCPUUtilizationPercentage"] = cpu
            body = hpa(name, spec, "autoscaling/v1")
            body["metadata"]["annotations"] = {ALPHA + "metrics": annotation,
                                               ALPHA + "conditions": '[{"type":"AbleToScale","status":"True"}]'}
            await env.client.create(body)
        m1, m2, m3 = [await env.client.get(HORIZONTAL_POD_AUTOSCALER, n, "default") for n in ("m1", "m2", "m3")]
        assert m1["spec"]["metrics"] == [pods_v2]
        assert m2["spec"]["metrics"] == [pods_v2, {"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
        assert m3["spec"]["metrics"] == [
            {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "5"}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                            "averageValue": "1Gi"}}}]
        # the status annotations are converted, then the create's zero status replaces them (PrepareForCreate)
        assert m1["status"] == {"desiredReplicas": 0, "currentMetrics": None}
        assert "annotations" not in m1["metadata"]


async def test_the_v1_form_carries_the_other_metrics_and_the_current_metrics_in_annotations() -> None:
    """kinds16 left: upstream's v1 conversion writes the metrics other than cpu utilization and
    every current metric (v1 shapes) into the metrics and current-metrics annotations, so a v1
    read-modify-write keeps them; pumice dropped them and a v1 update lost the memory target."""
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                            "averageValue": "100Mi"}}}
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}
    pods = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}
    async with chain(nodes=1, manager=False) as env:
        await env.client.create(hpa("rt", {"scaleTargetRef": TARGET, "maxReplicas": 3, "metrics": [cpu, memory, pods]}))
        stored = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "rt", "default")
        stored["status"] = {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "120m",
                                                                         "averageUtilization": 40}}},
            {"type": ""}]}
        await env.client.update_status(stored)
        v1 = await env.client.get(HORIZONTAL_POD_AUTOSCALER_V1, "rt", "default")
        ann = v1["metadata"]["annotations"]
        assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
        assert v1["status"]["currentCPUUtilizationPercentage"] == 40
        assert ann[ALPHA + "metrics"] == (
            '[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}},'
            '{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]')
        assert ann[ALPHA + "current-metrics"] == (
            '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,'
            '"currentAverageValue":"120m"}},{"type":""}]')
        stored = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "rt", "default")
        stored["status"]["conditions"] = [{"type": "AbleToScale", "status": "True", "reason": "R", "message": "m",
                                           "lastTransitionTime": "2026-12-03T13:50:16Z"}]
        await env.client.update_status(stored)
        v1 = await env.client.get(HORIZONTAL_POD_AUTOSCALER_V1, "rt", "default")
        assert v1["metadata"]["annotations"][ALPHA + "conditions"] == (  # Go's field order
            '[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-12-03T13:50:16Z","reason":"R",'
            '"message":"m"}]')
        v1["spec"]["maxReplicas"] = 5
        await env.client.update(v1)
        after = await env.client.get(HORIZONTAL_POD_AUTOSCALER, "rt", "default")
        assert after["spec"]["maxReplicas"] == 5
        assert after["spec"]["metrics"] == [memory, pods, cpu]


async def test_a_status_write_lost_to_a_conflict_is_logged_with_the_hpa(caplog: pytest.LogCaptureFixture) -> None:
    """Review 16: a 409 or 404 on the status write was dropped without a word."""
    from pumice.controllers.kube.horizontal import HorizontalReconciler

    class Refusing:
        async def update_status(self, obj: Any) -> Any:
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on horizontalpodautoscalers "web": '
                                            "the object has been modified")

    r = HorizontalReconciler(Refusing(), hpas=None, clock=None, recorder=None)  # type: ignore[arg-type]
    obj = {"metadata": {"namespace": "default", "name": "web"}, "status": {}}
    with caplog.at_level("INFO", logger="pumice.controllers.kube.horizontal"):
        await r._write_status(obj, {}, {"desiredReplicas": 2})
    [line] = [rec.getMessage() for rec in caplog.records]
    assert line.startswith("HorizontalPodAutoscaler default/web: status not written (Operation cannot be fulfilled")
