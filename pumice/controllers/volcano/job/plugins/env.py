"""``env`` job plugin: ``VK_TASK_INDEX`` and ``VC_TASK_INDEX`` (the Pod's index in its task) in
every container and init container.

Mirrors: volcano pkg/controllers/job/plugins/env/env.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.volcano.job.plugins._framework import ControlledOnly

TASK_VK_INDEX = "VK_TASK_INDEX"
TASK_INDEX = "VC_TASK_INDEX"


def pod_index(pod: Obj) -> str:
    """The last ``-`` segment of a name with at least three segments (upstream GetPodIndexUnderTask)."""
    parts = pod["metadata"]["name"].split("-")
    return parts[-1] if len(parts) >= 3 else ""


class EnvPlugin(ControlledOnly):
    name = "env"

    def __init__(self, arguments: list[str] | None = None) -> None:
        self.arguments = list(arguments or [])

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        idx = pod_index(pod)
        spec = pod.get("spec") or {}
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            c.setdefault("env", []).extend([{"name": TASK_VK_INDEX, "value": idx},
                                            {"name": TASK_INDEX, "value": idx}])
