"""batch/v1 Jobs through the whole chain (failure backoff shortened to 0.05 s)."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from pumice.api import Obj
from pumice.api.scheme import JOB, POD
from pumice.client.base import ApiError
from pumice.controllers.kube import indexedjob as ixj
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


# --- Indexed completion mode, backoffLimitPerIndex, successPolicy ---------------------------------

INDEX_KEY = "batch.kubernetes.io/job-completion-index"


def by_index(codes: dict[int, tuple[float, int]], default: tuple[float, int] = (0.05, 0)) -> Any:
    """Exit policy keyed on the Pod's completion index annotation: ``index -> (delay, exit code)``."""

    def policy(pod: Obj) -> tuple[float, int]:
        ix = int(pod["metadata"]["annotations"][INDEX_KEY])
        return codes.get(ix, default)

    return policy


async def job_pods(env: Env) -> list[Obj]:
    return sorted((await env.client.list(POD, "default")).items, key=lambda p: p["metadata"]["creationTimestamp"])


async def test_indexed_job_runs_one_pod_per_index_named_labelled_and_given_its_index() -> None:
    async with chain(kubelet={"exit_policy": failing_first(0)}, pod_failure_backoff=0.05) as env:
        await env.client.create(job("idx", completions=3, parallelism=2, completionMode="Indexed"))

        async def complete() -> bool:
            return await job_condition(env, "idx", "Complete") is not None

        await eventually(complete, what="Complete")
        st = (await env.client.get(JOB, "idx", "default"))["status"]
        assert st["completedIndexes"] == "0-2" and st["succeeded"] == 3 and "failedIndexes" not in st
        assert (await job_condition(env, "idx", "Complete"))["reason"] == "CompletionsReached"  # type: ignore[index]
        pods = await job_pods(env)
        assert sorted(p["metadata"]["annotations"][INDEX_KEY] for p in pods) == ["0", "1", "2"]
        for p in pods:
            ix = p["metadata"]["annotations"][INDEX_KEY]
            assert re.fullmatch(rf"idx-{ix}-[a-z0-9]{{5}}", p["metadata"]["name"])
            assert p["metadata"]["generateName"] == f"idx-{ix}-"
            assert p["metadata"]["labels"][INDEX_KEY] == ix
            assert p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "idx"
            assert p["spec"]["hostname"] == f"idx-{ix}" and "subdomain" not in p["spec"]
            assert p["spec"]["containers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": f"metadata.labels['{INDEX_KEY}']"}}}]


async def test_success_policy_met_terminates_the_rest_and_completes_with_reason_success_policy() -> None:
    """The trial-12 F-9 Job: indexes 0 and 1 succeed quickly, index 2 would run for minutes."""
    async with chain(kubelet={"exit_policy": by_index({2: (600.0, 0)})}, pod_failure_backoff=0.05) as env:
        await env.client.create(job("jidx", completions=3, parallelism=2, completionMode="Indexed",
                                    successPolicy={"rules": [{"succeededIndexes": "0,1"}]}))

        async def complete() -> bool:
            return await job_condition(env, "jidx", "Complete") is not None

        await eventually(complete, what="Complete by successPolicy")
        met = await job_condition(env, "jidx", "SuccessCriteriaMet")
        done = await job_condition(env, "jidx", "Complete")
        assert met is not None and done is not None
        assert (met["reason"], met["message"]) == ("SuccessPolicy", "Matched rules at index 0")
        assert (done["reason"], done["message"]) == ("SuccessPolicy", "Matched rules at index 0")
        st = (await env.client.get(JOB, "jidx", "default"))["status"]
        assert st["completedIndexes"] == "0,1" and st["succeeded"] == 2
        assert st.get("failed", 0) == 0 and st.get("active", 0) == 0 and st["completionTime"]

        async def index_2_gone() -> bool:
            return all(p["metadata"]["annotations"][INDEX_KEY] != "2" or p["status"].get("phase") != "Running"
                       for p in await job_pods(env))

        await eventually(index_2_gone, what="index 2 terminated")


