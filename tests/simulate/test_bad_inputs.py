"""Trial 6 F-3 and F-7: a bad input file of any format is refused before the run in one line that
names the file (and for a CSV value, its row, line and column), exit status 2."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pumice.cli.main import main
from pumice.simulate.nodes import InputError, load_nodes
from pumice.simulate.workload import load_workload
from pumice.testing.paths import shared_dir

TIRESIAS_NODES = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,2,4,40,256\n"
TIRESIAS = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
OPENB = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
PHILLY = "timestamp,num_gpus,cluster,duration\n"
POLLUX = "name,time,application,num_replicas,batch_size\n"
DLRM = "instance_sn,role,app_name,cpu_request,gpu_request,memory_request,creation_time,deletion_time\n"


def _simulate(tmp_path: Path, nodes: Path, workload: Path, *extra: str) -> tuple[int, list[str]]:
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(workload), "--quiet",
                                  "--no-plots", "--out", str(tmp_path / "o"), *extra])
    assert "Traceback" not in r.output and "internal error" not in r.output
    assert not (tmp_path / "o").exists()  # refused before the run
    return r.exit_code, r.output.strip().splitlines()


def _files(tmp_path: Path, name: str, text: str | bytes) -> tuple[Path, Path]:
    nodes, w = tmp_path / "nodes.csv", tmp_path / name
    nodes.write_text(TIRESIAS_NODES)
    if isinstance(text, bytes):
        w.write_bytes(text)
    else:
        w.write_text(text)
    return nodes, w


@pytest.mark.parametrize(("name", "text", "where"), [
    # Tiresias: the trial's file; each negative column in turn
    ("t.csv", TIRESIAS + "1,-4,0,10,resnet,100,1\n", "row 1 (line 2), column num_gpu: expected a whole number, "
                                                     "0 or more, got '-4'"),
    ("t.csv", TIRESIAS + "1,4,0,10,resnet,100,1\n2,4,-10,10,resnet,100,1\n",
     "row 2 (line 3), column submit_time: expected a number, 0 or more, got '-10'"),
    ("t.csv", TIRESIAS + "1,4,0,10,resnet,-100,1\n", "row 1 (line 2), column duration: expected a number, 0 or more, "
                                                     "got '-100'"),
    ("t.csv", TIRESIAS + "1,1.5,0,10,resnet,100,1\n", "row 1 (line 2), column num_gpu: expected a whole number, "
                                                      "0 or more, got '1.5'"),
    ("o.csv", OPENB + "p0,1000,1024,-1,1000,,LS,Running,0,100,0\n",
     "row 1 (line 2), column num_gpu: expected a whole number, 0 or more, got '-1'"),
    ("o.csv", OPENB + "p0,1000,1024,1,1000,,LS,Running,-5,100,0\n",
     "row 1 (line 2), column creation_time: expected a number, 0 or more, got '-5'"),
    ("o.csv", OPENB + "p0,-1000,1024,1,1000,,LS,Running,0,100,0\n",
     "row 1 (line 2), column cpu_milli: expected a whole number, 0 or more, got '-1000'"),
    ("p.csv", PHILLY + "2017-10-03 12:00:00,-8,vc1,100\n",
     "row 1 (line 2), column num_gpus: expected a whole number, 0 or more, got '-8'"),
    ("p.csv", PHILLY + "2017-10-03 12:00:00,8,vc1,-100\n",
     "row 1 (line 2), column duration: expected a number, 0 or more, got '-100'"),
    ("p.csv", PHILLY + "yesterday,8,vc1,100\n",
     "row 1 (line 2), column timestamp: expected a time like 2017-10-03 12:00:00, got 'yesterday'"),
    ("x.csv", POLLUX + "j,-3,bert,6,384\n", "row 1 (line 2), column time: expected a number, 0 or more, got '-3'"),
    ("x.csv", POLLUX + "j,3,bert,-6,384\n",
     "row 1 (line 2), column num_replicas: expected a whole number, more than 0, got '-6'"),
    ("d.csv", DLRM + "i_1,CN,a,-2,0,16,5,10\n", "row 1 (line 2), column cpu_request: expected a number, 0 or more, "
                                               "got '-2'"),
    ("d.csv", DLRM + "i_1,CN,a,2,0,16,-5,10\n", "row 1 (line 2), column creation_time: expected a number, 0 or more, "
                                               "got '-5'"),
    # trial 7 F-9: a row with fewer or more fields than the header, a header without rows
    ("t.csv", TIRESIAS + "1,4,0,10,resnet,100\n", "row 1 (line 2): 6 field(s), the header has 7"),
    ("t.csv", TIRESIAS + "1,4,0,10,resnet,100,1\n2,4,0,10,resnet,100,1,extra\n",
     "row 2 (line 3): 8 field(s), the header has 7"),
    ("t.csv", TIRESIAS, "no data rows (only the header)"),
    # trial 7 F-4: two rows of one job
    ("t.csv", TIRESIAS + "1,4,0,10,resnet,100,1\n1,4,5,10,resnet,100,1\n",
     "row 2 (line 3), column job_id: job_id 1 repeats row 1 (line 2); each job needs its own id"),
])
def test_a_negative_or_bad_csv_value_is_one_line_naming_file_row_and_column(tmp_path: Path, name: str, text: str,
                                                                            where: str) -> None:
    nodes, w = _files(tmp_path, name, text)
    code, lines = _simulate(tmp_path, nodes, w)
    assert (code, lines) == (2, [f"Error: {w}: {where}"])


def test_a_tiresias_file_read_as_philly_says_the_header_does_not_match(tmp_path: Path) -> None:
    """Was ``bad timestamp: 'timestamp'``."""
    nodes, _ = _files(tmp_path, "unused.csv", "")
    t = shared_dir() / "traces/tiresias-example/60_job.csv"
    code, lines = _simulate(tmp_path, nodes, t, "--format", "philly")
    assert (code, lines) == (2, [f"Error: {t}: the header does not match the philly format: no column(s) timestamp, "
                                 "num_gpus, cluster (its header: job_id,num_gpu,submit_time,iterations,model_name,"
                                 "duration,interval)"])


@pytest.mark.parametrize("which", ["workload", "nodes"])
def test_random_bytes_are_one_line_naming_the_file_and_exit_2(tmp_path: Path, which: str) -> None:
    """Was ``'utf-8' codec can't decode byte 0xf6 ...`` without the file, exit 1."""
    nodes, w = _files(tmp_path, "w.csv", b"\x00\x01\xf6\xfe garbage")
    bad = w
    if which == "nodes":
        nodes, w = w, shared_dir() / "traces/tiresias-example/60_job.csv"
    code, lines = _simulate(tmp_path, nodes, w)
    assert (code, lines) == (2, [f"Error: {bad}: not a text file: byte 0xf6 at offset 2 is not UTF-8"])


