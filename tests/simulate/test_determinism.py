"""Same input, configuration and seed: byte-identical outputs (timing.json aside, it holds wall time)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pumice.simulate import metrics, report
from pumice.simulate.nodes import load_nodes
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload, sample
from pumice.testing.paths import shared_dir
from pumice.testing.volcano import default_conf_with_actions

from .conftest import two_nodes_two_slots


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.name != "timing.json"}


def test_two_runs_with_the_same_seed_write_identical_files(two_gangs: Path, tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        r = simulate(SimConfig(two_nodes_two_slots(), load_workload(two_gangs), seed=7))
        report.write_run(r, tmp_path / f"run{i}")
        outs.append(_files(tmp_path / f"run{i}"))
    assert set(outs[0]) >= {"summary.json", "jobs.csv", "jobs.json", "pods.csv", "pods.json", "timeline.csv",
                            "report.html", "utilization.png", "queues.png", "delay_cdf.png"}
    assert outs[0] == outs[1]


RECLAIM_CONF = default_conf_with_actions("enqueue, allocate, preempt, reclaim, backfill")


def test_the_incremental_snapshot_decides_what_the_full_build_decides(tmp_path: Path) -> None:
    """The scheduler's incremental snapshot (the default) against the full rebuild of every object
    at every session, on a contended Philly sample with one Queue per VC, preempt and reclaim on:
    the same files byte for byte, and in ``verify`` mode every session's two snapshots equal."""
    spec = tmp_path / "n2g4.csv"
    spec.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,2,4,32,256\n")
    conf = tmp_path / "reclaim.conf"
    conf.write_text(RECLAIM_CONF)
    w = load_workload(shared_dir() / "traces/philly-via-pollux/philly.csv")
    w = replace(w, arrivals=[a for a in w.arrivals if a.gpus <= 4])
    w = sample(w, 24, seed=3)
    # arrivals squeezed into minutes: the queues contend and reclaim evicts
    w = replace(w, arrivals=[replace(a, time=(a.time - w.arrivals[0].time) / 100_000) for a in w.arrivals])
    outs = {}
    for mode in ("full", "incremental", "verify"):
        r = simulate(SimConfig(load_nodes(spec), w, scheduler_conf=str(conf), snapshot_mode=mode))
        assert r.ended_by == "done"
        assert r.snapshot_mismatches == 0
        assert metrics.summary(r.recorder, r.end_time, r.ended_by)["reclaims"] > 0
        report.write_run(r, tmp_path / mode, plots=False)
        outs[mode] = _files(tmp_path / mode)
    assert outs["full"] == outs["incremental"] == outs["verify"]


def test_a_rayjob_and_a_rayservice_run_twice_write_identical_files(tmp_path: Path) -> None:
    """The KubeRay controllers, the simulated Ray dashboard and the endpoints controller on the
    virtual clock are deterministic too (the README's Ray example)."""
    example = Path(__file__).resolve().parents[2] / "docs/examples/ray-workload.yaml"
    nodes = load_nodes(shared_dir() / "traces/tiresias-example/n1g4.csv")
    outs = []
    for i in range(2):
        r = simulate(SimConfig(nodes, load_workload(example), seed=3))
        report.write_run(r, tmp_path / f"run{i}", plots=False)
        outs.append(_files(tmp_path / f"run{i}"))
    assert "ready" in outs[0]["jobs.csv"].decode().splitlines()[0].split(",")
    assert outs[0] == outs[1]
