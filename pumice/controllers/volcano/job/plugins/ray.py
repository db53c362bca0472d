"""``ray`` job plugin: the head task's container runs ``ray start --head --block ...`` with the
GCS, dashboard and client ports opened; worker containers run ``ray start --block
--address=<head pod>.<job>:<port>``; a Service ``<job>-head-svc`` selects the head Pod.

Arguments: ``--head`` (head), ``--headContainer`` (head), ``--worker`` (worker),
``--workerContainer`` (worker), ``--port`` (6379), ``--dashboardPort`` (8265),
``--clientPort`` (10001).

Mirrors: volcano pkg/controllers/job/plugins/distributed-framework/ray/ray.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.job.builders import pod_name
from pumice.controllers.volcano.job.plugins._base import (
    PluginClient,
    controlled,
    owned,
    parse_flags,
    set_controlled,
)

GCS_PORT_NAME = "gcs"
DASHBOARD_PORT_NAME = "dashboard"
CLIENT_PORT_NAME = "client-server"


class RayPlugin:
    name = "ray"

    def __init__(self, arguments: list[str] | None = None) -> None:
        f = parse_flags(list(arguments or []), {"head": "head", "headContainer": "head", "worker": "worker",
                                                "workerContainer": "worker", "port": 6379,
                                                "dashboardPort": 8265, "clientPort": 10001})
        self.head, self.head_container = str(f["head"]), str(f["headContainer"])
        self.worker, self.worker_container = str(f["worker"]), str(f["workerContainer"])
        self.port, self.dashboard_port, self.client_port = int(f["port"]), int(f["dashboardPort"]), int(f["clientPort"])

    def _head_task(self, job: Obj) -> Obj | None:
        for t in (job.get("spec") or {}).get("tasks") or []:
            if t.get("name") == self.head:
                return t
        return None

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        head = self._head_task(job)
        if head is None:
            raise ValueError(f"job {job['metadata']['name']} doesn't have head task {self.head}")
        task = (pod["metadata"].get("annotations") or {}).get(keys.TASK_SPEC_KEY, "")
        for c in (pod.get("spec") or {}).get("containers") or []:
            if task == self.head and c.get("name") == self.head_container:
                ports = c.setdefault("ports", [])
                have = {p.get("containerPort") for p in ports}
                for pname, port in ((GCS_PORT_NAME, self.port), (DASHBOARD_PORT_NAME, self.dashboard_port),
                                    (CLIENT_PORT_NAME, self.client_port)):
                    if port not in have:
                        ports.append({"name": pname, "containerPort": port})
                c["command"] = ["sh", "-c", f"ray start --head --block --dashboard-host=0.0.0.0 --port={self.port} "
                                f"--dashboard-port={self.dashboard_port} --ray-client-server-port={self.client_port}"]
            if task == self.worker and c.get("name") == self.worker_container:
                hspec = (head.get("template") or {}).get("spec") or {}
                jname = job["metadata"]["name"]
                host = hspec.get("hostname") or pod_name(jname, head.get("name", ""), 0)
                sub = hspec.get("subdomain") or jname
                c["command"] = ["sh", "-c", f"ray start --block --address={host}.{sub}:{self.port}"]

    def head_service(self, job: Obj) -> Obj:
        md = job["metadata"]
        return owned(job, "v1", "Service", f"{md['name']}-head-svc", spec={
            "selector": {keys.JOB_NAME_KEY: md["name"], keys.JOB_NAMESPACE_KEY: md.get("namespace", "default"),
                         keys.TASK_SPEC_KEY: self.head},
            "ports": [{"name": n, "port": p, "targetPort": n, "protocol": "TCP"}
                      for n, p in ((GCS_PORT_NAME, self.port), (DASHBOARD_PORT_NAME, self.dashboard_port),
                                   (CLIENT_PORT_NAME, self.client_port))],
        })

    async def on_job_add(self, job: Obj, client: PluginClient) -> None:
        if controlled(job, self.name):
            return
        await client.create_if_missing(self.head_service(job))
        set_controlled(job, self.name, True)

    async def on_job_delete(self, job: Obj, client: PluginClient) -> None:
        if not controlled(job, self.name):
            return
        await client.delete_if_present("v1", "Service", f"{job['metadata']['name']}-head-svc",
                                       job["metadata"].get("namespace", "default"))
        set_controlled(job, self.name, False)

    async def on_job_update(self, job: Obj, client: PluginClient) -> None:
        return None
