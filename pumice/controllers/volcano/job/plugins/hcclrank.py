"""``hcclrank`` job plugin (Huawei Ascend HCCL): the Pod annotation ``hccl/rankIndex`` unless set
-- from the Pod's ``RANK`` env when a container has one, else the master's task index, or for a
worker the master replicas plus its task index (label ``volcano.sh/task-index``).

Arguments: ``--master`` (master), ``--worker`` (worker).

Mirrors: volcano pkg/controllers/job/plugins/distributed-framework/hcclrank/hcclrank.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.job.plugins._base import parse_flags
from pumice.controllers.volcano.job.plugins._framework import ControlledOnly, find_task, task_key

HCCL_RANK_KEY = "hccl/rankIndex"


class HcclRankPlugin(ControlledOnly):
    name = "hcclrank"

    def __init__(self, arguments: list[str] | None = None) -> None:
        f = parse_flags(list(arguments or []), {"master": "master", "worker": "worker"})
        self.master, self.worker = str(f["master"]), str(f["worker"])

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        md = pod.setdefault("metadata", {})
        ann = md.get("annotations") or {}
        if ann.get(HCCL_RANK_KEY):
            return
        for c in (pod.get("spec") or {}).get("containers") or []:
            rank = next((e.get("value") for e in c.get("env") or [] if e.get("name") == "RANK"), None)
            if rank:
                md.setdefault("annotations", {})[HCCL_RANK_KEY] = str(rank)
                return
        task = task_key(pod)
        if task not in (self.master, self.worker):
            return
        raw = (md.get("labels") or {}).get(keys.TASK_INDEX)
        if raw is None:
            raise ValueError(f"pod {md.get('name')} doesn't have {keys.TASK_INDEX} label")
        index = int(raw)
        if task != self.master:
            master = find_task(job, self.master)
            index += int((master or {}).get("replicas") or 0)
        md.setdefault("annotations", {})[HCCL_RANK_KEY] = str(index)
