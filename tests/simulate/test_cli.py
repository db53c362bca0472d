"""``pumice simulate`` end to end on small inputs: report files, --compare, the openb sanity check,
bad input in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pumice.cli.main import main
from pumice.testing.paths import shared_dir

from .conftest import GANG_OFF_CONF

OPENB_NODES = "sn,cpu_milli,memory_mib,gpu,model\nnode-0,32000,65536,2,T4\nnode-1,32000,65536,0,\n"
# Pods in the openb pod list format: a 1-GPU Pod, a 0.5-GPU Pod, a CPU Pod, and a 2-GPU Pod that
# waits for the first to end (the trace recorded it waiting 40 s).
OPENB_PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,4000,8192,1,1000,,LS,Running,0,100,0
openb-pod-0001,2000,4096,1,500,T4,BE,Running,0,60,0
openb-pod-0002,8000,8192,0,0,,Burstable,Running,5,50,5
openb-pod-0003,4000,8192,2,1000,,LS,Running,10,200,50
"""


def test_simulate_writes_the_report_with_the_trace_check(tmp_path: Path) -> None:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(OPENB_NODES)
    pods.write_text(OPENB_PODS)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(pods), "--out", str(out),
                                  "--quiet"])
    assert r.exit_code == 0, r.output
    assert f"report: {out / 'report.html'}" in r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["ended_by"] == "done" and s["jobs"]["finished"] == 4
    check = s["trace_check"]
    assert check["trace"]["median"] == 0.0 and check["trace"]["p99"] == 40.0
    # the same four Pods on both sides; by hand: the trace waited 40 s once (0003), the
    # simulation binds three at the first session (1 s) and 0003 once 0000 has ended (101-102)
    assert check["trace"]["pods"] == check["simulated"]["pods"] == 4
    assert check["simulated"]["not_started"] == 0
    assert check["trace"]["share_over_10s"] == 0.25 and check["trace"]["share_over_60s"] == 0.0
    assert check["simulated"]["share_over_10s"] == check["simulated"]["share_over_60s"] == 0.25
    assert check["simulated"]["median"] == 1.0 and 91.0 <= check["simulated"]["max"] <= 92.0
    assert check["trace_no_gpu"]["pods"] == 1 and check["trace_no_gpu"]["max"] == 0.0
    assert check["trace_pods_never_scheduled"] == 0
    occ = check["occupancy"]
    # trace intervals: cpu 4+2+8 cores over [5, 50) of 64; GPU 1 + 0.5 + 2 over [50, 60) of 2 (the
    # made-up trace over-commits); simulated: 0003's 2 GPUs alone, or 1.5 before
    assert occ["trace_cpu_ratio_peak"] == pytest.approx(14 / 64, abs=1e-4)
    assert occ["trace_gpu_ratio_peak"] == 1.75
    assert occ["simulated_gpu_ratio_peak"] == 1.0 == s["allocation"]["gpu_ratio_peak"]
    jobs = {j["job"]: j for j in json.loads((out / "jobs.json").read_text())}
    # the 2-GPU Pod fits only after the 1-GPU (ends 101) and 0.5-GPU (ends 61) Pods ended
    assert jobs["openb-pod-0003"]["start"] >= 101
    assert jobs["openb-pod-0000"]["nodes"] == "node-0"
    assert "<table>" in (out / "report.html").read_text()
    # a cluster with GPUs: the queue's CPU and GPU shares (trial 5 F-6)
    assert set(s["queues"]) == {"default"}
    assert set(s["queues"]["default"]) == {"jobs", "allocated_cpu_share", "deserved_cpu_share", "allocated_gpu_share",
                                           "deserved_gpu_share"}
    assert s["queues"]["default"]["allocated_gpu_share"] > 0 and s["queues"]["default"]["allocated_cpu_share"] > 0
    for name in ("jobs.csv", "pods.csv", "timeline.csv", "utilization.png", "queues.png", "delay_cdf.png"):
        assert (out / name).stat().st_size > 0


def test_compare_runs_both_configurations_side_by_side(tmp_path: Path) -> None:
    gang_off = tmp_path / "gang-off.conf"
    gang_off.write_text(GANG_OFF_CONF)
    default = shared_dir() / "samples/volcano/scheduler-builtin-default.conf"
    if not default.exists():
        default = tmp_path / "default.conf"
        default.write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n'
                           '  - name: gang\n- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n'
                           '  - name: nodeorder\n')
    t = shared_dir() / "traces/tiresias-example"
    out = tmp_path / "cmp"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--sample", "12", "--compare", str(default), str(gang_off), "--out", str(out),
                                  "--quiet", "--no-plots"])
    assert r.exit_code == 0, r.output
    table = json.loads((out / "compare.json").read_text())
    assert len(table["policies"]) == 2
    assert (out / "index.html").exists()
    assert all((out / p / "summary.json").exists() for p in table["policies"])
    assert "jct.mean" in r.output
    # trial-8 F-13: a single run into the same --out replaces the comparison instead of mixing with it;
    # a file pumice did not write stays
    (out / "notes.txt").write_text("mine")
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--sample", "3", "--out", str(out), "--quiet", "--no-plots"])
    assert r.exit_code == 0, r.output
    assert f"Warning: {out} held an earlier report: its " in r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "jobs.csv", "jobs.json", "notes.txt", "pods.csv", "pods.json", "report.html", "summary.json", "timeline.csv",
        "timing.json"]
    assert json.loads((out / "summary.json").read_text())["inputs"]["arrivals"] == 3


