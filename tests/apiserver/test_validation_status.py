"""The 422 Status of a built-in object that breaks one of kube-apiserver's validation rules
(trial-10 F-8), as a client sees it through the API server: code, reason, message and causes."""

from __future__ import annotations

import pytest

from pumice.api.scheme import CONFIG_MAP
from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

from .builders import deployment, pod


async def test_pod_mounting_an_unknown_volume_is_refused_with_upstreams_status(cluster: LocalCluster) -> None:
    bad = pod("p3")
    bad["spec"]["containers"][0]["volumeMounts"] = [{"name": "nope", "mountPath": "/x"}]
    with pytest.raises(ApiError) as e:
        await cluster.client.create(bad)
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    assert e.value.message == 'Pod "p3" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "nope"'
    assert e.value.status["details"]["causes"] == [
        {"reason": "FieldValueNotFound", "message": 'Not found: "nope"',
         "field": "spec.containers[0].volumeMounts[0].name"}]


async def test_deployment_with_a_bad_surge_is_refused_and_a_good_one_rolls_out(cluster: LocalCluster) -> None:
    bad = deployment("d5")
    bad["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "200x%"}}
    with pytest.raises(ApiError) as e:
        await cluster.client.create(bad)
    assert e.value.code == 422
    [cause] = e.value.status["details"]["causes"]
    assert cause["field"] == "spec.strategy.rollingUpdate.maxSurge"
    assert cause["message"].startswith('Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"200x%"}: '
                                       "a valid percent string must be a numeric string followed by an ending '%'")
    good = deployment("d6")
    good["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}}
    created = await cluster.client.create(good)
    assert created["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "50%", "maxUnavailable": 0}


async def test_a_bad_generate_name_is_refused_at_generate_name_as_kube_apiserver_does(cluster: LocalCluster) -> None:
    """trial 19 F-3: a 300-character generateName was accepted (the name is cut to 58 + 5), and
    ``Bad_Prefix-`` was reported at metadata.name only."""
    with pytest.raises(ApiError) as e:
        await cluster.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"namespace": "default", "generateName": "g" * 300}})
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    name = e.value.status["details"]["name"]
    assert len(name) == 63 and name.startswith("g" * 58)
    assert e.value.message == (f'ConfigMap "{name}" is invalid: metadata.generateName: Invalid value: '
                               f'"{"g" * 300}": must be no more than 253 characters')
    with pytest.raises(ApiError) as e:
        await cluster.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"namespace": "default", "generateName": "Bad_Prefix-"}})
    assert [c["field"] for c in e.value.status["details"]["causes"]] == ["metadata.generateName", "metadata.name"]
    assert (await cluster.client.list(CONFIG_MAP, "default")).items == []
