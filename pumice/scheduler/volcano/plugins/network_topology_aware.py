"""network-topology-aware: place topology jobs in the closest HyperNode that fits, and pack.

Registers, as upstream:

- the HyperNode gradient for a job -- and for a sub-job under its job's HyperNode, with the
  sub-job's limit, allocated HyperNode and Pending request -- with a hard limit (soft jobs arrive converted to hard at the
  root's tier): breadth-first from the search root over children; a HyperNode is eligible when
  its tier is at most the limit and, for a job not yet placed, the job's minimum resources fit
  its idle or future-idle (eviction: its allocatable); eligible HyperNodes grouped by tier,
  lowest first. A job already placed searches only under the highest ancestor of its
  allocated HyperNode within the limit. For eviction the gradients are reversed (widest first)
  and capped at ``hypernode.gradient.evict.max-hypernodes``.
- the HyperNode score (of a job, or of one sub-job): binpack of its total request over the HyperNode's allocatable and
  used (0 when it would overflow), weighted by ``hypernode.binpack.*``; ties at the top broken
  by the share of the job's tasks already inside.
- node scores: for a task of a topology job (of a topology sub-job when the job has sub-group
  policies), 1 on its allocated HyperNode, else
  ``(maxTier - tier(LCA)) / (maxTier - minTier)`` (0 before anything is placed), ties at the top
  broken by the task share; for other Pods (``hypernode.binpack.normal-pod.enable``) the
  fading-weighted mean over tiers of the binpack score of the node's HyperNode at each tier
  (1 where the node belongs to none).
- allocate/deallocate handlers keeping each HyperNode's ``used``.

Every score is multiplied by ``100 * weight``.

Mirrors: volcano pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go.
Deviates: candidates of equal score are taken in name order (upstream: Go map order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from pumice.scheduler.volcano.api.hyper_node_info import HyperNodesInfo
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import CPU, MEMORY, Dimension, Resource
from pumice.scheduler.volcano.api.sub_job_info import SubJobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, decode
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "network-topology-aware"
MAX_NODE_SCORE = 100.0
DEFAULT_FADING = 0.8
DEFAULT_EVICT_MAX_HYPERNODES = 8


class NetworkTopologyAwareArgs(Arguments, frozen=True):
    """Upstream keys: ``weight``, ``hypernode.binpack.{cpu,memory,resources,resources.<name>}``,
    ``hypernode.binpack.normal-pod.{enable,fading}``, ``hypernode.gradient.evict.max-hypernodes``."""
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default

    weight: int = msgspec.field(default=1, name="weight")
    binpack_cpu: int = msgspec.field(default=1, name="hypernode.binpack.cpu")
    binpack_memory: int = msgspec.field(default=1, name="hypernode.binpack.memory")
    binpack_resources: str = msgspec.field(default="", name="hypernode.binpack.resources")
    normal_pod_enable: bool = msgspec.field(default=True, name="hypernode.binpack.normal-pod.enable")
    normal_pod_fading: float = msgspec.field(default=DEFAULT_FADING, name="hypernode.binpack.normal-pod.fading")
    evict_max_hypernodes: int = msgspec.field(default=DEFAULT_EVICT_MAX_HYPERNODES, name="hypernode.gradient.evict.max-hypernodes")
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def weights(self) -> dict[str, int]:
        """Resource -> binpack weight (negative weights fall back to 1, as upstream)."""
        w = {CPU: self.binpack_cpu if self.binpack_cpu >= 0 else 1, MEMORY: self.binpack_memory if self.binpack_memory >= 0 else 1}
        for name in (r.strip() for r in self.binpack_resources.split(",")):
            if not name or name in (CPU, MEMORY):
                continue
            v = self.extra.get(f"hypernode.binpack.resources.{name}", 1)
            try:
                iv = int(v)
            except (TypeError, ValueError) as e:
                raise ArgumentError(f"hypernode.binpack.resources.{name}: expected an integer, got {v!r}") from e
            w[name] = iv if iv >= 0 else 1
        return w

    @property
    def global_weight(self) -> int:
        return self.weight if self.weight >= 0 else 1

    @property
    def fading(self) -> float:
        return self.normal_pod_fading if self.normal_pod_fading >= 0 else DEFAULT_FADING

    @property
    def evict_cap(self) -> int:
        return self.evict_max_hypernodes if self.evict_max_hypernodes > 0 else DEFAULT_EVICT_MAX_HYPERNODES


class NetworkTopologyAwarePlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NetworkTopologyAwareArgs) -> None:
        self.args = args
        self.weights = args.weights()
        self.dims = list(self.weights)

    # ----- per-HyperNode resources --------------------------------------------------------
    def _open_cache(self, ssn: Session) -> None:
        hns = ssn.hypernodes
        self.hns: HyperNodesInfo = hns
        self.names = sorted(hns.infos)
        self.index = {n: i for i, n in enumerate(self.names)}
        h, d = len(self.names), len(self.dims)
        self.alloc = np.zeros((h, d))
        self.used = np.zeros((h, d))
        self.idle: dict[str, Resource] = {}
        self.future_idle: dict[str, Resource] = {}
        self.allocatable: dict[str, Resource] = {}
        self.node_hns: dict[str, list[int]] = {}
        for name in self.names:
            i = self.index[name]
            al, idle, fut = Resource(), Resource(), Resource()
            for n in hns.infos[name].nodes:
                ni = ssn.nodes.get(n)
                if ni is None:
                    continue
                al, idle, fut = al + ni.allocatable, idle + ni.idle, fut + ni.future_idle()
                self.alloc[i] += [ni.allocatable.get(r) for r in self.dims]
                self.used[i] += [ni.used.get(r) for r in self.dims]
                self.node_hns.setdefault(n, []).append(i)
            self.allocatable[name], self.idle[name], self.future_idle[name] = al, idle, fut
        self.min_tier = hns.tiers[0] if hns.tiers else 0
        self.max_tier = hns.tiers[-1] if hns.tiers else 0
        # node row -> HyperNode index at each tier (first by name; -1: none), for normal pods
        self.tier_rows: dict[int, np.ndarray] = {}
        for tier in range(self.min_tier, self.max_tier + 1):
            col = np.full(len(ssn.node_list), -1, dtype=int)
            for name in reversed(hns.by_tier.get(tier, [])):
                for n in hns.infos[name].nodes:
                    ni = ssn.nodes.get(n)
                    if ni is not None:
                        col[ni.index] = self.index[name]
            self.tier_rows[tier] = col
        self.leaf_rows = np.array([self.index.get(hns.leaf_of(n.name), -1) for n in ssn.node_list], dtype=int)
        self._lca_scores: dict[str, np.ndarray] = {}

    def _on_event(self, ev: Event, sign: int) -> None:
        for i in self.node_hns.get(ev.task.node_name, ()):
            self.used[i] += sign * np.array([ev.task.resreq.get(r) for r in self.dims])

    def _binpack(self, request: np.ndarray, hn: np.ndarray) -> np.ndarray:
        """Binpack score per HyperNode index in ``hn`` for a request over ``self.dims`` (only
        requested weighted dimensions count; 0 when any would overflow)."""
        w = np.array([self.weights[r] for r in self.dims], dtype=float)
        wanted = request > 0
        if not wanted.any():
            return np.zeros(len(hn))
        al, us = self.alloc[hn][:, wanted], self.used[hn][:, wanted]
        req, ww = request[wanted], w[wanted]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = (us + req) / al
        over = ((us + req) > al).any(axis=1)
        total_w = ww.sum()
        score = (np.nan_to_num(frac, nan=0.0) * ww).sum(axis=1) / total_w if total_w > 0 else np.zeros(len(hn))
        score[over] = 0.0
        return np.asarray(score, dtype=float)

    def _request(self, r: Resource) -> np.ndarray:
        return np.array([r.get(d) for d in self.dims], dtype=float)

    # ----- scores -------------------------------------------------------------------------
    def _task_share(self, hn: str, job: JobInfo | SubJobInfo) -> float:
        if not job.tasks:
            return 1.0
        nodes = self.hns.node_sets.get(hn, frozenset())
        return sum(1 for t in job.tasks.values() if t.node_name and t.node_name in nodes) / len(job.tasks)

    def hyper_node_order(self, ssn: Session, job: JobInfo | SubJobInfo, candidates: Sequence[str]) -> dict[str, float]:
        total = Resource()
        for t in job.tasks.values():
            total = total + t.resreq
        idx = np.array([self.index[c] for c in candidates], dtype=int)
        raw = self._binpack(self._request(total), idx)
        scores = {c: float(s) for c, s in zip(candidates, raw, strict=True)}
        top = max(scores.values(), default=0.0)
        best = [c for c, s in scores.items() if s == top]
        if len(best) > 1:
            for c in best:
                scores[c] += self._task_share(c, job)
        scale = MAX_NODE_SCORE * self.args.global_weight
        return {c: s * scale for c, s in scores.items()}

    def _tier_score(self, tier: int) -> float:
        if self.min_tier == self.max_tier:
            return 1.0
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return 0.0

    def _leaf_scores(self, allocated: str) -> np.ndarray:
        """Per HyperNode index: the network-topology score of a node whose leaf it is."""
        got = self._lca_scores.get(allocated)
        if got is None:
            got = np.zeros(len(self.names))
            for i, name in enumerate(self.names):
                if name == allocated:
                    got[i] = 1.0
                    continue
                lca = self.hns.lca(name, allocated)
                got[i] = self._tier_score(self.hns.infos[lca].tier) if lca in self.hns.infos else 0.0
            self._lca_scores[allocated] = got
        return got

    def rows_scores(self, ssn: Session, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Node scores for session node indices ``rows`` (already scaled)."""
        owner = ssn.jobs.get(task.job)
        job = owner.topology_group(task.uid) if owner is not None else None
        out = np.zeros(len(rows))
        if job is not None and job.network_topology is not None:
            allocated = task.job_allocated_hypernode
            if not allocated or allocated not in self.index:
                return out
            leaves = self.leaf_rows[rows]
            per_leaf = self._leaf_scores(allocated)
            out = np.where(leaves >= 0, per_leaf[np.maximum(leaves, 0)], 0.0)
            top = out.max() if len(out) else 0.0
            tied = np.flatnonzero(out == top)
            if len(tied) > 1:
                share: dict[int, float] = {}
                for k in tied:
                    leaf = int(leaves[k])
                    if leaf < 0:
                        continue
                    if leaf not in share:
                        share[leaf] = self._task_share(self.names[leaf], job)
                    out[k] += share[leaf]
        elif self.args.normal_pod_enable:
            req = self._request(task.resreq)
            fading = self.args.fading
            total_w = 0.0
            acc = np.zeros(len(rows))
            for tier in range(self.min_tier, self.max_tier + 1):
                tw = fading ** (tier - 1)
                total_w += tw
                member = self.tier_rows[tier][rows]
                has = member >= 0
                sc = np.ones(len(rows))
                if has.any():
                    uniq, inv = np.unique(member[has], return_inverse=True)
                    sc[has] = self._binpack(req, uniq)[inv]
                acc += tw * sc
            if total_w > 0:
                out = acc / total_w
        return out * MAX_NODE_SCORE * self.args.global_weight

    # ----- gradients ----------------------------------------------------------------------
    def _search_root(self, root: str, limit: int, allocated: str) -> str | None:
        if not allocated:
            return root
        highest = ""
        for a in self.hns.ancestors(allocated):
            if self.hns.infos[a].tier > limit:
                break
            highest = a
        if not highest:
            return None
        lca = self.hns.lca(root, highest)
        if lca == highest:
            return root
        if lca == root:
            return highest
        return None

    def gradient(self, ssn: Session, job: JobInfo, root: str, purpose: str) -> list[list[str]] | None:
        hard, limit = job.is_hard_topology_mode()
        if not hard:
            return [[root]]
        return self._gradient(root, limit, job.allocated_hypernode, job.min_resources or Resource(), purpose)

    def sub_job_gradient(self, sub: SubJobInfo, root: str, purpose: str) -> list[list[str]] | None:
        """The gradient of one sub-job under ``root`` (its job's HyperNode); the minimum is the
        sub-job's Pending request."""
        hard, limit = sub.is_hard_topology_mode()
        if not hard:
            return [[root]]
        return self._gradient(root, limit, sub.allocated_hypernode, sub.min_resources(), purpose)

    def _gradient(self, root: str, limit: int, allocated: str, min_res: Resource, purpose: str) -> list[list[str]]:
        start = self._search_root(root, limit, allocated)
        if start is None:
            return []
        eligible: dict[int, list[str]] = {}
        queue, seen = [start], {start}
        while queue:
            cur = queue.pop(0)
            info = self.hns.infos[cur]
            if info.tier <= limit and (
                allocated
                or (purpose == "evict" and min_res.less_equal(self.allocatable[cur], Dimension.ZERO))
                or (
                    purpose != "evict"
                    and (min_res.less_equal(self.idle[cur], Dimension.ZERO) or min_res.less_equal(self.future_idle[cur], Dimension.ZERO))
                )
            ):
                eligible.setdefault(info.tier, []).append(cur)
            for child in sorted(info.children):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        result = [eligible[t] for t in sorted(eligible)]
        if purpose != "evict":
            return result
        remaining, capped = self.args.evict_cap, []
        for g in reversed(result):
            if remaining == 0:
                break
            if len(g) <= remaining:
                capped.append(g)
                remaining -= len(g)
            else:
                capped.append(g[len(g) - remaining:])
                remaining = 0
        return capped

    def on_session_open(self, ssn: Session) -> None:
        self._open_cache(ssn)
        ssn.add_hyper_node_order_fn(PLUGIN_NAME, lambda job, cands: self.hyper_node_order(ssn, job, cands))
        ssn.add_hyper_node_gradient_for_job_fn(PLUGIN_NAME, lambda job, root, purpose: self.gradient(ssn, job, root, purpose))
        ssn.add_hyper_node_gradient_for_sub_job_fn(PLUGIN_NAME, self.sub_job_gradient)

        def batch(task: TaskInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
            return self.rows_scores(ssn, task, np.array([n.index for n in nodes], dtype=int))

        ssn.add_batch_node_order_fn(PLUGIN_NAME, batch)
        ssn.batch_scores[PLUGIN_NAME] = lambda task, rows: self.rows_scores(ssn, task, rows)
        ssn.add_event_handler(EventHandler(lambda e: self._on_event(e, 1), lambda e: self._on_event(e, -1)))

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> NetworkTopologyAwareArgs:
    """Parse (once, at configuration load) the arguments under their upstream keys.

    Raises:
        ArgumentError: a nested value of the wrong type (unknown keys and top-level wrong types are
            ignored with a warning, as upstream).
    """
    args = decode(NetworkTopologyAwareArgs, arguments, extra=lambda k: k.startswith("hypernode.binpack.resources."))
    args.weights()
    return args


new = NetworkTopologyAwarePlugin