def test_a_bad_node_list_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Exit status 2 as every other bad input file (trial 6 F-7; it was 1)."""
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n")
    t = shared_dir() / "traces/tiresias-example/60_job.csv"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(bad), "--workload", str(t), "--quiet"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [f"Error: {bad}: unknown node list header ['x', 'y']; expected openb "
                                             "(sn,cpu_milli,...), PAI (machine,gpu_type,...), Tiresias "
                                             "(num_switch,num_node_p_switch,...) or YAML Node manifests"]


def test_each_report_names_its_configuration_and_the_index_links_them(tmp_path: Path) -> None:
    import hashlib

    from pumice.scheduler.volcano.conf import DEFAULT_SCHEDULER_CONF

    gang_off = tmp_path / "gang-off.conf"
    gang_off.write_text(GANG_OFF_CONF)
    t = shared_dir() / "traces/tiresias-example"
    out = tmp_path / "cmp"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--sample", "4", "--compare", str(gang_off), str(gang_off), "--out", str(out),
                                  "--quiet", "--no-plots"])
    assert r.exit_code == 0, r.output
    digest = hashlib.sha256(GANG_OFF_CONF.encode()).hexdigest()
    want = {"file": str(gang_off), "sha256": digest, "actions": "enqueue, allocate, backfill",
            "plugins": "priority, conformance | drf, predicates, nodeorder"}
    index = (out / "index.html").read_text()
    for side in ("gang-off-A", "gang-off-B"):
        assert json.loads((out / side / "summary.json").read_text())["config"] == want
        html = (out / side / "report.html").read_text()
        assert str(gang_off) in html and digest in html and "priority, conformance | drf, predicates, nodeorder" in html
        assert f'<a href="{side}/report.html">{side}</a>' in index
    ul = index[index.index("<ul>"):index.index("</ul>")]
    assert ul.count(digest) == 2 and ul.count(str(gang_off)) == 2
    rows = {row[0]: row[1:] for row in json.loads((out / "compare.json").read_text())["rows"]}
    assert rows["config.sha256"] == [digest, digest]

    # no --scheduler-conf: the compiled-in default, named as such
    single = tmp_path / "single"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--sample", "2", "--out", str(single), "--quiet", "--no-plots"])
    assert r.exit_code == 0, r.output
    conf = json.loads((single / "summary.json").read_text())["config"]
    assert conf["file"] == "<built-in default>"
    assert conf["sha256"] == hashlib.sha256(DEFAULT_SCHEDULER_CONF.encode()).hexdigest()
    assert "<built-in default>" in (single / "report.html").read_text().replace("&lt;", "<").replace("&gt;", ">")


def test_bad_period_and_until_are_usage_errors_naming_the_option(tmp_path: Path) -> None:
    """Exit status 2, click's usage-error status, as every other CLI usage error (trial 4 N6: it was 1)."""
    t = shared_dir() / "traces/tiresias-example"
    base = ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"), "--quiet",
            "--out", str(tmp_path / "o")]
    for period in ("0", "-1"):
        r = CliRunner().invoke(main, [*base, "--period", period])
        assert r.exit_code == 2, r.output
        assert r.output.strip().splitlines()[-1] == (
            f"Error: Invalid value for '--period': the scheduling period must be more than 0 seconds, got "
            f"{float(period):g}")
    r = CliRunner().invoke(main, [*base, "--period", "1e9"])  # trial 8 F-3: ran no session, "stalled"
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines()[-1] == (
        "Error: Invalid value for '--period': the scheduling period must be less than the 600 simulated seconds "
        "without a change after which a run ends stalled, got 1e+09")
    r = CliRunner().invoke(main, [*base, "--until", "banana"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines()[-1] == (
        "Error: Invalid value for '--until': 'banana' is not a duration (e.g. 3600, 30m, 12h, 7d)")
    assert "Traceback" not in r.output
    assert not (tmp_path / "o").exists()


def test_the_readme_out_directory_is_ignored_by_git() -> None:
    root = Path(__file__).resolve().parents[2]
    assert "/simulate-out/" in (root / ".gitignore").read_text().splitlines()


# Two 0.6-GPU Pods fill 0.6 of each of node-0's two cards; a 0.8-GPU Pod then fits the Node's
# pooled 0.8 free but no card.
PER_CARD_PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,1000,1024,1,600,,LS,Running,0,100,0
openb-pod-0001,1000,1024,1,600,,LS,Running,0,100,0
openb-pod-0002,1000,1024,1,800,,LS,Running,10,60,10
"""


def test_openb_gpu_shares_are_fitted_per_card(tmp_path: Path) -> None:
    from pumice.scheduler.volcano.conf import DEFAULT_SCHEDULER_CONF

    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nnode-0,32000,65536,2,T4\n")
    pods.write_text(PER_CARD_PODS)
    pooled_conf = tmp_path / "builtin.conf"
    pooled_conf.write_text(DEFAULT_SCHEDULER_CONF)
    starts = {}
    for name, extra in (("per-card", []), ("pooled", ["--scheduler-conf", str(pooled_conf)])):
        out = tmp_path / name
        r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(pods), "--out", str(out),
                                      "--quiet", "--no-plots", *extra])
        assert r.exit_code == 0, r.output
        s = json.loads((out / "summary.json").read_text())
        starts[name] = {j["job"]: j["start"] for j in json.loads((out / "jobs.json").read_text())}
        if name == "per-card":
            assert s["config"]["file"].startswith("<built-in default + deviceshare>")
            assert "deviceshare" in s["config"]["plugins"]
    # by hand: without deviceshare the 0.8 Pod binds at the first session after 10; card by card
    # it waits until both 0.6 Pods ended (bound at 1, 100 s: gone at 101)
    assert starts["pooled"]["openb-pod-0002"] == 11.0
    assert 101.0 <= starts["per-card"]["openb-pod-0002"] <= 102.0


def test_a_configuration_without_deviceshare_is_warned_about_for_shared_gpus(tmp_path: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    from pumice.scheduler.volcano.conf import DEFAULT_SCHEDULER_CONF
    from pumice.simulate.nodes import load_nodes
    from pumice.simulate.runner import SimConfig, simulate
    from pumice.simulate.workload import load_workload

    nodes, pods, conf = tmp_path / "nodes.csv", tmp_path / "pods.csv", tmp_path / "builtin.conf"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nnode-0,32000,65536,2,T4\n")
    pods.write_text(PER_CARD_PODS)
    conf.write_text(DEFAULT_SCHEDULER_CONF)
    with caplog.at_level("WARNING", logger="pumice.simulate"):
        simulate(SimConfig(load_nodes(nodes), load_workload(pods), scheduler_conf=str(conf), until=5))
    assert any("no deviceshare plugin: GPUs are fitted pooled per Node" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="pumice.simulate"):
        simulate(SimConfig(load_nodes(nodes), load_workload(pods), until=5))  # the gpushare default
    assert not any("deviceshare" in r.getMessage() for r in caplog.records)


# node-0: 2 T4 cards, node-1: 4 V100 cards; shares, whole cards and multi-card Pods compete.
MIXED_PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,1000,1024,1,600,,LS,Running,0,100,0
openb-pod-0001,1000,1024,1,600,,LS,Running,0,100,0
openb-pod-0002,1000,1024,1,800,,LS,Running,10,60,10
openb-pod-0003,1000,1024,2,1000,,LS,Running,10,160,10
openb-pod-0004,1000,1024,1,300,,BE,Running,11,50,11
openb-pod-0005,1000,1024,1,1000,,LS,Running,12,50,12
openb-pod-0006,1000,1024,1,700,,BE,Running,12,80,12
openb-pod-0007,1000,1024,4,1000,,LS,Running,13,80,13
openb-pod-0008,1000,1024,1,500,,LS,Running,20,80,20
"""


def test_cards_are_the_same_in_every_snapshot_mode(tmp_path: Path) -> None:
    """The card memo (NodeInfo.device_memo, rows kept across sessions) against a full rebuild
    every session, and the verify mode's comparison of the two."""
    from pumice.simulate import metrics
    from pumice.simulate.nodes import load_nodes
    from pumice.simulate.runner import SimConfig, simulate
    from pumice.simulate.workload import load_workload

    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nnode-0,32000,65536,2,T4\nnode-1,32000,65536,4,V100M16\n")
    pods.write_text(MIXED_PODS)
    got = {}
    for mode in ("incremental", "full", "verify"):
        r = simulate(SimConfig(load_nodes(nodes), load_workload(pods), snapshot_mode=mode))
        got[mode] = {j["job"]: (j["start"], j["nodes"]) for j in metrics.job_rows(r.recorder)}
    assert got["incremental"] == got["full"] == got["verify"]
    starts = {k[-1]: v[0] for k, v in got["full"].items()}
    # 5 (LS) is taken before 6 (BE), both arriving at 12, by priority: as BE-BE they were ordered by
    # their uids (upstream's last tie-break), which shift with every object written before them.
    # by hand: 6 (0.7) fits no card until 2 (0.8 on node-0's second card) ends at 61; 7 (4 whole
    # cards) waits for node-1's cards, the last (3's two) free at 161; 8 (0.5) waits for 5's whole
    # card on node-1 (gone at 51); each binds at the session the freeing triggers (within a period)
    assert 61.0 <= starts["6"] <= 62.0 and 161.0 <= starts["7"] <= 162.0 and 51.0 <= starts["8"] <= 52.0


def test_a_scheduler_configuration_that_does_not_load_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Trial 5 F-1: ``actions: ""`` ran a simulation in which nothing was ever scheduled; a
    configuration that does not load is refused before the run, as a bad option value (exit 2)."""
    t = shared_dir() / "traces/tiresias-example"
    base = ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"), "--quiet",
            "--no-plots", "--out", str(tmp_path / "o")]
    known = "allocate, backfill, enqueue, gangpreempt, gangreclaim, preempt, reclaim, shuffle"
    for i, (text, error) in enumerate((
            ('actions: ""\n', f"actions: no actions; give a comma-separated list of: {known}"),
            ('actions: "enqueue,,allocate"\n',
             f"actions: an empty action name at item 2 of 'enqueue,,allocate'; give a comma-separated list of: {known}"),
            ('actions: "enqueue, nosuchaction"\n', f"actions: unknown action 'nosuchaction'; known actions: {known}"))):
        bad = tmp_path / f"bad{i}.conf"
        bad.write_text(text)
        for args in (["--scheduler-conf", str(bad)], ["--compare", str(bad), str(bad)]):
            r = CliRunner().invoke(main, [*base, *args])
            assert r.exit_code == 2, r.output
            assert r.output.strip().splitlines() == [f"Error: {bad}: {error}"]
    assert not (tmp_path / "o").exists()


def test_a_scheduler_configuration_with_an_unknown_argument_runs_with_one_warning_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """trial-6 F-12: upstream keeps ``arguments`` as a free map and ignores keys a plugin does not
    read, so this configuration runs; pumice says which key it ignores, once, before the run."""
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(OPENB_NODES)
    pods.write_text(OPENB_PODS)
    conf = tmp_path / "badarg.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n    arguments: {gang.bogus: 1}\n'
                    '- plugins:\n  - name: predicates\n  - name: proportion\n')
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(pods), "--out",
                                  str(tmp_path / "o"), "--quiet", "--no-plots", "--scheduler-conf", str(conf)])
    assert r.exit_code == 0, r.output
    assert [ln for ln in r.stderr.splitlines() if "gang.bogus" in ln or ln.startswith(("Warning", "Error"))] == [
        f"Warning: {conf}: tiers[0].plugins[0] (gang): arguments: unknown argument 'gang.bogus' ignored"]
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["ended_by"] == "done"
    assert not [r for r in caplog.records if "gang.bogus" in r.getMessage()]  # not logged again by the run


QUANTITY_RE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NODE_YAML = ('apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {capacity: {cpu: "2", memory: 4Gi}}\n')


@pytest.mark.parametrize(("text", "line"), [
    ("arrivals: [1, 2]\n", "arrivals[0]: expected a mapping, got int"),
    ("arrivals:\n- at: 0\n  duration: 10\n  manifest: {kind: Pod, spec: hello}\n",
     "arrivals[0].manifest.spec: expected a mapping, got string"),
    ("arrivals: {a: 1}\n", "arrivals: expected a list, got mapping"),
    ("arrivals:\n- at: 0\n  duration: -5\n  manifest: {kind: Pod}\n",
     "arrivals[0].duration: expected a finite number of seconds, 0 or more, got -5"),
    ("arrivals:\n- at: 0\n  manifest: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, spec: {tasks: [x]}}\n",
     "arrivals[0].manifest.spec.tasks[0]: expected a mapping, got string"),
    ("queues: [[a]]\narrivals: []\n", "queues[0]: expected a Queue name, got list"),
    # trial 9 F-9: a bad quantity was refused without its place (`not a valid yaml workload: quantities ...`)
    ("arrivals:\n- {at: 0, duration: 5, name: ok, manifest: {apiVersion: v1, kind: Pod}}\n"
     "- at: 0\n  duration: 5\n  name: c\n  manifest: {apiVersion: v1, kind: Pod, spec: {containers: "
     "[{name: a, image: b, resources: {requests: {cpu: abc}}}]}}\n",
     f"arrivals[1].manifest.spec.containers[0].resources.requests[cpu] (arrival 'c'): {QUANTITY_RE}: 'abc'"),
    ("arrivals:\n- at: 0\n  duration: 5\n  manifest: {apiVersion: ray.io/v1, kind: RayJob, metadata: {name: rj},\n"
     "    spec: {rayClusterSpec: {headGroupSpec: {template: {spec: {containers: [{name: h, image: r}]}}},\n"
     "      workerGroupSpecs: [{template: {spec: {containers: [{name: w, image: r,\n"
     "        resources: {limits: {nvidia.com/gpu: 1x}}}]}}}]}}}\n",
     "arrivals[0].manifest.spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].resources."
     f"limits[nvidia.com/gpu] (arrival 'rj'): {QUANTITY_RE}: '1x'"),
    ("arrivals:\n- at: 0\n  duration: 5\n  manifest: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, spec: {tasks:\n"
     "    [{replicas: 1, template: {spec: {initContainers: [{name: i, image: b, resources: {requests: "
     "{memory: 1 Gi}}}]}}}]}}\n",
     f"arrivals[0].manifest.spec.tasks[0].template.spec.initContainers[0].resources.requests[memory]: {QUANTITY_RE}: "
     "'1 Gi'"),
    ("arrivals:\n- {at: 0, duration: 5, manifest: {apiVersion: v1, kind: Pod, spec: {overhead: {cpu: [1]}}}}\n",
     f"arrivals[0].manifest.spec.overhead[cpu]: {QUANTITY_RE}: '[1]'"),
])
def test_a_malformed_yaml_workload_is_one_line_naming_where_and_exit_2(tmp_path: Path, text: str, line: str) -> None:
    """Trial 5 F-4: these ended in "internal error (TypeError/AttributeError)" or a wrong message."""
    nodes, w = tmp_path / "nodes.yaml", tmp_path / "w.yaml"
    nodes.write_text(NODE_YAML)
    w.write_text(text)
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(w), "--quiet", "--no-plots",
                                  "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [f"Error: {w}: {line}"]
    assert "internal error" not in r.output and not (tmp_path / "o").exists()


def test_yaml_syntax_errors_are_one_line_with_line_and_column(tmp_path: Path) -> None:
    """Trial 5 F-10: PyYAML's 8-line message with context and caret, for --workload and --queues."""
    nodes, bad = tmp_path / "nodes.yaml", tmp_path / "bad.yaml"
    nodes.write_text(NODE_YAML)
    bad.write_text("a: 1\nkey: [unclosed\n")
    good = tmp_path / "w.yaml"
    good.write_text("arrivals:\n- {at: 0, duration: 1, manifest: {apiVersion: v1, kind: Pod}}\n")
    for args in (["--workload", str(bad)], ["--workload", str(good), "--queues", str(bad)]):
        r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), *args, "--quiet", "--out",
                                      str(tmp_path / "o")])
        assert r.exit_code == 2, r.output
        assert r.output.strip().splitlines() == [f"Error: {bad}:3:1: expected ',' or ']', but got '<stream end>'"]