@pytest.mark.parametrize(("count", "got"), [("-2", "'-2'"), ("0", "'0'")])
def test_a_node_list_without_nodes_names_the_value(tmp_path: Path, count: str, got: str) -> None:
    """Was ``no nodes``, exit 1."""
    nodes = tmp_path / "n.csv"
    nodes.write_text(f"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,{count},4,40,256\n")
    code, lines = _simulate(tmp_path, nodes, shared_dir() / "traces/tiresias-example/60_job.csv")
    assert (code, lines) == (2, [f"Error: {nodes}: row 1 (line 2), column num_node_p_switch: expected a whole "
                                 f"number, more than 0, got {got}"])


@pytest.mark.parametrize("option", ["--nodes", "--workload"])
def test_a_missing_file_is_one_line_and_exit_2(tmp_path: Path, option: str) -> None:
    """Was click's three lines (usage, hint, error)."""
    nodes, w = _files(tmp_path, "t.csv", TIRESIAS + "1,4,0,10,resnet,100,1\n")
    missing = tmp_path / "nope.csv"
    code, lines = _simulate(tmp_path, missing if option == "--nodes" else nodes, missing if option == "--workload" else w)
    assert (code, lines) == (2, [f"Error: Invalid value for '{option}': File '{missing}' does not exist."])


def test_an_empty_workload_is_one_line(tmp_path: Path) -> None:
    nodes, w = _files(tmp_path, "e.csv", "")
    assert _simulate(tmp_path, nodes, w) == (2, [f"Error: {w}: empty file"])


def test_two_yaml_arrivals_of_one_job_name_are_refused(tmp_path: Path) -> None:
    """Trial 7 F-4: both ran as job ``a``; the second was rejected (409) and the first one's run was
    reported as never started."""
    pod = "{apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}"
    nodes, w = _files(tmp_path, "w.yaml", "arrivals:\n" + "".join(
        f"  - {{at: {t}, duration: 10, name: a, manifest: {pod}}}\n" for t in (0, 5)))
    code, lines = _simulate(tmp_path, nodes, w)
    assert (code, lines) == (2, [f"Error: {w}: two arrivals make the job 'a' (at 0 s and at 5 s); job names must be "
                                 "unique in a workload (YAML: give each arrival its own `name`)"])


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Trial 7 F-9: Excel's "CSV UTF-8" starts with a BOM; the header was not recognised."""
    from pumice.simulate.workload import load_workload

    _, w = _files(tmp_path, "t.csv", "\ufeff" + TIRESIAS + "1,4,0,10,resnet,100,1\n")
    assert w.read_bytes().startswith(b"\xef\xbb\xbf")
    assert [a.job for a in load_workload(w).arrivals] == ["tiresias-001"]


