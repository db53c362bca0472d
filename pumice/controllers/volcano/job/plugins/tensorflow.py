"""``tensorflow`` job plugin: every container gets ``TF_CONFIG``, the JSON cluster spec
(``ps``/``worker``/``chief``/``evaluator`` lists of ``<pod DNS name>:<port>``, empty roles left
out) and this Pod's ``task`` (``type`` = its role, or its task name for other tasks; ``index`` =
its index in the task). A job of one task with one replica gets nothing.

Arguments: ``--ps`` (ps), ``--worker`` (worker), ``--chief`` (chief), ``--evaluator``
(evaluator), ``--port`` (2222).

Mirrors: volcano pkg/controllers/job/plugins/distributed-framework/tensorflow/tensorflow.go.
"""

from __future__ import annotations

import json

from pumice.api import Obj
from pumice.controllers.volcano.job.plugins._base import parse_flags
from pumice.controllers.volcano.job.plugins._framework import (
    ControlledOnly,
    add_env,
    domain_name,
    pod_index,
    task_key,
)

TF_CONFIG = "TF_CONFIG"


class TensorflowPlugin(ControlledOnly):
    name = "tensorflow"

    def __init__(self, arguments: list[str] | None = None) -> None:
        f = parse_flags(list(arguments or []), {"ps": "ps", "worker": "worker", "chief": "chief",
                                                "evaluator": "evaluator", "port": 2222})
        self.roles = {str(f["ps"]): "ps", str(f["worker"]): "worker", str(f["chief"]): "chief",
                      str(f["evaluator"]): "evaluator"}
        self.port = int(f["port"])

    def cluster_spec(self, pod: Obj, job: Obj) -> Obj:
        index = pod_index(pod)
        task = task_key(pod)
        cluster: dict[str, list[str]] = {}
        for ts in (job.get("spec") or {}).get("tasks") or []:
            role = self.roles.get(ts.get("name", ""))
            if role is None:
                continue
            hosts = [f"{domain_name(ts, job, i)}:{self.port}" for i in range(int(ts.get("replicas") or 0))]
            if hosts:
                cluster[role] = hosts
        ordered = {k: cluster[k] for k in ("ps", "worker", "chief", "evaluator") if k in cluster}
        return {"cluster": ordered, "task": {"type": self.roles.get(task, task), "index": index}}

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        tasks = (job.get("spec") or {}).get("tasks") or []
        if len(tasks) == 1 and int(tasks[0].get("replicas") or 0) == 1:
            return
        raw = json.dumps(self.cluster_spec(pod, job), separators=(",", ":"))
        for c in (pod.setdefault("spec", {}).get("containers") or []):
            add_env(c, TF_CONFIG, raw)
