"""Running sums: per-group sums of per-item Resource parts, kept across sessions and brought up to
date from the items that changed, equal float for float (scalar-name order included) to a fresh
fold of the parts in item order.

A plugin that adds up one Resource per job (or per Node) at every session open folds
O(jobs) parts although few of them changed since the last session. :class:`RunningSums` keeps
each group's totals and only replaces the parts of the items named as changed.

Why the totals equal a fresh fold (``sum_resources`` over the parts in item order):

- amounts: when every part's amounts are whole numbers from 0 up to 2**53 (:func:`whole`) and
  every total stays below 2**53, every addition and subtraction is exact, so the total is the
  same whatever the order of the operations. A group with a part that is not whole, or a total
  that reached 2**53, has no running total (:meth:`RunningSums.sums` gives None and the caller
  folds afresh);
- scalar names: a fold's totals hold the names in the order they first appear, item by item in
  item order and inside an item in its part's order. For each name the sums keep the items that
  carry it in a heap by (item order, position in the part), so the first carrier is at the top
  (entries of items that changed since are dropped when they reach the top); the names are put
  in the order of their first carriers;
- groups: a group exists while it has items, and groups are listed in the order of their first
  item, as a fold that groups items in item order would list them.

No upstream counterpart: Volcano folds every job at every session.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from operator import is_
from typing import Any

from pumice.scheduler.volcano.api.resource import Resource, sum_resources, whole

Parts = tuple[Resource | None, ...]
"""One item's parts, one per sum slot; None adds nothing (not even a scalar name)."""

_LIMIT = float(2**53)


class _Slot:
    """One sum of one group."""

    __slots__ = ("carriers", "cpu", "heaps", "mem", "sc")

    def __init__(self) -> None:
        self.cpu = 0.0
        self.mem = 0.0
        self.sc: dict[str, float] = {}
        self.carriers: dict[str, dict[str, tuple[Any, int]]] = {}
        """Scalar name -> item -> (item order, position of the name in the item's part)."""
        self.heaps: dict[str, list[tuple[Any, int, str]]] = {}


class _Group:
    __slots__ = ("bad", "cached", "members", "order_heap", "poisoned", "slots")

    def __init__(self, width: int) -> None:
        self.slots = [_Slot() for _ in range(width)]
        self.members: dict[str, Any] = {}
        """Item -> its order."""
        self.order_heap: list[tuple[Any, str]] = []
        self.bad = 0
        """Items whose parts are not exact (not whole, or marked so)."""
        self.poisoned = False
        """A total reached 2**53 once: its later values may be rounded (until :meth:`clear`)."""
        self.cached: tuple[Resource, ...] | None = None
        """:meth:`RunningSums.sums` since the last change of the group."""