@pytest.mark.parametrize("extra", [(), ("--scale", "1e-9")])
def test_an_arrival_past_the_longest_run_is_refused(tmp_path: Path, extra: tuple[str, ...]) -> None:
    """Trial 7 F-5: ``at: 1e12`` (or ``--scale 1e-9``) ran for ever."""
    at = "0" if extra else "1e12"
    nodes, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: {at}, duration: 10, name: a, manifest: "
                      "{apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}}\n"
                      "  - {at: 1000, duration: 10, name: b, manifest: "
                      "{apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}}\n")
    code, lines = _simulate(tmp_path, nodes, w, *extra)
    when = "1e+12 simulated seconds after --scale 1e-09 (3.17e+04" if extra else "1e+12 simulated seconds (3.17e+04"
    assert (code, lines) == (2, [f"Error: {w}: an arrival at {when} years) is past the 315360000 s (10 years) a run "
                                 "may last; drop it with --until or check its time"])


@pytest.mark.parametrize(("text", "error"), [
    ("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '-8', memory: 32Gi}}\n",
     "Node 'n1': status.allocatable/capacity cpu: expected a quantity, more than 0, got '-8'"),
    ("kind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: '8', pods: '0'}}\n",
     "Node 'n1': status.allocatable/capacity pods: expected a whole number, more than 0, got '0'"),
    ("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8'}}\n---\n"
     "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8'}}\n", "two Nodes are named 'n1'"),
    # trial-10 F-5: ran as a 1-CPU Node, every job Pending, ended "stalled" without a word
    ("apiVersion: v1\nkind: Node\nmetadata: {name: x}\n",
     "Node 'x': no status.allocatable or status.capacity: a simulated Node's resources are read from them"),
    ("kind: Node\nmetadata: {name: x}\nstatus: {allocatable: {}, capacity: {}}\n",
     "Node 'x': no status.allocatable or status.capacity: a simulated Node's resources are read from them"),
])
def test_a_bad_node_yaml_is_one_line_naming_the_file_and_node(tmp_path: Path, text: str, error: str) -> None:
    """Trial 7 F-14: a negative allocatable ran (stalled, exit 0); two Nodes of one name said
    ``node_names must list `nodes` distinct names`` (exit 1)."""
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(text)
    code, lines = _simulate(tmp_path, nodes, shared_dir() / "traces/tiresias-example/60_job.csv")
    assert (code, lines) == (2, [f"Error: {nodes}: {error}"])


def test_a_value_its_explicit_yaml_tag_cannot_hold_is_one_line_naming_file_line_and_column(tmp_path: Path) -> None:
    """Review 20 V-7: the simulator's YAML loader let PyYAML's ValueError out: ``Error: invalid
    literal for int() with base 10: 'zz'`` with exit 1 (a Node list), or without a position (a
    workload)."""
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: !!int zz, memory: 32Gi}}\n")
    assert _simulate(tmp_path, nodes, shared_dir() / "traces/tiresias-example/60_job.csv") == (
        2, [f"Error: {nodes}:3:29: cannot decode !!str `zz` as a !!int"])
    pod = "{apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}"
    nodes, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: !!float abc, duration: 10, name: a, manifest: {pod}}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [f"Error: {w}:2:10: cannot decode !!str `abc` as a !!float"])


def test_a_node_yaml_is_read_from_allocatable_then_capacity(tmp_path: Path) -> None:
    from pumice.simulate.nodes import load_nodes

    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("kind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: '8', memory: 32Gi},"
                     " allocatable: {cpu: 7500m}}\n")
    [n] = load_nodes(nodes)
    assert (n.cpu_milli, n.memory) == (7500, 32 * 1024**3)


def test_a_queue_the_api_server_refuses_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """Trial 7 F-14: was the API error without the file, exit 1."""
    nodes, w = _files(tmp_path, "t.csv", TIRESIAS + "1,4,0,10,resnet,100,1\n")
    queues = tmp_path / "q.yaml"
    queues.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: qa}\nspec: {weight: -1}\n")
    code, lines = _simulate(tmp_path, nodes, w, "--queues", str(queues))
    assert (code, lines) == (2, [f"Error: {queues}: Queue 'qa' refused by the API server: "
                                 "Queue.scheduling.volcano.sh \"qa\" is invalid: spec.weight: Invalid value: -1: "
                                 "spec.weight in body should be greater than or equal to 1"])