async def test_success_policy_succeeded_count_rule() -> None:
    async with chain(kubelet={"exit_policy": by_index({0: (600.0, 0), 1: (600.0, 0)})},
                     pod_failure_backoff=0.05) as env:
        await env.client.create(job("cnt", completions=4, parallelism=4, completionMode="Indexed",
                                    successPolicy={"rules": [{"succeededIndexes": "0-1", "succeededCount": 2},
                                                             {"succeededCount": 2}]}))

        async def complete() -> bool:
            return await job_condition(env, "cnt", "Complete") is not None

        await eventually(complete, what="Complete by the count rule")
        done = await job_condition(env, "cnt", "Complete")
        assert done is not None and (done["reason"], done["message"]) == ("SuccessPolicy", "Matched rules at index 1")
        assert (await env.client.get(JOB, "cnt", "default"))["status"]["completedIndexes"] == "2,3"


async def test_backoff_limit_per_index_fails_only_that_index_then_the_job() -> None:
    async with chain(kubelet={"exit_policy": by_index({1: (0.05, 3)})}, pod_failure_backoff=0.05) as env:
        await env.client.create(job("per", completions=3, parallelism=3, completionMode="Indexed",
                                    backoffLimitPerIndex=1))

        async def failed() -> bool:
            return await job_condition(env, "per", "Failed") is not None

        await eventually(failed, what="Failed with a failed index")
        j = await env.client.get(JOB, "per", "default")
        assert j["spec"]["backoffLimit"] == 2**31 - 1
        st = j["status"]
        assert st["failedIndexes"] == "1" and st["completedIndexes"] == "0,2"
        assert st["failed"] == 2 and st["succeeded"] == 2
        cond = await job_condition(env, "per", "Failed")
        assert cond is not None and (cond["reason"], cond["message"]) == ("FailedIndexes", "Job has failed indexes")
        index1 = [p for p in await job_pods(env) if p["metadata"]["annotations"][INDEX_KEY] == "1"]
        # the list is in name order (random suffixes), not in creation order
        assert sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"] for p in index1) == ["0", "1"]


async def test_pod_failure_policy_fail_index_fails_the_index_without_retries() -> None:
    async with chain(kubelet={"exit_policy": by_index({0: (0.05, 42)})}, pod_failure_backoff=0.05) as env:
        j = job("fi", completions=2, parallelism=2, completionMode="Indexed", backoffLimitPerIndex=3)
        j["spec"]["podFailurePolicy"] = {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In",
                                                                                            "values": [42]}}]}
        await env.client.create(j)

        async def failed() -> bool:
            return await job_condition(env, "fi", "Failed") is not None

        await eventually(failed, what="Failed with index 0 failed")
        st = (await env.client.get(JOB, "fi", "default"))["status"]
        assert (st["failedIndexes"], st["completedIndexes"], st["failed"]) == ("0", "1", 1)
        assert (await job_condition(env, "fi", "Failed"))["reason"] == "FailedIndexes"  # type: ignore[index]
        assert len(await job_pods(env)) == 2


async def test_max_failed_indexes_exceeded_fails_the_job() -> None:
    async with chain(kubelet={"exit_policy": by_index({0: (0.05, 1)}, default=(600.0, 0))},
                     pod_failure_backoff=0.05) as env:
        await env.client.create(job("maxf", completions=4, parallelism=2, completionMode="Indexed",
                                    backoffLimitPerIndex=0, maxFailedIndexes=0))

        async def failed() -> bool:
            return await job_condition(env, "maxf", "Failed") is not None

        await eventually(failed, what="MaxFailedIndexesExceeded")
        cond = await job_condition(env, "maxf", "Failed")
        assert cond is not None and cond["reason"] == "MaxFailedIndexesExceeded"
        assert cond["message"] == "Job has exceeded the specified maximal number of failed indexes"
        assert (await env.client.get(JOB, "maxf", "default"))["status"]["failedIndexes"] == "0"


