"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1G``, ``2e3``).

Mirrors: kubernetes staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go (parsing rules,
and the rounding of ``Value()`` and ``MilliValue()``, which round up).

Units: :func:`milli_value` gives milli-units (cpu in millicores), :func:`value` gives whole units
(memory in bytes). ``1G`` is 10**9 bytes, ``1Gi`` is 2**30 bytes.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
SPLIT_RE_STRING = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
"""Go's loose quantity pattern (quantity.go splitREString), as its error names it."""
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_RE_STRING}'"
"""Go's ``resource.ErrFormatWrong`` text."""
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$")


_MAX_EXPONENT = 1000
"""``1e5000`` parses as ``1e1000`` (see :func:`parse_quantity`)."""


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message quotes it."""


def parse_quantity(q: str | int | float) -> Fraction:
    """Parse a quantity into an exact rational number of base units.

    Args:
        q: ``"500m"``, ``"1Gi"``, ``"2"``, ``2``, ``0.5`` ...
    Returns:
        The exact value as a Fraction (cpu in cores, memory in bytes).
    Raises:
        QuantityError: the string does not match the quantity grammar.
    Deviates: an ``e`` exponent beyond +-1000 counts as +-1000 (Go keeps the exact scale, but
    ``Value()``/``MilliValue()`` cannot return such amounts either).
    """
    if isinstance(q, bool):
        raise QuantityError(f"quantities must match the regular expression: {q!r}")
    if isinstance(q, int):
        return Fraction(q)
    if isinstance(q, float):
        return Fraction(Decimal(repr(q)))
    return _parse_text(str(q))


@functools.lru_cache(maxsize=16384)
def _parse_text(text: str) -> Fraction:
    """:func:`parse_quantity` of a string (kept: every Pod and resource sum parses the same few
    quantities again and again; a Fraction is immutable, and a refused string raises every time)."""
    s = text.strip()
    m = _RE.match(s)
    if not m:
        raise QuantityError(f"{ERR_FORMAT_WRONG}: {s!r}")
    number, suffix = m.group(1), m.group(2)
    try:
        base = Fraction(Decimal(number))
    except InvalidOperation as e:  # pragma: no cover - regex prevents this
        raise QuantityError(f"invalid quantity {s!r}") from e
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":  # "E" alone is exa
        # an exponent far outside any amount is clamped: 10**exp of a 7-digit exponent alone takes
        # seconds (Go keeps it as an int64 mantissa and a scale); the value stays beyond int64
        # either way, or below a nano-unit, which is all a caller can tell apart
        exp = max(-_MAX_EXPONENT, min(_MAX_EXPONENT, int(suffix[1:])))
        return base * (Fraction(10) ** exp)
    return base * _DECIMAL[suffix]


def milli_value(q: str | int | float) -> int:
    """Quantity in milli-units, rounded up (cpu ``"1.5"`` -> 1500, ``"100m"`` -> 100)."""
    return math.ceil(parse_quantity(q) * 1000)


def value(q: str | int | float) -> int:
    """Quantity in whole units, rounded up (memory ``"1Gi"`` -> 1073741824)."""
    return math.ceil(parse_quantity(q))


INT64_MAX = 2**63 - 1
"""The largest amount Go's ``Quantity.Value()`` / ``MilliValue()`` can return (int64)."""


def milli_value_int64(q: str | int | float) -> int:
    """:func:`milli_value` kept to int64, as the schedulers hold amounts: ``"1e400"`` cpu ->
    9223372036854775807 millicores, ``"-1e400"`` -> -9223372036854775808.

    The API stores such a quantity as kube-apiserver does (Pod validation sets no upper bound on
    requests), so a scheduler must still represent it.
    Mirrors: apimachinery resource.Quantity.MilliValue() (int64 result).
    Saturates as apimachinery's current AsScaledInt64/scaledValue do (mostPositive or
    mostNegative when the amount does not fit), so an absurd request is simply larger than any
    Node. Deviates from older releases (1.32), which returned 0 (int64 path) or wrapped low bits
    (inf.Dec path).
    Raises:
        QuantityError: ``q`` is not a quantity.
    """
    return clamp_int64(milli_value(q))


def value_int64(q: str | int | float) -> int:
    """:func:`value` kept to int64 (saturating), as :func:`milli_value_int64`.

    Mirrors: apimachinery resource.Quantity.Value(); same deviation on overflow.
    """
    return clamp_int64(value(q))


def clamp_int64(n: int) -> int:
    """``n`` saturated to int64 (sums of :func:`milli_value_int64` amounts kept in range)."""
    return INT64_MAX if n > INT64_MAX else (-INT64_MAX - 1 if n < -INT64_MAX - 1 else n)


def is_quantity(q: object) -> bool:
    """True when ``q`` parses as a quantity."""
    try:
        parse_quantity(q)  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return False
    return True


def format_decimal(x: Fraction) -> str:
    """Plain decimal string of an exact value, without exponent (for status fields)."""
    with localcontext() as ctx:
        ctx.prec = 40
        d = Decimal(x.numerator) / Decimal(x.denominator)
    s = format(d.normalize(), "f")
    return s


_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_NANO = 10**9

#: resource.Quantity's formats (Go's names)
DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"


