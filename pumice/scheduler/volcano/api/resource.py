"""Resource: the scheduler's immutable resource record.

Units: ``milli_cpu`` in millicores, ``memory`` in bytes, scalar resources in milli-units (an
extended resource "1" is 1000), except ``pods`` which is a plain count. Every comparison that
tolerates rounding uses :data:`MIN_RESOURCE` (0.1); the strict request-dimension checks do not.

Mirrors: volcano pkg/scheduler/api/resource_info.go Resource.
Deviates: immutable (``a + b`` returns a new value, so callers never clone); the separate
``MaxTaskNum`` field is not kept, ``scalars["pods"]`` carries the same number.
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pumice.api.quantity import QuantityError, format_bytes, format_millis, milli_value_int64, value_int64

MIN_RESOURCE = 0.1
"""Volcano's epsilon (``minResource``) for tolerant comparisons."""

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

_IGNORED_SCALARS = frozenset({PODS})


class Dimension(enum.Enum):
    """How a scalar dimension missing on one side counts in a comparison.

    Mirrors: volcano pkg/scheduler/api/types.go DimensionDefaultValue (Zero, Infinity).
    """

    ZERO = "Zero"
    INFINITY = "Infinity"


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


class Resource:
    """An immutable resource amount (millicores, bytes, scalar milli-units, pods count).

    Invariant: the object never changes after construction; every operation returns a new one.
    """

    __slots__ = ("_scalars", "memory", "milli_cpu")

    milli_cpu: float
    memory: float
    _scalars: dict[str, float]

    def __init__(self, milli_cpu: float = 0.0, memory: float = 0.0, scalars: Mapping[str, float] | None = None):
        # the slots' own setters (bound below the class): __setattr__ refuses, and
        # object.__setattr__ looks the slot up by name at every call
        _set_milli_cpu(self, float(milli_cpu))
        _set_memory(self, float(memory))
        _set_scalars(self, dict(scalars) if scalars else {})

    def __setattr__(self, name: str, val: Any) -> None:
        raise AttributeError("Resource is immutable")

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def empty(cls) -> Resource:
        return _EMPTY

    @classmethod
    def infinite(cls) -> Resource:
        """cpu and memory at the float maximum; scalars absent (Volcano InfiniteResource)."""
        return cls(math.inf, math.inf)

    @classmethod
    def from_list(cls, rl: Mapping[str, Any] | None) -> Resource:
        """Build from a Kubernetes ResourceList (``{"cpu": "1", "memory": "1Gi", ...}``).

        cpu -> millicores, memory -> bytes, ``pods`` -> count, everything else -> milli-units;
        names starting with ``count/`` are ignored.

        Raises:
            QuantityError: a value is not a quantity (the message names the resource).
        """
        if not rl:
            return _EMPTY
        if cls is Resource:
            try:
                return _parsed(tuple(rl.items()))
            except TypeError:  # an unhashable value: parse it uncached (and raise as usual)
                pass
        return cls._parse(rl)

    @classmethod
    def _parse(cls, rl: Mapping[str, Any]) -> Resource:
        cpu = 0.0
        mem = 0.0
        sc: dict[str, float] = {}
        for name, q in rl.items():
            try:
                if name == CPU:
                    cpu += milli_value_int64(q)
                elif name == MEMORY:
                    mem += value_int64(q)
                elif name == PODS:
                    sc[PODS] = sc.get(PODS, 0.0) + value_int64(q)
                elif name.startswith("count/"):
                    continue
                else:
                    sc[name] = sc.get(name, 0.0) + milli_value_int64(q)
            except (QuantityError, TypeError) as e:
                raise QuantityError(f"resource {name!r}: {e}") from e
        return cls(cpu, mem, sc)

    # ----- access ---------------------------------------------------------------------------
    @property
    def scalars(self) -> Mapping[str, float]:
        return self._scalars

    def get(self, name: str) -> float:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        return self._scalars.get(name, 0.0)

    def has_scalar(self, name: str) -> bool:
        return name in self._scalars

    def resource_names(self) -> list[str]:
        """Dimensions whose amount is >= MIN_RESOURCE, ``pods`` included (cpu, memory, scalars)."""
        out = []
        if self.milli_cpu >= MIN_RESOURCE:
            out.append(CPU)
        if self.memory >= MIN_RESOURCE:
            out.append(MEMORY)
        out.extend(n for n, v in self._scalars.items() if v >= MIN_RESOURCE)
        return out

    def is_empty(self) -> bool:
        """True when every dimension except ``pods`` is below MIN_RESOURCE (a BestEffort request)."""
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for n, v in self._scalars.items() if n not in _IGNORED_SCALARS)

    def is_zero(self, name: str) -> bool:
        return self.get(name) < MIN_RESOURCE

    # ----- arithmetic -----------------------------------------------------------------------
    def __add__(self, other: Resource) -> Resource:
        if not other._scalars:
            sc = self._scalars
        else:
            sc = dict(self._scalars)
            for n, v in other._scalars.items():
                sc[n] = sc.get(n, 0.0) + v
        return Resource(self.milli_cpu + other.milli_cpu, self.memory + other.memory, sc)

    def __sub__(self, other: Resource) -> Resource:
        """Subtract; may go negative (Volcano SubWithoutAssert). Scalars only on existing keys
        when ``self`` has no scalars at all, as upstream."""
        if not self._scalars:
            return Resource(self.milli_cpu - other.milli_cpu, self.memory - other.memory)
        sc = dict(self._scalars)
        for n, v in other._scalars.items():
            sc[n] = sc.get(n, 0.0) - v
        return Resource(self.milli_cpu - other.milli_cpu, self.memory - other.memory, sc)

    def multi(self, ratio: float) -> Resource:
        return Resource(
            self.milli_cpu * ratio, self.memory * ratio, {n: v * ratio for n, v in self._scalars.items()}
        )

    def set_scalar(self, name: str, amount: float) -> Resource:
        sc = dict(self._scalars)
        sc[name] = amount
        return Resource(self.milli_cpu, self.memory, sc)

    def without_scalar(self, name: str) -> Resource:
        sc = {n: v for n, v in self._scalars.items() if n != name}
        return Resource(self.milli_cpu, self.memory, sc)

    def max_with(self, other: Resource) -> Resource:
        """Per-dimension max (Volcano SetMaxResource)."""
        sc = dict(self._scalars)
        for n, v in other._scalars.items():
            if n not in sc or v > sc[n]:
                sc[n] = v
        return Resource(max(self.milli_cpu, other.milli_cpu), max(self.memory, other.memory), sc)

    def min_dimension(self, other: Resource, missing: Dimension) -> Resource:
        """Per-dimension min; a scalar missing in ``other`` is kept (INFINITY) or zeroed (ZERO).

        Mirrors: resource_info.go MinDimensionResource.
        """
        sc: dict[str, float] = {}
        for n, v in self._scalars.items():
            if n in other._scalars:
                sc[n] = min(v, other._scalars[n])
            else:
                sc[n] = v if missing is Dimension.INFINITY else 0.0
        return Resource(min(self.milli_cpu, other.milli_cpu), min(self.memory, other.memory), sc)

    def diff(self, other: Resource, missing: Dimension) -> tuple[Resource, Resource]:
        """(increased, decreased): the positive parts of ``self - other`` and ``other - self``.

        Mirrors: resource_info.go Diff (missing scalars take the default on either side; with
        INFINITY a missing side counts as -1 as upstream).
        """
        dv = 0.0 if missing is Dimension.ZERO else -1.0
        inc_cpu = dec_cpu = inc_mem = dec_mem = 0.0
        if self.milli_cpu > other.milli_cpu:
            inc_cpu = self.milli_cpu - other.milli_cpu
        else:
            dec_cpu = other.milli_cpu - self.milli_cpu
        if self.memory > other.memory:
            inc_mem = self.memory - other.memory
        else:
            dec_mem = other.memory - self.memory
        inc: dict[str, float] = {}
        dec: dict[str, float] = {}
        names = list(self._scalars) + [n for n in other._scalars if n not in self._scalars]
        for n in names:
            lv = self._scalars.get(n, dv)
            rv = other._scalars.get(n, dv)
            if lv > rv:
                inc[n] = lv - rv
            else:
                dec[n] = rv - lv
        return Resource(inc_cpu, inc_mem, inc), Resource(dec_cpu, dec_mem, dec)

    def fit_delta(self, req: Resource) -> Resource:
        """``self`` minus ``req`` minus MIN_RESOURCE on each requested dimension (negative = short)."""
        cpu = self.milli_cpu - (req.milli_cpu + MIN_RESOURCE) if req.milli_cpu > 0 else self.milli_cpu
        mem = self.memory - (req.memory + MIN_RESOURCE) if req.memory > 0 else self.memory
        sc = dict(self._scalars)
        for n, v in req._scalars.items():
            if v > 0:
                sc[n] = sc.get(n, 0.0) - (v + MIN_RESOURCE)
        return Resource(cpu, mem, sc)

    # ----- comparisons ----------------------------------------------------------------------
    def less_equal(self, other: Resource, missing: Dimension) -> bool:
        """All dimensions of ``self`` <= ``other`` within MIN_RESOURCE.

        A scalar of ``self`` missing in ``other`` counts as 0 (ZERO) or is skipped (INFINITY); with
        INFINITY a scalar of ``other`` missing in ``self`` makes the check fail (upstream quirk).
        """
        if not _le(self.milli_cpu, other.milli_cpu) or not _le(self.memory, other.memory):
            return False
        osc = other._scalars
        if missing is Dimension.INFINITY:
            for n in osc:
                if n not in self._scalars:
                    return False
            return all(not (n in osc and not _le(v, osc[n])) for n, v in self._scalars.items())
        return all(_le(v, osc.get(n, 0.0)) for n, v in self._scalars.items())

    def less_equal_with_names(self, other: Resource, missing: Dimension) -> tuple[bool, list[str]]:
        """Like :meth:`less_equal` (without the INFINITY quirk) plus the insufficient names."""
        names = []
        if not _le(self.milli_cpu, other.milli_cpu):
            names.append(CPU)
        if not _le(self.memory, other.memory):
            names.append(MEMORY)
        osc = other._scalars
        for n, v in self._scalars.items():
            if n not in osc and missing is Dimension.INFINITY:
                continue
            if not _le(v, osc.get(n, 0.0)):
                names.append(n)
        return not names, names

    def _request_dims(self, other: Resource, req: Resource, cmp: Callable[[float, float], bool],
                      *, scalars: bool = True) -> list[str]:
        """The names of the dimensions requested by ``req`` (``> 0``; ``pods`` ignored) where
        ``cmp(self, other)`` holds; scalars only when ``scalars``."""
        names = []
        if req.milli_cpu > 0 and cmp(self.milli_cpu, other.milli_cpu):
            names.append(CPU)
        if req.memory > 0 and cmp(self.memory, other.memory):
            names.append(MEMORY)
        if scalars:
            for n, q in req._scalars.items():
                if n in _IGNORED_SCALARS:
                    continue
                if q > 0 and cmp(self._scalars.get(n, 0.0), other._scalars.get(n, 0.0)):
                    names.append(n)
        return names

    def less_equal_in_request_dims(self, other: Resource, req: Resource) -> tuple[bool, list[str]]:
        """Strict ``self > other`` test (no epsilon) on the dimensions where ``req > 0``; ``pods``
        ignored. Returns (fits, exceeded names).

        Mirrors: resource_info.go LessEqualWithDimensionAndResourcesName.
        """
        names = self._request_dims(other, req, operator.gt, scalars=bool(self._scalars))
        return not names, names

    def less_equal_partly_in_request_dims(self, other: Resource, req: Resource) -> tuple[bool, list[str]]:
        """Some requested dimension (``pods`` ignored) with ``self <= other`` within epsilon.

        Mirrors: resource_info.go LessEqualPartlyWithDimension.
        """
        names = self._request_dims(other, req, _le)
        return bool(names), names

    def greater_partly_in_request_dims(self, other: Resource, req: Resource) -> tuple[bool, list[str]]:
        """Some requested dimension with ``self > other`` strictly (``pods`` ignored).

        Mirrors: resource_info.go GreaterPartlyWithDimension.
        """
        names = self._request_dims(other, req, operator.gt)
        return bool(names), names

    def equal(self, other: Resource) -> bool:
        if abs(self.milli_cpu - other.milli_cpu) >= MIN_RESOURCE and self.milli_cpu != other.milli_cpu:
            return False
        if abs(self.memory - other.memory) >= MIN_RESOURCE and self.memory != other.memory:
            return False
        return all(abs(v - other._scalars.get(n, 0.0)) < MIN_RESOURCE for n, v in self._scalars.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return self.equal(other) and other.equal(self)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"cpu {self.milli_cpu:.2f}", f"memory {self.memory:.2f}"]
        parts += [f"{n} {v:.2f}" for n, v in sorted(self._scalars.items())]
        return "<" + ", ".join(parts) + ">"

    def to_list(self) -> dict[str, str]:
        """Back to a ResourceList of quantity strings (for Queue status): cpu and scalars as
        ``NewMilliQuantity(int64(m), DecimalSI)``, memory as ``NewQuantity(int64(bytes),
        BinarySI)`` (``2Gi``), pods as ``NewQuantity(int64(n), DecimalSI)``, each ``.String()``;
        cpu and memory always (``"0"`` when none), amounts truncated toward zero as Go's int64().

        Mirrors: volcano pkg/scheduler/util/scheduler_helper.go ConvertRes2ResList (master
        ed72c7c81)."""
        out: dict[str, str] = {CPU: _millis_text(int(self.milli_cpu)), MEMORY: _bytes_text(int(self.memory))}
        for n, v in sorted(self._scalars.items()):
            out[n] = _millis_text(int(v) * 1000) if n == PODS else _millis_text(int(v))
        return out


