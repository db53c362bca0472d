"""``validatejobflow.volcano.sh``: a JobFlow whose flows do not form a DAG is refused on CREATE and
UPDATE with upstream's texts (trial-9 F-4).

Ports: volcano pkg/webhooks/admission/jobflows/validate/validate_jobflow_test.go and
test/e2e/admission/jobflow_validation_test.go (undefined target, cycle, valid DAG).
"""

from __future__ import annotations

import pytest

from pumice.api import scheme
from pumice.client.base import ApiError
from pumice.controllers.volcano import admission_plugins
from pumice.controllers.volcano.admission.jobflows import validate_jobflow_dag
from pumice.testing.cluster import local_cluster

DENIED = 'admission webhook "validatejobflow.volcano.sh" denied the request: '


def jobflow(name: str = "flow", **flows: list[str]) -> dict:
    """A JobFlow whose flows are the keyword names, each depending on the listed targets."""
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobRetainPolicy": "retain", "flows": [
                {"name": f, **({"dependsOn": {"targets": t}} if t else {})} for f, t in flows.items()]}}


def test_a_diamond_of_flows_is_a_dag() -> None:
    assert validate_jobflow_dag(jobflow(a=[], b=["a"], c=["a"], d=["b", "c"])) == ""


def test_a_target_that_names_no_flow_is_not_defined() -> None:
    assert validate_jobflow_dag(jobflow(a=["nosuch"], b=[])) == "jobflow Flow is not DAG: vertex is not defined: nosuch"


def test_an_undefined_target_is_reported_before_a_cycle() -> None:
    assert validate_jobflow_dag(jobflow(a=["b"], b=["a", "zz"])) == "jobflow Flow is not DAG: vertex is not defined: zz"


@pytest.mark.parametrize("flows", [{"a": ["b"], "b": ["a"]}, {"a": ["a"]}, {"a": [], "b": ["a", "d"], "c": ["b"], "d": ["c"]}],
                         ids=["two", "self", "three-behind-a-root"])
def test_a_dependency_cycle_is_not_a_dag(flows: dict[str, list[str]]) -> None:
    assert validate_jobflow_dag(jobflow(**flows)) == "jobflow Flow is not DAG"


def test_a_long_chain_is_checked_without_recursion() -> None:
    chain = {f"f{i}": ([f"f{i - 1}"] if i else []) for i in range(5000)}
    assert validate_jobflow_dag(jobflow(**chain)) == ""
    chain["f0"] = ["f4999"]
    assert validate_jobflow_dag(jobflow(**chain)) == "jobflow Flow is not DAG"


async def test_the_api_refuses_an_undefined_target_and_a_cycle_and_takes_a_dag() -> None:
    mutating, validating = admission_plugins()
    async with local_cluster(admission=[*mutating, *validating]) as c:
        with pytest.raises(ApiError) as e:
            await c.client.create(jobflow("flow-bad", a=["nosuch"]))
        assert (e.value.code, e.value.message) == (400, DENIED + "jobflow Flow is not DAG: vertex is not defined: nosuch")
        with pytest.raises(ApiError) as e:
            await c.client.create(jobflow("flow-cycle", a=["b"], b=["a"]))
        assert (e.value.code, e.value.message) == (400, DENIED + "jobflow Flow is not DAG")
        created = await c.client.create(jobflow("flow-ok", a=[], b=["a"]))
        assert [f["name"] for f in created["spec"]["flows"]] == ["a", "b"]
        # UPDATE is checked too: turning the valid flow into a cycle is refused and changes nothing
        created["spec"]["flows"][0]["dependsOn"] = {"targets": ["b"]}
        with pytest.raises(ApiError) as e:
            await c.client.update(created)
        assert (e.value.code, e.value.message) == (400, DENIED + "jobflow Flow is not DAG")
        stored = await c.client.get(scheme.JOB_FLOW, "flow-ok", "default")
        assert "dependsOn" not in stored["spec"]["flows"][0]
