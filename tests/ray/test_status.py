"""The one-line RayJob summary used by progress displays."""

from __future__ import annotations

from pumice.controllers.ray.status import format_rayjob_status


def test_new_rayjob_summary() -> None:
    assert format_rayjob_status({"metadata": {"name": "j", "namespace": "ns"}}) == \
        "ns/j: deployment=New job=- cluster=-"


def test_finished_rayjob_summary_has_cluster_state_and_timings() -> None:
    job = {"metadata": {"name": "rayjob-sample", "namespace": "default"},
           "status": {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": "rayjob-sample-abcde",
                      "rayClusterStatus": {"state": "ready"}, "startTime": "2026-01-01T00:00:00Z",
                      "endTime": "2026-01-01T00:03:07Z",
                      "rayJobInfo": {"startTime": "2026-01-01T00:01:41Z", "endTime": "2026-01-01T00:03:01Z"},
                      "succeeded": 1, "failed": 0}}
    assert format_rayjob_status(job) == ("default/rayjob-sample: deployment=Complete job=SUCCEEDED "
                                         "cluster=rayjob-sample-abcde (ready) ray run 80s total 187s succeeded=1")


def test_failed_rayjob_summary_has_the_reason_and_failures() -> None:
    job = {"metadata": {"name": "j", "namespace": "d"},
           "status": {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "rayClusterName": "c",
                      "reason": "AppFailed", "failed": 2}}
    assert format_rayjob_status(job) == "d/j: deployment=Failed job=FAILED cluster=c reason=AppFailed failed=2"