@pytest.mark.parametrize(("args", "line"), [
    (["--scale", "nan"], "Error: Invalid value for '--scale': the arrival-rate factor must be a finite number more "
                         "than 0, got nan"),
    (["--scale", "0"], "Error: Invalid value for '--scale': the arrival-rate factor must be a finite number more "
                       "than 0, got 0"),
    (["--until", "-5"], "Error: Invalid value for '--until': the simulated time to stop at must be more than 0 "
                        "seconds, got -5"),
    (["--until", "nan"], "Error: Invalid value for '--until': the simulated time to stop at must be more than 0 "
                         "seconds, got nan"),
    (["--sample", "-3"], "Error: Invalid value for '--sample': -3 is not in the range x>=1."),
])
def test_bad_scale_until_and_sample_are_usage_errors(tmp_path: Path, args: list[str], line: str) -> None:
    """Trial 5 F-7: --scale nan ran with nan times, --until -5 ran 0 s, --sample -3 printed Python's message."""
    t = shared_dir() / "traces/tiresias-example"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--quiet", "--out", str(tmp_path / "o"), *args])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines()[-1] == line


def test_an_unwritable_out_is_refused_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trial 5 F-12: the whole simulation ran first, then "cannot write the report"."""
    import pumice.simulate.runner as runner

    def must_not_run(*_a: object, **_k: object) -> None:
        raise AssertionError("the simulation ran")

    monkeypatch.setattr(runner, "simulate", must_not_run)
    afile = tmp_path / "afile"
    afile.write_text("x")
    t = shared_dir() / "traces/tiresias-example"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--quiet", "--out", str(afile / "sub")])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines()[-1].startswith(f"Error: Invalid value for '--out': cannot create {afile / 'sub'}")


def test_ctrl_c_before_the_run_loop_exits_130_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trial 5 F-18: a Ctrl-C while the trace loads gave click's "Aborted!" and exit 1."""
    import pumice.simulate.workload as wl

    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(wl, "load_workload", interrupted)
    t = shared_dir() / "traces/tiresias-example"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--quiet", "--out", str(tmp_path / "o")])
    assert r.exit_code == 130, r.output
    assert "Aborted" not in r.output
    assert r.output.strip() == "interrupted (SIGINT) before the run started; nothing simulated, no report"
    assert not (tmp_path / "o").exists()