def format_millis(millis: int, fmt: str | None = None) -> str:
    """``NewMilliQuantity(millis, fmt).String()`` (default :data:`DECIMAL_SI`): 1500 -> ``"1500m"``,
    2000 -> ``"2"``, 10**6 -> ``"1k"``.

    Mirrors: apimachinery pkg/api/resource/quantity.go NewMilliQuantity, Quantity.String."""
    return canonical_string(Fraction(millis, 1000), fmt or DECIMAL_SI)


def format_bytes(n: int) -> str:
    """``NewQuantity(n, BinarySI).String()``: 2**30 -> ``"1Gi"``, 10**9 -> ``"1000000000"``,
    1000 -> ``"1k"`` (below 1024 binary falls back to decimal SI).

    Mirrors: apimachinery pkg/api/resource/quantity.go NewQuantity, Quantity.String."""
    return canonical_string(Fraction(n), BINARY_SI)


_BYTE_NAMES = ("memory", "storage", "ephemeral-storage")


def resource_format(name: str) -> str:
    """The format pumice writes a resource's amount in when it has not tracked the format of the
    quantities it came from: :data:`BINARY_SI` for byte amounts (``memory``, ``storage``,
    ``ephemeral-storage``, ``hugepages-*``, also under a quota's ``requests.``/``limits.``
    prefix and a storage class's ``<class>.storageclass.storage.k8s.io/requests.storage``),
    else :data:`DECIMAL_SI`.

    Deviates: upstream sums keep the format of their operands (:func:`add_format`), so a memory
    sum of ``1G`` quantities prints ``1G`` there; callers that track formats pass them to
    :func:`canonical_string` instead."""
    base = name.rsplit("/", 1)[-1]
    base = base.split(".", 1)[1] if base.startswith(("requests.", "limits.")) else base
    if base in _BYTE_NAMES or base.startswith("hugepages-"):
        return BINARY_SI
    return DECIMAL_SI


def resource_string(name: str, amount: Fraction) -> str:
    """``amount`` (base units: cores, bytes, counts) of resource ``name`` as Quantity.String()
    writes it in :func:`resource_format`'s format: cpu 1.5 -> ``"1500m"``, memory 2**31 ->
    ``"2Gi"``, pods 1000 -> ``"1k"``, a GPU count 2 -> ``"2"``."""
    return canonical_string(amount, resource_format(name))


def quantity_format(value: str | int | float) -> str:
    """The format Go's ParseQuantity gives ``value``: :data:`BINARY_SI` for a ``Ki``..``Ei``
    suffix, :data:`DECIMAL_EXPONENT` for an ``e``/``E`` exponent, else :data:`DECIMAL_SI`."""
    text = str(value).strip() if not isinstance(value, bool) else str(value)
    suffix = text.lstrip("+-0123456789.")
    if suffix in _BINARY_SUFFIXES[1:]:
        return BINARY_SI
    if suffix[:1] in ("e", "E") and suffix[1:]:
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def add_format(cur: tuple[str, bool] | None, fmt: str, zero: bool) -> tuple[str, bool]:
    """The (format, is zero) of a sum after adding a quantity of format ``fmt`` (zero or not) to
    a sum of ``cur`` (None: no sum yet, the quantity is copied): the sum keeps its format unless
    it is still zero, when it takes the added one's.

    Mirrors: apimachinery pkg/api/resource/quantity.go Quantity.Add (a zero receiver takes the
    argument's Format), as quotav1.Add and resourcehelper's addResourceList use it."""
    if cur is None:
        return (fmt, zero)
    return (fmt if cur[1] else cur[0], cur[1] and zero)


def canonical_string(value: str | int | float | Fraction, fmt: str | None = None) -> str:
    """A quantity as Go's ``Quantity.String()`` writes it: in ``fmt`` (default: the format of
    ``value`` as parsed, :func:`quantity_format`; an amount given as a Fraction needs ``fmt``),
    with the largest suffix of that family that keeps the number an integer (``1500m``, ``2Gi``,
    ``5G``; an exponent is a multiple of 3: ``1e400`` is ``10e399``); binary only for an integer
    of at least 1024 in magnitude (else decimal SI); precision below ``1n`` rounds away from
    zero; zero is ``"0"``.

    Mirrors: apimachinery pkg/api/resource/quantity.go CanonicalizeBytes, amount.go
    AsCanonicalBytes / AsCanonicalBase1024Bytes.

    Raises:
        QuantityError: ``value`` is not a quantity.
    """
    if isinstance(value, Fraction):
        v = value
        fmt = fmt or DECIMAL_SI
    else:
        text = str(value).strip() if not isinstance(value, bool) else str(value)
        v = parse_quantity(value if isinstance(value, (int, float)) and not isinstance(value, bool) else text)
        fmt = fmt or quantity_format(text)
    scaled = v * _NANO
    nanos = math.ceil(scaled) if scaled >= 0 else math.floor(scaled)
    if nanos == 0:
        return "0"
    if fmt == BINARY_SI and (-1024 * _NANO < nanos < 1024 * _NANO or nanos % _NANO):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        n, k = nanos // _NANO, 0
        while n % 1024 == 0 and k < len(_BINARY_SUFFIXES) - 1:
            n, k = n // 1024, k + 1
        return f"{n}{_BINARY_SUFFIXES[k]}"
    m, e = nanos, -9
    while m % 10 == 0:
        m, e = m // 10, e + 1
    r = e % 3
    m, e = m * 10**r, e - r
    if fmt == DECIMAL_SI and e in _DECIMAL_SUFFIXES:
        return f"{m}{_DECIMAL_SUFFIXES[e]}"
    return f"{m}e{e}" if e else str(m)
