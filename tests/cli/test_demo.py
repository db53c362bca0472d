"""The demo's pure parts: what it applies and the line it shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pumice.cli.demo import QUEUE_LABEL, _remove_data_dir, default_sample, load_sample, status_line


def test_the_upstream_sample_is_applied_unchanged_but_for_the_queue_label() -> None:
    docs = load_sample(default_sample(), "default")
    assert [d["kind"] for d in docs] == ["RayJob", "ConfigMap"]
    rayjob = docs[0]
    assert rayjob["metadata"]["labels"] == {QUEUE_LABEL: "default"}
    assert rayjob["spec"]["entrypoint"] == "python /home/ray/samples/sample_code.py"
    assert "labels" not in docs[1]["metadata"]


def test_without_a_queue_the_sample_gets_no_label() -> None:
    docs = load_sample(default_sample(), None)
    assert "labels" not in docs[0]["metadata"]


def test_the_status_line_counts_pods_by_phase_and_terminating() -> None:
    rayjob = {"metadata": {"name": "rj", "namespace": "default"},
              "status": {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "rayClusterName": "rj-x"}}
    pods = [{"metadata": {}, "status": {"phase": "Running"}},
            {"metadata": {}, "status": {"phase": "Running"}},
            {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}}]
    line = status_line(rayjob, pods, 12.0)
    assert "deployment=Running job=RUNNING cluster=rj-x" in line
    assert line.endswith("pods: 2 Running, 1 Terminating")


def test_the_data_dir_removal_says_what_it_removes_then_that_it_is_done(tmp_path: Path, capsys: Any) -> None:
    """Trial 9 F-11: the demo sat silent for ~100 s after "pumice up stopped" while it removed its
    data dir (mostly the Ray Pods' runtime_env virtualenvs) one file at a time."""
    data = tmp_path / "demo-x"
    (data / "node" / "pods").mkdir(parents=True)
    for i in range(30):
        (data / "node" / "pods" / f"f{i}").write_bytes(b"x" * 10_000)
    _remove_data_dir(data)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"removing the data dir {data} (30 files, 0 MB; --keep-data keeps it) ...")
    assert out[1].startswith("removed in ") and out[1].endswith(" s")
    assert not data.exists()