POD = "{apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}"
ANNOTATED_POD = ("{apiVersion: v1, kind: Pod, metadata: {annotations: {pumice.io/sim-duration-seconds: '5e9'}}, "
                 "spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}")


@pytest.mark.parametrize(("name", "text", "error"), [
    ("t.csv", TIRESIAS + "0,1,0,10,resnet,5e9,1\n1,1,10,10,resnet,100,1\n",
     "{w}: row 1 (line 2), column duration: 5e+09 seconds (159 years) is more than the 315360000 s (10 years) a "
     "run may last"),
    ("p.csv", PHILLY + "2017-10-03 12:00:00,1,a,5e9\n",
     "{w}: row 1 (line 2), column duration: 5e+09 seconds (159 years) is more than the 315360000 s (10 years) a "
     "run may last"),
    ("w.yaml", f"arrivals:\n  - {{at: 0, duration: 5e9, name: a, manifest: {POD}}}\n",
     "{w}: arrivals[0].duration: 5e+09 seconds (159 years) is more than the 315360000 s (10 years) a run may last"),
    ("w.yaml", f"arrivals:\n  - {{at: 0, name: a, manifest: {ANNOTATED_POD}}}\n",
     "{w}: arrivals[0].manifest.metadata.annotations[pumice.io/sim-duration-seconds]: 5e+09 seconds (159 years) "
     "is more than the 315360000 s (10 years) a run may last"),
    ("w.yaml", f"arrivals:\n  - {{at: 2e8, duration: 2e8, name: a, manifest: {POD}}}\n",
     "{w}: arrival 'a' (at 2e+08 s) runs until 4e+08 simulated seconds (12.7 years), past the 315360000 s "
     "(10 years) a run may last; check its duration or stop the run earlier with --until"),
])
def test_a_run_time_past_the_longest_run_is_refused_naming_the_row(tmp_path: Path, name: str, text: str,
                                                                   error: str) -> None:
    """Trial 8 F-6: a CSV or YAML ``duration`` (or the duration annotation) of 5e9 s was accepted and
    the run froze at simulated 2**30 s (the loop's timers are exact only that far)."""
    nodes, w = _files(tmp_path, name, text)
    assert _simulate(tmp_path, nodes, w) == (2, ["Error: " + error.format(w=w)])


def test_a_bad_exit_code_annotation_is_refused_naming_where(tmp_path: Path) -> None:
    pod = ("{apiVersion: v1, kind: Pod, metadata: {annotations: {pumice.io/sim-exit-code: '1,x'}}, "
           "spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}")
    nodes, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: 0, duration: 5, name: a, manifest: {pod}}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [
        f"Error: {w}: arrivals[0].manifest.metadata.annotations[pumice.io/sim-exit-code]: expected a whole number "
        "or a comma-separated list of them, got '1,x'"])


PRIO_POD = ("{apiVersion: v1, kind: Pod, spec: {priorityClassName: low, restartPolicy: Never, "
            "containers: [{name: c, image: x}]}}")


def test_a_yaml_arrival_naming_an_undeclared_priority_class_is_refused(tmp_path: Path) -> None:
    """Trial 8 F-20: the Priority admission refused every Pod of such a job and the run just stalled."""
    nodes, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: 0, duration: 10, name: a, manifest: {PRIO_POD}}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [
        f"Error: {w}: arrivals[0].manifest.spec.priorityClassName: no PriorityClass 'low' (declare it under "
        "`priorityClasses:`, e.g. `priorityClasses: {low: 100}`)"])
    nodes, w = _files(tmp_path, "w.yaml", "priorityClasses: {low: 2000000000}\n"
                      f"arrivals:\n  - {{at: 0, duration: 10, name: a, manifest: {PRIO_POD}}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [
        f"Error: {w}: priorityClasses[low]: expected a whole number from -2147483648 to 1000000000 (the highest "
        "user-definable priority), got 2000000000"])


def test_declared_priority_classes_are_created_and_their_pods_run(tmp_path: Path) -> None:
    from pumice.simulate import metrics
    from pumice.simulate.nodes import load_nodes
    from pumice.simulate.runner import SimConfig, simulate
    from pumice.simulate.workload import load_workload

    nodes, w = _files(tmp_path, "w.yaml", "priorityClasses: {low: 10}\n"
                      f"arrivals:\n  - {{at: 0, duration: 10, name: a, manifest: {PRIO_POD}}}\n")
    wl = load_workload(w)
    assert wl.priority_classes == {"low": 10}
    r = simulate(SimConfig(load_nodes(nodes), wl))
    assert r.ended_by == "done"
    assert [(j["job"], j["status"]) for j in metrics.job_rows(r.recorder)] == [("a", "Succeeded")]


