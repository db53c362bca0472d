"""Upstream Volcano manifests through real kubectl against pumice's HTTP API server with the
Volcano admission plugins and controllers: CRDs apply cleanly, every invalid_jobs sample is
refused with the webhook message, the examples apply and produce what the upstream docs say."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pumice.api import scheme
from pumice.client.kubeconfig import connect
from pumice.controllers.volcano import admission_plugins
from pumice.testing.cluster import serve_http
from pumice.testing.kubectl import run_kubectl
from pumice.testing.paths import shared_dir
from pumice.testing.volcano_controllers import eventually, running_controllers

pytestmark = [pytest.mark.kubectl, pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")]

SAMPLES = shared_dir() / "samples" / "volcano"
EXAMPLES = SAMPLES / "example"


@contextlib.asynccontextmanager
async def http_volcano(tmp: Path) -> AsyncIterator[Any]:
    mutating, validating = admission_plugins()
    with serve_http(tmp, admission_plugins=[*mutating, *validating]) as srv:
        client = connect(srv.kubeconfig)
        try:
            async with running_controllers(client):
                await eventually(lambda: _queue_open(client, "default"), timeout=10)
                srv.client = client
                yield srv
        finally:
            await client.close()


async def _queue_open(client: Any, name: str) -> bool:
    try:
        q = await client.get(scheme.QUEUE, name)
    except Exception:
        return False
    return (q.get("status") or {}).get("state") == "Open"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def srv(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    """One server for the module (the tests use distinct object names)."""
    async with http_volcano(tmp_path_factory.mktemp("volcano-kubectl")) as s:
        yield s


async def test_upstream_crds_apply_cleanly(srv: Any) -> None:
    code, out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(SAMPLES / "config/crd/volcano/bases"))
    assert code == 0, err
    for crd in ("jobs.batch.volcano.sh", "commands.bus.volcano.sh", "podgroups.scheduling.volcano.sh",
                "queues.scheduling.volcano.sh", "hypernodes.topology.volcano.sh"):
        assert crd in out


INVALID = {
    "duplicatedPolicyEvent-webhook-deny.yaml": "duplicate event PodFailed  across different policy",
    "duplicatedTaskName-webhook-deny.yaml": "duplicated task name task-1",
    "minAvailable-webhook-deny.yaml": "job 'minAvailable' should not be greater than total replicas in tasks",
}


async def test_every_invalid_job_is_refused_by_kubectl_apply(srv: Any) -> None:
    files = sorted((EXAMPLES / "invalid_jobs").glob("*.yaml"))
    assert {f.name for f in files} == set(INVALID)
    for f in files:
        code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(f))
        assert code != 0, f.name
        assert 'admission webhook "validatejob.volcano.sh" denied the request' in err, err
        assert INVALID[f.name] in err, err
    code, out, err = await run_kubectl(srv.kubeconfig, "get", "vcjob", "test-job-webhook-disallow")
    assert code != 0 and "NotFound" in err, (out, err)


async def _get(client: Any, kind: Any, name: str, ns: str | None = "default") -> dict | None:
    try:
        return await client.get(kind, name, ns)
    except Exception:
        return None


async def _pg_of(client: Any, job: str) -> dict | None:
    j = await _get(client, scheme.VCJOB, job)
    return await _get(client, scheme.POD_GROUP, f"{job}-{j['metadata']['uid']}") if j else None


async def test_example_job_gets_its_podgroup_and_plugin_objects(srv: Any) -> None:
    code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(EXAMPLES / "job.yaml"))
    assert code == 0, err
    pg = await eventually(lambda: _pg_of(srv.client, "test-job"))
    assert pg["spec"]["minMember"] == 3 and pg["spec"]["queue"] == "default"
    assert pg["spec"]["minResources"] == {"cpu": "3"}
    # plugins ssh/env/svc: Secret, ConfigMap with the host list, headless Service, and the job's
    # NetworkPolicy (served by pumice's API server since trial 15 F-3)
    assert await eventually(lambda: _get(srv.client, scheme.SECRET, "test-job-ssh"))
    cm = await eventually(lambda: _get(srv.client, scheme.CONFIG_MAP, "test-job-svc"))
    assert cm["data"]["VC_DEFAULT_NGINX_NUM"] == "6"
    svc = await eventually(lambda: _get(srv.client, scheme.SERVICE, "test-job"))
    assert svc["spec"]["clusterIP"] == "None"
    np = await eventually(lambda: _get(srv.client, scheme.NETWORK_POLICY, "test-job"))
    assert np["spec"]["podSelector"] == {"matchLabels": {"volcano.sh/job-name": "test-job",
                                                         "volcano.sh/job-namespace": "default"}}
    assert np["spec"]["policyTypes"] == ["Ingress"]
    code, out, err = await run_kubectl(srv.kubeconfig, "get", "vcjob", "test-job", "-o", "jsonpath={.status.state.phase}")
    assert code == 0 and out == "Pending", (out, err)
    j = await srv.client.get(scheme.VCJOB, "test-job", "default")
    assert j["spec"]["maxRetry"] == 5 and j["spec"]["tasks"][0]["minAvailable"] == 6


@pytest.mark.parametrize("path", [
    "job-plugin.yaml", "task-start-dependency/job.yaml", "integrations/ray/ray-example.yaml",
])
async def test_example_vcjobs_apply(srv: Any, path: str) -> None:
    code, out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(EXAMPLES / path))
    assert code == 0, err
    name = out.split()[0].split("/")[-1]
    assert await eventually(lambda: _pg_of(srv.client, name))


async def test_elastic_job_example_has_a_typo_that_strict_validation_reports(srv: Any) -> None:
    # the upstream file writes ``priorityClass`` (not priorityClassName) in the Pod templates; a
    # real kube-apiserver refuses that under kubectl's default strict validation, and so do we
    path = str(EXAMPLES / "kubecon-2019-china/task-priority/elastic-job.yaml")
    code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", path)
    assert code != 0 and 'unknown field "spec.tasks[0].template.spec.priorityClass"' in err, err
    code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "--validate=false", "-f", path)
    assert code == 0, err
    pg = await eventually(lambda: _pg_of(srv.client, "elastic-job"))
    assert pg["spec"]["minMember"] == 3 and pg["spec"]["minTaskMember"] == {"worker": 9, "master": 1}


async def test_deployment_example_gets_a_queue_and_the_queue_defaults(srv: Any) -> None:
    code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(EXAMPLES / "deployment/queue.yaml"))
    assert code == 0, err
    q = await eventually(lambda: _open(srv.client, "test"))
    assert q["spec"]["reclaimable"] is False and q["spec"]["weight"] == 1
    assert {k: str(v) for k, v in q["spec"]["capability"].items()} == {"cpu": "2"}
    from pumice.controllers.kube import setup as kube_setup
    from pumice.runtime.manager import Manager

    kube = Manager(srv.client)
    kube_setup(kube, controllers=["deployment", "replicaset"])
    task = asyncio.create_task(kube.start())
    try:
        await kube.wait_started()
        code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(EXAMPLES / "deployment/deployment.yaml"))
        assert code == 0, err
        # the Deployment's Pod is Volcano's: it gets podgroup-<ReplicaSet uid> in queue "test"
        pod = await eventually(lambda: _grouped_pod(srv.client), timeout=10)
        pg_name = pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        rs_uid = pod["metadata"]["ownerReferences"][0]["uid"]
        assert pg_name == f"podgroup-{rs_uid}"
        pg = await srv.client.get(scheme.POD_GROUP, pg_name, "default")
        assert pg["spec"]["queue"] == "test" and pg["spec"]["minMember"] == 1
        assert pg["spec"]["minResources"] == {"cpu": "300m"}
    finally:
        kube.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)


async def _grouped_pod(client: Any) -> dict | None:
    for p in (await client.list(scheme.POD, "default")).items:
        if (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name"):
            return p
    return None


async def _open(client: Any, name: str) -> dict | None:
    q = await _get(client, scheme.QUEUE, name, None)
    return q if q and (q.get("status") or {}).get("state") == "Open" else None


async def test_hierarchical_queues_and_jobs_apply(srv: Any) -> None:
    code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(EXAMPLES / "hierarchical-jobs/queues.yaml"))
    assert code == 0, err
    for q in ("root-eng-prod", "root-eng-dev", "root-sci-prod", "root-sci-dev"):
        await eventually(lambda q=q: _open(srv.client, q))
    code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(EXAMPLES / "hierarchical-jobs/jobs.yaml"))
    assert code == 0, err
    q = await srv.client.get(scheme.QUEUE, "root-eng-prod")
    assert q["metadata"]["annotations"]["volcano.sh/hierarchy"] == "root/eng/prod"


async def test_staging_artifacts_apply(srv: Any) -> None:
    # vcjob.yaml is example/job.yaml again (test-job): apply it in its own namespace, since
    # re-applying would replace the defaulted task list, which Job update admission refuses
    await srv.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "staging"}})
    for f in ("queue.yaml", "podgroup.yaml", "vcjob.yaml"):
        path = SAMPLES / "staging-apis-artifacts" / f
        ns = ["-n", "staging"] if f == "vcjob.yaml" else []
        code, _out, err = await run_kubectl(srv.kubeconfig, "apply", *ns, "-f", str(path))
        if code != 0 and f == "queue.yaml":
            raise AssertionError(err)
        if f == "queue.yaml":
            await eventually(lambda: _any_open(srv.client))
        assert code == 0, (f, err)


async def _any_open(client: Any) -> bool:
    return all((q.get("status") or {}).get("state") == "Open" for q in (await client.list(scheme.QUEUE)).items)


async def test_default_queue_cannot_be_deleted_with_kubectl(srv: Any) -> None:
    code, _out, err = await run_kubectl(srv.kubeconfig, "delete", "queue", "default")
    assert code != 0
    assert "`default` queue can not be deleted" in err


async def test_pumice_explain_cli_against_the_http_server(srv: Any) -> None:
    import sys

    if await _get(srv.client, scheme.VCJOB, "test-job") is None:  # re-applying would be refused (see above)
        code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-f", str(EXAMPLES / "job.yaml"))
        assert code == 0, err
    await eventually(lambda: _pg_of(srv.client, "test-job"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pumice.cli.main", "explain", "vcjob/test-job", "--kubeconfig", str(srv.kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err_b = await asyncio.wait_for(proc.communicate(), 60)
    text = out.decode()
    assert proc.returncode == 0, err_b.decode()
    assert text.startswith("vcjob default/test-job")
    # no Nodes at all: the cluster cannot take the gang's minResources (cpu 3)
    assert "held by: enqueue-" in text and "cpu 3" in text, text
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pumice.cli.main", "explain", "vcjob/nope", "--kubeconfig", str(srv.kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err_b = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1 and "not found" in err_b.decode()


async def test_every_example_manifest_of_a_served_kind_applies(srv: Any) -> None:
    """Each file under example/ (but invalid_jobs) in a namespace of its own: it applies, unless its
    apiVersion is not served (the kubecon PriorityClasses are scheduling.k8s.io/v1beta1)."""
    import yaml

    code, out, err = await run_kubectl(srv.kubeconfig, "api-versions")
    assert code == 0, err
    served = set(out.split())
    files = sorted(p for p in EXAMPLES.rglob("*.yaml") if "invalid_jobs" not in p.parts)
    files.sort(key=lambda p: "queue" not in p.name)  # queues before the jobs that use them
    applied, skipped = [], []
    for i, f in enumerate(files):
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        if not all(d.get("apiVersion") in served for d in docs):
            skipped.append(f.name)
            continue
        ns = f"ex{i}"
        await srv.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        validate = ["--validate=false"] if f.name == "elastic-job.yaml" else []  # see the typo test
        code, _out, err = await run_kubectl(srv.kubeconfig, "apply", "-n", ns, *validate, "-f", str(f))
        assert code == 0, (str(f), err)
        applied.append(str(f.relative_to(EXAMPLES)))
    assert skipped == ["high-priority.yaml", "normal-priority.yaml"], skipped
    assert len(applied) == len(files) - 2
