"""Job plugins of the vcjob controller, one module each, registered by upstream name.

A plugin has a pure ``on_pod_create(pod, job)`` that edits the Pod about to be created, and
``on_job_add`` / ``on_job_delete`` / ``on_job_update`` that converge the objects it owns through a
:class:`PluginClient` and record themselves in ``status.controlledResources["plugin-<name>"]``.

Registered: ``env``, ``svc``, ``ssh``, ``ray``, ``pytorch``, ``mpi``, ``tensorflow``, ``hcclrank``.

Mirrors: volcano pkg/controllers/job/plugins/factory.go and interface/interface.go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pumice.api import Obj
from pumice.controllers.volcano.job.plugins._base import NoopPlugin, PluginClient, parse_flags
from pumice.controllers.volcano.job.plugins.env import EnvPlugin
from pumice.controllers.volcano.job.plugins.hcclrank import HcclRankPlugin
from pumice.controllers.volcano.job.plugins.mpi import MPIPlugin
from pumice.controllers.volcano.job.plugins.pytorch import PytorchPlugin
from pumice.controllers.volcano.job.plugins.ray import RayPlugin
from pumice.controllers.volcano.job.plugins.ssh import SSHPlugin
from pumice.controllers.volcano.job.plugins.svc import SvcPlugin
from pumice.controllers.volcano.job.plugins.tensorflow import TensorflowPlugin


class JobPlugin(Protocol):
    name: str

    def on_pod_create(self, pod: Obj, job: Obj) -> None: ...

    async def on_job_add(self, job: Obj, client: PluginClient) -> None: ...

    async def on_job_delete(self, job: Obj, client: PluginClient) -> None: ...

    async def on_job_update(self, job: Obj, client: PluginClient) -> None: ...


PLUGINS: dict[str, Callable[[list[str]], JobPlugin]] = {
    "env": EnvPlugin,
    "svc": SvcPlugin,
    "ssh": SSHPlugin,
    "ray": RayPlugin,
    "pytorch": PytorchPlugin,
    "mpi": MPIPlugin,
    "tensorflow": TensorflowPlugin,
    "hcclrank": HcclRankPlugin,
}
NOT_BUILT: tuple[str, ...] = ()


def build(name: str, arguments: list[str]) -> JobPlugin:
    """The plugin named ``name`` with its arguments.

    Raises:
        KeyError: for a name upstream does not know either (lists the known names).
    """
    if name in PLUGINS:
        return PLUGINS[name](list(arguments or []))
    if name in NOT_BUILT:
        return NoopPlugin(name)
    raise KeyError(f"unknown job plugin {name!r}; known: {sorted([*PLUGINS, *NOT_BUILT])}")


__all__ = ["NOT_BUILT", "PLUGINS", "JobPlugin", "NoopPlugin", "PluginClient", "build", "parse_flags"]