def test_a_rejected_arrival_is_reported_and_does_not_hold_the_run_open(tmp_path: Path) -> None:
    """Trial 5 F-9: a Pod without apiVersion was refused by the API server, yet never counted as
    finished: the run "stalled" after 4200 simulated s, exit 0, nothing said on the console."""
    nodes, w = tmp_path / "nodes.yaml", tmp_path / "w.yaml"
    nodes.write_text(NODE_YAML)
    w.write_text("arrivals:\n"
                 "- {at: 0, duration: 5, manifest: {kind: Pod, spec: {containers: [{name: a, image: b}]}}}\n"
                 "- at: 0\n  duration: 5\n  name: ok\n"
                 "  manifest: {apiVersion: v1, kind: Pod, spec: {schedulerName: volcano, restartPolicy: Never,\n"
                 "             containers: [{name: a, image: b, resources: {requests: {cpu: '1'}}}]}}\n")
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(w), "--quiet", "--no-plots",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    warnings = [line for line in r.output.splitlines() if line.startswith("Warning:")]
    assert warnings == ["Warning: job pod was rejected by the API server: the object needs apiVersion and kind"]
    s = json.loads((out / "summary.json").read_text())
    assert s["ended_by"] == "done" and s["simulated_seconds"] < 60
    assert s["jobs"] == {"total": 2, "finished": 1, "started": 1, "never_started": 1, "rejected": 1}
    jobs = {j["job"]: j for j in json.loads((out / "jobs.json").read_text())}
    assert jobs["pod"]["status"] == "Rejected: the object needs apiVersion and kind"
    assert jobs["pod"]["start"] is None and jobs["ok"]["status"] == "Succeeded"