class RunningSums:
    """Per-group sums of ``width`` Resource parts per item, kept across sessions.

    Items are named by a string (a job uid, a Node name) and ordered by an ``order`` value the
    caller gives (any totally ordered value: the job's snapshot order key, a Node's position);
    two items never share an order value. :meth:`set` replaces an item's group, parts and order,
    :meth:`remove` takes it out, :meth:`sums` gives a group's totals as a fresh fold of its items'
    parts in item order would (``Resource()`` for a slot without parts), or None when they are not
    known to be exact (see the module docstring).

    ``seen`` is for the owner (the session that brings the sums up to date): the snapshot
    generation they stand for.
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self._items: dict[str, tuple[Hashable, Parts, Any, bool, bool]] = {}
        """Item -> (group, parts, order, exact as given, exact and whole)."""
        self._groups: dict[Hashable, _Group] = {}
        self.seen: int = -1
        self._empty = tuple(Resource() for _ in range(width))
        """:meth:`sums` of a group without items (one tuple: Resources are immutable)."""

    def clear(self) -> None:
        self._items.clear()
        self._groups.clear()
        self.seen = -1

    def __contains__(self, item: str) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)

    def set(self, item: str, group: Hashable, parts: Parts, order: Any, exact: bool = True) -> None:
        """Put ``item`` in ``group`` with ``parts`` (len ``width``) at ``order``, replacing what it
        had. ``exact=False`` marks parts whose fold is known not to match this sum (e.g. parts
        that are sums of amounts that are not whole): the group then has no running total."""
        old = self._items.get(item)
        ok = exact and all(p is None or whole(p) for p in parts)
        if old is not None:
            if old[0] == group and old[2] == order and old[3] == exact:
                was = old[1]
                if len(was) == len(parts) and all(map(is_, was, parts)):
                    return
                if ok and old[4]:
                    if _same_values(was, parts):
                        # the totals would come out as the very same floats (the module
                        # docstring; a total is never -0.0, so an equal part of another zero
                        # sign moves no bit either) and every carrier keeps its position
                        self._items[item] = (group, parts, order, True, True)
                        return
                    self._replace(item, group, old[1], parts, order)
                    return
            self._take(item, old)
        self._items[item] = (group, parts, order, exact, ok)
        g = self._groups.get(group)
        if g is None:
            g = self._groups[group] = _Group(self.width)
        g.members[item] = order
        g.cached = None
        _push(g.order_heap, (order, item), g.members, _member_entry)
        if not ok:
            # left out of the totals (a subtraction of it later might not be exact); the group
            # has no running total while it is there
            g.bad += 1
            return
        for slot, part in zip(g.slots, parts, strict=True):
            if part is None:
                continue
            slot.cpu += part.milli_cpu
            slot.mem += part.memory
            if slot.cpu >= _LIMIT or slot.mem >= _LIMIT:
                g.poisoned = True
            for pos, (name, v) in enumerate(part.scalars.items()):
                t = slot.sc[name] = slot.sc.get(name, 0.0) + v
                if t >= _LIMIT:
                    g.poisoned = True
                carriers = slot.carriers.setdefault(name, {})
                carriers[item] = (order, pos)
                _push(slot.heaps.setdefault(name, []), (order, pos, item), carriers, _carrier_entry)

    def _replace(self, item: str, group: Hashable, old: Parts, parts: Parts, order: Any) -> None:
        """:meth:`set` of an item that stays in its group at its order, its old and new parts
        both exact and whole: the totals are moved by the difference (every amount is a whole
        number below 2**53, so the totals are the same as after taking the old parts out and
        adding the new ones), the group's order entry is kept, and a scalar carrier's heap entry
        is pushed only when its position changed."""
        self._items[item] = (group, parts, order, True, True)
        g = self._groups[group]
        g.cached = None
        for slot, was, part in zip(g.slots, old, parts, strict=True):
            if was is part:
                continue
            if was is not None and part is not None:
                ws, ps = was.scalars, part.scalars
                if len(ws) == len(ps) and (not ps or list(ws) == list(ps)):
                    # the same scalar names at the same positions: every carrier keeps its
                    # heap entry, only the totals move (the same operations as below)
                    slot.cpu = slot.cpu - was.milli_cpu + part.milli_cpu
                    slot.mem = slot.mem - was.memory + part.memory
                    if slot.cpu >= _LIMIT or slot.mem >= _LIMIT:
                        g.poisoned = True
                    if ps:
                        sc = slot.sc
                        for name, v in ps.items():
                            t = sc[name] = sc[name] - ws[name] + v
                            if t >= _LIMIT:
                                g.poisoned = True
                    continue
            gone: dict[str, float] = {}
            if was is not None:
                slot.cpu -= was.milli_cpu
                slot.mem -= was.memory
                gone = dict(was.scalars)
            if part is not None:
                slot.cpu += part.milli_cpu
                slot.mem += part.memory
                if slot.cpu >= _LIMIT or slot.mem >= _LIMIT:
                    g.poisoned = True
                for pos, (name, v) in enumerate(part.scalars.items()):
                    t = slot.sc[name] = slot.sc.get(name, 0.0) - gone.pop(name, 0.0) + v
                    if t >= _LIMIT:
                        g.poisoned = True
                    carriers = slot.carriers.setdefault(name, {})
                    at = (order, pos)
                    if carriers.get(item) != at:
                        carriers[item] = at
                        _push(slot.heaps.setdefault(name, []), (order, pos, item), carriers, _carrier_entry)
            for name, v in gone.items():
                slot.sc[name] -= v
                carriers = slot.carriers[name]
                del carriers[item]
                if not carriers:
                    del slot.carriers[name], slot.heaps[name], slot.sc[name]

    def remove(self, item: str) -> None:
        old = self._items.get(item)
        if old is not None:
            self._take(item, old)

    def _take(self, item: str, old: tuple[Hashable, Parts, Any, bool, bool]) -> None:
        group, parts, _order, _exact, ok = old
        del self._items[item]
        g = self._groups[group]
        del g.members[item]
        g.cached = None
        if not ok:
            g.bad -= 1
            parts = ()
        for slot, part in zip(g.slots, parts, strict=False):
            if part is None:
                continue
            slot.cpu -= part.milli_cpu
            slot.mem -= part.memory
            for name, v in part.scalars.items():
                slot.sc[name] -= v
                carriers = slot.carriers[name]
                del carriers[item]
                if not carriers:
                    del slot.carriers[name], slot.heaps[name], slot.sc[name]
        if not g.members:
            del self._groups[group]

    def groups(self) -> list[Hashable]:
        """The groups that have items, in the order of their first items."""
        firsts = []
        for key, g in self._groups.items():
            h = g.order_heap
            while g.members.get(h[0][1], _GONE) != h[0][0]:
                heapq.heappop(h)
            firsts.append((h[0][0], key))
        firsts.sort(key=lambda x: x[0])
        return [k for _o, k in firsts]

    def sums(self, group: Hashable) -> tuple[Resource, ...] | None:
        """``group``'s totals, slot by slot (``Resource()`` where no item has a part, every slot
        for a group without items), or None when they are not known to be exact (a part that is
        not whole, a total that reached 2**53: the caller folds afresh)."""
        g = self._groups.get(group)
        if g is None:
            return self._empty
        if g.bad or g.poisoned:
            return None
        if g.cached is not None:
            return g.cached
        out = []
        for slot in g.slots:
            if not (slot.cpu < _LIMIT and slot.mem < _LIMIT):
                return None
            firsts = []
            for name, h in slot.heaps.items():
                carriers = slot.carriers[name]
                while carriers.get(h[0][2]) != h[0][:2]:
                    heapq.heappop(h)
                firsts.append((h[0][0], h[0][1], name))
            firsts.sort(key=lambda x: (x[0], x[1]))
            out.append(Resource(slot.cpu, slot.mem, {name: slot.sc[name] for _o, _p, name in firsts}))
        g.cached = tuple(out)
        return g.cached


def _same_values(old: Parts, new: Parts) -> bool:
    """Slot by slot the same amounts (``==``) under the same scalar names in the same order (None
    where the other is None)."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new, strict=True):
        if a is b:
            continue
        if a is None or b is None or a.milli_cpu != b.milli_cpu or a.memory != b.memory:
            return False
        sa, sb = a.scalars, b.scalars
        if (sa or sb) and tuple(sa.items()) != tuple(sb.items()):
            return False
    return True


