"""Helpers the distributed-framework plugins share: task lookup, Pod index, domain names.

Mirrors: volcano pkg/controllers/job/helpers/helpers.go (GetTaskKey, GetPodIndexUnderTask,
MakeDomainName, GetTaskIndexUnderJob) and the plugins' OnJobAdd/OnJobDelete bookkeeping.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.job.builders import pod_name
from pumice.controllers.volcano.job.plugins._base import PluginClient, controlled, set_controlled

DEFAULT_TASK_SPEC = "default"


def task_key(pod: Obj) -> str:
    """The Pod's task name (``volcano.sh/task-spec`` annotation; ``default`` when absent)."""
    return str((pod["metadata"].get("annotations") or {}).get(keys.TASK_SPEC_KEY) or DEFAULT_TASK_SPEC)


def pod_index(pod: Obj) -> int:
    """The index after the last ``-`` of a ``<job>-<task>-<i>`` Pod name.

    Raises:
        ValueError: the name has fewer than three parts or the last is not a number.
    """
    parts = pod["metadata"]["name"].split("-")
    if len(parts) < 3:
        raise ValueError(f'strconv.Atoi: parsing "": invalid syntax (pod {pod["metadata"]["name"]})')
    return int(parts[-1])


def find_task(job: Obj, name: str) -> Obj | None:
    for t in (job.get("spec") or {}).get("tasks") or []:
        if t.get("name") == name:
            return t
    return None


def domain_name(task: Obj, job: Obj, index: int) -> str:
    """``<hostname or job-task-index>.<subdomain or job>``."""
    spec = (task.get("template") or {}).get("spec") or {}
    host = spec.get("hostname") or pod_name(job["metadata"]["name"], task.get("name", ""), index)
    return f"{host}.{spec.get('subdomain') or job['metadata']['name']}"


def add_env(container: Obj, name: str, value: str) -> None:
    container.setdefault("env", []).append({"name": name, "value": value})


def open_port(container: Obj, name: str, port: int) -> None:
    """Add ``name: port`` unless the container already exposes that port number."""
    ports = container.setdefault("ports", [])
    if not any(p.get("containerPort") == port for p in ports):
        ports.append({"name": name, "containerPort": port})


class ControlledOnly:
    """OnJobAdd/OnJobDelete that only record ``plugin-<name>`` in ``status.controlledResources``."""

    name = ""

    async def on_job_add(self, job: Obj, client: PluginClient) -> None:
        if not controlled(job, self.name):
            set_controlled(job, self.name, True)

    async def on_job_delete(self, job: Obj, client: PluginClient) -> None:
        if controlled(job, self.name):
            set_controlled(job, self.name, False)

    async def on_job_update(self, job: Obj, client: PluginClient) -> None:
        return None
