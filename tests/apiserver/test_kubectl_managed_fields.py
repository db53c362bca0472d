"""Real kubectl against ``pumice up --runtime simulated``: server-side apply meets the fields that
``kubectl create``, ``kubectl scale`` and ``kubectl edit`` set, as on kube-apiserver 1.32 (trial 8
F-1: an apply used to overwrite them silently)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.simulate.test_up_simulated import _up_with_kubectl

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\ndata: {a: \"2\"}\n"
DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {name: d1}
spec:
  replicas: %d
  selector: {matchLabels: {app: d1}}
  template:
    metadata: {labels: {app: d1}}
    spec:
      containers: [{name: nginx, image: nginx}]
"""


@pytest.mark.kubectl
@pytest.mark.timeout(300)
async def test_server_side_apply_conflicts_with_create_scale_and_edit(tmp_path: Path) -> None:
    async with _up_with_kubectl(tmp_path) as kc:

        def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
            # kubectl whose failure is the point (kc raises on a non-zero exit)
            return subprocess.run(["kubectl", "--kubeconfig", str(tmp_path / "data" / "kubeconfig"), *args],
                                  input=stdin, capture_output=True, text=True, timeout=60,
                                  env={**os.environ, **(env or {})})

        def managers(kind: str, name: str) -> dict[str, dict]:  # run in a thread: the server shares the loop
            p = run("get", kind, name, "-o", "json", "--show-managed-fields")
            assert p.returncode == 0, p.stderr
            obj = json.loads(p.stdout)
            return {f'{e["manager"]}/{e.get("subresource", "")}': e for e in obj["metadata"]["managedFields"]}

        # create, then apply: 409 naming the creator, nothing changed; --force-conflicts takes it
        await asyncio.to_thread(kc, "create", "configmap", "c1", "--from-literal=a=1")
        assert (await asyncio.to_thread(managers, "configmap", "c1"))["kubectl-create/"]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
        p = await asyncio.to_thread(run, "apply", "--server-side", "-f", "-", stdin=CM)
        assert p.returncode != 0
        assert 'Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.a' in p.stderr
        assert json.loads(await asyncio.to_thread(kc, "get", "configmap", "c1", "-o", "json"))["data"] == {"a": "1"}
        p = await asyncio.to_thread(run, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=CM)
        assert p.returncode == 0 and "serverside-applied" in p.stdout, p.stderr
        got = await asyncio.to_thread(managers, "configmap", "c1")
        assert got["kubectl/"]["operation"] == "Apply" and got["kubectl/"]["fieldsV1"] == {"f:data": {"f:a": {}}}
        assert json.loads(await asyncio.to_thread(kc, "get", "configmap", "c1", "-o", "json"))["data"] == {"a": "2"}

        # kubectl scale (the scale subresource, manager from kubectl's User-Agent), then apply replicas
        await asyncio.to_thread(kc, "create", "deployment", "d1", "--image=nginx", "--replicas=1")
        await asyncio.to_thread(kc, "scale", "deployment", "d1", "--replicas=2")
        scale = (await asyncio.to_thread(managers, "deployment", "d1"))["kubectl/scale"]
        assert scale["operation"] == "Update" and scale["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
        p = await asyncio.to_thread(run, "apply", "--server-side", "-f", "-", stdin=DEPLOY % 5)
        assert p.returncode != 0
        assert ('Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: '
                '.spec.replicas') in p.stderr
        assert json.loads(await asyncio.to_thread(kc, "get", "deployment", "d1", "-o", "json"))["spec"]["replicas"] == 2

        # kubectl edit owns the image it changed; an apply of another image conflicts with it
        editor = tmp_path / "edit.sh"
        editor.write_text('#!/bin/sh\nsed -i "s/image: nginx$/image: nginx:1.27/" "$1"\n')
        editor.chmod(0o755)
        p = await asyncio.to_thread(run, "edit", "deployment", "d1", env={"KUBE_EDITOR": str(editor)})
        assert p.returncode == 0, p.stderr
        edit = (await asyncio.to_thread(managers, "deployment", "d1"))["kubectl-edit/"]
        assert edit["fieldsV1"] == {"f:spec": {"f:template": {"f:spec": {"f:containers": {
            'k:{"name":"nginx"}': {"f:image": {}}}}}}}
        p = await asyncio.to_thread(run, "apply", "--server-side", "-f", "-", stdin=(DEPLOY % 2).replace(
            "image: nginx}", "image: nginx:1.28}"))
        assert p.returncode != 0
        assert 'conflict with "kubectl-edit" using apps/v1: .spec.template.spec.containers[name="nginx"].image' \
            in p.stderr, p.stderr


#: the cases tests/api/test_ssa_upstream.py checks against upstream's field manager
_CASES = {c["name"].split(":")[0] + ("/teams" if "teams" in c["name"] else ""): c
          for c in json.loads((Path(__file__).parents[1] / "api" / "ssa_upstream_cases.json").read_text())}


def _ports(obj: dict) -> object:
    """The list identities an object's merge decides (order included), defaults aside."""
    spec = obj["spec"]
    if obj["kind"] == "Service":
        return [(p["port"], p.get("protocol", "TCP"), p.get("name")) for p in spec["ports"]]
    pod = spec["template"]["spec"]
    return ([(c["name"], [(p["containerPort"], p.get("protocol", "TCP"), p.get("name")) for p in c.get("ports", [])],
              [e["name"] for e in c.get("env", [])], [m["mountPath"] for m in c.get("volumeMounts", [])])
             for c in pod["containers"]], pod.get("tolerations"))


@pytest.mark.kubectl
@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", ["deployment/teams", "service"])
async def test_kubectl_server_side_apply_keys_lists_by_their_markers_as_upstream(tmp_path: Path, case: str) -> None:
    """Each step of an upstream-checked case through ``kubectl apply --server-side
    --field-manager``: the Apply entries' fieldsV1 are upstream's exact strings (container ports
    ``k:{"containerPort":53,"protocol":"UDP"}``, Service ports by port and protocol, tolerations
    one atomic leaf), conflicts carry upstream's message, ``--force-conflicts`` takes the fields
    over, re-applying without an item removes it, and the lists end in upstream's order."""
    steps = _CASES[case]["steps"]
    async with _up_with_kubectl(tmp_path) as kc:

        def run(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["kubectl", "--kubeconfig", str(tmp_path / "data" / "kubeconfig"), *args],
                                  input=stdin, capture_output=True, text=True, timeout=60)

        for i, step in enumerate(steps):
            want = step["upstream"]
            args = ["apply", "--server-side", f"--field-manager={step['manager']}", "-f", "-"]
            if step.get("force"):
                args.insert(2, "--force-conflicts")
            p = await asyncio.to_thread(run, *args, stdin=json.dumps(step["object"]))
            where = f"{case} step {i}"
            if want["error"] is None:
                assert p.returncode == 0, (where, p.stderr)
            else:
                assert p.returncode != 0, where
                assert want["error"] in p.stderr, (where, p.stderr)
            kind, name = step["object"]["kind"].lower(), step["object"]["metadata"]["name"]
            live = json.loads(await asyncio.to_thread(kc, "get", kind, name, "-o", "json", "--show-managed-fields"))
            applied = {e["manager"]: e["fieldsV1"] for e in live["metadata"]["managedFields"] if e["operation"] == "Apply"}
            assert applied == {m: fv1 for m, op, fv1 in want["managedFields"] if op == "Apply"}, where
            assert _ports(live) == _ports(want["object"]), where


@pytest.mark.kubectl
@pytest.mark.timeout(300)
async def test_client_side_apply_then_server_side_apply_and_diff_of_the_same_objects(tmp_path: Path) -> None:
    """Client-side ``kubectl apply`` (last-applied annotation + three-way strategic merge patch)
    of the Deployment and Service the server-side tests use, as upstream ends them
    (tools/ssa_oracle ran kubectl's patch through upstream's StrategicMergePatch: deleting one of
    two ports with the same number deletes both, since the patch keys ports by number alone);
    then ``kubectl apply --server-side`` of the same file takes over without conflicts, and
    ``kubectl diff --server-side`` shows only a real change."""
    teams = _CASES["deployment/teams"]["steps"]
    first, second = teams[0]["object"], teams[4]["object"]  # team-a's two configurations
    svc1 = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "s"}, "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                                       {"name": "dns-tcp", "port": 53}]}}
    svc2 = {**svc1, "spec": {"selector": {"app": "s"}, "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                                                 {"name": "http", "port": 80}]}}
    async with _up_with_kubectl(tmp_path) as kc:

        def run(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["kubectl", "--kubeconfig", str(tmp_path / "data" / "kubeconfig"), *args],
                                  input=stdin, capture_output=True, text=True, timeout=60)

        async def apply(obj: dict, *flags: str) -> dict:
            p = await asyncio.to_thread(run, "apply", *flags, "-f", "-", stdin=json.dumps(obj))
            assert p.returncode == 0, p.stderr
            return json.loads(await asyncio.to_thread(kc, "get", obj["kind"].lower(), obj["metadata"]["name"],
                                                      "-o", "json", "--show-managed-fields"))

        await apply(first)
        live = await apply(second)
        assert _ports(live) == ([("dns", [(53, "UDP", None)], ["A"], []), ("web", [(80, "TCP", None)], [], [])],
                                [{"key": "a", "operator": "Exists"}])
        last = json.loads(live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
        assert last["spec"] == second["spec"]
        await apply(svc1)
        assert _ports(await apply(svc2)) == [(80, "TCP", "http")]

        # the same file applied server-side by kubectl: the client-side owner's fields are forgiven
        live = await apply(second, "--server-side")
        mine = next(e for e in live["metadata"]["managedFields"] if e["manager"] == "kubectl")
        want = next(m for m in teams[4]["upstream"]["managedFields"] if m[0] == "team-a")[2]
        assert mine["operation"] == "Apply" and mine["fieldsV1"] == want
        p = await asyncio.to_thread(run, "diff", "--server-side", "-f", "-", stdin=json.dumps(second))
        assert p.returncode == 0 and p.stdout == "", (p.stdout, p.stderr)
        changed = json.loads(json.dumps(second).replace('"nginx"', '"nginx:1.27"'))
        p = await asyncio.to_thread(run, "diff", "--server-side", "-f", "-", stdin=json.dumps(changed))
        assert p.returncode == 1, p.stderr
        assert "-      - image: nginx\n" in p.stdout and "+      - image: nginx:1.27\n" in p.stdout, p.stdout
