"""Same input, configuration and seed: byte-identical outputs (timing.json aside, it holds wall time)."""

from __future__ import annotations

from pathlib import Path

from pumice.simulate import report
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload

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
