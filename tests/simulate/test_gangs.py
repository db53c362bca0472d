"""Acceptance: the seeds' two gangs of three on four slots, as a YAML workload."""

from __future__ import annotations

from pathlib import Path

from pumice.simulate import metrics
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload

from .conftest import two_nodes_two_slots


def test_with_gang_scheduling_no_job_ever_holds_a_partial_gang(two_gangs: Path) -> None:
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(two_gangs)))
    s = metrics.summary(r.recorder, r.end_time, r.ended_by)
    assert r.ended_by == "done"
    assert s["jobs"]["finished"] == 2
    assert s["gang"]["partial_gang_seconds"] == 0.0
    assert s["gang"]["deadlock"] is False
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    # one gang runs first; the other starts only after it finished and freed its three slots
    first, second = sorted(jobs.values(), key=lambda j: j["start"])
    assert second["start"] >= first["finish"]


def test_without_gang_scheduling_both_jobs_hold_two_and_neither_runs(two_gangs: Path, gang_off_conf: Path) -> None:
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(two_gangs), scheduler_conf=str(gang_off_conf)))
    s = metrics.summary(r.recorder, r.end_time, r.ended_by)
    assert r.ended_by == "stalled"
    assert s["gang"]["deadlock"] is True
    assert s["gang"]["jobs_holding_partial_gang_at_end"] == ["gang-0", "gang-1"]
    assert s["jobs"]["finished"] == 0
    held = {name: js.held for name, js in r.recorder.jobs.items()}
    assert held == {"gang-0": 2, "gang-1": 2}
    assert s["gang"]["partial_gang_seconds"] > 0
    # trial 5 F-8: declared stalled one stall window (600 s) after the last change (the binds at
    # 1-2 s), not at 4,200 s: the watcher's first wait was a whole progress hour
    assert 600 <= r.end_time <= 610
    assert r.end_time == r.recorder.last_change + 600


def test_an_idle_stretch_before_a_later_arrival_is_not_a_stall(tmp_path: Path) -> None:
    """Nothing changes from 11 s to 5,000 s (longer than the 600-s stall window), but an arrival
    is still due: the run waits for it and ends ``done``."""
    w = tmp_path / "w.yaml"
    pod = ("{apiVersion: v1, kind: Pod, spec: {schedulerName: volcano, restartPolicy: Never, containers: "
           "[{name: a, image: b, resources: {requests: {cpu: '1'}}}]}}")
    w.write_text(f"arrivals:\n- {{at: 0, duration: 10, name: early, manifest: {pod}}}\n"
                 f"- {{at: 5000, duration: 10, name: late, manifest: {pod}}}\n")
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(w)))
    assert r.ended_by == "done"
    jobs = {j["job"]: j for j in metrics.job_rows(r.recorder)}
    assert jobs["late"]["status"] == "Succeeded" and jobs["late"]["finish"] >= 5010


def test_the_plots_of_a_run_where_no_job_started_warn_nothing(two_gangs: Path, gang_off_conf: Path,
                                                             tmp_path: Path) -> None:
    """Trial 5 F-13: matplotlib's "No artists with labels found to put in legend" UserWarning on
    stderr for the deadlocked side of a comparison."""
    import warnings

    from pumice.simulate.report import write_run

    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(two_gangs), scheduler_conf=str(gang_off_conf)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_run(r, tmp_path / "out", plots=True)
    assert (tmp_path / "out/delay_cdf.png").stat().st_size > 0


def test_the_simulated_scheduler_keeps_no_scheduler_metrics(two_gangs: Path) -> None:
    """Nothing can scrape a run's scheduler and its virtual clock stands still inside a session
    (every latency would be 0): the run observes none of the upstream scheduler metrics, and the
    sessions still report their queue shares to the recorder."""
    from pumice.scheduler.volcano import metrics as sched_metrics

    def e2e_count() -> float:
        return next(s.value for m in sched_metrics.e2e_scheduling_latency.collect() for s in m.samples
                    if s.name.endswith("_count"))

    scheduled = sched_metrics.child(sched_metrics.schedule_attempts, "scheduled")
    before, scheduled_before = e2e_count(), scheduled._value.get()
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(two_gangs)))
    assert r.ended_by == "done" and r.recorder.finished == 2
    assert e2e_count() == before
    assert scheduled._value.get() == scheduled_before
    assert r.recorder.deserved  # the queue shares the sessions report
