"""The svc job plugin asks the server whether it serves NetworkPolicy (issue 13 item 2), not its
own list of kinds: the kind is created where the server serves it although the client's scheme
lacks it, and skipped without an error where the server does not (a kube-apiserver started with
``--runtime-config=networking.k8s.io/v1=false``). pumice's API server serves networking.k8s.io/v1
itself (trial 15 F-3); the tests take the kind out of the client's or the server's scheme."""

from __future__ import annotations

from typing import Any

from pumice.api.scheme import Scheme
from pumice.client.kubeconfig import in_process
from pumice.controllers.volcano.job.plugins._base import PluginClient
from pumice.controllers.volcano.job.plugins.svc import SvcPlugin
from pumice.testing.cluster import local_cluster


def without_network_policies(scheme: Scheme) -> Scheme:
    scheme.remove("networking.k8s.io", "v1", "networkpolicies")
    return scheme


JOB: dict[str, Any] = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                       "metadata": {"name": "mpi", "namespace": "default", "uid": "u-1"},
                       "spec": {"tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {}}}]}}


async def test_network_policy_is_created_when_the_server_serves_it_though_the_client_does_not_list_it() -> None:
    async with local_cluster(install_crds=False) as c:
        client = in_process(c.server.app, scheme=without_network_policies(Scheme.builtin()))
        assert client.scheme.by_api_version_kind("networking.k8s.io/v1", "NetworkPolicy") is None
        await SvcPlugin([]).on_job_add(JOB, PluginClient(client))
        rk = await client.resolve("networking.k8s.io/v1", "NetworkPolicy")
        policy = await client.get(rk, "mpi", "default")
        assert policy["spec"]["podSelector"]["matchLabels"]["volcano.sh/job-name"] == "mpi"
        assert policy["spec"]["ingress"] == [{"from": [{"podSelector": policy["spec"]["podSelector"]}]}]
        await client.close()


async def test_no_network_policy_and_no_error_when_the_server_does_not_serve_it() -> None:
    async with local_cluster(install_crds=False) as c:
        without_network_policies(c.server.scheme)
        client = in_process(c.server.app, scheme=without_network_policies(Scheme.builtin()))
        job = {**JOB, "status": {}}
        await SvcPlugin([]).on_job_add(job, PluginClient(client))
        assert job["status"]["controlledResources"] == {"plugin-svc": "svc"}
        svc = client.scheme.by_api_version_kind("v1", "Service")
        assert svc is not None
        assert (await client.get(svc, "mpi", "default"))["spec"]["clusterIP"] == "None"
        await client.close()
