"""Error texts as client-go prints them (trial 10 F-15): an ApiError reads as the Status message
(Go's StatusError.Error()), so Event texts built from it carry no ``403 Forbidden: `` prefix; the
Priority admission plugin's refusals are NewForbidden's ``pods "x" is forbidden: ...``."""

from __future__ import annotations

import pytest

from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster


def pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def test_an_api_error_reads_as_the_status_message() -> None:
    e = ApiError(422, "Invalid", 'Pod "p" is invalid: spec.containers: Required value')
    assert str(e) == 'Pod "p" is invalid: spec.containers: Required value'
    assert f"Error creating pods: {e}" == 'Error creating pods: Pod "p" is invalid: spec.containers: Required value'
    assert str(ApiError(503, "ServiceUnavailable")) == "503 ServiceUnavailable"


async def test_an_unknown_priority_class_is_forbidden_with_the_resource_and_name(cluster: LocalCluster) -> None:
    with pytest.raises(ApiError) as e:
        await cluster.client.create(pod("p9", priorityClassName="nosuch"))
    assert (e.value.code, e.value.reason, str(e.value)) == (
        403, "Forbidden", 'pods "p9" is forbidden: no PriorityClass with name nosuch was found')
    with pytest.raises(ApiError) as e:
        await cluster.client.create(pod("p10", priority=7))
    assert str(e.value) == ('pods "p10" is forbidden: the integer value of priority (7) must not be provided in pod '
                            "spec; priority admission controller computed 0 from the given PriorityClass name")


async def test_a_second_global_default_priority_class_is_forbidden(cluster: LocalCluster) -> None:
    def pc(name: str) -> dict:
        return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": 10, "globalDefault": True}

    await cluster.client.create(pc("g1"))
    with pytest.raises(ApiError) as e:
        await cluster.client.create(pc("g2"))
    assert (e.value.code, str(e.value)) == (
        403, 'priorityclasses.scheduling.k8s.io "g2" is forbidden: PriorityClass g1 is already marked as default. '
             "Only one default can exist")
