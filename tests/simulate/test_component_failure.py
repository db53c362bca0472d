"""Trial 16 F-2, second half: a controller that died of an exception during a run (MemoryError)
stopped the controller manager, and the run went on without it to a normal-looking summary
(``ended_by stalled``) and exit status 0. Now the run ends at once with one line naming the
component, exit status 1, and no report: whether the exception comes from a reconcile (a
MemoryError there is not retried with backoff, and nor is any BaseException but cancellation), a
scheduling cycle, or one of the node agent's own tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pumice.cli.main import main
from pumice.controllers.volcano.job.controller import JobReconciler
from pumice.node.provisioner import LocalPathProvisioner
from pumice.runtime.controller import Controller
from pumice.scheduler.volcano.cache.live import SchedulerCache
from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.paths import shared_dir

TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [
    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}


class Fatal(BaseException):
    """Neither an Exception nor a cancellation."""


def _controller_outside_reconcile(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    reconcile = Controller._reconcile

    async def dies(self: Controller, req: Any, t0: float | None) -> float:
        if self.name == "volcano-job":  # out of memory outside the reconcile's own error handling
            raise error
        return await reconcile(self, req, t0)

    monkeypatch.setattr(Controller, "_reconcile", dies)


def _reconciler(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    async def dies(self: JobReconciler, req: Any) -> Any:
        raise error

    monkeypatch.setattr(JobReconciler, "reconcile", dies)


def _scheduling_cycle(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    def dies(self: Scheduler) -> Any:
        raise error

    monkeypatch.setattr(Scheduler, "run_once", dies)


def _node_agent_provisioner(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    async def dies(self: LocalPathProvisioner) -> None:
        raise error

    monkeypatch.setattr(LocalPathProvisioner, "run", dies)


def _pod_group_status_write(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    async def dies(self: SchedulerCache, cur: Any, status: Any) -> None:
        raise error

    monkeypatch.setattr(SchedulerCache, "_patch_pg", dies)


def _simulate(tmp_path: Path, arrivals: list[dict[str, Any]], out: Path) -> Any:
    """``pumice simulate`` of ``arrivals`` (a YAML workload's list) on Tiresias' one-node list,
    reporting to ``out``: the CliRunner result."""
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"arrivals": arrivals}))
    return CliRunner().invoke(main, ["simulate", "--nodes", str(shared_dir() / "traces/tiresias-example/n1g4.csv"),
                                     "--workload", str(w), "--quiet", "--no-plots", "--out", str(out)])


@pytest.mark.parametrize(("inject", "error", "line"), [
    (_controller_outside_reconcile, MemoryError("injected"), "controller-volcano-job stopped with MemoryError: injected"),
    (_reconciler, MemoryError("injected"), "controller-volcano-job stopped with MemoryError: injected"),
    (_reconciler, Fatal("injected"), "controller-volcano-job stopped with Fatal: injected"),
    (_scheduling_cycle, MemoryError("injected"), "volcano-scheduler stopped with MemoryError: injected"),
    (_node_agent_provisioner, MemoryError("injected"),
     "node-agent local-path provisioner stopped with MemoryError: injected"),
], ids=["outside-reconcile", "in-reconcile", "base-exception-in-reconcile", "scheduling-cycle", "node-agent-task"])
def test_a_component_that_dies_during_the_run_fails_it_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inject: Any, error: BaseException, line: str) -> None:
    inject(monkeypatch, error)
    out = tmp_path / "o"
    r = _simulate(tmp_path, [{"name": "j", "at": 0, "duration": 10, "manifest": {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": TEMPLATE}]}}}], out)
    assert (r.exit_code, r.output.strip().splitlines()) == (1, [f"Error: simulation failed at simulated 0 s: {line}; "
                                                               "no report"])
    assert not (out / "summary.json").exists() and not (out / "jobs.csv").exists()


def test_a_memory_error_in_a_scheduler_cache_write_fails_the_run_at_the_next_session(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 19 R-11: a write task of the Volcano cache (here the first job's PodGroup status)
    that died of MemoryError was kept in the cache's ``failure``, which only wait_close_writes
    raised, and the simulator's loop never calls it: the run went on to a report. The next
    session's snapshot (the second job arrives at 5 s, its session runs at 6 s) raises it now."""
    _pod_group_status_write(monkeypatch, MemoryError("injected"))
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": TEMPLATE}]}}
    out = tmp_path / "o"
    r = _simulate(tmp_path, [{"name": "j1", "at": 0, "duration": 100, "manifest": job},
                             {"name": "j2", "at": 5, "duration": 10, "manifest": job}], out)
    assert (r.exit_code, r.output.strip().splitlines()) == (1, [
        "Error: simulation failed at simulated 6 s: volcano-scheduler stopped with MemoryError: injected; no report"])
    assert not (out / "summary.json").exists()


def test_a_memory_error_in_a_jobs_deletion_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 19 R-12: a job's fire-and-forget deletion task that died of MemoryError was only
    logged (the run went on to a report); FATAL_TYPES fail the owner, here the run."""
    from pumice.simulate import runner

    async def dies(*args: Any) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(runner, "_delete_after", dies)
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": TEMPLATE["spec"]["containers"]}}
    out = tmp_path / "o"
    r = _simulate(tmp_path, [{"name": "p", "at": 0, "duration": 10, "manifest": pod}], out)
    assert r.exit_code == 1, r.output
    assert r.output.strip().splitlines()[0] == (
        "Error: simulation failed at simulated 0 s: job p deletion stopped with MemoryError: injected; no report")
    assert not (out / "summary.json").exists()


def test_a_memory_error_creating_an_arrival_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An arrival whose create dies of MemoryError was logged as a rejected job and the run went
    on to a report; FATAL_TYPES fail the run instead (ordinary API errors still reject the job)."""
    from pumice.client.kube import Client

    create = Client.create

    async def dies(self: Client, obj: Any, *args: Any, **kwargs: Any) -> Any:
        if obj.get("kind") == "Pod" and (obj.get("metadata") or {}).get("name") == "p":
            raise MemoryError("injected")
        return await create(self, obj, *args, **kwargs)

    monkeypatch.setattr(Client, "create", dies)
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": TEMPLATE["spec"]["containers"]}}
    out = tmp_path / "o"
    r = _simulate(tmp_path, [{"name": "p", "at": 0, "duration": 10, "manifest": pod}], out)
    assert (r.exit_code, r.output.strip().splitlines()) == (1, [
        "Error: simulation failed at simulated 0 s: arrivals stopped with MemoryError: injected; no report"])
    assert not (out / "summary.json").exists()
