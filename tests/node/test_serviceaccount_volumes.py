"""The process runtime with the real API server over HTTPS and the kube controllers: a Pod gets
its ServiceAccount token, ``ca.crt`` and namespace at /var/run/secrets/kubernetes.io/serviceaccount
and reaches the API server with them; a PersistentVolumeClaim becomes a directory (made by the
node agent's local-path provisioner) that outlives the Pod and is seen by the next one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pumice.api.scheme import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM
from pumice.client.base import is_not_found
from pumice.controllers.kube import setup as kube_setup
from pumice.node.agent import NodeAgent
from pumice.runtime import Manager
from pumice.testing.cluster import HttpServer, serve_http
from pumice.testing.node import get_pod, phase_is, pod, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root")


CALL_API = f"""{sys.executable} - <<'EOF'
import json, os, ssl, urllib.request, urllib.error
d = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(d + "/token").read()
ns = open(d + "/namespace").read()
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
url = "https://%s:%s/apis/authentication.k8s.io/v1/selfsubjectreviews" % (
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
req = urllib.request.Request(url, data=json.dumps({{"apiVersion": "authentication.k8s.io/v1",
    "kind": "SelfSubjectReview"}}).encode(), headers={{"Authorization": "Bearer " + token,
    "Content-Type": "application/json"}}, method="POST")
who = json.load(urllib.request.urlopen(req, context=ctx))["status"]["userInfo"]["username"]
print("namespace=" + ns + " user=" + who)
req = urllib.request.Request(url.replace("apis/authentication.k8s.io/v1/selfsubjectreviews",
    "api/v1/namespaces/kube-system/secrets"), headers={{"Authorization": "Bearer " + token}})
try:
    urllib.request.urlopen(req, context=ctx)
except urllib.error.HTTPError as e:
    print("secrets=%d" % e.code)
EOF"""


@contextlib.asynccontextmanager
async def stack(tmp: Path) -> AsyncIterator[tuple[HttpServer, Any, NodeAgent]]:
    async with serve_http(tmp / "api") as srv:
        client = srv.client()
        mgr = Manager(srv.client(), graceful_shutdown_timeout=2.0)
        kube_setup(mgr, controllers=["serviceaccount", "root-ca-cert-publisher", "persistentvolume-binder"],
                   root_ca=(srv.data_dir / "tls.crt").read_text())
        mgr_task = asyncio.create_task(mgr.start())
        agent = NodeAgent(srv.client(), runtime="process", data_dir=tmp / "node", node_names=["node-0"],
                          node_cpu="4", node_memory="8Gi", lease_renew_interval=None, stop_grace=2.0,
                          apiserver_url_for_pods=srv.url)
        await agent.start()
        try:
            yield srv, client, agent
        finally:
            await agent.stop()
            mgr.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(mgr_task, 20)
            await client.close()


@pytest.fixture
def tmp(data_dir: Path) -> Path:
    return data_dir


async def _sa_ready(client: Any) -> bool:
    from pumice.api.scheme import CONFIG_MAP, SERVICE_ACCOUNT

    try:
        await client.get(SERVICE_ACCOUNT, "default", "default")
        await client.get(CONFIG_MAP, "kube-root-ca.crt", "default")
        return True
    except Exception as e:
        if is_not_found(e):
            return False
        raise


async def test_pod_reaches_the_api_server_with_its_mounted_service_account_token(tmp: Path) -> None:
    async with stack(tmp) as (_srv, client, agent):
        await wait_for(lambda: _sa_ready(client), timeout=30)
        await client.create(pod("caller", CALL_API, node="node-0"))
        await wait_for(lambda: phase_is(client, "caller", "Succeeded"), timeout=60)
        p = await get_pod(client, "caller")
        log = (agent.pod_dir(p) / "c0" / "0.log").read_text()
        assert "namespace=default user=system:serviceaccount:default:default" in log, log
        assert "secrets=403" in log, log


async def test_claim_is_provisioned_as_a_directory_that_the_next_pod_sees(tmp: Path) -> None:
    async with stack(tmp) as (_srv, client, agent):
        await client.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                             "metadata": {"name": "data", "namespace": "default"},
                             "spec": {"accessModes": ["ReadWriteOnce"],
                                      "resources": {"requests": {"storage": "1Gi"}}}})

        async def bound() -> bool:
            pvc = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
            return (pvc.get("status") or {}).get("phase") == "Bound"

        await wait_for(bound, timeout=30)
        pvc = await client.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
        pv = await client.get(PERSISTENT_VOLUME, pvc["spec"]["volumeName"])
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "pumice.dev/local-path"
        host_dir = Path(pv["spec"]["hostPath"]["path"])
        vol = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
        writer = pod("writer", "echo persisted > /data/file", node="node-0",
                     volumeMounts=[{"name": "data", "mountPath": "/data"}])
        writer["spec"]["volumes"] = [vol]
        await client.create(writer)
        await wait_for(lambda: phase_is(client, "writer", "Succeeded"), timeout=60)
        assert (host_dir / "file").read_text() == "persisted\n"
        reader = pod("reader", "cat /data/file", node="node-0", volumeMounts=[{"name": "data", "mountPath": "/data"}])
        reader["spec"]["volumes"] = [vol]
        await client.create(reader)
        await wait_for(lambda: phase_is(client, "reader", "Succeeded"), timeout=60)
        p = await get_pod(client, "reader")
        assert " stdout F persisted" in (agent.pod_dir(p) / "c0" / "0.log").read_text()
