"""The svc job plugin asks the server whether it serves NetworkPolicy (issue 13 item 2): on a
real cluster the kind is served although pumice's own list of built-in kinds does not have it.
Here a CustomResourceDefinition makes the in-process server serve networking.k8s.io/v1
NetworkPolicy, and the plugin's client starts from the built-in scheme only."""

from __future__ import annotations

from typing import Any

from pumice.api.scheme import Scheme
from pumice.client.kubeconfig import in_process
from pumice.controllers.volcano.job.plugins._base import PluginClient
from pumice.controllers.volcano.job.plugins.svc import SvcPlugin
from pumice.testing.cluster import local_cluster

NETWORK_POLICY_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "networkpolicies.networking.k8s.io",
                 "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1"}},
    "spec": {"group": "networking.k8s.io", "scope": "Namespaced",
             "names": {"plural": "networkpolicies", "singular": "networkpolicy", "kind": "NetworkPolicy",
                       "listKind": "NetworkPolicyList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}

JOB: dict[str, Any] = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                       "metadata": {"name": "mpi", "namespace": "default", "uid": "u-1"},
                       "spec": {"tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {}}}]}}


async def test_network_policy_is_created_when_the_server_serves_it_though_pumice_does_not_list_it() -> None:
    async with local_cluster(install_crds=False) as c:
        assert Scheme.builtin().by_api_version_kind("networking.k8s.io/v1", "NetworkPolicy") is None
        await c.server.apply_crds([NETWORK_POLICY_CRD])
        client = in_process(c.server.app, scheme=Scheme.builtin())
        await SvcPlugin([]).on_job_add(JOB, PluginClient(client))
        rk = await client.resolve("networking.k8s.io/v1", "NetworkPolicy")
        policy = await client.get(rk, "mpi", "default")
        assert policy["spec"]["podSelector"]["matchLabels"]["volcano.sh/job-name"] == "mpi"
        await client.close()


async def test_no_network_policy_and_no_error_when_the_server_does_not_serve_it() -> None:
    async with local_cluster(install_crds=False) as c:
        client = in_process(c.server.app, scheme=Scheme.builtin())
        job = {**JOB, "status": {}}
        await SvcPlugin([]).on_job_add(job, PluginClient(client))
        assert job["status"]["controlledResources"] == {"plugin-svc": "svc"}
        svc = client.scheme.by_api_version_kind("v1", "Service")
        assert svc is not None
        assert (await client.get(svc, "mpi", "default"))["spec"]["clusterIP"] == "None"
        await client.close()
