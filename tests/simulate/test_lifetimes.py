"""Trial 6 F-1: every YAML arrival ends, or the run ends ``stalled``; none runs on forever."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.simulate import metrics
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload

from .conftest import two_nodes_two_slots

POD = "{{apiVersion: v1, kind: Pod, {meta}spec: {{{policy}containers: [{{name: c, image: x, resources: {{requests: {{cpu: '1'}}}}}}]}}}}"


def _run(tmp_path: Path, text: str) -> tuple[object, dict[str, dict[str, object]]]:
    w = tmp_path / "w.yaml"
    w.write_text(text)
    # --until 3 h only as a safety net: before the fix these runs went on for ever
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(w), until=3 * 3600))
    return r, {j["job"]: j for j in metrics.job_rows(r.recorder)}


def test_a_bare_pod_with_restart_policy_always_lives_its_duration_once_running(tmp_path: Path) -> None:
    """Default restartPolicy (Always): the Pod never ends on its own; ``duration`` is its lifetime
    once Running (openb's scheduled -> deleted), then the run deletes it and ends ``done``."""
    pod = POD.format(meta="", policy="")
    never = POD.format(meta="", policy="restartPolicy: Never, ")
    r, jobs = _run(tmp_path, f"arrivals:\n- {{at: 0, duration: 10, name: always, manifest: {pod}}}\n"
                             f"- {{at: 0, duration: 10, name: never, manifest: {never}}}\n")
    assert r.ended_by == "done"  # type: ignore[attr-defined]
    assert jobs["always"]["status"] == "Deleted" and jobs["always"]["finish"] == 10.0
    assert jobs["never"]["status"] == "Succeeded" and jobs["never"]["finish"] == 10.0
    pods = {p.name: p for p in r.recorder.pods.values()}  # type: ignore[attr-defined]
    assert pods["always"].started == 0.0 and pods["always"].deleted is not None


def test_a_pod_restarting_for_ever_is_a_stall_not_an_endless_run(tmp_path: Path) -> None:
    """A container that fails every 10 s under restartPolicy OnFailure is restarted for ever (as
    under Always): its restarts are no progress, so the run ends ``stalled`` one window (600 s)
    after the last change of a Pod's life (the binds at 0 s), not at --until."""
    failing = POD.format(meta="metadata: {annotations: {pumice.io/sim-exit-code: '1'}}, ",
                         policy="restartPolicy: OnFailure, ")
    ok = POD.format(meta="", policy="restartPolicy: OnFailure, ")
    r, jobs = _run(tmp_path, f"arrivals:\n- {{at: 0, duration: 10, name: loop, manifest: {failing}}}\n"
                             f"- {{at: 0, duration: 30, name: fin, manifest: {ok}}}\n")
    assert r.ended_by == "stalled"  # type: ignore[attr-defined]
    assert 600 <= r.end_time <= 700  # type: ignore[attr-defined]
    assert jobs["fin"]["status"] == "Succeeded"
    assert jobs["loop"]["status"] == "Running"
    assert [p.evictions for p in r.recorder.pods.values()] == [0, 0]  # type: ignore[attr-defined]


def test_a_vcjob_whose_pods_restart_for_ever_is_warned_about_before_the_run(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A vcjob task template without restartPolicy gets Kubernetes' Always: its Pods restart after
    their duration and the job never completes (as on a cluster); the loader says so."""
    w = tmp_path / "w.yaml"
    w.write_text("arrivals:\n- {at: 0, duration: 30, name: vj, manifest: {apiVersion: batch.volcano.sh/v1alpha1, "
                 "kind: Job, spec: {minAvailable: 1, tasks: [{name: w, replicas: 1, template: {spec: {containers: "
                 "[{name: c, image: x}]}}}]}}}\n")
    with caplog.at_level("WARNING", logger="pumice.simulate"):
        load_workload(w)
    assert [r.getMessage() for r in caplog.records] == [
        f"{w}: arrival vj: task w has restartPolicy Always (Kubernetes' default): its Pods restart after their "
        "duration and the job never completes (the run ends stalled); give the template restartPolicy: Never or "
        "OnFailure"]
    caplog.clear()
    w.write_text(w.read_text().replace("{spec: {containers", "{spec: {restartPolicy: OnFailure, containers"))
    with caplog.at_level("WARNING", logger="pumice.simulate"):
        load_workload(w)
    assert caplog.records == []


def test_an_arrival_after_194_simulated_days_runs_and_the_run_ends(tmp_path: Path) -> None:
    """Trial 7 F-5: past 2**24 simulated seconds asyncio's 1-ns clock resolution no longer moved a
    float time, a timer due at the loop's time never ran and the run spun at 4661 h for ever."""
    p = tmp_path / "w.yaml"
    p.write_text("arrivals:\n  - {at: 2e7, duration: 10, name: late, manifest: {apiVersion: v1, kind: Pod, "
                 "spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}}\n")
    r = simulate(SimConfig([NodeSpec("n0", 4000, 16 * 1024**3, pods=20)], load_workload(p)))
    job = {j["job"]: j for j in metrics.job_rows(r.recorder)}["late"]
    assert (r.ended_by, job["status"], job["arrival"], job["finish"]) == ("done", "Succeeded", 2e7, 2e7 + 10)


def test_a_failure_while_replaying_arrivals_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The arrivals task's exception was never looked at: the run went on as if every arrival was
    in and reported a run that never replayed the rest (errors are never swallowed)."""
    from pumice.simulate import runner

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("scheduling the deletion broke")

    monkeypatch.setattr(runner, "_delete_later", broken)
    p = tmp_path / "w.yaml"
    deployment = ("{apiVersion: apps/v1, kind: Deployment, spec: {replicas: 1, selector: {matchLabels: {app: d}}, "
                  "template: {metadata: {labels: {app: d}}, spec: {containers: [{name: c, image: x}]}}}}")
    pod = POD.format(meta="", policy="restartPolicy: Never, ")
    p.write_text(f"arrivals:\n  - {{at: 0, duration: 50, name: d, manifest: {deployment}}}\n"
                 f"  - {{at: 10, duration: 5, name: p, manifest: {pod}}}\n")
    with pytest.raises(RuntimeError, match="scheduling the deletion broke"):
        simulate(SimConfig([NodeSpec("n1", 4000, 8 * 1024**3, pods=10)], load_workload(p)))


def test_the_runs_own_deletes_ignore_404_and_log_any_other_refusal(caplog: pytest.LogCaptureFixture) -> None:
    """A clean-up delete that finds the object gone (404) is expected; any other refusal is logged
    with the job and the object, not dropped (it used to be suppressed whatever it was)."""
    import asyncio
    import logging

    from pumice.api.scheme import Scheme
    from pumice.client.base import ApiError
    from pumice.simulate import runner
    from pumice.simulate.workload import Arrival

    class Api:
        scheme = Scheme.builtin()

        def __init__(self, code: int) -> None:
            self.code = code

        async def delete(self, *_a: object, **_k: object) -> None:
            raise ApiError(self.code, "Conflict" if self.code == 409 else "NotFound", "nope")

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}
    a = Arrival(time=0.0, job="j", kind="Pod", objects=(pod,))
    with caplog.at_level(logging.DEBUG, logger=runner.log.name):
        asyncio.run(runner._cleanup(Api(404), a))  # type: ignore[arg-type]
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        asyncio.run(runner._cleanup(Api(409), a))  # type: ignore[arg-type]
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == ["job j: deleting Pod default/p was refused: nope"]
