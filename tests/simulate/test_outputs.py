"""Trial 6 F-8 and F-9: the outputs name their inputs, --sample beyond the trace says so, times
carry no float noise and every float field is a float."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner

from pumice.cli.main import main

NODES = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,2,0,4,16\n"
# three one-cpu Pods arriving 0.7 s apart, bound on the 0.1-s period's ticks (whose loop times
# carry float error: the timeline said 0.2999999523162842 and 10.299999952316284)
PODS = ("arrivals:\n- {at: 0.25, duration: 10, count: 3, every: 0.7, name: p, manifest: {apiVersion: v1, kind: Pod, "
        "spec: {schedulerName: volcano, restartPolicy: Never, containers: [{name: a, image: b, resources: "
        "{requests: {cpu: '1'}}}]}}}\n")
QUEUES = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: qa}\nspec: {weight: 2}\n"


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    nodes, w, q = tmp_path / "cluster.csv", tmp_path / "pods.yaml", tmp_path / "queues.yaml"
    nodes.write_text(NODES)
    w.write_text(PODS)
    q.write_text(QUEUES)
    return nodes, w, q


def test_summary_and_report_name_the_inputs_times_are_rounded_and_floats_are_floats(tmp_path: Path) -> None:
    nodes, w, q = _files(tmp_path)
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(w), "--queues", str(q),
                                  "--period", "0.1", "--seed", "7", "--quiet", "--no-plots", "--out", str(out)])
    assert r.exit_code == 0, r.output
    summ = json.loads((out / "summary.json").read_text())
    assert summ["inputs"] == {
        "nodes": str(nodes), "workload": str(w), "format": "yaml", "queues": str(q), "scheduler_conf": None,
        "batch_scheduler": "volcano", "seed": 7, "until": None, "scale": 1.0, "sample": None, "period": 0.1,
        "workload_arrivals": 3, "arrivals": 3}
    page = (out / "report.html").read_text()
    for f in (nodes, w, q):
        assert str(f) in page
    # times in milliseconds, as jobs.csv and pods.csv
    ts = [row["t"] for row in csv.DictReader((out / "timeline.csv").open())]
    assert ts == ["0.3", "1.0", "1.7", "10.3", "11.0", "11.7"]
    # no gang job: partial_gang_seconds was the integer 0 (a sum over nothing), a float elsewhere
    text = (out / "summary.json").read_text()
    assert '"partial_gang_seconds": 0.0' in text
    jobs = json.loads((out / "jobs.json").read_text())
    assert all(isinstance(j["partial_gang_seconds"], float) for j in jobs)


def test_a_sample_larger_than_the_workload_says_so_and_replays_all(tmp_path: Path) -> None:
    nodes, w, _ = _files(tmp_path)
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(w), "--sample", "50",
                                  "--quiet", "--no-plots", "--out", str(out)])
    assert r.exit_code == 0, r.output
    note = "--sample 50 is more than the 3 arrivals of the workload: all of them replayed"
    warnings = [line for line in r.output.splitlines() if line.startswith("Warning:")]
    assert warnings == [f"Warning: {note} ({w})"]
    summ = json.loads((out / "summary.json").read_text())
    assert summ["inputs"]["note"] == note and summ["inputs"]["arrivals"] == 3 and summ["jobs"]["total"] == 3