@pytest.mark.parametrize(("extra", "error"), [
    ("count: 100000000", "arrivals[0].count: 100000000 copies is more than the 1000000 one arrival may make (each is "
                         "held in memory for the whole run)"),
    ("count: 1000, every: 1e6", "arrivals[0]: the last of its 1000 copies arrives at 9.99e+08 simulated seconds "
                                "(31.7 years), past the 315360000 s (10 years) a run may last"),
])
def test_a_count_too_large_is_refused_before_the_copies_are_made(tmp_path: Path, extra: str, error: str) -> None:
    """Trial 8 F-21: ``count: 100000000`` was expanded eagerly until memory ran out."""
    nodes, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: 0, duration: 10, {extra}, name: a, manifest: {POD}}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [f"Error: {w}: {error}"])


TEMPLATE = "{spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}"


@pytest.mark.parametrize(("manifest", "field", "pods"), [
    ("{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, spec: {minAvailable: 1, tasks: ["
     f"{{name: t, replicas: 10000000, template: {TEMPLATE}}}]}}}}", "spec.tasks[0].replicas", 10000000),
    ("{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, spec: {minAvailable: 1, tasks: ["
     f"{{name: t, replicas: 100000, template: {TEMPLATE}}}, {{name: u, replicas: 50001, template: {TEMPLATE}}}]}}}}",
     "spec.tasks[1].replicas", 150001),
    ("{apiVersion: ray.io/v1, kind: RayJob, spec: {entrypoint: x, rayClusterSpec: {headGroupSpec: "
     f"{{template: {TEMPLATE}}}, workerGroupSpecs: [{{groupName: w, replicas: 50000, numOfHosts: 3, "
     f"template: {TEMPLATE}}}]}}}}}}", "spec.rayClusterSpec.workerGroupSpecs[0].replicas", 150001),
    ("{apiVersion: apps/v1, kind: Deployment, spec: {replicas: 3000000, selector: {matchLabels: {a: b}}, "
     "template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: x}]}}}}", "spec.replicas", 3000000),
])
def test_an_arrival_making_too_many_pods_is_refused_before_the_run(tmp_path: Path, manifest: str, field: str,
                                                                    pods: int) -> None:
    """Trial 16 F-2: a vcjob task of ``replicas: 10000000`` was not refused and the run was OOM-killed
    at 20 GB; as ``count``, the Pods one arrival makes are bounded (``MAX_PODS``)."""
    nodes, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: 0, duration: 10, name: j, manifest: {manifest}}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [
        f"Error: {w}: arrivals[0].manifest.{field} (arrival 'j'): the arrival would make {pods} Pods, more than the "
        "150000 one arrival may make (each is held in memory for the whole run)"])


def test_an_arrival_of_exactly_the_most_pods_passes_the_check(tmp_path: Path) -> None:
    from pumice.simulate.workload import MAX_PODS, check_workload_document

    task = {"name": "t", "replicas": MAX_PODS - 1, "template": {}}
    check_workload_document(tmp_path / "w.yaml", {"arrivals": [{"manifest": {
        "kind": "Job", "spec": {"tasks": [task, {"name": "u", "template": {}}]}}}]})  # the second: 1 by default


@pytest.mark.parametrize(("value", "got"), [("1e20", "'1e20'"), ("high", "'high'"), ("1.5", "1.5"), ("[1]", "list")])
def test_a_priority_class_value_that_is_not_a_whole_number_is_shown(tmp_path: Path, value: str, got: str) -> None:
    # trial 11 F-11 j: YAML 1.1 reads 1e20 (no dot) as a string, and the error said "got string"
    w = tmp_path / "w.yaml"
    w.write_text(f"kind: Workload\nqueues: [default]\npriorityClasses: {{low: {value}}}\narrivals: []\n")
    code, lines = _simulate(tmp_path, shared_dir() / "traces/tiresias-example/n1g4.csv", w)
    assert (code, lines) == (2, [f"Error: {w}: priorityClasses[low]: expected a whole number from -2147483648 to "
                                 f"1000000000 (the highest user-definable priority), got {got}"])



def _vcjob(spec: str = "", task: str = "") -> str:
    return f"{{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, spec: {{{spec}tasks: [{{name: t, {task}template: " \
        f"{TEMPLATE}}}]}}}}"