def test_a_rayjob_kuberay_refuses_is_rejected_at_once_with_the_operators_reason(tmp_path: Path) -> None:
    """Trial 9 F-3: a RayJob KubeRay refuses (``jobDeploymentStatus: ValidationFailed``, terminal
    in KubeRay) was recorded as Pending; the run ended ``stalled`` after 600 simulated s with
    ``jobs.rejected`` 0 and nothing said on the console."""
    nodes, w = tmp_path / "nodes.yaml", tmp_path / "w.yaml"
    nodes.write_text(NODE_YAML)
    w.write_text("arrivals:\n"
                 "- at: 0\n  duration: 10\n  name: rj\n"
                 "  manifest: {apiVersion: ray.io/v1, kind: RayJob, spec: {entrypoint: python x.py,\n"
                 "             rayClusterSpec: {headGroupSpec: {rayStartParams: {}, template: {spec: {containers: []}}}}}}\n")
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(w), "--quiet", "--no-plots",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    reason = "ValidationFailed: The RayJob spec is invalid: headGroupSpec should have at least one container"
    warnings = [line for line in r.output.splitlines() if line.startswith("Warning:")]
    assert warnings == [f"Warning: job rj was rejected by KubeRay: {reason}"]
    s = json.loads((out / "summary.json").read_text())
    assert s["ended_by"] == "done" and s["simulated_seconds"] < 60
    assert s["jobs"] == {"total": 1, "finished": 0, "started": 0, "never_started": 1, "rejected": 1}
    [job] = json.loads((out / "jobs.json").read_text())
    assert job["status"] == f"Rejected: {reason}" and job["start"] is None