def test_indexes_are_written_in_upstreams_compressed_form() -> None:
    assert ixj.format_indexes(ixj.with_indexes([], [5, 0, 1, 2])) == "0-2,5"
    assert ixj.format_indexes(ixj.with_indexes([(0, 0)], [1, 3, 4, 7])) == "0,1,3,4,7"
    assert ixj.parse_indexes("0-2,5,x,7-9,12", 9) == [(0, 2), (5, 5), (7, 8)]
    assert ixj.merge([(0, 1)], [(2, 3), (6, 6)]) == [(0, 3), (6, 6)]
    assert ixj.first_pending_indexes(3, 8, [(0, 1), (3, 3)]) == [2, 4, 5]
    assert ixj.first_pending_indexes(5, 3, [(1, 1)]) == [0, 2]


def test_success_policy_rules_match_as_upstream() -> None:
    rules = {"rules": [{"succeededIndexes": "0,2-4", "succeededCount": 3}, {"succeededCount": 5}]}
    assert ixj.match_success_policy(rules, 6, [(0, 1)]) is None
    assert ixj.match_success_policy(rules, 6, [(2, 4)]) == "Matched rules at index 0"
    assert ixj.match_success_policy(rules, 6, [(0, 0), (5, 5), (2, 2), (4, 4)]) == "Matched rules at index 0"
    assert ixj.match_success_policy(rules, 6, [(1, 1), (3, 3), (5, 5)]) is None
    # indexes past completions are dropped from a rule; a rule left empty is skipped
    assert ixj.match_success_policy({"rules": [{"succeededIndexes": "7-9"}]}, 3, [(0, 2)]) is None


def test_index_template_adds_env_to_init_containers_and_keeps_a_user_value() -> None:
    j = job("long" * 15, completions=2, completionMode="Indexed")
    j["metadata"]["uid"] = "u"
    j["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "init", "image": "busybox", "env": [{"name": "JOB_COMPLETION_INDEX", "value": "mine"}]}]
    t = ixj.index_template(j, 1, (2, 1))
    assert t["spec"]["initContainers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "value": "mine"}]
    assert t["spec"]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['batch.kubernetes.io/job-completion-index']")
    assert t["metadata"]["annotations"] == {INDEX_KEY: "1", "batch.kubernetes.io/job-index-failure-count": "2",
                                            "batch.kubernetes.io/job-index-ignored-failure-count": "1"}
    assert "env" not in j["spec"]["template"]["spec"]["containers"][0]  # the Job is not changed
    gen = ixj.generate_name_with_index(j["metadata"]["name"], 1)
    assert len(gen) == 58 and gen.endswith("-1-")


# --- podFailurePolicy, podReplacementPolicy, managedBy ---------------------------------------------

HOLD = "example.com/hold"


async def test_a_bad_pod_failure_policy_is_refused_with_upstreams_causes() -> None:
    async with chain(manager=False) as env:
        j = job("bad", restart_policy="OnFailure", managedBy="job-controller")
        j["spec"]["podFailurePolicy"] = {"rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [0, 1]}},
            {"action": "Ignore"}]}
        with pytest.raises(ApiError) as e:
            await env.client.create(j)
        assert e.value.code == 422 and e.value.reason == "Invalid"
        causes = [(c["field"], c["reason"], c["message"]) for c in e.value.status["details"]["causes"]]
        assert causes == [
            ("spec.managedBy", "FieldValueInvalid",
             'Invalid value: "job-controller": must be a domain-prefixed path (such as "acme.io/foo")'),
            ("spec.podFailurePolicy.rules[0].action", "FieldValueInvalid",
             'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set'),
            ("spec.podFailurePolicy.rules[0].onExitCodes.values[0]", "FieldValueInvalid",
             "Invalid value: 0: must not be 0 for the In operator"),
            ("spec.podFailurePolicy.rules[1]", "FieldValueInvalid",
             "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
            ("spec.template.spec.restartPolicy", "FieldValueInvalid",
             'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified')]
        assert e.value.message.startswith('Job.batch "bad" is invalid: [spec.managedBy: Invalid value: ')


async def test_pod_failure_policy_ignore_does_not_count_against_the_backoff_limit() -> None:
    """backoffLimit 0: one counted failure would fail the Job; the exit-42 failures are ignored."""
    async with chain(kubelet={"exit_policy": lambda pod: (0.05, 42)}, pod_failure_backoff=0.05) as env:
        j = job("tolerant", completions=1, backoff_limit=0)
        j["spec"]["podFailurePolicy"] = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In",
                                                                                         "values": [42]}}]}
        created = await env.client.create(j)
        assert created["spec"]["podReplacementPolicy"] == "Failed"  # defaulted under a podFailurePolicy

        async def two_failed_pods() -> bool:
            return sum(1 for p in await job_pods(env) if p["status"].get("phase") == "Failed") >= 2

        await eventually(two_failed_pods, what="two ignored failures")
        env.kubelet.exit_policy = lambda pod: (0.05, 0)

        async def complete() -> bool:
            return await job_condition(env, "tolerant", "Complete") is not None

        await eventually(complete, what="Complete despite the failures")
        st = (await env.client.get(JOB, "tolerant", "default"))["status"]
        assert st["succeeded"] == 1 and st.get("failed", 0) == 0
        assert await job_condition(env, "tolerant", "Failed") is None