def _rayjob(group: str) -> str:
    return (f"{{apiVersion: ray.io/v1, kind: RayJob, spec: {{entrypoint: x, rayClusterSpec: {{headGroupSpec: "
            f"{{template: {TEMPLATE}}}, workerGroupSpecs: [{{groupName: w, {group}template: {TEMPLATE}}}]}}}}}}")


def _deployment(spec: str) -> str:
    return (f"{{apiVersion: apps/v1, kind: Deployment, spec: {{{spec}selector: {{matchLabels: {{a: b}}}}, "
            f"template: {{metadata: {{labels: {{a: b}}}}, spec: {{containers: [{{name: c, image: x}}]}}}}}}}}")


@pytest.mark.parametrize(("manifest", "where", "got"), [
    (_vcjob(task="replicas: null, "), "spec.tasks[0].replicas", "expected a whole number, got null"),
    (_vcjob(task="replicas: '3', "), "spec.tasks[0].replicas",
     "expected a whole number (unquoted), got '3'"),
    (_vcjob(task="replicas: '3.0', "), "spec.tasks[0].replicas",
     "expected a whole number (unquoted), got '3.0'"),
    (_vcjob(task="replicas: [1], "), "spec.tasks[0].replicas", "expected a whole number, got list"),
    (_vcjob(task="replicas: -1, "), "spec.tasks[0].replicas",
     "expected a whole number, 0 or more, got -1"),
    (_vcjob(spec="minAvailable: null, "), "spec.minAvailable", "expected a whole number, got null"),
    (_rayjob("replicas: null, "), "spec.rayClusterSpec.workerGroupSpecs[0].replicas",
     "expected a whole number, got null"),
    (_rayjob("numOfHosts: 1e3, "), "spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts",
     "expected a whole number (unquoted), got '1e3'"),  # YAML 1.1: a string
    (_deployment("replicas: null, "), "spec.replicas", "expected a whole number, got null"),
])
def test_a_manifest_count_of_the_wrong_type_is_one_line_naming_the_field(tmp_path: Path, manifest: str, where: str,
                                                                         got: str) -> None:
    """Session 15: ``replicas: null`` in a vcjob task ended in Python's ``int() argument must be
    a string, ... not 'NoneType'``, and a quoted ``'3.0'`` in ``invalid literal for int()``."""
    nodes, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: 0, duration: 10, name: j, manifest: {manifest}}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [f"Error: {w}: arrivals[0].manifest.{where}: {got}"])


@pytest.mark.parametrize(("fields", "times"), [
    ("at: null", [0.0]), ("count: null", [0.0]), ("count: 2, every: null", [0.0, 0.0]),
    ("count: 2.0, every: 1", [0.0, 1.0]), ("count: '2.0', every: 1e1", [0.0, 10.0])])
def test_an_arrival_field_left_null_is_as_left_out_and_a_quoted_count_is_read(tmp_path: Path, fields: str,
                                                                               times: list[float]) -> None:
    """``at``/``every``/``count`` of null ended in ``float() argument must be ... not 'NoneType'``;
    ``count: '2.0'`` (a string: YAML 1.1 reads ``1e1`` as one too) in ``invalid literal for int()``."""
    from pumice.simulate.workload import load_workload

    _, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{duration: 10, name: j, {fields}, manifest: {POD}}}\n")
    assert [a.time for a in load_workload(w).arrivals] == times


def _null_places() -> list[tuple[str, tuple[str | int, ...]]]:
    """Trial 17 F-2's places: each a kind and the path, under the arrival's manifest, set to null."""
    ray = [("spec",), ("spec", "K"), ("spec", "K", "headGroupSpec"), ("spec", "K", "headGroupSpec", "template"),
           ("spec", "K", "headGroupSpec", "template", "metadata"),
           ("spec", "K", "workerGroupSpecs", 0, "template"),
           ("spec", "K", "workerGroupSpecs", 0, "template", "metadata", "labels")]
    return ([("RayJob", tuple("rayClusterSpec" if p == "K" else p for p in x)) for x in ray]
            + [("RayService", tuple("rayClusterConfig" if p == "K" else p for p in x)) for x in ray]
            + [("Job", p) for p in [("apiVersion",), ("metadata",), ("spec",), ("spec", "tasks", 0, "template"),
                                    ("spec", "tasks", 0, "template", "metadata", "annotations")]]
            + [("Deployment", p) for p in [("metadata",), ("metadata", "labels"), ("spec",), ("spec", "template"),
                                           ("spec", "template", "metadata")]]
            + [("Pod", p) for p in [("metadata",), ("metadata", "annotations"), ("kind",)]])