_millis_text: Callable[[int], str] = functools.lru_cache(maxsize=8192)(format_millis)
"""``format_millis(m)``, memoized (a pure function of an int; a Queue's allocated amounts come back
to earlier values as its jobs come and go)."""
_bytes_text: Callable[[int], str] = functools.lru_cache(maxsize=8192)(format_bytes)
"""``format_bytes(n)``, memoized likewise."""

_set_milli_cpu = Resource.__dict__["milli_cpu"].__set__
_set_memory = Resource.__dict__["memory"].__set__
_set_scalars = Resource.__dict__["_scalars"].__set__


_EMPTY = Resource()


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """Per-dimension positive part of ``left - right`` (Volcano ExceededPart, ZERO default)."""
    return left.diff(right, Dimension.ZERO)[0]


def share(allocated: float, total: float) -> float:
    """``allocated / total``; 0 when both are 0, 1 when only ``total`` is 0 (Volcano helpers.Share)."""
    if total == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / total


def sum_resources(rs: Iterable[Resource]) -> Resource:
    """``r0 + r1 + ...`` (``Resource()`` for none), added in the same order as repeated ``+`` (so
    the floats are the same), without building the intermediate Resources."""
    cpu = mem = 0.0
    sc: dict[str, float] = {}
    n = 0
    for r in rs:
        n += 1
        cpu += r.milli_cpu
        mem += r.memory
        if r._scalars:
            for k, v in r._scalars.items():
                sc[k] = sc.get(k, 0.0) + v
    return Resource(cpu, mem, sc) if n else _EMPTY


_EXACT_LIMIT = float(2**53)


def whole(r: Resource) -> bool:
    """Every amount of ``r`` is a whole number from 0 up to 2**53: sums of such amounts that stay
    below 2**53 are exact floats, so they are the same whatever the grouping of the additions
    (a sum of per-job sums equals the task-by-task sum)."""
    for v in (r.milli_cpu, r.memory, *r._scalars.values()):
        if not (0.0 <= v < _EXACT_LIMIT and v.is_integer()):
            return False
    return True


@functools.lru_cache(maxsize=16384)
def _parsed(items: tuple[tuple[str, Any], ...]) -> Resource:
    """:meth:`Resource.from_list` memoized on the ResourceList's items: Resource is immutable, and a
    snapshot parses the same Node allocatable and Pod requests every session (quantity parsing
    was most of a 1,500-Node snapshot's time)."""
    return Resource._parse(dict(items))