async def test_pod_failure_policy_fail_job_writes_upstreams_condition_message() -> None:
    async with chain(kubelet={"exit_policy": lambda pod: (0.05, 3)}, pod_failure_backoff=0.05) as env:
        j = job("fatal", completions=1, backoff_limit=6)
        j["spec"]["podFailurePolicy"] = {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "NotIn", "values": [1, 2]}}]}
        await env.client.create(j)

        async def failed() -> bool:
            return await job_condition(env, "fatal", "Failed") is not None

        await eventually(failed, what="Failed by podFailurePolicy")
        [pod] = await job_pods(env)
        want = (f"Container main for pod default/{pod['metadata']['name']} failed with exit code 3 "
                "matching FailJob rule at index 1")
        for ctype in ("FailureTarget", "Failed"):
            cond = await job_condition(env, "fatal", ctype)
            assert cond is not None and (cond["reason"], cond["message"]) == ("PodFailurePolicy", want)
        st = (await env.client.get(JOB, "fatal", "default"))["status"]
        assert st["failed"] == 1 and st["active"] == 0 and st["terminating"] == 0


def test_pod_failure_policy_matches_containers_before_init_containers_and_pod_conditions_in_order() -> None:
    """matchOnExitCodes looks at containerStatuses first; matchOnPodConditions walks the Pod's
    conditions, each against every pattern; a rule with onExitCodes is judged by them alone."""
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [7]}},
                        {"action": "Count", "onPodConditions": [{"type": "ConfigIssue", "status": "True"},
                                                                {"type": "DisruptionTarget", "status": "True"}]}]}
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "status": {
        "phase": "Failed",
        "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": 5}}}],
        "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 9}}}],
        "conditions": [{"type": "DisruptionTarget", "status": "True"}, {"type": "ConfigIssue", "status": "True"}]}}
    assert match_pod_failure_policy(policy, pod) == (
        "FailJob", "Container main for pod ns/p failed with exit code 9 matching FailJob rule at index 0")
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = 7
    assert match_pod_failure_policy(policy, pod) == (
        "FailJob", "Container init for pod ns/p failed with exit code 5 matching FailJob rule at index 0")
    pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] = 0
    assert match_pod_failure_policy(policy, pod) == (
        "Count", "Pod ns/p has condition DisruptionTarget matching Count rule at index 1")


