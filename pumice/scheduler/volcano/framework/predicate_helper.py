"""Feasible-node search: resource fit + predicate plugins, with upstream's node sampling.

Two equivalent paths: a vectorized one (numpy masks over the session's node arrays, used when
every enabled predicate plugin offers a batch form) and a plain per-node loop (the baseline).
Both scan nodes from the session's rotating start index and stop after
``num_feasible_nodes_to_find`` feasible nodes, as upstream.

Mirrors: volcano pkg/scheduler/util/predicate_helper.go PredicateNodes and
actions/allocate/allocate.go predicate / prioritizeNodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import FitError, FitErrors, Status, StatusCode, insufficient_reason
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.util import num_feasible_nodes_to_find

Mode = Literal["allocate", "preempt", "backfill"]


def _resource_error(task: TaskInfo, node: NodeInfo) -> FitError | None:
    ok, names = task.resreq.less_equal_with_names(node.future_idle(), Dimension.ZERO)
    if ok:
        return None
    return FitError(task.namespace, task.name, node.name, [Status(StatusCode.Unschedulable, insufficient_reason(names))])


def node_fit_error(ssn: Session, task: TaskInfo, node: NodeInfo, mode: Mode) -> FitError | None:
    """The per-node check of ``mode`` (allocate: resources then predicates)."""
    if mode == "allocate":
        fe = _resource_error(task, node)
        if fe is not None:
            return fe
        return ssn.predicate_for_allocate(task, node)
    if mode == "backfill":
        return ssn.predicate_for_allocate(task, node)
    return ssn.predicate_for_preempt(task, node)


def _vectorizable(ssn: Session) -> bool:
    if not ssn.vectorize:
        return False
    names = ssn.callbacks.predicate.names()
    return all(n in ssn.batch_predicates for n in names)


def predicate_nodes(
    ssn: Session,
    task: TaskInfo,
    nodes: Sequence[NodeInfo] | None,
    mode: Mode,
    *,
    sample: bool = True,
) -> tuple[list[NodeInfo], FitErrors]:
    """Feasible nodes for ``task`` among ``nodes`` (None = all) and the fit errors of the
    nodes found infeasible. Sampling stops after the upstream number of feasible nodes."""
    fe = FitErrors()
    all_nodes = ssn.node_list
    cand = all_nodes if nodes is None else list(nodes)
    n = len(cand)
    if n == 0:
        return [], fe
    k = num_feasible_nodes_to_find(n) if sample else n
    start = ssn.last_processed_node_index % n if sample else 0
    if _vectorizable(ssn) and n > 8:
        rows = np.arange(n) if nodes is None else np.array([c.index for c in cand], dtype=int)
        chosen = _predicate_vectorized(ssn, task, cand, rows, mode, k, start, fe)
        return [cand[int(i)] for i in chosen], fe
    found: list[NodeInfo] = []
    processed = 0
    for j in range(n):
        node = cand[(start + j) % n]
        processed += 1
        err = node_fit_error(ssn, task, node, mode)
        if err is None:
            found.append(node)
            if len(found) >= k:
                break
        else:
            fe.set_node_error(node.name, err)
    if sample:
        ssn.last_processed_node_index = (start + processed) % n
    return found, fe


def predicate_rows(ssn: Session, task: TaskInfo, mode: Mode) -> tuple[np.ndarray, FitErrors] | None:
    """Vectorized :func:`predicate_nodes` over all nodes, returning session node indices; None
    when the session cannot vectorize (use :func:`predicate_nodes`)."""
    n = len(ssn.node_list)
    if not _vectorizable(ssn) or n <= 8:
        return None
    fe = FitErrors()
    k = num_feasible_nodes_to_find(n)
    start = ssn.last_processed_node_index % n
    chosen = _predicate_vectorized(ssn, task, ssn.node_list, ssn.arrays.all_rows, mode, k, start, fe)
    return chosen, fe


def _predicate_vectorized(
    ssn: Session,
    task: TaskInfo,
    cand: list[NodeInfo],
    rows: np.ndarray,
    mode: Mode,
    k: int,
    start: int,
    fe: FitErrors,
) -> np.ndarray:
    """Indices into ``cand`` of the chosen feasible nodes (``rows`` maps them to the session's
    node arrays)."""
    arr = ssn.arrays
    arr.sync()
    is_all = rows is arr.all_rows
    res_mask = None
    if mode == "allocate":
        res_mask = arr.fits(task.resreq, "future_idle", None if is_all else rows)
        mask = res_mask.copy()
    else:
        mask = np.ones(len(rows), dtype=bool)
    status_fns: list[Callable[[int], list[Status]]] = []
    for tier in ssn.callbacks.predicate.tiered():
        for name, _ in tier:
            pm, sf = ssn.batch_predicates[name](task)
            if not is_all:
                pm = pm[rows]
            if mode == "preempt":
                # only non-Unschedulable failures exclude a node from preemption
                bad = np.flatnonzero(~pm)
                keep = pm.copy()
                for b in bad:
                    bsts = sf(int(rows[b]))
                    if all(s.code in (StatusCode.Success, StatusCode.Unschedulable) for s in bsts):
                        keep[b] = True
                pm = keep
            mask &= pm
            status_fns.append(sf)
    n = len(rows)
    feas = np.flatnonzero(mask)
    if start:
        cut = int(np.searchsorted(feas, start))
        feas = np.concatenate((feas[cut:], feas[:cut]))
    if len(feas) >= k:
        chosen = feas[:k]
        processed = (int(chosen[-1]) - start) % n + 1
    else:
        chosen = feas
        processed = n
    ssn.last_processed_node_index = (start + processed) % n
    # Callers read the fit errors only when no node is feasible, so the per-node reasons (a
    # Python loop) are built only then.
    failed = np.flatnonzero(~mask) if len(chosen) == 0 else ()
    if len(failed):
        names: list[str] = []
        reasons: list[list[str]] = []
        unres: list[bool] = []
        for i in failed:
            node = cand[int(i)]
            if res_mask is not None and not res_mask[i]:
                err = _resource_error(task, node)
                if err is not None:
                    names.append(node.name)
                    reasons.append(err.reasons())
                    unres.append(False)
                    continue
            sts = []
            for sf in status_fns:
                sts = sf(int(rows[i]))
                if sts:
                    break
            names.append(node.name)
            reasons.append([s.reason for s in sts if s.reason])
            unres.append(any(s.code is StatusCode.UnschedulableAndUnresolvable for s in sts))
        fe.add_bulk(names, reasons, unres)
    return np.asarray(chosen, dtype=int)


def best_node_rows(ssn: Session, task: TaskInfo, rows: np.ndarray) -> NodeInfo | None:
    """:func:`best_node` over session node indices that already passed the allocate
    predicate (so every row fits ``future_idle``); vectorized scoring when possible."""
    if len(rows) == 0:
        return None
    idle_ok = ssn.arrays.fits(task.resreq, "idle", rows)
    shard = ssn.shard_mask()
    if shard is None:
        tiers = [rows[idle_ok], rows[~idle_ok]]
    else:
        own = shard[rows]
        tiers = [rows[idle_ok & own], rows[idle_ok & ~own], rows[~idle_ok & own], rows[~idle_ok & ~own]]
    for tier in tiers:
        if len(tier) == 1:
            return ssn.node_list[int(tier[0])]
        if len(tier) > 1:
            return ssn.best_node_rows(task, tier)
    return None


def best_node(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> NodeInfo | None:
    """Pick among feasible nodes: nodes that fit ``idle`` first, else those fitting only
    ``future_idle``; one candidate is taken as is, several are scored. Under soft sharding
    each of the two is split, this scheduler's shard first: idle in shard, idle elsewhere,
    future idle in shard, future idle elsewhere (upstream allocate prioritizeNodes)."""
    if not nodes:
        return None
    arr = ssn.arrays
    if ssn.vectorize and len(nodes) > 8:
        rows = np.array([n.index for n in nodes], dtype=int)
        idle_ok = arr.fits(task.resreq, "idle", rows)
        fut_ok = arr.fits(task.resreq, "future_idle", rows)
        tier_a = [nodes[i] for i in np.flatnonzero(idle_ok)]
        tier_b = [nodes[i] for i in np.flatnonzero(~idle_ok & fut_ok)]
    else:
        tier_a, tier_b = [], []
        for n in nodes:
            if task.resreq.less_equal(n.idle, Dimension.ZERO):
                tier_a.append(n)
            elif task.resreq.less_equal(n.future_idle(), Dimension.ZERO):
                tier_b.append(n)
    for tier in (*ssn.by_shard(tier_a), *ssn.by_shard(tier_b)):
        if len(tier) == 1:
            return tier[0]
        if len(tier) > 1:
            return ssn.best_node(task, tier)
    return None