def test_a_ray_cluster_whose_pods_are_refused_ends_the_run_stalled(tmp_path: Path) -> None:
    """A RayJob whose head Pod the API server refuses for a reason the workload check does not
    catch (a volumeMount of no volume): KubeRay retries the create at every reconcile and
    rewrites the RayJob's rayClusterStatus with the failure's new text (a new random Pod name, a
    new lastUpdateTime). Each such update counted as progress, so the run went on to --until
    instead of ending stalled one window (600 s) after the last real change."""
    nodes, w = tmp_path / "nodes.yaml", tmp_path / "w.yaml"
    nodes.write_text(NODE_YAML)
    w.write_text("arrivals:\n"
                 "- at: 0\n  duration: 10\n  name: rj\n"
                 "  manifest: {apiVersion: ray.io/v1, kind: RayJob, spec: {entrypoint: python x.py,\n"
                 "             rayClusterSpec: {headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [\n"
                 "               {name: ray-head, image: rayproject/ray, resources: {requests: {cpu: '1', memory: 1Gi}},\n"
                 "                volumeMounts: [{name: nope, mountPath: /data}]}]}}}}}}\n")
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(w), "--no-plots",
                                  "--until", "2000", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert re.search(r"^ended_by +stalled$", r.output, re.M), r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["ended_by"] == "stalled" and s["simulated_seconds"] < 1000
    assert s["jobs"]["finished"] == 0 and s["jobs"]["started"] == 0


