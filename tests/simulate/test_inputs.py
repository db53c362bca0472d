"""The trace adapters on the real files in ../shared/traces (mapping and counts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.simulate.nodes import GPU, GPU_MILLI, GPU_MODEL_LABEL, InputError, load_nodes
from pumice.simulate.workload import (
    ANNOTATION_DURATION,
    GANG_SIZE_ANNOTATION,
    detect_format,
    load_workload,
    sample,
    scale,
    split_gpus,
)
from pumice.testing.paths import shared_dir

T = shared_dir() / "traces"
OPENB = T / "alibaba-clusterdata-gpu-v2023"


def test_openb_node_list_has_1523_nodes_and_6212_gpus() -> None:
    nodes = load_nodes(OPENB / "openb_node_list_all_node.csv")
    assert len(nodes) == 1523
    assert sum(n.gpus for n in nodes) == 6212
    g = next(n for n in nodes if n.gpus)
    assert g.capacity()[GPU] == str(g.gpus) and g.capacity()[GPU_MILLI] == str(g.gpus * 1000)
    # the per-card pair the deviceshare plugin reads: 1000 per card, and the cards
    assert g.capacity()["volcano.sh/gpu-memory"] == str(g.gpus * 1000)
    assert g.capacity()["volcano.sh/gpu-number"] == str(g.gpus)
    assert g.node_labels()[GPU_MODEL_LABEL] == g.gpu_model


def test_pai_machine_spec_and_tiresias_specs() -> None:
    pai = load_nodes(T / "alibaba-clusterdata-gpu-v2020/pai_machine_spec.csv")
    assert len(pai) == 1897 and sum(n.gpus for n in pai) == 6742  # the README says 1,896; the file has 1,897 rows
    assert all(n.gpu_model != "CPU" for n in pai)
    tiresias = load_nodes(T / "tiresias-example/n32g4.csv")
    assert len(tiresias) == 32 and {n.gpus for n in tiresias} == {4}


def test_an_unknown_node_list_is_refused_with_its_header(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="unknown node list header"):
        load_nodes(p)


def test_openb_pods_keep_duration_gpu_milli_priority_and_the_trace_delay() -> None:
    w = load_workload(OPENB / "openb_pod_list_default.csv")
    assert len(w.arrivals) == 8152
    first = {a.job: a for a in w.arrivals}["openb-pod-0001"]  # 6000m, 1 GPU at 460 milli, LS, 427061..12902960
    pod = first.objects[0]
    req = pod["spec"]["containers"][0]["resources"]["requests"]
    assert req == {"cpu": "6000m", "memory": "12288Mi", "volcano.sh/gpu-memory": "460"}  # on one card
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"volcano.sh/gpu-memory": "460"}  # deviceshare reads the limits, as upstream
    by_name = {a.job: a for a in w.arrivals}
    eight = next(a for a in w.arrivals if a.gpus == 8)  # a multi-GPU Pod: whole idle cards
    assert eight.objects[0]["spec"]["containers"][0]["resources"]["requests"]["volcano.sh/gpu-number"] == "8"
    assert by_name["openb-pod-0000"].objects[0]["spec"]["containers"][0]["resources"]["requests"][
        "volcano.sh/gpu-memory"] == "1000"  # a whole card
    assert pod["metadata"]["annotations"][ANNOTATION_DURATION] == str(12902960 - 427061)
    assert pod["spec"]["priorityClassName"] == "openb-ls"
    assert first.trace_delay == 0.0
    never = [a for a in w.arrivals if a.trace_delay is None]
    assert len(never) == 897  # Pending in the trace: no scheduled_time


def test_philly_splits_gangs_into_workers_of_at_most_8_gpus_and_maps_vcs_to_queues() -> None:
    w = load_workload(T / "philly-via-pollux/philly.csv")
    assert len(w.arrivals) == 82247
    assert len(w.queues) == 15 and all(q.startswith("vc-") for q in w.queues)
    big = max(w.arrivals, key=lambda a: a.gpus)
    job = big.objects[0]
    workers = [int(t["template"]["spec"]["containers"][0]["resources"]["requests"][GPU]) * t["replicas"]
               for t in job["spec"]["tasks"]]
    assert sum(workers) == big.gpus
    assert all(int(t["template"]["spec"]["containers"][0]["resources"]["requests"][GPU]) <= 8
               for t in job["spec"]["tasks"])
    assert job["spec"]["minAvailable"] == big.tasks
    assert job["spec"]["tasks"][0]["template"]["metadata"]["annotations"][GANG_SIZE_ANNOTATION] == str(big.tasks)
    assert split_gpus(20, 8) == [8, 8, 4] and split_gpus(1, 8) == [1]


def test_tiresias_pollux_and_dlrm_formats_are_detected_and_read() -> None:
    assert detect_format(T / "tiresias-example/60_job.csv") == "tiresias"
    assert len(load_workload(T / "tiresias-example/60_job.csv").arrivals) == 60
    assert len(load_workload(T / "philly-via-pollux/workloads/workload-1.csv").arrivals) == 160
    dlrm = load_workload(T / "alibaba-clusterdata-gpu-v2025/disaggregated_DLRM_trace.csv")
    assert len(dlrm.arrivals) == 23871
    assert all(a.duration is None for a in dlrm.arrivals)  # long-running replicas, deleted at deletion_time


def test_sample_and_scale_are_seeded_and_keep_time_order() -> None:
    w = load_workload(T / "tiresias-example/60_job.csv")
    a, b = sample(w, 10, 3), sample(w, 10, 3)
    assert [x.job for x in a.arrivals] == [x.job for x in b.arrivals]
    assert [x.time for x in a.arrivals] == sorted(x.time for x in a.arrivals)
    assert [x.time for x in scale(w, 2.0).arrivals] == [x.time / 2 for x in w.arrivals]


def test_a_plain_manifest_given_as_a_workload_is_refused_not_simulated_as_nothing(tmp_path: Path) -> None:
    """Found by the new-user trial: a Volcano Job manifest passed as --workload ran an empty
    simulation and reported 0 jobs."""
    from pumice.simulate.workload import load_workload

    f = tmp_path / "job.yaml"
    f.write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec: {tasks: []}\n")
    with pytest.raises(InputError, match=r"no arrivals.*it holds Job manifest"):
        load_workload(f)


def test_a_rayservice_arrival_is_a_service_deleted_after_its_duration(tmp_path: Path) -> None:
    from pumice.simulate.workload import JOB_LABEL

    f = tmp_path / "w.yaml"
    f.write_text("""
