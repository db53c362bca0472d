"""``pytorch`` job plugin: torch.distributed's env on every container of the master and worker
Pods -- ``MASTER_ADDR`` (the master Pod's DNS name), ``MASTER_PORT``, ``WORLD_SIZE`` (master +
worker replicas), ``RANK`` (0 for the master, index + 1 for workers) -- and the port
``pytorchjob-port``; with ``--wait-master-enabled`` workers get the ``wait-for-master`` init
container. Nothing happens when the job has no master task.

Arguments: ``--master`` (master), ``--worker`` (worker), ``--port`` (23456),
``--wait-master-enabled`` (false), ``--wait-master-timeout`` (300), ``--wait-master-image``
(busybox:1.36.1).

Mirrors: volcano pkg/controllers/job/plugins/distributed-framework/pytorch/pytorch.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.volcano.job.plugins._base import parse_flags
from pumice.controllers.volcano.job.plugins._framework import (
    ControlledOnly,
    add_env,
    domain_name,
    find_task,
    open_port,
    pod_index,
    task_key,
)

PORT_NAME = "pytorchjob-port"


class PytorchPlugin(ControlledOnly):
    name = "pytorch"

    def __init__(self, arguments: list[str] | None = None) -> None:
        f = parse_flags(list(arguments or []), {"master": "master", "worker": "worker", "port": 23456,
                                                "wait-master-enabled": False, "wait-master-timeout": 300,
                                                "wait-master-image": "busybox:1.36.1"})
        self.master, self.worker, self.port = str(f["master"]), str(f["worker"]), int(f["port"])
        self.wait_enabled, self.wait_timeout = bool(f["wait-master-enabled"]), int(f["wait-master-timeout"])
        self.wait_image = str(f["wait-master-image"])

    def wait_script(self, addr: str) -> str:
        p, t = self.port, self.wait_timeout
        return (f'echo "Waiting for master node {addr}:{p} to be ready..."\nTIMEOUT={t}\nELAPSED=0\n'
                f"until {{ nc -z {addr} {p} || echo > /dev/tcp/{addr}/{p}; }} 2>/dev/null; do\n"
                '  if [ $ELAPSED -ge $TIMEOUT ]; then\n    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
                '    exit 1\n  fi\n  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
                '  sleep 2\n  ELAPSED=$((ELAPSED + 2))\ndone\necho "Master node is ready!"')

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        master = find_task(job, self.master)
        if master is None:
            return
        addr = domain_name(master, job, 0)
        task = task_key(pod)
        spec = pod.setdefault("spec", {})
        rank = None
        if task == self.worker:
            rank = pod_index(pod) + 1
            if self.wait_enabled and not any(c.get("name") == "wait-for-master" for c in spec.get("initContainers") or []):
                spec.setdefault("initContainers", []).append(
                    {"name": "wait-for-master", "image": self.wait_image, "command": ["sh", "-c", self.wait_script(addr)]})
        elif task == self.master:
            rank = 0
        world = sum(int(t.get("replicas") or 0) for t in (job.get("spec") or {}).get("tasks") or []
                    if t.get("name") in (self.master, self.worker))
        for c in spec.get("containers") or []:
            open_port(c, PORT_NAME, self.port)
            add_env(c, "MASTER_ADDR", addr)
            add_env(c, "MASTER_PORT", str(self.port))
            add_env(c, "WORLD_SIZE", str(world))
            if rank is not None:
                add_env(c, "RANK", str(rank))