@pytest.mark.parametrize("after", [[], ["--quiet"], ["--out", "elsewhere"]])
def test_compare_with_one_file_is_one_line_and_exit_2(tmp_path: Path, after: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``--compare A`` printed click's usage and ``requires 2 arguments``, or, with an option after
    it, ``File '--out' does not exist`` (click took the option as the second file)."""
    import pumice.simulate.runner as runner

    def must_not_run(*_a: object, **_k: object) -> None:
        raise AssertionError("the simulation ran")

    monkeypatch.setattr(runner, "simulate", must_not_run)
    monkeypatch.chdir(tmp_path)
    conf = tmp_path / "gang-off.conf"
    conf.write_text(GANG_OFF_CONF)
    t = shared_dir() / "traces/tiresias-example"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--compare", str(conf), *after])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        f"Error: --compare takes two scheduler configuration files (--compare A.conf B.conf); got only {conf}"]
    assert not list(tmp_path.glob("*out*")) and not (tmp_path / "elsewhere").exists()


def test_compare_with_a_missing_file_names_it(tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text(GANG_OFF_CONF)
    t = shared_dir() / "traces/tiresias-example"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--compare", str(conf), str(tmp_path / "nope.conf"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines()[-1] == f"Error: Invalid value for '--compare': File '{tmp_path / 'nope.conf'}' does not exist."


def test_compare_with_files_that_are_no_configuration_names_the_file(tmp_path: Path) -> None:
    """Trial 12 F-6 j: ``--compare /dev/null /etc/passwd`` said ``Error: <config>: expected a
    mapping ...`` (/dev/null, no regular file, was read as YAML text), naming neither file."""
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    t = shared_dir() / "traces/tiresias-example"
    for first, second in (("/dev/null", str(text)), (str(text), "/dev/null")):
        r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload",
                                      str(t / "60_job.csv"), "--compare", first, second, "--out", str(tmp_path / "o")])
        assert r.exit_code == 2, r.output
        [line] = r.output.strip().splitlines()
        assert line.startswith(f"Error: {first}: "), line
        assert "<config>" not in line


def test_the_report_explains_the_trace_check_rows_and_points_to_the_readme(tmp_path: Path) -> None:
    """Trial 5 F-14: report.html listed the trace_check.* figures with no word on what they are or
    why the simulated and the trace's delays differ."""
    from pumice.simulate.report import TRACE_CHECK_README

    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(OPENB_NODES)
    pods.write_text(OPENB_PODS)
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(nodes), "--workload", str(pods), "--out",
                                  str(tmp_path / "o"), "--quiet", "--no-plots"])
    assert r.exit_code == 0, r.output
    page = html_unescape((tmp_path / "o/report.html").read_text())
    # this run's figures (see test_simulate_writes_the_report_with_the_trace_check), the reason, the pointer
    assert "trace_check rows: the queueing delay (creation -> bind)" in page
    assert "simulated median 1.0 s vs the trace's 0.0 s (p99 92.0 vs 40.0 s)" in page
    assert "hold at most 175.0% of the GPUs and 21.9% of the CPU" in page  # the made-up trace over-commits
    assert "not expected to match: the trace's delays come from what the list does not carry" in page
    assert TRACE_CHECK_README in page
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert "### Fidelity: the openb trace check" in readme  # the section the report names exists
    # a run without a trace has none of it
    t = shared_dir() / "traces/tiresias-example"
    r = CliRunner().invoke(main, ["simulate", "--nodes", str(t / "n32g4.csv"), "--workload", str(t / "60_job.csv"),
                                  "--sample", "3", "--out", str(tmp_path / "t"), "--quiet", "--no-plots"])
    assert r.exit_code == 0, r.output
    assert "trace_check" not in (tmp_path / "t/report.html").read_text()


def html_unescape(text: str) -> str:
    """The text of an HTML page: tags dropped, entities decoded."""
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", text))