@pytest.mark.parametrize(("kind", "place"), _null_places())
def test_a_null_where_the_loader_fills_in_a_mapping_is_one_line_naming_the_field(
        tmp_path: Path, kind: str, place: tuple[str | int, ...]) -> None:
    """Trial 17 F-2: ``spec: null`` (and 18 other such places) ended in ``internal error
    (AttributeError: 'NoneType' object has no attribute 'get')``, exit 1, where a string there is
    already refused in one line naming the field."""
    import yaml

    from pumice.simulate.workload import load_workload

    def template() -> dict[str, Any]:
        return {"metadata": {"labels": {"a": "b"}, "annotations": {}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}

    cluster = {"headGroupSpec": {"template": template()}, "workerGroupSpecs": [{"groupName": "w",
                                                                                 "template": template()}]}
    manifest: dict[str, Any] = {
        "RayJob": {"apiVersion": "ray.io/v1", "spec": {"entrypoint": "x", "rayClusterSpec": cluster}},
        "RayService": {"apiVersion": "ray.io/v1", "spec": {"rayClusterConfig": cluster}},
        "Job": {"apiVersion": "batch.volcano.sh/v1alpha1", "spec": {"tasks": [{"name": "t", "template": template()}]}},
        "Deployment": {"apiVersion": "apps/v1", "spec": {"selector": {"matchLabels": {"a": "b"}},
                                                         "template": template()}},
        "Pod": {"apiVersion": "v1", **template()},
    }[kind]
    manifest.update(kind=kind, metadata={"name": "j", "labels": {}, "annotations": {}})
    at: Any = manifest
    for p in place[:-1]:
        at = at[p]
    at[place[-1]] = None
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"arrivals": [{"at": 0, "duration": 10, "manifest": manifest}]}))
    where = "arrivals[0].manifest" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in place)
    what = "a string" if place[-1] in ("kind", "apiVersion") else "a mapping"
    with pytest.raises(InputError) as e:
        load_workload(w)
    assert str(e.value) == f"{w}: {where}: expected {what}, got null"


def test_a_null_rayjob_spec_is_refused_with_exit_2(tmp_path: Path) -> None:
    """Trial 17 F-2, from the command line: ``pumice simulate`` said ``internal error``, exit 1."""
    nodes, w = _files(tmp_path, "w.yaml", "arrivals:\n  - {at: 0, duration: 10, name: j, manifest: "
                                          "{apiVersion: ray.io/v1, kind: RayJob, spec: null}}\n")
    assert _simulate(tmp_path, nodes, w) == (2, [f"Error: {w}: arrivals[0].manifest.spec: expected a mapping, got null"])


def _ray(kind: str, resources: str) -> str:
    key = "rayClusterSpec" if kind == "RayJob" else "rayClusterConfig"
    worker = f"{{spec: {{containers: [{{name: w, image: r, resources: {resources}}}]}}}}"
    return (f"{{apiVersion: ray.io/v1, kind: {kind}, spec: {{{key}: {{headGroupSpec: {{template: {TEMPLATE}}}, "
            f"workerGroupSpecs: [{{groupName: w, template: {worker}}}]}}}}}}")


@pytest.mark.parametrize(("kind", "resources", "cause"), [
    ("RayJob", "{requests: {nvidia.com/gpu: '-1'}, limits: {nvidia.com/gpu: '-1'}}",
     'limits[nvidia.com/gpu]: Invalid value: "-1": must be greater than or equal to 0'),  # limits first, as upstream
    ("RayJob", "{limits: {nvidia.com/gpu: '0.5'}}",
     'limits[nvidia.com/gpu]: Invalid value: "0.5": must be an integer'),
    ("RayService", "{requests: {cpu: '-1'}}",
     'requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    ("RayService", "{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}",
     'requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'),
])
def test_a_ray_template_the_api_server_refuses_as_a_pod_is_refused_before_the_run(
        tmp_path: Path, kind: str, resources: str, cause: str) -> None:
    """Trial 17 F-5: the Ray kind's schema takes these templates, KubeRay's Pod create was refused at
    every reconcile (a vcjob's or a Pod's is refused by the API server at once), and a run without
    ``--until`` went on until killed, with no warning."""
    from pumice.simulate.workload import load_workload

    key = "rayClusterSpec" if kind == "RayJob" else "rayClusterConfig"
    _, w = _files(tmp_path, "w.yaml", f"arrivals:\n  - {{at: 0, duration: 10, name: r, manifest: {_ray(kind, resources)}}}\n")
    with pytest.raises(InputError) as e:
        load_workload(w)
    field, message = cause.split(": ", 1)
    assert str(e.value) == (f"{w}: arrivals[0].manifest.spec.{key}.workerGroupSpecs[0].template.spec.containers[0]."
                            f"resources.{field} (arrival 'r'): {message} (the API server refuses the Pods KubeRay "
                            "makes of this template)")


