"""The fair-share arithmetic of proportion, capacity and drf, as pure functions.

Every function takes values and returns values (no session, no plugin state), so the maths is
tested on its own (tests/scheduler_volcano/test_fair_share.py).

Mirrors: volcano pkg/scheduler/plugins/proportion/proportion.go (the deserved loop in
OnSessionOpen, updateShare), capacity/capacity.go (realCapability, deserved clamp, updateShare)
and drf/drf.go (calculateShare).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from pumice.scheduler.volcano.api.resource import (
    MIN_RESOURCE,
    PODS,
    Dimension,
    Resource,
    _le,
    exceeded_part,
    share,
)
from pumice.scheduler.volcano.plugins._queue_util import res_max


class Claim(NamedTuple):
    """One queue's input to proportion's water filling (immutable; a tuple, built at every
    session open for every queue with jobs).

    ``weight`` >= 0; ``request``: what its jobs ask for (allocated + pending);
    ``real_capability``: its cap; ``guarantee``: the floor.
    """

    key: str
    weight: int
    request: Resource
    real_capability: Resource
    guarantee: Resource


def usage_share(allocated: Resource, deserved: Resource) -> float:
    """The largest allocated/deserved ratio over the deserved dimensions (0 when none).

    Mirrors: proportion.go / capacity.go updateShare.
    """
    # deserved.resource_names() walked inline (cpu, memory, then the scalars in order): each
    # deserved amount there is >= MIN_RESOURCE, so share() is the plain quotient, and
    # ``max(res, s)`` keeps ``res`` unless ``s > res``
    res = 0.0
    d = deserved.milli_cpu
    if d >= MIN_RESOURCE:
        s = allocated.milli_cpu / d
        if s > res:
            res = s
    d = deserved.memory
    if d >= MIN_RESOURCE:
        s = allocated.memory / d
        if s > res:
            res = s
    ds = deserved.scalars
    if ds:
        for rn, d in ds.items():
            if d >= MIN_RESOURCE:
                s = allocated.get(rn) / d
                if s > res:
                    res = s
    return res


_LAST: list[tuple[Resource, list[Claim], dict[str, Resource]]] = []
"""The last :func:`proportion_deserved` inputs and result."""

_FILLS_LIMIT = 512
"""How many results :func:`proportion_deserved` keeps by request values (a few MB at most)."""

_FILLS_BASE: list[tuple[Resource, list[tuple[str, int, Resource, Resource]]]] = []
"""The inputs but the requests (the very objects) that :data:`_FILLS` holds results for."""

_FILLS: dict[tuple[tuple[tuple[str, ...], ...], bytes], dict[str, Resource]] = {}
"""Results of :func:`_water_fill` by the bits of the claims' requests (:func:`_request_key`),
for the inputs of :data:`_FILLS_BASE`; oldest first."""


def _same_inputs(last: list[Claim], claims: Sequence[Claim]) -> bool:
    """The same keys and weights in the same order, and the very same Resource objects."""
    return len(last) == len(claims) and all(
        a.key == b.key and a.weight == b.weight and a.request is b.request
        and a.real_capability is b.real_capability and a.guarantee is b.guarantee
        for a, b in zip(last, claims, strict=True))


def _same_base(base: list[tuple[str, int, Resource, Resource]], claims: Sequence[Claim]) -> bool:
    """The same keys and weights in the same order, and the very same capabilities and
    guarantees."""
    return len(base) == len(claims) and all(
        a[0] == b.key and a[1] == b.weight and a[2] is b.real_capability and a[3] is b.guarantee
        for a, b in zip(base, claims, strict=True))


def _request_key(claims: Sequence[Claim]) -> tuple[tuple[tuple[str, ...], ...], bytes]:
    """The claims' requests as exact values: each one's scalar names in order, and the bits of
    every amount (a float's bits: -0.0 and 0.0 differ, as do NaNs, so equal keys are the very
    same inputs to the water filling)."""
    names: list[tuple[str, ...]] = []
    vals: list[float] = []
    for c in claims:
        r = c.request
        sc = r.scalars
        vals.append(r.milli_cpu)
        vals.append(r.memory)
        if sc:
            names.append(tuple(sc))
            vals.extend(sc.values())
        else:
            names.append(())
    return tuple(names), struct.pack(f"<{len(vals)}d", *vals)


def proportion_deserved(claims: Sequence[Claim], total: Resource) -> dict[str, Resource]:
    """Water filling: share ``total`` among ``claims`` by weight, each capped by its request and
    real capability and floored by its guarantee, redistributing what a satisfied queue does not
    take until nothing is left or nothing changes.

    A pure function of its inputs' values, so results are kept: the last result is given again
    (as a new dict) when ``total`` and every claim's Resources are the very objects of the last
    call, with the same keys and weights (Resources are immutable; proportion hands in the same
    objects while the queues and their requests do not change); and while ``total`` and the
    claims' keys, weights, capabilities and guarantees stay the same (the same objects), up to
    :data:`_FILLS_LIMIT` results are kept by the exact values of the requests (a queue's request
    goes back to an earlier value when a job that arrived is done).

    Args:
        claims: in the order the rounds walk them (pumice: by queue name).
        total: the cluster's allocatable resources.
    Returns:
        ``key`` -> deserved, for every claim.

    Mirrors: proportion.go OnSessionOpen (the ``for { totalWeight ... }`` loop).
    """
    if _LAST:
        last_total, last_claims, last = _LAST[0]
        if last_total is total and _same_inputs(last_claims, claims):
            return dict(last)
    if not (_FILLS_BASE and _FILLS_BASE[0][0] is total and _same_base(_FILLS_BASE[0][1], claims)):
        _FILLS.clear()
        _FILLS_BASE[:] = [(total, [(c.key, c.weight, c.real_capability, c.guarantee) for c in claims])]
    key = _request_key(claims)
    got = _FILLS.get(key)
    if got is None:
        got = _water_fill(claims, total)
        if len(_FILLS) >= _FILLS_LIMIT:
            del _FILLS[next(iter(_FILLS))]
        _FILLS[key] = got
    _LAST[:] = [(total, list(claims), got)]
    return dict(got)


def _water_fill(claims: Sequence[Claim], total: Resource) -> dict[str, Resource]:
    """The water filling on plain floats: each amount is a (milli_cpu, memory, scalars) triple,
    and every step is the Resource method it stands for (named in the comments) written out on
    the triples: the same float operations on the same operands, the scalar names in the same
    order, so the result is bit for bit what the Resource methods give (the test keeps that
    version as its oracle and compares on recorded and drawn inputs); only the Resource objects
    in between are not built."""
    zero: tuple[float, float, dict[str, float]] = (0.0, 0.0, {})
    deserved = {c.key: zero for c in claims}
    rc, rm, rs = total.milli_cpu, total.memory, dict(total.scalars)
    met: set[str] = set()
    while True:
        total_weight = sum(c.weight for c in claims if c.key not in met)
        if total_weight == 0:
            break
        orc, orm, ors = rc, rm, rs
        ic = im = dc = dm = 0.0
        isc: dict[str, float] = {}
        dsc: dict[str, float] = {}
        for c in claims:
            key = c.key
            if key in met:
                continue
            oc, om, osc = deserved[key]
            ratio = c.weight / total_weight
            cap, req, g = c.real_capability, c.request, c.guarantee
            csc, qsc = cap.scalars, req.scalars
            # old + remaining.multi(ratio), then .min_dimension(real_capability, INFINITY), then
            # .min_dimension(request, ZERO), name by name (min(a, b) is ``b if b < a else a``)
            sc: dict[str, float] = {}
            for n in (*osc, *(n for n in rs if n not in osc)) if rs else osc:
                v = osc.get(n, 0.0) + rs[n] * ratio if n in rs else osc[n]
                if n in csc:
                    b = csc[n]
                    if b < v:
                        v = b
                if n in qsc:
                    b = qsc[n]
                    sc[n] = b if b < v else v
                else:
                    sc[n] = 0.0
            cpu = oc + rc * ratio
            b = cap.milli_cpu
            if b < cpu:
                cpu = b
            b = req.milli_cpu
            if b < cpu:
                cpu = b
            mem = om + rm * ratio
            b = cap.memory
            if b < mem:
                mem = b
            b = req.memory
            if b < mem:
                mem = b
            # res_max(d, guarantee) (max(a, b) is ``b if b > a else a``)
            for n, b in g.scalars.items():
                if n not in sc or b > sc[n]:
                    sc[n] = b
            b = g.milli_cpu
            if b > cpu:
                cpu = b
            b = g.memory
            if b > mem:
                mem = b
            deserved[key] = (cpu, mem, sc)
            # request.less_equal(d, ZERO) or exact_equal(d, old)
            fits = _le(req.milli_cpu, cpu) and _le(req.memory, mem)
            if fits:
                for n, b in qsc.items():
                    if not _le(b, sc.get(n, 0.0)):
                        fits = False
                        break
            if fits or (cpu == oc and mem == om and sc == osc):
                met.add(key)
            # inc, dec = d.diff(old, ZERO); inc_total + inc; dec_total + dec (the sums start at
            # +0.0 and only grow, so adding the other side's 0.0 would change no bit; every name of
            # old is a name of d: each step above keeps the names it is given)
            if cpu > oc:
                ic += cpu - oc
            else:
                dc += oc - cpu
            if mem > om:
                im += mem - om
            else:
                dm += om - mem
            for n, lv in sc.items():
                rv = osc.get(n, 0.0)
                if lv > rv:
                    isc[n] = isc.get(n, 0.0) + (lv - rv)
                else:
                    dsc[n] = dsc.get(n, 0.0) + (rv - lv)
        # remaining = exceeded_part(remaining + dec_total, inc_total)
        ac = rc + dc
        am = rm + dm
        asc = rs
        if dsc:
            asc = dict(rs)
            for n, v in dsc.items():
                asc[n] = asc.get(n, 0.0) + v
        rc = ac - ic if ac > ic else 0.0
        rm = am - im if am > im else 0.0
        rs = {}
        for n in (*asc, *(n for n in isc if n not in asc)):
            lv = asc.get(n, 0.0)
            rv = isc.get(n, 0.0)
            if lv > rv:
                rs[n] = lv - rv
        # remaining.is_empty() or exact_equal(remaining, old_remaining)
        if ((not (rc >= MIN_RESOURCE or rm >= MIN_RESOURCE)
                and all(v < MIN_RESOURCE for n, v in rs.items() if n != PODS))
                or (rc == orc and rm == orm and rs == ors)):
            break
    return {key: Resource(c, m, s) for key, (c, m, s) in deserved.items()}


def real_capability(parent: Resource, guarantees: Resource, guarantee: Resource, capability: Resource | None) -> Resource:
    """What a queue may use at most: the part of ``parent`` nobody else is guaranteed, plus its
    own ``guarantee``, capped by its ``capability`` (None or infinite dimensions do not cap).

    Args:
        parent: the cluster total (flat) or the parent queue's real capability (hierarchy).
        guarantees: the sum of the guarantees of the queue and its siblings (flat: all queues).
    Mirrors: capacity.go / proportion.go realCapability.
    """
    return capped_capability(exceeded_part(parent, guarantees), guarantee, capability)


def capped_capability(free: Resource, guarantee: Resource, capability: Resource | None) -> Resource:
    """:func:`real_capability` from ``free`` = ``exceeded_part(parent, guarantees)``, which is
    the same for every sibling queue (so it is computed once for them)."""
    real = free + guarantee
    return real if capability is None else real.min_dimension(capability, Dimension.INFINITY)


def clamp_deserved(deserved: Resource, real_cap: Resource, guarantee: Resource) -> Resource:
    """Capacity's deserved: the spec's deserved capped by the real capability, floored by the
    guarantee. Mirrors: capacity.go buildQueueAttrs."""
    return res_max(deserved.min_dimension(real_cap, Dimension.INFINITY), guarantee)


def dominant_share(allocated: Resource, total: Resource) -> tuple[str, float]:
    """DRF's dominant resource and share: the largest allocated/total over ``total``'s dimensions.

    Returns ``("", 0.0)`` when nothing is allocated. Mirrors: drf.go calculateShare.
    """
    res, dom = 0.0, ""
    for rn in total.resource_names():
        s = share(allocated.get(rn), total.get(rn))
        if s > res:
            res, dom = s, rn
    return dom, res

