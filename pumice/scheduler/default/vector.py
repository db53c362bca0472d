"""The vectorized scheduling core: Node facts as numpy columns, filter and score in one pass.

Columns (one row per Node slot): ``alloc`` and ``free`` (allocatable, allocatable minus
requested; int64, one column per resource, ``pods`` counted 1 per Pod), ``nz`` (non-zero
requested cpu millicores and memory bytes for LeastAllocated), ``present``, ``unsched``,
``taint_sig`` (an id per distinct effective taint list), and one int32 code column per label key
(-1 when the Node lacks the label). Binding a Pod updates one row.

Answers equal :class:`pumice.scheduler.default.core.LoopCore`'s (same filters, same integer and
float arithmetic, same tie-break).

Mirrors: the same upstream plugins as :mod:`pumice.scheduler.default.plugins`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pumice.api import Obj
from pumice.api.selectors import LabelSelector
from pumice.scheduler.default import plugins
from pumice.scheduler.default.core import CoreBase, Decision
from pumice.scheduler.default.podinfo import PodInfo, Requirement, Taint, Term, effective_taints
from pumice.scheduler.default.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, node_allocatable
from pumice.scheduler.default.spread import (
    HOSTNAME_KEY,
    MAX_NODE_SCORE,
    NO_DOMAIN_MIN,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    WEIGHT_POD_TOPOLOGY_SPREAD,
    Spread,
)

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

_BASE_RESOURCES = (PODS, CPU, MEMORY, EPHEMERAL_STORAGE)
_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
MATCH_CACHE = 256
"""Selectors per namespace whose matching-Pod counts per Node the core keeps (PodTopologySpread)."""


class _LabelColumn:
    def __init__(self, capacity: int) -> None:
        self.codes = np.full(capacity, -1, dtype=np.int32)
        self.values: dict[str, int] = {}
        self._numeric: npt.NDArray[np.float64] | None = None

    def code(self, v: str) -> int:
        c = self.values.get(v)
        if c is None:
            c = self.values[v] = len(self.values)
            self._numeric = None
        return c

    def numeric(self) -> npt.NDArray[np.float64]:
        """Each value code's integer value (NaN when the label is not an integer)."""
        if self._numeric is None:
            out = np.full(len(self.values) + 1, np.nan)
            for v, c in self.values.items():
                try:
                    out[c] = int(v)
                except ValueError:
                    pass
            self._numeric = out
        return self._numeric