def _alias_bomb(levels: int) -> str:
    """A billion-laughs document: ``levels`` anchors of 9 references each to the one before."""
    lines = ['x0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    lines.append("arrivals:\n- {name: a, at: 0, duration: 10, manifest: {apiVersion: v1, kind: Pod, spec: "
                 f"{{containers: [{{name: c, image: i, args: *a{levels}}}]}}}}}}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_any_yaml_input_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    """Trial 14 F-3: an 8-level bomb (43 million strings) ran at 100% CPU past 30 s; the API
    server's go-yaml alias rule now refuses it in every simulator YAML input, in one line."""
    nodes, bomb = tmp_path / "nodes.yaml", tmp_path / "bomb.yaml"
    nodes.write_text(NODE_YAML)
    bomb.write_text(_alias_bomb(8))
    good = tmp_path / "w.yaml"
    good.write_text("arrivals:\n- {at: 0, duration: 1, manifest: {apiVersion: v1, kind: Pod}}\n")
    for args in (["--nodes", str(nodes), "--workload", str(bomb)],
                 ["--nodes", str(bomb), "--workload", str(good)],
                 ["--nodes", str(nodes), "--workload", str(good), "--queues", str(bomb)]):
        r = CliRunner().invoke(main, ["simulate", *args, "--quiet", "--no-plots", "--out", str(tmp_path / "o")])
        assert r.exit_code == 2, r.output
        assert r.output.strip().splitlines() == [f"Error: {bomb}: yaml: document contains excessive aliasing"]
        assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("deep", [
    "kind: Workload\narrivals: " + "[" * 5000 + "]" * 5000 + "\n",  # the trial's: flow style
    "arrivals:\n" + "".join(f"{' ' * i}- \n" for i in range(0, 3000, 1)),  # block style
    "arrivals: " + "[" * 150 + "]" * 150 + "\n",  # composed, then refused by the depth check
])
def test_a_yaml_input_nested_too_deep_is_one_line_and_exit_2(tmp_path: Path, deep: str) -> None:
    """Trial 18 F-7: 5,000 nested sequences were "internal error (RecursionError ...)", exit 1
    (PyYAML's composer recurses once per level); go-yaml refuses such nesting too."""
    nodes, bad = tmp_path / "nodes.yaml", tmp_path / "deep.yaml"
    nodes.write_text(NODE_YAML)
    bad.write_text(deep)
    good = tmp_path / "w.yaml"
    good.write_text("arrivals:\n- {at: 0, duration: 1, manifest: {apiVersion: v1, kind: Pod}}\n")
    for args in (["--nodes", str(nodes), "--workload", str(bad)],
                 ["--nodes", str(bad), "--workload", str(good)],
                 ["--nodes", str(nodes), "--workload", str(good), "--queues", str(bad)]):
        r = CliRunner().invoke(main, ["simulate", *args, "--quiet", "--no-plots", "--out", str(tmp_path / "o")])
        assert r.exit_code == 2, r.output
        assert r.output.strip().splitlines() == [f"Error: {bad}: yaml: exceeded max depth of 100"]
        assert not (tmp_path / "o").exists()


STORAGE_PODS = """arrivals:
- at: 0
  duration: 30
  name: scratch
  manifest:
    apiVersion: v1
    kind: Pod
    spec:
      containers: [{name: a, image: b, resources: {requests: {cpu: "1", ephemeral-storage: 10Gi}}}]
"""


@pytest.mark.parametrize(("capacity", "starts"), [
    ('{cpu: "2", memory: 4Gi, ephemeral-storage: 100Gi}', True),
    ('{cpu: "2", memory: 4Gi, ephemeral-storage: 5Gi}', False),  # too small: it waits, as on a kubelet
    ('{cpu: "2", memory: 4Gi}', False),  # a Node that reports none fits no request for it
])
def test_a_node_manifests_ephemeral_storage_is_what_pods_requesting_it_fit(tmp_path: Path, capacity: str,
                                                                          starts: bool) -> None:
    """Review 15 / trial 15 F-5: the Node manifests' ephemeral-storage was dropped, so a Pod
    requesting any was Pending for ever whatever the manifest said."""
    from pumice.simulate import metrics
    from pumice.simulate.nodes import load_nodes
    from pumice.simulate.runner import SimConfig, simulate
    from pumice.simulate.workload import load_workload

    nodes, pods = tmp_path / "nodes.yaml", tmp_path / "pods.yaml"
    nodes.write_text(f"apiVersion: v1\nkind: Node\nmetadata: {{name: n0}}\nstatus: {{capacity: {capacity}}}\n")
    pods.write_text(STORAGE_PODS)
    r = simulate(SimConfig(load_nodes(nodes), load_workload(pods), until=100))
    [row] = metrics.job_rows(r.recorder)
    assert (row["start"] is not None) is starts


def test_a_bad_ephemeral_storage_in_a_node_manifest_is_one_line(tmp_path: Path) -> None:
    from pumice.simulate.nodes import InputError, load_nodes

    nodes = tmp_path / "nodes.yaml"
    nodes.write_text('apiVersion: v1\nkind: Node\nmetadata: {name: n0}\n'
                     'status: {capacity: {cpu: "2", memory: 4Gi, ephemeral-storage: -1Gi}}\n')
    with pytest.raises(InputError) as e:
        load_nodes(nodes)
    assert str(e.value).endswith("Node 'n0': status.allocatable/capacity ephemeral-storage: expected a whole "
                                 "number, 0 or more, got '-1Gi'")
