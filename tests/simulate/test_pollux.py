"""The Pollux workload adapter (``philly-via-pollux/workloads/workload-N.csv``) end to end: each job
is a gang of one-GPU workers that trains for the time Pollux's own traces give its configuration."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pumice.simulate import metrics
from pumice.simulate.nodes import GPU, InputError, load_nodes
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import POLLUX_RUN_SECONDS, load_workload, pollux_run_seconds, sample
from pumice.testing.paths import shared_dir

WORKLOADS = shared_dir() / "traces/philly-via-pollux/workloads"


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open() as f:
        return {r["name"]: r for r in csv.DictReader(f)}


def test_every_configuration_of_the_eight_workloads_has_its_own_run_time() -> None:
    seen = {(r["application"], int(r["num_replicas"]), int(r["batch_size"]))
            for p in sorted(WORKLOADS.glob("workload-*.csv")) for r in _rows(p).values()}
    assert len(seen) == 16 and seen == set(POLLUX_RUN_SECONDS)
    # the generator keeps configurations that train in under 12 hours
    assert all(0 < s < 12 * 3600 for s in POLLUX_RUN_SECONDS.values())


def test_a_configuration_not_in_the_table_keeps_the_nearest_ones_gpu_time_and_an_unknown_app_is_refused() -> None:
    assert pollux_run_seconds("bert", 8, 384) == POLLUX_RUN_SECONDS[("bert", 8, 384)]
    assert pollux_run_seconds("bert", 4, 384) == POLLUX_RUN_SECONDS[("bert", 6, 384)] * 6 / 4
    assert pollux_run_seconds("cifar10", 10, 2048) == POLLUX_RUN_SECONDS[("cifar10", 8, 2048)] * 8 / 10  # tie: smaller
    with pytest.raises(InputError, match="'gpt' has no run time; known: bert, cifar10"):
        pollux_run_seconds("gpt", 8, 64)


@pytest.fixture
def pollux_testbed(tmp_path: Path) -> Path:
    """Pollux's testbed as a Tiresias-style cluster spec: 16 Nodes of 4 GPUs, 48 cpu, 192 GiB."""
    p = tmp_path / "pollux-testbed.csv"
    p.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,16,4,48,192\n")
    return p


def test_a_pollux_workload_sample_runs_each_job_as_a_gang_for_its_configurations_time(pollux_testbed: Path) -> None:
    path = WORKLOADS / "workload-1.csv"
    src = _rows(path)
    w = sample(load_workload(path), 24, seed=1)
    nodes = load_nodes(pollux_testbed)
    assert len(nodes) == 16 and {n.capacity()[GPU] for n in nodes} == {"4"}
    r = simulate(SimConfig(nodes, w))
    assert r.ended_by == "done"
    jobs = metrics.job_rows(r.recorder)
    assert len(jobs) == 24 and {j["status"] for j in jobs} == {"Succeeded"}
    for j in jobs:
        row = src[j["job"]]
        n = int(row["num_replicas"])
        assert (j["kind"], j["tasks"], j["gpus"], j["arrival"]) == ("Job", n, n, float(row["time"]))
        run = pollux_run_seconds(row["application"], n, int(row["batch_size"]))
        assert j["finish"] - j["start"] == pytest.approx(run, abs=1.0), j  # the gang trains together
        assert j["jct"] == pytest.approx(j["queueing_delay"] + run, abs=1.0)
        assert len(j["nodes"].split()) >= -(-n // 4)  # at most 4 one-GPU workers per Node
    summary = metrics.summary(r.recorder, r.end_time, r.ended_by)
    assert summary["gang"]["partial_gang_seconds"] == 0
    assert summary["gang"]["gang_jobs"] == sum(1 for j in jobs if j["tasks"] > 1)
