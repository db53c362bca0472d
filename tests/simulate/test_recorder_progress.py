"""Review 18 R-16: which RayJob / RayService updates count as progress of the run (the stall
window), and the recorder forgetting a job's last status once the job finished."""

from __future__ import annotations

from typing import Any

from pumice._util.clock import FakeClock
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.recorder import Recorder
from pumice.simulate.workload import Arrival


def _recorder() -> Recorder:
    clock = FakeClock()
    return Recorder(clock, clock.now(), [NodeSpec("n1", 8000, 8 * 1024**3)],
                    {"rj": Arrival(0.0, "rj", "RayJob", ())})


def _rayjob(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "rj", "generation": 1}, "status": status}


def _failing(pod: str, message: str = "") -> dict[str, Any]:
    """A RayJob whose cluster's Pod create was refused (KubeRay's ReplicaFailure condition, with
    the new random Pod name at every attempt)."""
    cond = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreateHeadPod",
            "message": f'Failed to create Pod: Pod "{pod}" is invalid', "lastTransitionTime": pod}
    return _rayjob(jobDeploymentStatus="Initializing", message=message,
                   rayClusterStatus={"conditions": [cond], "lastUpdateTime": pod})


def test_a_condition_message_rewritten_alone_is_no_progress() -> None:
    rec = _recorder()
    rec.rayjob_event(_failing("rj-head-abcde"))
    changes = rec.changes
    rec.rayjob_event(_failing("rj-head-fghij"))
    assert rec.changes == changes


def test_another_message_is_progress() -> None:
    """A RayJob's own message (or rayJobInfo's, a Serve application's) is not a condition's: a
    job whose only visible change is its message made progress."""
    rec = _recorder()
    rec.rayjob_event(_failing("rj-head-abcde"))
    changes = rec.changes
    rec.rayjob_event(_failing("rj-head-abcde", message="the job is being submitted"))
    assert rec.changes == changes + 1
    rec.rayjob_event(_rayjob(jobDeploymentStatus="Running", rayJobInfo={"message": "a"}))
    rec.rayjob_event(_rayjob(jobDeploymentStatus="Running", rayJobInfo={"message": "b"}))
    assert rec.changes == changes + 3


def test_a_finished_job_s_last_status_is_forgotten() -> None:
    rec = _recorder()
    rec.rayjob_event(_rayjob(jobDeploymentStatus="Running"))
    assert "rj" in rec._progress
    rec.rayjob_event(_rayjob(jobDeploymentStatus="Complete"))
    assert rec.finished == 1 and "rj" not in rec._progress
    changes = rec.changes
    rec.rayjob_event(_rayjob(jobDeploymentStatus="Complete", rayClusterStatus={"state": "suspended"}))
    assert "rj" not in rec._progress and rec.changes == changes
