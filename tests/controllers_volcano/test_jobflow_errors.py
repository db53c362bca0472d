"""The JobFlow controller's failure path, as upstream's handleJobFlowErr: a missing JobTemplate
fails the pass (retried with backoff), and the failure after MAX_REQUEUE_NUM retries becomes a
Warning Event; a flow graph that is not a DAG is no error (the webhook's job)."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.controllers.volcano.jobflow import MAX_REQUEUE_NUM, JobFlowReconciler
from pumice.runtime.reconcile import Request, Result


class _Lister:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs}

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objs.get((namespace, name))

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return [o for (ns, _), o in self.objs.items() if namespace in (None, ns)]


class _Client:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("create", obj["metadata"]["name"]))
        return obj

    async def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("update_status", obj["metadata"]["name"]))
        return obj


def _flow(flows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": "flow", "namespace": "default", "uid": "u1"}, "spec": {"flows": flows}}


def _reconciler(jf: dict[str, Any]) -> tuple[JobFlowReconciler, _Client, list[tuple[str, str, str]]]:
    events: list[tuple[str, str, str]] = []
    client = _Client()
    r = JobFlowReconciler(client, _Lister(jf), _Lister(), _Lister(),  # type: ignore[arg-type]
                          lambda _o, kind, reason, msg: events.append((kind, reason, msg)))
    return r, client, events


async def test_a_missing_template_fails_the_pass_and_after_the_retries_records_upstreams_event() -> None:
    r, client, events = _reconciler(_flow([{"name": "prepare"}, {"name": "other"}]))
    req = Request("default", "flow")
    for _ in range(MAX_REQUEUE_NUM):
        with pytest.raises(LookupError, match=r'jobtemplate\.flow\.volcano\.sh "prepare" not found'):
            await r.reconcile(req)
    assert events == []
    assert await r.reconcile(req) == Result()
    assert events == [("Warning", "SyncJobFlow",
                       'SyncJobFlow JobFlow failed for sync jobflow flow failed for jobtemplate.flow.volcano.sh '
                       '"prepare" not found, event is OutOfSync, action is SyncJobFlow')]
    # the pass stopped at the first failing flow and wrote no status, as deployJob's early return
    assert client.calls == []
    with pytest.raises(LookupError):  # the count starts over
        await r.reconcile(req)
    assert len(events) == 1


@pytest.mark.parametrize("flows", [
    [{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}],
    [{"name": "a", "dependsOn": {"targets": ["nowhere"]}}],
])
async def test_a_flow_graph_that_is_not_a_dag_waits_with_no_event(flows: list[dict[str, Any]]) -> None:
    r, client, events = _reconciler(_flow(flows))
    for _ in range(MAX_REQUEUE_NUM + 2):
        assert await r.reconcile(Request("default", "flow")) == Result()
    assert events == []
    assert {call for call, _ in client.calls} == {"update_status"}  # Pending; no Job is created
