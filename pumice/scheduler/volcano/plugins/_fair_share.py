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
from dataclasses import dataclass
from typing import Any

from pumice.scheduler.volcano.api.resource import Dimension, Resource, exceeded_part, share
from pumice.scheduler.volcano.plugins._queue_util import exact_equal, res_max


@dataclass(frozen=True)
class Claim:
    """One queue's input to proportion's water filling.

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
    res = 0.0
    for rn in deserved.resource_names():
        res = max(res, share(allocated.get(rn), deserved.get(rn)))
    return res


def _key(claims: Sequence[Claim], total: Resource) -> tuple[Any, ...]:
    """The inputs of :func:`proportion_deserved` as a key that tells apart every two inputs an
    arithmetic could tell apart: the names, weights and scalar names as they are, every amount
    by its bits (so 0.0 and -0.0 differ), in order."""
    names: list[Any] = []
    amounts: list[float] = []
    rs = [total]
    for c in claims:
        rs += (c.request, c.real_capability, c.guarantee)
    for r in rs:
        sc = r.scalars
        amounts += (r.milli_cpu, r.memory)
        if sc:
            names.append(tuple(sc))
            amounts += sc.values()
        else:
            names.append(())
    return (tuple((c.key, c.weight) for c in claims), tuple(names), struct.pack(f"<{len(amounts)}d", *amounts))


_LAST: list[tuple[tuple[Any, ...], dict[str, Resource]]] = []
"""The last :func:`proportion_deserved` inputs (as a :func:`_key`) and result."""


def proportion_deserved(claims: Sequence[Claim], total: Resource) -> dict[str, Resource]:
    """Water filling: share ``total`` among ``claims`` by weight, each capped by its request and
    real capability and floored by its guarantee, redistributing what a satisfied queue does not
    take until nothing is left or nothing changes.

    A pure function of its inputs: the result of the last call is given again (as a new dict)
    when every input is bit for bit the same (the queues' requests seldom change from one
    session to the next).

    Args:
        claims: in the order the rounds walk them (pumice: by queue name).
        total: the cluster's allocatable resources.
    Returns:
        ``key`` -> deserved, for every claim.

    Mirrors: proportion.go OnSessionOpen (the ``for { totalWeight ... }`` loop).
    """
    key = _key(claims, total)
    if _LAST and _LAST[0][0] == key:
        return dict(_LAST[0][1])
    got = _water_fill(claims, total)
    _LAST[:] = [(key, dict(got))]
    return got


def _water_fill(claims: Sequence[Claim], total: Resource) -> dict[str, Resource]:
    deserved: dict[str, Resource] = {c.key: Resource() for c in claims}
    remaining = total
    met: set[str] = set()
    while True:
        total_weight = sum(c.weight for c in claims if c.key not in met)
        if total_weight == 0:
            break
        old_remaining = remaining
        inc_total = Resource()
        dec_total = Resource()
        for c in claims:
            if c.key in met:
                continue
            old = deserved[c.key]
            d = old + remaining.multi(c.weight / total_weight)
            d = d.min_dimension(c.real_capability, Dimension.INFINITY)
            d = d.min_dimension(c.request, Dimension.ZERO)
            d = res_max(d, c.guarantee)
            deserved[c.key] = d
            if c.request.less_equal(d, Dimension.ZERO) or exact_equal(d, old):
                met.add(c.key)
            inc, dec = d.diff(old, Dimension.ZERO)
            inc_total = inc_total + inc
            dec_total = dec_total + dec
        remaining = exceeded_part(remaining + dec_total, inc_total)
        if remaining.is_empty() or exact_equal(remaining, old_remaining):
            break
    return deserved


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