_GONE = object()


class RunningTally:
    """Per-item counts by key (item -> ``{key: count}``, whole numbers) and their totals over
    the items, kept across sessions and brought up to date from the items that changed.

    For sums that are plain counts (how many jobs request a scalar name, how many Binding
    tasks): integer arithmetic is exact in any order, so no item order, exactness flag or
    scalar-name order is kept (:class:`RunningSums` keeps those for Resource amounts).
    :attr:`totals` holds the keys whose total is not 0 (read it, never change it). A count
    mapping handed to :meth:`set` is kept as it is: it must not be changed afterwards.
    ``seen``: the snapshot generation it stands for (for the owner, as ``RunningSums.seen``).
    """

    def __init__(self) -> None:
        self._items: dict[str, Mapping[Hashable, int]] = {}
        self.totals: dict[Hashable, int] = {}
        self.seen: int = -1

    def clear(self) -> None:
        self._items.clear()
        self.totals.clear()
        self.seen = -1

    def __contains__(self, item: str) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)

    def set(self, item: str, counts: Mapping[Hashable, int]) -> None:
        """Make ``counts`` the counts of ``item``, replacing what it had."""
        old = self._items.get(item)
        self._items[item] = counts
        if old is not None:
            if old is counts or old == counts:
                return
            self._take(old)
        t = self.totals
        for k, n in counts.items():
            if n:
                v = t.get(k, 0) + n
                if v:
                    t[k] = v
                else:
                    del t[k]

    def remove(self, item: str) -> None:
        old = self._items.pop(item, None)
        if old is not None:
            self._take(old)

    def _take(self, old: Mapping[Hashable, int]) -> None:
        t = self.totals
        for k, n in old.items():
            if n:
                v = t.get(k, 0) - n
                if v:
                    t[k] = v
                else:
                    del t[k]


