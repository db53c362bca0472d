"""``pumice volcano session -f``: what it read and what it ignored (issue 14 item 15)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner


def test_session_says_what_it_read_and_what_it_ignored(tmp_path: Path) -> None:
    """Issue 14 item 15: a vcjob or RayCluster manifest is not silently empty JSON."""
    from pumice.cli.volcano import command as volcano_cli

    (tmp_path / "job.yaml").write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec: {minAvailable: 1}\n"
        "---\napiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc}\nspec: {}\n")
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(tmp_path)])
    assert res.exit_code == 2
    assert res.stdout == ""
    line = res.stderr.strip()
    assert "\n" not in line and "nothing to schedule" in line
    # trial-7 F-13: the one command whose prefix was lower-case, and it did not say what it reads
    assert line.startswith("Error: ") and "a session schedules Pods and PodGroups" in line
    assert "ignored 1 Job (batch.volcano.sh/v1alpha1)" in line and "1 RayCluster (ray.io/v1)" in line
    (tmp_path / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}}\n"
        "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n"
        "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, namespace: default}\n"
        "spec: {minMember: 1, queue: default}\nstatus: {phase: Inqueue}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, annotations: "
        "{scheduling.k8s.io/group-name: pg}}\nspec: {schedulerName: volcano, containers: [{name: c, image: i, "
        "resources: {requests: {cpu: '1'}}}]}\nstatus: {phase: Pending}\n")
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(tmp_path)])
    assert res.exit_code == 0, res.stderr
    assert res.stderr.startswith("read 1 Node, 1 Queue, 1 PodGroup, 1 Pod; ignored 1 Job")
    assert '"default/p": "n1"' in res.stdout


def test_session_uses_volcanos_default_queue_when_the_manifests_have_none(tmp_path: Path) -> None:
    """trial-8 F-14: Nodes, a PodGroup of queue default and its Pods, no Queue: every Volcano cluster has the
    `default` Queue, so the dry run binds as a cluster would and says it added the Queue."""
    from pumice.cli.volcano import command as volcano_cli

    (tmp_path / "all.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
        "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg1, namespace: default}\n"
        "spec: {minMember: 2, minResources: {cpu: '2'}}\n"
        + "".join(
            f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: default, annotations: "
            "{scheduling.k8s.io/group-name: pg1}}\nspec: {schedulerName: volcano, containers: [{name: c, image: i, "
            "resources: {requests: {cpu: '1'}}}]}\nstatus: {phase: Pending}\n" for i in (1, 2)))
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(tmp_path)])
    assert res.exit_code == 0, res.stderr
    assert "no Queue 'default' in the manifests: using Volcano's default Queue" in res.stderr
    assert '"default/p1": "n1"' in res.stdout and '"default/p2": "n1"' in res.stdout
    # a manifest that names its own default Queue is used as written (a closed one binds nothing)
    (tmp_path / "q.yaml").write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\n"
                                     "spec: {weight: 1}\nstatus: {state: Closed}\n")
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(tmp_path)])
    assert res.exit_code == 0, res.stderr
    assert "no Queue" not in res.stderr
    assert '"binds": {}' in res.stdout


def test_session_refuses_what_the_api_server_would_refuse_naming_file_and_object(tmp_path: Path) -> None:
    """trial-10 F-14: a PodGroup with minMember -2 came out Completed with its Pods bound; the API
    answers 422 (CRD schema), and a PodGroup of a Queue that does not exist is refused by the
    validatepodgroup webhook. The same checks (one implementation: an in-memory API server) run
    before the session."""
    from pumice.cli.volcano import command as volcano_cli

    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
    pod = ("---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: default, annotations: "
           "{scheduling.k8s.io/group-name: pg}}\nspec: {schedulerName: volcano, containers: [{name: c, image: i, "
           "resources: {requests: {cpu: '1'}}}]}\n")
    bad = tmp_path / "neg.yaml"
    bad.write_text(node + "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                   "metadata: {name: pg, namespace: default}\nspec: {minMember: -2}\n" + pod)
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(bad)])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines()[-1] == (
        f'Error: {bad}: PodGroup default/pg: PodGroup.scheduling.volcano.sh "pg" is invalid: spec.minMember: '
        "Invalid value: -2: spec.minMember in body should be greater than or equal to 0")
    bad.write_text(node + "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: qa}\n"
                   "spec: {weight: 1, capability: {cpu: '1'}, deserved: {cpu: '2'}}\n"
                   "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                   "metadata: {name: pg, namespace: default}\nspec: {minMember: 1, queue: qa}\n" + pod)
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(bad)])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines()[-1] == (
        f'Error: {bad}: Queue qa: admission webhook "validatequeue.volcano.sh" denied the request: '
        'requestBody.spec.deserved.cpu: Invalid value: "2": deserved[cpu]=2 must be <= capability[cpu]=1')


def test_session_takes_a_dump_of_cluster_state_that_references_objects_the_files_lack(tmp_path: Path) -> None:
    """What the API server fills in (a Pod's spec.priority, server metadata) and objects that may
    have gone since (a PodGroup's Queue, a Pod's PriorityClass) are not held against a manifest."""
    from pumice.cli.volcano import command as volcano_cli

    (tmp_path / "dump.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1, resourceVersion: '7', uid: x}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
        "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: pg, namespace: team, creationTimestamp: '2026-01-01T00:00:00Z'}\n"
        "spec: {minMember: 1, queue: gone}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: team, annotations: "
        "{scheduling.k8s.io/group-name: pg}}\nspec: {schedulerName: volcano, priorityClassName: high, priority: 1000, "
        "containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}\n")
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(tmp_path)])
    assert res.exit_code == 0, res.stderr
    assert '"binds": {}' in res.stdout  # the Queue is not in the session: its jobs wait, as on a cluster


def test_the_objects_the_files_lack_come_from_the_queue_builders_and_the_kinds_registry() -> None:
    """One Queue builder (the controller's) and one kinds registry (pumice.api.scheme): the third
    inline Queue and the hand-kept kind -> apiVersion map are gone."""
    from pumice.api.scheme import NAMESPACE, PRIORITY_CLASS
    from pumice.cli.volcano import _placeholders
    from pumice.controllers.volcano.queue import new_queue, root_queue

    objs = [{"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "team"}, "spec": {"queue": "q1"}},
            {"kind": "Queue", "metadata": {"name": "child"}, "spec": {"parent": "root"}},
            {"kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
             "spec": {"priorityClassName": "high", "priority": 7}}]
    assert _placeholders(objs) == [
        {"apiVersion": NAMESPACE.api_version, "kind": "Namespace", "metadata": {"name": "team"}},
        new_queue("q1"), root_queue(),
        {"apiVersion": PRIORITY_CLASS.api_version, "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 7}]
    assert new_queue("q1")["spec"] == {"weight": 1, "reclaimable": True}
    assert root_queue()["spec"] == {"weight": 1, "reclaimable": False}


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    # trial 11 F-11 h: "'utf-8' codec can't decode byte 0x82 in position 7" named no file
    from pumice.cli.volcano import command as volcano_cli

    bad = tmp_path / "m" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_bytes(b"kind: Pod\nmetadata: {name: \x82x}\n")
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(bad.parent)])
    assert (res.exit_code, res.output.strip().splitlines()) == (
        2, [f"Error: {bad}: not a text file: byte 0x82 at offset 27 is not UTF-8"])
    good = tmp_path / "pod.yaml"
    good.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
    res = CliRunner().invoke(volcano_cli, ["session", "-f", str(good), "--config", str(bad)])
    assert (res.exit_code, res.output.strip().splitlines()) == (
        2, [f"Error: {bad}: not a text file: byte 0x82 at offset 27 is not UTF-8"])