def test_a_ray_template_with_whole_gpu_limits_is_read(tmp_path: Path) -> None:
    """The check of trial 17 F-5 refuses only what the API server refuses: a GPU limit alone (the
    request defaults to it) is a valid Pod."""
    from pumice.simulate.workload import load_workload

    _, w = _files(tmp_path, "w.yaml", "arrivals:\n  - {at: 0, duration: 10, name: r, manifest: "
                                      f"{_ray('RayJob', '{limits: {nvidia.com/gpu: 2}}')}}}\n")
    assert [a.gpus for a in load_workload(w).arrivals] == [2.0]


@pytest.mark.parametrize("option", ["--nodes", "--workload"])
def test_a_device_a_directory_or_a_missing_path_is_one_line_and_exit_2(tmp_path: Path, option: str) -> None:
    """``--nodes /dev/zero`` read without end until memory ran out (new-user trial)."""
    nodes, w = _files(tmp_path, "t.csv", TIRESIAS + "1,4,0,10,resnet,100,1\n")
    errors = {
        Path("/dev/zero"): "Error: /dev/zero: not a regular file (a character device)",
        tmp_path: f"Error: Invalid value for '{option}': File '{tmp_path}' is a directory.",
        tmp_path / "nope.csv": f"Error: Invalid value for '{option}': File '{tmp_path / 'nope.csv'}' does not exist.",
    }
    for bad, error in errors.items():
        code, lines = _simulate(tmp_path, bad if option == "--nodes" else nodes, bad if option == "--workload" else w)
        assert (code, lines) == (2, [error])


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    nodes, w = _files(tmp_path, "t.csv", TIRESIAS + "1,4,0,10,resnet,100,1\n")
    with w.open("r+b") as f:
        f.truncate(300 * 2**20)  # sparse: no disk, and nothing is read
    code, lines = _simulate(tmp_path, nodes, w)
    assert (code, lines) == (2, [f"Error: {w}: too large: 314,572,800 bytes (at most 256 MiB is read)"])


@pytest.fixture
def pipe() -> Iterator[Callable[[str], Path]]:
    """Makes a pipe holding a text (its writer closed), as ``<(...)`` gives: ``/dev/fd/N``,
    readable once; its read end is closed after the test."""
    ends: list[int] = []

    def make(text: str) -> Path:
        r, w = os.pipe()
        ends.append(r)
        os.write(w, text.encode())
        os.close(w)
        return Path(f"/dev/fd/{r}")

    yield make
    for r in ends:
        os.close(r)


@pytest.mark.parametrize(("nodes", "workload", "fmt", "jobs"), [
    (TIRESIAS_NODES, TIRESIAS + "1,4,0,10,resnet,100,1\n", "tiresias", 1),
    ("sn,cpu_milli,memory_mib,gpu\nn1,8000,16384,2\n", OPENB + "p0,1000,1024,1,1000,,LS,Running,0,100,0\n", "openb", 1),
    ("machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm1,T4,8,16,2\n", PHILLY + "2017-10-03 12:00:00,1,vc1,100\n", "philly", 1),
    (TIRESIAS_NODES, POLLUX + "j,3,bert,1,384\n", "pollux", 1),
    (TIRESIAS_NODES, DLRM + "i_1,CN,a,2,0,16,5,10\n", "dlrm", 1),
])
def test_a_node_list_and_a_workload_from_a_pipe_are_read_once(pipe: Callable[[str], Path], nodes: str, workload: str,
                                                               fmt: str, jobs: int) -> None:
    """Trial 18 F-5: ``--nodes <(cat n.csv)`` and an auto-detected ``--workload <(...)`` read the
    pipe twice (format detection, then the rows): the second read was empty and the error blamed
    the header."""
    assert len(load_nodes(pipe(nodes))) >= 1
    w = load_workload(pipe(workload))
    assert (w.format, len(w.arrivals)) == (fmt, jobs)


def test_simulate_reads_its_node_list_and_workload_from_pipes(tmp_path: Path, pipe: Callable[[str], Path]) -> None:
    nodes, workload = pipe(TIRESIAS_NODES), pipe(TIRESIAS + "1,4,0,10,resnet,100,1\n")
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(workload), "--quiet",
                                  "--no-plots", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["inputs"]["format"] == "tiresias" and s["jobs"]["finished"] == 1