class VectorCore(CoreBase):
    """Numpy-backed scheduling core (see module docstring)."""

    def __init__(self, seed: int = 0, capacity: int = 64) -> None:
        super().__init__(seed)
        self._cap = capacity
        self._res: dict[str, int] = {r: i for i, r in enumerate(_BASE_RESOURCES)}
        # one contiguous column per resource (allocatable, and allocatable minus requested)
        self.alloc: list[IntArray] = [np.zeros(capacity, dtype=np.int64) for _ in self._res]
        self.free: list[IntArray] = [np.zeros(capacity, dtype=np.int64) for _ in self._res]
        self.nz_cpu = np.zeros(capacity, dtype=np.int64)
        self.nz_mem = np.zeros(capacity, dtype=np.int64)
        # derived per Node at store time, for scoring: divisors that are never 0, the number of
        # scored resources present (1 when none) and whether both cpu and memory are present
        self.safe_cpu = np.ones(capacity, dtype=np.int64)
        self.safe_mem = np.ones(capacity, dtype=np.int64)
        self.weights = np.ones(capacity, dtype=np.int64)
        self.both = np.zeros(capacity, dtype=np.float64)
        self.present = np.zeros(capacity, dtype=bool)
        self.unsched = np.zeros(capacity, dtype=bool)
        self.taint_sig = np.zeros(capacity, dtype=np.int32)
        self._sigs: list[tuple[Taint, ...]] = [()]
        self._sig_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self._labels: dict[str, _LabelColumn] = {}
        self._node_labels: dict[int, dict[str, str]] = {}
        # (protocol, port) -> slot -> Counter of host IPs in use
        self._ports: dict[tuple[str, int], dict[int, Counter[str]]] = {}
        self._tol_cache: dict[tuple[Any, ...], tuple[BoolArray, IntArray]] = {}
        self._n = 0  # rows in use (max slot + 1)
        # namespace -> selector -> node name -> counted Pods it matches (PodTopologySpread)
        self._match_counts: dict[str, dict[LabelSelector, Counter[str]]] = {}

    # -- storage ------------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, self._cap * 2)

        def grow(a: Any, fill: Any = 0) -> Any:
            shape = (cap, *a.shape[1:])
            b = np.full(shape, fill, dtype=a.dtype)
            b[: self._cap] = a
            return b

        self.alloc = [grow(a) for a in self.alloc]
        self.free = [grow(a) for a in self.free]
        self.nz_cpu, self.nz_mem = grow(self.nz_cpu), grow(self.nz_mem)
        self.safe_cpu, self.safe_mem = grow(self.safe_cpu, 1), grow(self.safe_mem, 1)
        self.weights, self.both = grow(self.weights, 1), grow(self.both)
        self.present, self.unsched, self.taint_sig = grow(self.present), grow(self.unsched), grow(self.taint_sig)
        for col in self._labels.values():
            col.codes = grow(col.codes, -1)
        self._cap = cap

    def _resource_col(self, name: str) -> int:
        c = self._res.get(name)
        if c is None:
            c = self._res[name] = len(self._res)
            self.alloc.append(np.zeros(self._cap, dtype=np.int64))
            self.free.append(np.zeros(self._cap, dtype=np.int64))
        return c

    def _store_node(self, slot: int, node: Obj) -> None:
        self._grow(slot + 1)
        self._n = max(self._n, slot + 1)
        self._clear_node(slot)
        alloc = node_allocatable(node)
        for r, v in alloc.items():
            c = self._resource_col(r)
            self.alloc[c][slot] = v
            self.free[c][slot] = v
        cpu, mem = alloc.get(CPU, 0), alloc.get(MEMORY, 0)
        self.safe_cpu[slot] = cpu or 1
        self.safe_mem[slot] = mem or 1
        self.weights[slot] = max(1, (cpu > 0) + (mem > 0))
        self.both[slot] = 1.0 if cpu > 0 and mem > 0 else 0.0
        self.present[slot] = True
        self.unsched[slot] = bool((node.get("spec") or {}).get("unschedulable"))
        taints = effective_taints(node)
        sig = self._sig_ids.get(taints)
        if sig is None:
            sig = self._sig_ids[taints] = len(self._sigs)
            self._sigs.append(taints)
        self.taint_sig[slot] = sig
        labels = dict((node.get("metadata") or {}).get("labels") or {})
        for k, v in labels.items():
            col = self._labels.get(k)
            if col is None:
                col = self._labels[k] = _LabelColumn(self._cap)
            col.codes[slot] = col.code(v)
        self._node_labels[slot] = labels

    def _clear_node(self, slot: int) -> None:
        for a in self.alloc:
            a[slot] = 0
        for a in self.free:
            a[slot] = 0
        self.nz_cpu[slot] = 0
        self.nz_mem[slot] = 0
        self.safe_cpu[slot] = self.safe_mem[slot] = self.weights[slot] = 1
        self.both[slot] = 0.0
        self.present[slot] = False
        self.unsched[slot] = False
        self.taint_sig[slot] = 0
        for k in self._node_labels.pop(slot, {}):
            self._labels[k].codes[slot] = -1
        for users in self._ports.values():
            users.pop(slot, None)

    def _account(self, slot: int, pod: PodInfo, sign: int) -> None:
        for r, v in pod.requests.items():
            self.free[self._resource_col(r)][slot] -= sign * v
        self.nz_cpu[slot] += sign * pod.nonzero[0]
        self.nz_mem[slot] += sign * pod.nonzero[1]
        for proto, ip, port in pod.host_ports:
            users = self._ports.setdefault((proto, port), {})
            ips = users.setdefault(slot, Counter())
            ips[ip] += sign
            if ips[ip] <= 0:
                del ips[ip]
            if not ips:
                del users[slot]

    # -- filters as masks ---------------------------------------------------------------------
    def _taint_tables(self, pod: PodInfo) -> tuple[BoolArray, IntArray]:
        """Per taint signature: tolerated (filter) and untolerated PreferNoSchedule count."""
        key = (pod.tolerations, len(self._sigs))
        hit = self._tol_cache.get(key)
        if hit is None:
            ok = np.array([plugins.first_untolerated_taint(pod, s) is None for s in self._sigs], dtype=bool)
            tols = [t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule")]
            prefer = np.array([
                sum(1 for taint in s if taint.effect == "PreferNoSchedule"
                    and not any(t.tolerates(taint) for t in tols))
                for s in self._sigs], dtype=np.int64)
            if len(self._tol_cache) > 1024:
                self._tol_cache.clear()
            hit = self._tol_cache[key] = (ok, prefer)
        return hit

    def _requirement_mask(self, req: Requirement, n: int) -> BoolArray:
        if req.field:
            named = req.key == "metadata.name"
            mask = np.zeros(n, dtype=bool)
            if named:
                for v in req.values:
                    s = self._slot.get(v)
                    if s is not None and s < n:
                        mask[s] = True
            op = req.operator
            if op == "In":
                return mask
            if op == "NotIn":
                return ~mask
            if op == "Exists":
                return np.full(n, named, dtype=bool)
            if op == "DoesNotExist":
                return np.full(n, not named, dtype=bool)
            return np.zeros(n, dtype=bool)
        col = self._labels.get(req.key)
        if col is None:
            present = np.zeros(n, dtype=bool)
            codes = np.full(n, -1, dtype=np.int32)
        else:
            codes = col.codes[:n]
            present = codes >= 0
        op = req.operator
        if op in ("In", "NotIn"):
            wanted = [c for c in (col.values.get(v) for v in req.values) if c is not None] if col else []
            hit = np.isin(codes, wanted) if wanted else np.zeros(n, dtype=bool)
            return hit if op == "In" else ~hit
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return ~present
        if col is None:
            return present
        try:
            rhs = int(req.values[0])
        except (ValueError, IndexError):
            return np.zeros(n, dtype=bool)
        nums = col.numeric()[np.where(present, codes, len(col.values))]
        with np.errstate(invalid="ignore"):
            return present & ((nums > rhs) if op == "Gt" else (nums < rhs))

    def _term_mask(self, term: Term, n: int) -> BoolArray:
        if not term:
            return np.zeros(n, dtype=bool)
        mask = np.ones(n, dtype=bool)
        for r in term:
            mask &= self._requirement_mask(r, n)
        return mask

    def _affinity_mask(self, pod: PodInfo, n: int) -> BoolArray | None:
        if not pod.selector and pod.affinity_terms is None:
            return None
        mask = self._term_mask(pod.selector, n) if pod.selector else np.ones(n, dtype=bool)
        if pod.affinity_terms is not None:
            anyterm = np.zeros(n, dtype=bool)
            for t in pod.affinity_terms:
                anyterm |= self._term_mask(t, n)
            mask &= anyterm
        return mask

    def _ports_mask(self, pod: PodInfo, n: int) -> BoolArray | None:
        if not pod.host_ports:
            return None
        mask = np.ones(n, dtype=bool)
        for proto, ip, port in pod.host_ports:
            for slot, ips in self._ports.get((proto, port), {}).items():
                if ip in ips or ip == "0.0.0.0" or "0.0.0.0" in ips:
                    mask[slot] = False
        return mask

    def _stages(self, pod: PodInfo, n: int) -> list[tuple[str, BoolArray | None]]:
        """Filter masks in upstream plugin order (None: the plugin passes every Node)."""
        stages: list[tuple[str, BoolArray | None]] = []
        unsched = None
        if not pod.tolerates(_UNSCHEDULABLE_TAINT) and self.unsched[:n].any():
            unsched = ~self.unsched[:n]
        stages.append(("unschedulable", unsched))
        name_mask = None
        if pod.node_name:
            name_mask = np.zeros(n, dtype=bool)
            s = self._slot.get(pod.node_name)
            if s is not None:
                name_mask[s] = True
        stages.append(("nodename", name_mask))
        ok, _ = self._taint_tables(pod)
        stages.append(("taints", None if ok.all() else ok[self.taint_sig[:n]]))
        stages.append(("affinity", self._affinity_mask(pod, n)))
        stages.append(("ports", self._ports_mask(pod, n)))
        return stages

    def _pod_columns(self, pod: PodInfo) -> list[tuple[str, int, int]]:
        return [(r, self._resource_col(r), v) for r, v in pod.requests.items() if v > 0]

    # -- PodTopologySpread -------------------------------------------------------------------
    def add_pod(self, pod: PodInfo, node: str) -> None:
        super().add_pod(pod, node)  # a re-add goes through remove_pod first
        self._count_matches(pod, node, 1)

    def remove_pod(self, uid: str) -> None:
        entry = self._pods.get(uid)
        super().remove_pod(uid)
        if entry is not None:
            self._count_matches(entry[1], entry[0], -1)

    def _count_matches(self, pod: PodInfo, node: str, sign: int) -> None:
        if pod.terminating:
            return
        for selector, counts in self._match_counts.get(pod.namespace, {}).items():
            if selector.matches(pod.labels):
                counts[node] += sign
                if counts[node] <= 0:
                    del counts[node]

    def _match_vector(self, namespace: str, selector: LabelSelector, n: int) -> npt.NDArray[np.float64]:
        """Per Node row: the counted Pods of ``namespace`` (not terminating) ``selector`` matches.
        Counts per selector are kept up to date from the first use on (at most
        :data:`MATCH_CACHE` selectors per namespace; a full one is emptied)."""
        cache = self._match_counts.setdefault(namespace, {})
        counts = cache.get(selector)
        if counts is None:
            if len(cache) >= MATCH_CACHE:
                cache.clear()
            counts = cache[selector] = Counter(
                node for node, p in self._pods.values()
                if p.namespace == namespace and not p.terminating and selector.matches(p.labels))
        out = np.zeros(n, dtype=np.float64)
        for node, c in counts.items():
            slot = self._slot.get(node)
            if slot is not None and slot < n:
                out[slot] = c
        return out

    def _topology_codes(self, cons: Sequence[Any], n: int) -> tuple[list[Any], BoolArray]:
        """Per constraint, each Node row's value code for its topology key (-1: the Node lacks
        the key), and the present rows that have every constraint's key."""
        codes = [col.codes[:n] if (col := self._labels.get(c.topology_key)) is not None
                 else np.full(n, -1, dtype=np.int32) for c in cons]
        has_all = self.present[:n].copy()
        for cd in codes:
            has_all &= cd >= 0
        return codes, has_all

    def _spread_vector(self, pod: PodInfo, spread: Spread, feasible: BoolArray, n: int) -> IntArray:
        """PodTopologySpread's normalized score per Node row (meaningful on ``feasible`` rows):
        :func:`pumice.scheduler.default.spread.spread_scores` as column operations, with the same
        float arithmetic in the same order."""
        present = self.present[:n]
        cons = spread.constraints
        codes, has_all = self._topology_codes(cons, n)
        counted = has_all if not spread.system_defaulted else present
        scored = feasible & has_all if not spread.system_defaulted else feasible
        affinity = self._affinity_mask(pod, n)
        tolerated = self._taint_tables(pod)[0][self.taint_sig[:n]]
        s = np.zeros(n, dtype=np.float64)
        for c, cd in zip(cons, codes, strict=True):
            matches = self._match_vector(pod.namespace, c.selector, n)
            cnt: npt.NDArray[Any]
            if c.topology_key == HOSTNAME_KEY:
                weight = math.log(int(scored.sum()) + 2)
                cnt = matches
            else:
                col = self._labels.get(c.topology_key)
                k = len(col.values) if col is not None else 0
                # a Node without the key is in the domain "" (as a Go map lookup of a missing key)
                missing = col.values.get("", k) if col is not None else k
                domain = np.where(cd >= 0, cd, missing)
                seen = np.zeros(k + 1, dtype=bool)
                seen[domain[scored]] = True
                weight = math.log(int(seen.sum()) + 2)
                eligible = counted.copy()
                if c.node_affinity_policy == "Honor" and affinity is not None:
                    eligible &= affinity
                if c.node_taints_policy == "Honor":
                    eligible &= tolerated
                per_domain = np.bincount(domain[eligible], weights=matches[eligible], minlength=k + 1)
                cnt = per_domain[domain]
            s += np.where(cd >= 0, cnt * weight + (c.max_skew - 1), 0.0)
        raw = np.floor(s + 0.5).astype(np.int64)
        if not scored.any():
            return np.zeros(n, dtype=np.int64)
        lo, hi = int(raw[scored].min()), max(0, int(raw[scored].max()))
        norm = (np.full(n, MAX_NODE_SCORE, dtype=np.int64) if hi == 0
                else MAX_NODE_SCORE * (hi + lo - raw) // hi)
        return np.where(scored, norm, 0)

    def _spread_filter(self, pod: PodInfo, n: int) -> tuple[BoolArray, BoolArray]:
        """PodTopologySpread's filter per Node row for the Pod's DoNotSchedule constraints:
        ``(missing, skewed)``, the rows it rejects for a missing topology key, resp. for maxSkew
        (each row in at most one, by the first constraint it fails). The same counts as
        :func:`pumice.scheduler.default.spread.prefilter`, as column operations."""
        present = self.present[:n]
        cons = pod.spread_filter
        codes, has_all = self._topology_codes(cons, n)
        affinity = self._affinity_mask(pod, n)
        tolerated = self._taint_tables(pod)[0][self.taint_sig[:n]]
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        alive = present.copy()
        for c, cd in zip(cons, codes, strict=True):
            eligible = has_all.copy()
            if c.node_affinity_policy == "Honor" and affinity is not None:
                eligible &= affinity
            if c.node_taints_policy == "Honor":
                eligible &= tolerated
            col = self._labels.get(c.topology_key)
            k = len(col.values) if col is not None else 0
            matches = self._match_vector(pod.namespace, c.selector, n)
            per_domain = np.bincount(cd[eligible], weights=matches[eligible], minlength=k + 1)
            seen = np.zeros(k + 1, dtype=bool)
            seen[cd[eligible]] = True
            domains = int(seen.sum())
            least = int(per_domain[seen].min()) if domains else NO_DOMAIN_MIN
            if domains < c.min_domains:
                least = 0
            lacks = cd < 0
            count = per_domain[np.where(lacks, k, cd)]
            over = ~lacks & (count + int(c.selector.matches(pod.labels)) - least > c.max_skew)
            missing |= alive & lacks
            skewed |= alive & over
            alive &= ~lacks & ~over
        return missing, skewed

    # -- schedule -----------------------------------------------------------------------------
    def schedule(self, pod: PodInfo) -> Decision:
        n = self._n
        cols = self._pod_columns(pod)
        stages = self._stages(pod, n)
        mask = self.present[:n].copy()
        for _, m in stages:
            if m is not None:
                mask &= m
        for _, c, v in cols:
            mask &= self.free[c][:n] >= v
        volume_refused = self._volume_refused(pod, n) if pod.volume_reasons else None
        if volume_refused is not None:
            mask &= ~volume_refused
        spread_filter = self._spread_filter(pod, n) if pod.spread_filter else None
        if spread_filter is not None:
            mask &= ~(spread_filter[0] | spread_filter[1])
        if not mask.any():
            return self._diagnose(pod, n, stages, cols, spread_filter, volume_refused)
        # Scores over every row (contiguous arrays, no fancy indexing); infeasible rows masked.
        alloc_cpu, alloc_mem = self.alloc[1][:n], self.alloc[2][:n]
        safe_cpu, safe_mem = self.safe_cpu[:n], self.safe_mem[:n]
        # LeastAllocated on non-zero requests (a resource a Node lacks scores 0 and weighs 0).
        req_cpu = self.nz_cpu[:n] + pod.nonzero[0]
        req_mem = self.nz_mem[:n] + pod.nonzero[1]
        s_cpu = np.where(req_cpu <= alloc_cpu, (alloc_cpu - req_cpu) * 100 // safe_cpu, 0)
        s_mem = np.where(req_mem <= alloc_mem, (alloc_mem - req_mem) * 100 // safe_mem, 0)
        least = (s_cpu + s_mem) // self.weights[:n]
        # BalancedAllocation on actual requests.
        used_cpu = alloc_cpu - self.free[1][:n] + pod.requests.get(CPU, 0)
        used_mem = alloc_mem - self.free[2][:n] + pod.requests.get(MEMORY, 0)
        f_cpu = np.minimum(1.0, used_cpu / safe_cpu)
        f_mem = np.minimum(1.0, used_mem / safe_mem)
        std = np.abs((f_cpu - f_mem) / 2) * self.both[:n]
        balanced = ((1 - std) * plugins.MAX_NODE_SCORE).astype(np.int64)
        total = plugins.WEIGHT_LEAST_ALLOCATED * least + plugins.WEIGHT_BALANCED_ALLOCATION * balanced
        _, prefer = self._taint_tables(pod)
        if prefer.any():
            raw = prefer[self.taint_sig[:n]]
            top = int(raw[mask].max())
            if top:
                total = total + plugins.WEIGHT_TAINT_TOLERATION * (
                    plugins.MAX_NODE_SCORE - plugins.MAX_NODE_SCORE * raw // top)
            else:
                total = total + plugins.WEIGHT_TAINT_TOLERATION * plugins.MAX_NODE_SCORE
        else:
            total = total + plugins.WEIGHT_TAINT_TOLERATION * plugins.MAX_NODE_SCORE
        if pod.spread is not None:
            total = total + WEIGHT_POD_TOPOLOGY_SPREAD * self._spread_vector(pod, pod.spread, mask, n)
        total = np.where(mask, total, -1)
        best = np.flatnonzero(total == total.max())
        k = self.rng.randrange(best.size) if best.size > 1 else 0
        name = self._names[int(best[k])]
        assert name is not None
        return Decision(name)

    def _volume_refused(self, pod: PodInfo, n: int) -> BoolArray:
        """The rows VolumeBinding's Filter refuses (:attr:`PodInfo.volume_reasons`)."""
        out = np.zeros(n, dtype=bool)
        assert pod.volume_reasons is not None
        for name in pod.volume_reasons:
            slot = self._slot.get(name)
            if slot is not None and slot < n:
                out[slot] = True
        return out

    def _diagnose(self, pod: PodInfo, n: int, stages: list[tuple[str, BoolArray | None]],
                  cols: list[tuple[str, int, int]],
                  spread_filter: tuple[BoolArray, BoolArray] | None = None,
                  volume_refused: BoolArray | None = None) -> Decision:
        alive = self.present[:n].copy()
        total = int(alive.sum())
        reasons: Counter[str] = Counter()
        unresolvable = 0
        for stage, m in stages:
            if m is None:
                continue
            failing = alive & ~m
            count = int(failing.sum())
            if not count:
                continue
            if stage == "taints":
                ok, _ = self._taint_tables(pod)
                sigs = self.taint_sig[:n][failing]
                for sig, c in zip(*np.unique(sigs, return_counts=True), strict=True):
                    t = plugins.first_untolerated_taint(pod, self._sigs[int(sig)])
                    assert t is not None and not ok[int(sig)]
                    reasons[t.reason()] += int(c)
            else:
                reasons[{
                    "unschedulable": plugins.REASON_UNSCHEDULABLE,
                    "nodename": plugins.REASON_NODE_NAME,
                    "affinity": plugins.REASON_NODE_AFFINITY,
                    "ports": plugins.REASON_NODE_PORTS,
                }[stage]] += count
            if stage != "ports":
                unresolvable += count
            alive &= m
        order = {r: i for i, r in enumerate(_BASE_RESOURCES)}
        for r, c, v in sorted(cols, key=lambda x: (order.get(x[0], len(order)), x[0])):
            short = int((alive & (self.free[c][:n] < v)).sum())
            if short:
                reasons[plugins.insufficient(r)] += short
        if volume_refused is not None or spread_filter is not None:
            for _, c, v in cols:
                alive &= self.free[c][:n] >= v
        if volume_refused is not None:
            assert pod.volume_reasons is not None
            for slot in np.flatnonzero(alive & volume_refused):
                name = self._names[int(slot)]
                assert name is not None
                for r in pod.volume_reasons[name]:
                    reasons[r] += 1
                unresolvable += 1
            alive &= ~volume_refused
        if spread_filter is not None:
            lacking = int((alive & spread_filter[0]).sum())
            skewed = int((alive & spread_filter[1]).sum())
            if lacking:
                reasons[REASON_NODE_LABEL_NOT_MATCH] += lacking
                unresolvable += lacking
            if skewed:
                reasons[REASON_CONSTRAINTS_NOT_MATCH] += skewed
        msg = plugins.fit_error_message(total, reasons, unresolvable)
        return Decision(None, msg, tuple(sorted(reasons.items())))