@pytest.mark.parametrize("policy", ["Failed", "TerminatingOrFailed"])
async def test_pod_replacement_policy_decides_whether_a_replacement_waits_for_the_terminating_pod(
        policy: str) -> None:
    first: list[str] = []

    def exit_policy(pod: Obj) -> tuple[float, int] | None:
        if not first:
            first.append(pod["metadata"]["name"])
            return None  # runs until deleted
        return 0.05, 0

    async with chain(kubelet={"exit_policy": exit_policy}, pod_failure_backoff=0.05) as env:
        await env.client.create(job("swap", completions=1, podReplacementPolicy=policy))

        async def running() -> bool:
            return bool(first) and (await env.client.get(JOB, "swap", "default"))["status"].get("ready") == 1

        await eventually(running, what="first Pod running")
        # a finalizer keeps the deleted Pod terminating (Running, with a deletionTimestamp)
        await env.client.patch(POD, first[0], {"metadata": {"finalizers": [HOLD]}}, "default")
        await env.client.delete(POD, first[0], "default")

        async def terminating_counted() -> bool:
            return (await env.client.get(JOB, "swap", "default"))["status"].get("terminating") == 1

        await eventually(terminating_counted, what="status.terminating 1")
        if policy == "Failed":
            # the pass that counted the terminating Pod created nothing beside it
            assert [p["metadata"]["name"] for p in await job_pods(env)] == first
            assert (await env.client.get(JOB, "swap", "default"))["status"]["active"] == 0
            await env.kubelet.exit_pod("default", first[0], 137)  # the old Pod ends Failed

        async def replaced() -> bool:
            return len(await job_pods(env)) == 2

        await eventually(replaced, what="a replacement Pod")
        old = next(p for p in await job_pods(env) if p["metadata"]["name"] == first[0])
        assert old["metadata"].get("deletionTimestamp")
        assert old["status"]["phase"] == ("Failed" if policy == "Failed" else "Running")
        await env.client.patch(POD, first[0], {"metadata": {"finalizers": None}}, "default")

        async def complete() -> bool:
            return await job_condition(env, "swap", "Complete") is not None

        await eventually(complete, what="Complete")
        st = (await env.client.get(JOB, "swap", "default"))["status"]
        assert st["succeeded"] == 1 and st["terminating"] == 0
        assert st.get("failed", 0) == (1 if policy == "Failed" else 0)


async def test_a_job_managed_by_another_controller_is_left_alone() -> None:
    async with chain(kubelet={"exit_policy": failing_first(0)}, pod_failure_backoff=0.05) as env:
        await env.client.create(job("theirs", managedBy="kueue.x-k8s.io/multikueue"))
        await env.client.create(job("ours", managedBy="kubernetes.io/job-controller"))

        async def ours_complete() -> bool:
            return await job_condition(env, "ours", "Complete") is not None

        await eventually(ours_complete, what="our Job Complete")
        pods = await job_pods(env)
        assert [p["metadata"]["labels"]["job-name"] for p in pods] == ["ours"]
        assert not (await env.client.get(JOB, "theirs", "default")).get("status")


async def test_a_cronjobs_job_template_is_refused_with_the_job_rules_under_its_path() -> None:
    async with chain(manager=False) as env:
        template = job("unused")["spec"]
        template["podFailurePolicy"] = {"rules": [{"action": "Ignore",
                                                   "onPodConditions": [{"type": "DisruptionTarget"}]}]}
        template["template"]["spec"]["restartPolicy"] = "OnFailure"
        cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "default"},
              "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": template}}}
        with pytest.raises(ApiError) as e:
            await env.client.create(cj)
        assert e.value.code == 422
        assert [(c["field"], c["message"]) for c in e.value.status["details"]["causes"]] == [
            ("spec.jobTemplate.spec.template.spec.restartPolicy",
             'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified')]
        template["template"]["spec"]["restartPolicy"] = "Never"
        created = await env.client.create(cj)
        assert created["spec"]["jobTemplate"]["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
            {"type": "DisruptionTarget", "status": "True"}]