def tally(counts: Iterable[Mapping[Hashable, int]]) -> dict[Hashable, int]:
    """The totals :class:`RunningTally` stands for: each key's counts added up, keys whose total
    is 0 left out (for checks and tests)."""
    out: dict[Hashable, int] = {}
    for c in counts:
        for k, n in c.items():
            out[k] = out.get(k, 0) + n
    return {k: v for k, v in out.items() if v}


class JobTable:
    """One value per job kept across sessions (``values``: job uid -> value), for the inputs
    it was made with; the session replaces the values of the jobs the snapshot names as changed
    (:meth:`Session.job_table`). ``seen``: the snapshot generation it stands for."""

    def __init__(self, inputs: Hashable) -> None:
        self.inputs = inputs
        self.values: dict[str, Any] = {}
        self.seen = -1


def _member_entry(item: str, order: Any) -> tuple[Any, str]:
    return (order, item)


def _carrier_entry(item: str, at: tuple[Any, int]) -> tuple[Any, int, str]:
    return (*at, item)


def _push(heap: list[Any], entry: tuple[Any, ...], live: dict[str, Any], make: Any) -> None:
    """Push ``entry``; when stale entries (of items that changed or left) make up most of the
    heap, rebuild it from ``live`` (item -> what its entry is made of) so it stays O(items)."""
    if len(heap) > 2 * len(live) + 16:
        heap[:] = [make(k, v) for k, v in live.items()]
        heapq.heapify(heap)
    else:
        heapq.heappush(heap, entry)


@dataclass(frozen=True)
class Changes:
    """What changed in a live cache's snapshot since the one before it (generation - 1).

    ``jobs``: uids of the jobs that are not the very objects handed to the last session, as it
    left them untouched (fresh clones, rebuilt, new or gone); every other job is that object
    with the same version. ``nodes``: names of the Nodes that are not the objects handed to the
    last session (None: every Node, e.g. the Node list or order changed). ``job_order``: each
    job's snapshot order key (read-only). ``node_order``: each Node's position in node order.
    """

    generation: int
    jobs: frozenset[str] | set[str]
    nodes: frozenset[str] | set[str] | None
    job_order: Mapping[str, Any]
    node_order: Mapping[str, int]


def fold(parts: Iterable[Parts], width: int) -> tuple[Resource, ...]:
    """The fresh fold :class:`RunningSums` stands for: ``sum_resources`` of each slot's parts in
    item order, None parts left out (for checks and tests)."""
    cols: list[list[Resource]] = [[] for _ in range(width)]
    for ps in parts:
        for col, p in zip(cols, ps, strict=True):
            if p is not None:
                col.append(p)
    return tuple(sum_resources(c) for c in cols)
