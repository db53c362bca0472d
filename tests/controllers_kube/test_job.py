"""batch/v1 Jobs through the whole chain (failure backoff shortened to 0.05 s)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from pumice.api import Obj
from pumice.api.scheme import JOB, POD
from pumice.controllers.kube.job import match_pod_failure_policy

from .conftest import Env, chain, eventually, job


def failing_first(n: int, delay: float = 0.05) -> Any:
    """Exit policy: the first ``n`` Pods started fail (exit 1), the rest succeed."""
    counter = itertools.count()

    def policy(pod: Obj) -> tuple[float, int]:
        return delay, (1 if next(counter) < n else 0)

    return policy


async def job_condition(env: Env, name: str, ctype: str) -> Obj | None:
    j = await env.client.get(JOB, name, "default")
    return next((c for c in (j.get("status") or {}).get("conditions") or [] if c["type"] == ctype
                 and c["status"] == "True"), None)


async def test_job_completions_3_parallelism_2_runs_at_most_2_at_a_time() -> None:
    async with chain(kubelet={"exit_policy": failing_first(0)}, pod_failure_backoff=0.05) as env:
        peak: list[int] = []
        env.kubelet._pods.add_event_handler(  # type: ignore[union-attr]
            None, lambda _o, _n: peak.append(sum(
                1 for p in env.kubelet._pods.store.list("default")  # type: ignore[union-attr]
                if p.get("status", {}).get("phase") in ("Pending", "Running")
                and not p["metadata"].get("deletionTimestamp"))), None)
        await env.client.create(job("work", completions=3, parallelism=2))

        async def complete() -> bool:
            return await job_condition(env, "work", "Complete") is not None

        await eventually(complete, what="Complete")
        j = await env.client.get(JOB, "work", "default")
        st = j["status"]
        assert st["succeeded"] == 3 and st.get("failed", 0) == 0 and st.get("active", 0) == 0
        assert st["completionTime"] and st["startTime"]
        assert (await job_condition(env, "work", "SuccessCriteriaMet"))["reason"] == "CompletionsReached"  # type: ignore[index]
        assert max(peak) <= 2
        pods = (await env.client.list(POD, "default")).items
        assert len(pods) == 3
        assert all(p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "work" for p in pods)
        assert all(p["metadata"]["labels"]["controller-uid"] == j["metadata"]["uid"] for p in pods)


async def test_failing_pods_exhaust_backoff_limit_and_fail_the_job() -> None:
    async with chain(kubelet={"exit_policy": failing_first(100)}, pod_failure_backoff=0.05) as env:
        await env.client.create(job("flaky", completions=3, parallelism=2, backoff_limit=2))

        async def failed() -> bool:
            return await job_condition(env, "flaky", "Failed") is not None

        await eventually(failed, what="Failed")
        st = (await env.client.get(JOB, "flaky", "default"))["status"]
        cond = await job_condition(env, "flaky", "Failed")
        assert cond is not None and cond["reason"] == "BackoffLimitExceeded"
        assert cond["message"] == "Job has reached the specified backoff limit"
        assert (await job_condition(env, "flaky", "FailureTarget"))["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
        # backoffLimit 2: the third failure fails the Job; with parallelism 2 the other running Pod
        # can fail in the same pass (kube's job controller counts it too), so 3 or 4
        assert st["failed"] in (3, 4)
        assert st.get("active", 0) == 0 and st.get("succeeded", 0) == 0
        assert await job_condition(env, "flaky", "Complete") is None


async def test_failures_within_backoff_limit_are_retried_until_completion() -> None:
    async with chain(kubelet={"exit_policy": failing_first(2)}, pod_failure_backoff=0.05) as env:
        await env.client.create(job("retry", completions=3, parallelism=2, backoff_limit=3))

        async def complete() -> bool:
            return await job_condition(env, "retry", "Complete") is not None

        await eventually(complete, what="Complete after retries")
        st = (await env.client.get(JOB, "retry", "default"))["status"]
        assert st["succeeded"] == 3 and st["failed"] == 2


async def test_active_deadline_fails_the_job_with_deadline_exceeded() -> None:
    async with chain(pod_failure_backoff=0.05) as env:
        await env.client.create(job("slow", completions=1, activeDeadlineSeconds=1))

        async def failed() -> bool:
            return await job_condition(env, "slow", "Failed") is not None

        await eventually(failed, what="DeadlineExceeded")
        cond = await job_condition(env, "slow", "Failed")
        assert cond is not None and cond["reason"] == "DeadlineExceeded"
        assert cond["message"] == "Job was active longer than specified deadline"

        async def no_pods() -> bool:
            return not [p for p in (await env.client.list(POD, "default")).items]

        await eventually(no_pods, what="active pods deleted")


async def test_suspended_job_creates_no_pods_until_resumed() -> None:
    async with chain(kubelet={"exit_policy": failing_first(0)}) as env:
        await env.client.create(job("later", completions=1, suspend=True))

        async def suspended() -> bool:
            return await job_condition(env, "later", "Suspended") is not None

        await eventually(suspended, what="Suspended condition")
        assert not (await env.client.list(POD, "default")).items
        await env.client.patch(JOB, "later", {"spec": {"suspend": False}}, "default")

        async def complete() -> bool:
            return await job_condition(env, "later", "Complete") is not None

        await eventually(complete, what="Complete after resume")


async def test_ttl_after_finished_deletes_the_job() -> None:
    async with chain(kubelet={"exit_policy": failing_first(0)}) as env:
        await env.client.create(job("gone", completions=1, ttlSecondsAfterFinished=0))

        async def deleted() -> bool:
            return not [j for j in (await env.client.list(JOB, "default")).items]

        await eventually(deleted, what="job deleted by TTL")


def test_pod_failure_policy_fail_job_on_exit_code_names_the_rule() -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                                              "values": [42]}}]}
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Failed", "containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": 42}}}]}}
    assert match_pod_failure_policy(policy, pod) == (
        "FailJob", "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1")
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = 1
    assert match_pod_failure_policy(policy, pod) is None
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    assert match_pod_failure_policy(policy, pod)[0] == "Ignore"  # type: ignore[index]


async def test_pod_failure_policy_fail_job_fails_at_once() -> None:
    def exit42(pod: Obj) -> tuple[float, int]:
        return 0.05, 42

    async with chain(kubelet={"exit_policy": exit42}, pod_failure_backoff=0.05) as env:
        j = job("strict", completions=2, parallelism=1, backoff_limit=6)
        j["spec"]["podFailurePolicy"] = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In",
                                                                                          "values": [42]}}]}
        await env.client.create(j)

        async def failed() -> bool:
            return await job_condition(env, "strict", "Failed") is not None

        await eventually(failed, what="Failed by podFailurePolicy")
        cond = await job_condition(env, "strict", "Failed")
        assert cond is not None and cond["reason"] == "PodFailurePolicy"
        assert "failed with exit code 42 matching FailJob rule at index 0" in cond["message"]
        assert (await env.client.get(JOB, "strict", "default"))["status"]["failed"] == 1


@pytest.mark.looptime
async def test_replacement_pods_wait_the_upstream_backoff_10s_then_20s() -> None:
    """Virtual time: upstream's 10 s base backoff doubling per consecutive failure."""
    from pumice._util.clock import parse_rfc3339

    async with chain(kubelet={"exit_policy": failing_first(2, delay=1.0)}) as env:
        await env.client.create(job("slowretry", completions=1, backoff_limit=3))

        async def complete() -> bool:
            return await job_condition(env, "slowretry", "Complete") is not None

        await eventually(complete, timeout=300, what="Complete after two backed-off retries")
        created = sorted(parse_rfc3339(p["metadata"]["creationTimestamp"])
                         for p in (await env.client.list(POD, "default")).items)
        assert len(created) == 3
        # pod 1 fails ~1 s after start; the next waits >= 10 s; the third >= 20 s after the 2nd failure
        assert created[1] - created[0] >= 10
        assert created[2] - created[1] >= 20
