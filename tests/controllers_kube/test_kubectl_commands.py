"""Everyday kubectl against the HTTPS server with the kube controllers, the default scheduler and
the fake kubelet: every ``kubectl create`` generator for the kinds pumice serves, ``run``,
``expose``, ``wait``, and ``rollout undo`` (which must bring back the old ReplicaSet, not make a
new one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pumice.api.scheme import REPLICA_SET

from .conftest import eventually
from .test_kubectl import kubectl

pytestmark = pytest.mark.kubectl


CREATE_COMMANDS = [
    (["create", "clusterrole", "reader", "--verb=get,list", "--resource=pods"], "clusterrole.rbac.authorization.k8s.io/reader created"),
    (["create", "clusterrolebinding", "reader", "--clusterrole=reader", "--user=bob"],
     "clusterrolebinding.rbac.authorization.k8s.io/reader created"),
    (["create", "configmap", "cm", "--from-literal=a=b"], "configmap/cm created"),
    (["create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *"], "cronjob.batch/cj created"),
    (["create", "deployment", "dep", "--image=nginx", "--replicas=2"], "deployment.apps/dep created"),
    (["create", "job", "job", "--image=busybox"], "job.batch/job created"),
    (["create", "job", "from-cj", "--from=cronjob/cj"], "job.batch/from-cj created"),
    (["create", "namespace", "team"], "namespace/team created"),
    (["create", "poddisruptionbudget", "pdb", "--selector=app=dep", "--min-available=1"],
     "poddisruptionbudget.policy/pdb created"),
    (["create", "priorityclass", "high", "--value=1000"], "priorityclass.scheduling.k8s.io/high created"),
    (["create", "quota", "q", "--hard=pods=50"], "resourcequota/q created"),
    (["create", "role", "r", "--verb=get", "--resource=pods"], "role.rbac.authorization.k8s.io/r created"),
    (["create", "rolebinding", "rb", "--role=r", "--user=bob"], "rolebinding.rbac.authorization.k8s.io/rb created"),
    (["create", "secret", "generic", "gen", "--from-literal=a=b"], "secret/gen created"),
    (["create", "secret", "docker-registry", "reg", "--docker-username=u", "--docker-password=p",
      "--docker-server=r.example"], "secret/reg created"),
    (["create", "service", "clusterip", "cip", "--tcp=80:8080"], "service/cip created"),
    (["create", "service", "nodeport", "np", "--tcp=80:8080"], "service/np created"),
    (["create", "service", "loadbalancer", "lb", "--tcp=80:8080"], "service/lb created"),
    (["create", "service", "externalname", "ext", "--external-name=example.com"], "service/ext created"),
    (["create", "serviceaccount", "robot"], "serviceaccount/robot created"),
]


async def test_every_create_generator_for_served_kinds(cluster: Any, tmp_path: Path) -> None:
    srv, _client = cluster
    for args, expected in CREATE_COMMANDS:
        code, out = await kubectl(srv.kubeconfig, *args)
        assert code == 0 and expected in out, f"kubectl {' '.join(args)}: {out}"
    cert, key = srv.data_dir / "tls.crt", srv.data_dir / "tls.key"
    code, out = await kubectl(srv.kubeconfig, "create", "secret", "tls", "tls", f"--cert={cert}", f"--key={key}")
    assert code == 0 and "secret/tls created" in out, out
    code, out = await kubectl(srv.kubeconfig, "create", "token", "robot")
    assert code == 0 and out.count(".") == 2, out


async def test_run_expose_and_wait(cluster: Any) -> None:
    srv, _client = cluster
    code, out = await kubectl(srv.kubeconfig, "run", "solo", "--image=busybox", "--labels=app=solo", "--port=80")
    assert code == 0 and "pod/solo created" in out, out
    code, out = await kubectl(srv.kubeconfig, "wait", "--for=condition=Ready", "pod/solo", "--timeout=60s")
    assert code == 0 and "pod/solo condition met" in out, out
    code, out = await kubectl(srv.kubeconfig, "expose", "pod", "solo", "--port=8080", "--target-port=80")
    assert code == 0 and "service/solo exposed" in out, out
    code, out = await kubectl(srv.kubeconfig, "get", "service", "solo", "-o", "jsonpath={.spec.selector.app}")
    assert (code, out) == (0, "solo")
    code, out = await kubectl(srv.kubeconfig, "create", "deployment", "w", "--image=nginx")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "wait", "--for=condition=Available", "deployment/w", "--timeout=60s")
    assert code == 0 and "deployment.apps/w condition met" in out, out
    code, out = await kubectl(srv.kubeconfig, "delete", "pod", "solo", "--wait=false")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "wait", "--for=delete", "pod/solo", "--timeout=60s")
    assert code == 0, out


async def test_rollout_undo_reuses_the_old_replica_set(cluster: Any) -> None:
    srv, client = cluster
    code, out = await kubectl(srv.kubeconfig, "create", "deployment", "web", "--image=nginx:1", "--replicas=2")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
    assert code == 0, out
    first = {rs["metadata"]["name"] for rs in (await client.list(REPLICA_SET, "default")).items}
    code, out = await kubectl(srv.kubeconfig, "set", "image", "deployment/web", "nginx=nginx:2")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "rollout", "undo", "deployment/web")
    assert code == 0 and "rolled back" in out, out
    code, out = await kubectl(srv.kubeconfig, "rollout", "status", "deployment/web", "--timeout=60s")
    assert code == 0, out

    async def back_on_the_first() -> bool:
        rss = (await client.list(REPLICA_SET, "default")).items
        active = [rs["metadata"]["name"] for rs in rss if (rs["spec"].get("replicas") or 0) > 0]
        return len(rss) == 2 and active == sorted(first)

    await eventually(back_on_the_first, timeout=30, what="the first ReplicaSet scaled up again")
    code, out = await kubectl(srv.kubeconfig, "get", "deployment", "web", "-o",
                              "jsonpath={.spec.template.spec.containers[0].image}")
    assert (code, out) == (0, "nginx:1")


async def test_kubectl_services_get_node_ports_and_cluster_ips_once(cluster: Any) -> None:
    # trial 12 F-11, as reproduced there
    srv, _client = cluster
    code, out = await kubectl(srv.kubeconfig, "create", "service", "nodeport", "np1", "--tcp=80:80", "--node-port=30080")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "create", "service", "nodeport", "np2", "--tcp=80:80", "--node-port=30080")
    assert code != 0
    assert ('Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already '
            "allocated") in out
    code, out = await kubectl(srv.kubeconfig, "create", "service", "nodeport", "np4", "--tcp=80:80")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "get", "service", "np4", "-o", "jsonpath={.spec.ports[0].nodePort}")
    assert code == 0 and 30000 <= int(out) <= 32767 and int(out) != 30080, out
    code, out = await kubectl(srv.kubeconfig, "create", "service", "clusterip", "cip", "--clusterip=10.96.0.5",
                              "--tcp=80:80")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "create", "service", "clusterip", "cip2", "--clusterip=10.96.0.5",
                              "--tcp=80:80")
    assert code != 0
    assert ('spec.clusterIPs: Invalid value: []string{"10.96.0.5"}: failed to allocate IP 10.96.0.5: provided IP is '
            "already allocated") in out
    code, out = await kubectl(srv.kubeconfig, "get", "service", "cip", "-o",
                              "jsonpath={.spec.clusterIPs} {.spec.ipFamilies} {.spec.ipFamilyPolicy}")
    assert (code, out) == (0, '["10.96.0.5"] ["IPv4"] SingleStack')
    code, out = await kubectl(srv.kubeconfig, "delete", "service", "np1")
    assert code == 0, out
    code, out = await kubectl(srv.kubeconfig, "create", "service", "nodeport", "np2", "--tcp=80:80", "--node-port=30080")
    assert code == 0, out