arrivals:
  - at: 30
    duration: 3600
    manifest:
      apiVersion: ray.io/v1
      kind: RayService
      metadata: {name: llm, labels: {volcano.sh/queue-name: serving}}
      spec:
        serveConfigV2: "applications: [{name: a, import_path: m:a}]"
        rayClusterConfig:
          headGroupSpec: {template: {spec: {containers: [{name: ray-head, image: ray}]}}}
          workerGroupSpecs:
            - {groupName: gpu, replicas: 2, numOfHosts: 2, template: {spec: {containers: [{name: w, image: ray}]}}}
""")
    [a] = load_workload(f).arrivals
    assert (a.kind, a.job, a.time, a.queue, a.tasks) == ("RayService", "llm", 30.0, "serving", 5)
    assert a.duration is None and a.delete_after == 3600.0  # a service: deleted after its duration
    rcs = a.objects[0]["spec"]["rayClusterConfig"]
    for t in (rcs["headGroupSpec"]["template"], rcs["workerGroupSpecs"][0]["template"]):
        assert t["metadata"]["labels"][JOB_LABEL] == "llm"
        assert ANNOTATION_DURATION not in t["metadata"].get("annotations", {})  # Ray Pods run until deleted


def test_a_yaml_node_list_without_a_suffix_is_read_as_manifests(tmp_path: Path) -> None:
    # review 19 R-8: a pipe (--nodes <(cat nodes.yaml)) has no suffix; it was an unknown CSV header
    p = tmp_path / "nodes"
    p.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi}}\n"
                 "---\napiVersion: v1\nkind: Node\nmetadata: {name: n2}\nstatus: {capacity: {cpu: '2'}}\n")
    assert [(n.name, n.cpu_milli, n.memory) for n in load_nodes(p)] == [("n1", 4000, 8 * 2**30), ("n2", 2000, 2**30)]
    p.write_text("just: a mapping\n")
    with pytest.raises(InputError, match=r"unknown node list header.* or YAML Node manifests"):
        load_nodes(p)
