"""``mpi`` job plugin: the master Pod's containers (init containers too) get ``MPI_HOST``, the
comma-joined DNS names of every worker Pod; every container of every Pod opens ``mpijob-port``
(ssh). The job also gets ``ssh`` and ``svc`` from the job webhook: passwordless ssh between the
Pods and the hostfiles ``/etc/volcano/<task>.host``.

Arguments: ``--master`` (master), ``--worker`` (worker), ``--port`` (22).

Mirrors: volcano pkg/controllers/job/plugins/distributed-framework/mpi/mpi.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.volcano.job.plugins._base import parse_flags
from pumice.controllers.volcano.job.plugins._framework import (
    ControlledOnly,
    domain_name,
    find_task,
    open_port,
    task_key,
)

PORT_NAME = "mpijob-port"
MPI_HOST = "MPI_HOST"


def task_hosts(task: Obj, job: Obj) -> str:
    """Worker DNS names, comma-joined (a fixed template hostname gives one)."""
    replicas = int(task.get("replicas") or 0)
    if replicas == 0:
        return ""
    if ((task.get("template") or {}).get("spec") or {}).get("hostname"):
        return domain_name(task, job, 0)
    return ",".join(domain_name(task, job, i) for i in range(replicas))


class MPIPlugin(ControlledOnly):
    name = "mpi"

    def __init__(self, arguments: list[str] | None = None) -> None:
        f = parse_flags(list(arguments or []), {"master": "master", "worker": "worker", "port": 22})
        self.master, self.worker, self.port = str(f["master"]), str(f["worker"]), int(f["port"])

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        env: Obj | None = None
        if task_key(pod) == self.master:
            worker = find_task(job, self.worker)
            if worker is None:
                return
            env = {"name": MPI_HOST, "value": task_hosts(worker, job)}
        spec = pod.setdefault("spec", {})
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            open_port(c, PORT_NAME, self.port)
            if env is not None:
                c.setdefault("env", []).append(dict(env))
