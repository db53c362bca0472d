"""binpack: prefer nodes that are already full (weighted by resource).

score = Σ_r (used_r + req_r) × w_r / alloc_r over the task's requested resources that have a
weight, divided by Σ w_r, times 100 × ``binpack.weight``; a requested weighted resource that
does not fit zeroes the score.

Mirrors: volcano pkg/scheduler/plugins/binpack/binpack.go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import CPU, MEMORY
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, arg, decode
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "binpack"
MAX_NODE_SCORE = 100.0


class BinpackArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    weight: int = arg("binpack.weight", 1)
    cpu: int = arg("binpack.cpu", 1)
    memory: int = arg("binpack.memory", 1)
    resources: str = arg("binpack.resources", "")
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def weights(self) -> dict[str, int]:
        w = {CPU: self.cpu if self.cpu >= 0 else 1, MEMORY: self.memory if self.memory >= 0 else 1}
        for name in (r.strip() for r in self.resources.split(",")):
            if not name or name in (CPU, MEMORY):
                continue
            v = self.extra.get(f"binpack.resources.{name}", 1)
            if isinstance(v, bool) or not isinstance(v, int | float | str):
                raise ArgumentError(f"binpack.resources.{name}: expected an integer, got {v!r}")
            try:
                iv = int(v)
            except ValueError as e:
                raise ArgumentError(f"binpack.resources.{name}: expected an integer, got {v!r}") from e
            w[name] = iv if iv >= 0 else 1
        return w


def binpack_score(task: TaskInfo, node: NodeInfo, weights: Mapping[str, int], binpack_weight: int) -> float:
    score = 0.0
    wsum = 0
    for r in task.resreq.resource_names():
        req = task.resreq.get(r)
        if req == 0:
            continue
        w = weights.get(r)
        if w is None:
            continue
        cap = node.allocatable.get(r)
        used = node.used.get(r)
        if cap == 0 or w == 0:
            part = 0.0
        elif used + req > cap:
            return 0.0
        else:
            part = (used + req) * w / cap
        score += part
        wsum += w
    if wsum > 0:
        score /= wsum
    return score * MAX_NODE_SCORE * binpack_weight


class BinpackPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: BinpackArgs) -> None:
        self.args = args
        self.weights = args.weights()

    def on_session_open(self, ssn: Session) -> None:
        if self.args.weight == 0:
            return
        weights, bw = self.weights, self.args.weight

        def rows_scores(task: TaskInfo, rows: np.ndarray) -> np.ndarray:
            arr = ssn.arrays
            arr.sync()
            score = np.zeros(len(rows))
            wsum = 0
            zero = np.zeros(len(rows), dtype=bool)
            for r in task.resreq.resource_names():
                req = task.resreq.get(r)
                w = weights.get(r)
                if req == 0 or w is None:
                    continue
                c = arr.col.get(r)
                cap = arr.allocatable[rows, c] if c is not None else np.zeros(len(rows))
                used = arr.used[rows, c] if c is not None else np.zeros(len(rows))
                if w != 0:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        part = np.where(cap == 0, 0.0, (used + req) * w / np.where(cap == 0, 1, cap))
                    zero |= (cap != 0) & (used + req > cap)
                    score += part
                wsum += w
            if wsum > 0:
                score /= wsum
            score[zero] = 0.0
            return score * MAX_NODE_SCORE * bw

        def batch(task: TaskInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
            if not ssn.vectorize:
                return np.array([binpack_score(task, n, weights, bw) for n in nodes], dtype=float)
            return rows_scores(task, np.array([n.index for n in nodes], dtype=int))

        ssn.add_batch_node_order_fn(PLUGIN_NAME, batch)
        if ssn.vectorize:
            ssn.batch_scores[PLUGIN_NAME] = rows_scores

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> BinpackArgs:
    """Parse (once, at configuration load) the arguments under their upstream keys.

    Raises:
        ArgumentError: a nested value of the wrong type (unknown keys and top-level wrong types are
            ignored with a warning, as upstream).
    """
    args = decode(BinpackArgs, arguments, extra=lambda k: k.startswith("binpack.resources."))
    args.weights()
    return args


new = BinpackPlugin
