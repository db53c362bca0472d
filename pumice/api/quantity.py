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
ERR_SUFFIX = "unable to parse quantity's suffix"
"""Go's ``resource.ErrSuffix`` text (an ``e`` exponent beyond int64, an unknown suffix)."""
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$")


_MAX_EXPONENT = 1000
"""``1e5000`` parses as ``1e1000`` (see :func:`parse_quantity`)."""


class FloatLiteral(float):
    """A JSON number whose text Python's ``repr`` of the float would not give back (``1e3``,
    ``1E3``, ``1.500``): the float, with the literal as written in ``text``. Go hands a Quantity
    field the literal's bytes (Quantity.UnmarshalJSON), and ParseQuantity keeps a text it finds
    canonical as written, so a request body decoder makes these where the literal matters (see
    pumice.apiserver.decode.decode_body); they are turned back into plain floats before the body
    goes further (msgspec cannot encode a float subclass)."""

    __slots__ = ("text",)

    text: str

    def __new__(cls, text: str) -> FloatLiteral:
        number = super().__new__(cls, text)
        number.text = text
        return number


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message quotes it."""


def parse_quantity(q: str | int | float) -> Fraction:
    """Parse a quantity into an exact rational number of base units.

    Args:
        q: ``"500m"``, ``"1Gi"``, ``"2"``, ``2``, ``0.5`` ...
    Returns:
        The exact value as a Fraction (cpu in cores, memory in bytes).
    Raises:
        QuantityError: the string does not match the quantity grammar or its ``e`` exponent is
            beyond int64 (Go's ErrSuffix), or the float is infinite or NaN.
    Deviates: an ``e`` exponent beyond +-1000 counts as +-1000 (Go keeps the exact scale, but
    ``Value()``/``MilliValue()`` cannot return such amounts either).
    """
    if isinstance(q, bool):
        raise QuantityError(f"quantities must match the regular expression: {q!r}")
    if isinstance(q, int):
        return Fraction(q)
    if isinstance(q, float):
        if not math.isfinite(q):  # YAML's .inf and .nan: no quantity (Fraction would overflow)
            raise QuantityError(f"{ERR_FORMAT_WRONG}: {q!r}")
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
        exp = _exponent(suffix[1:])
        if exp is None:
            raise QuantityError(f"{ERR_SUFFIX}: {s!r}")
        exp = max(-_MAX_EXPONENT, min(_MAX_EXPONENT, exp))
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
    zero; zero is ``"0"``. A decimal SI amount past the ``E`` suffix is written with no suffix
    at all, as Go's suffixer finds none (``10**21`` is ``"1"``).

    Mirrors: apimachinery pkg/api/resource/quantity.go CanonicalizeBytes, amount.go
    AsCanonicalBytes / AsCanonicalBase1024Bytes, suffix.go constructBytes.

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
    return _decimal_string(nanos, -9, fmt)


def _decimal_string(m: int, e: int, fmt: str) -> str:
    """``m * 10**e`` (``m`` not zero) in decimal SI or exponent form, the exponent a multiple of 3."""
    while m % 10 == 0:
        m, e = m // 10, e + 1
    r = e % 3
    m, e = m * 10**r, e - r
    if fmt == DECIMAL_SI:
        return f"{m}{_DECIMAL_SUFFIXES.get(e, '')}"
    return f"{m}e{e}" if e else str(m)


_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_DECIMAL_EXPONENTS = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_STORED_EXPONENT_LIMIT, _STORED_DIGITS_LIMIT = 10_000, 1_000
"""A stored quantity whose exponent is larger than this (in magnitude), or with more digits, is
kept as written (no real amount comes near; it bounds the work of a hostile one)."""


def _scan(text: str) -> tuple[bool, str, str, str, bool]:
    """Go's scanner of a quantity: (positive, integer digits without their leading zeros, fraction
    digits, suffix, whether the number had a digit at all); a text with no digits (``"-"``,
    ``"."``) is zero, as in Go.

    Mirrors: apimachinery quantity.go parseQuantityString.
    Raises:
        QuantityError: a character after the suffix that is not part of an exponent.
    """
    end, pos, positive = len(text), 0, True
    if end and text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos == end:
        return positive, "0", "", "", True
    i = pos
    while i < end and text[i] in _DIGITS:
        i += 1
    num, denom = text[pos:i] or "0", ""
    if i < end and text[i] == ".":
        j = i = i + 1
        while j < end and text[j] in _DIGITS:
            j += 1
        denom, i = text[i:j], j
    start = i
    while i < end and text[i] in _SUFFIX_LETTERS:
        i += 1
    if i < end and text[i] in "+-":
        i += 1
    while i < end and text[i] in _DIGITS:
        i += 1
    if i < end:
        raise QuantityError(f"{ERR_FORMAT_WRONG}: {text!r}")
    return positive, num, denom, text[start:], not _DIGITS.isdisjoint(text[:start])


def _interpret(suffix: str) -> tuple[str, int]:
    """(format, exponent) of a suffix (base 10, or base 2 for :data:`BINARY_SI`).

    Mirrors: apimachinery suffix.go suffixHandler.interpret (the fast lookup included).
    Raises:
        QuantityError: an unknown suffix (Go's ErrSuffix).
    """
    if suffix in _DECIMAL_EXPONENTS:
        return DECIMAL_SI, _DECIMAL_EXPONENTS[suffix]
    if suffix in _BINARY_EXPONENTS:
        return BINARY_SI, _BINARY_EXPONENTS[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and (exp := _exponent(suffix[1:])) is not None:
        return DECIMAL_EXPONENT, exp
    raise QuantityError(f"{ERR_SUFFIX}: {suffix!r}")


def _exponent(text: str) -> int | None:
    """The int64 an ``e`` exponent's text (an optional sign, ASCII digits) reads as, or None where
    Go's ``strconv.ParseInt(text, 10, 64)`` fails (no digits, another character, beyond int64).
    Leading zeros are dropped before the digits are counted, so ``"0" * 5000 + "3"`` is 3 and a
    long exponent is refused without converting all of it.

    Mirrors: apimachinery suffix.go suffixHandler.interpret (its ParseInt of the exponent)."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not set(digits) <= _DIGITS:
        return None
    digits = digits.lstrip("0") or "0"
    if len(digits) > 19:  # int64 has 19 digits
        return None
    exp = -int(digits) if text[0] == "-" else int(digits)
    return exp if -(2**63) <= exp < 2**63 else None


def go_parse_error(text: str) -> str | None:
    """The error text Go's ParseQuantity gives a Quantity field's string (surrounding spaces
    trimmed, as Quantity.UnmarshalJSON does): :data:`ERR_FORMAT_WRONG` when the scanner refuses it
    (empty, a character after the suffix: ``"1Q"``), :data:`ERR_SUFFIX` when the suffix it scanned
    is unknown (``"1KK"``, ``"1Ki5"``, ``"1e"``, ``"1mm"``) or its exponent is beyond int64; None
    when both accept it.

    Mirrors: apimachinery quantity.go ParseQuantity (parseQuantityString, then
    suffixHandler.interpret).
    """
    s = text.strip()
    if not s:
        return ERR_FORMAT_WRONG
    try:
        _interpret(_scan(s)[3])
    except QuantityError as e:
        return ERR_SUFFIX if str(e).startswith(ERR_SUFFIX) else ERR_FORMAT_WRONG
    return None


def _away(n: int, d: int) -> int:
    """``n / d`` rounded away from zero (``d`` > 0)."""
    q = -(-abs(n) // d)
    return q if n >= 0 else -q


def stored_string(text: str, *, resource_list: bool = False) -> str:
    """The string kube-apiserver stores for a Quantity field of a built-in kind written as
    ``text`` (JSON or YAML string; a JSON number's literal): ``ParseQuantity(text).String()``.

    That is the canonical form (:func:`canonical_string`: ``"1000m"`` -> ``"1"``, ``"1024Mi"``
    -> ``"1Gi"``, ``"0.5"`` -> ``"500m"``, ``"1.5Gi"`` -> ``"1536Mi"``, ``"1000Ki"`` stays), except
    where Go's parser judges the text canonical already and keeps it as written: a whole or
    decimal number whose scale is a multiple of 3, not ending in ``000`` and not starting with a
    zero digit once leading zeros are gone (``"1e3"``, ``"1E3"``, ``"+5"``, ``"01"``, ``"1."``,
    ``"1.500"``, ``"100m"``), or a binary one with an odd enough count (``"1025Ki"``); binary
    amounts above 2**63-1 are capped to it; precision below ``1n`` rounds away from zero.
    ``resource_list``: the value sits in a ResourceList (requests, limits, capacity, hard ...),
    which core/v1 defaulting rounds up to milli-units (``"1.5n"`` -> ``"1m"``).

    Returns ``text`` unchanged when it is not a quantity (validation refuses it later), or when its
    exponent is beyond +-10,000 (Deviates: Go writes those in full).

    Mirrors: apimachinery pkg/api/resource/quantity.go ParseQuantity (the int64 fast path and its
    reuse of a canonical input), Quantity.UnmarshalJSON (spaces trimmed), String; core/v1
    defaults.go SetDefaults_ResourceList (RoundUp(-3)), checked against kube-apiserver v1.34.4.
    """
    return _stored(text, resource_list)


@functools.lru_cache(maxsize=16384)
def _stored(text: str, resource_list: bool) -> str:
    s = text.strip()
    if s == "0":
        return "0"
    try:
        positive, num, denom, suffix, digit = _scan(s)
        fmt, exponent = _interpret(suffix)
    except QuantityError:
        return text
    if abs(exponent) > _STORED_EXPONENT_LIMIT or len(num) + len(denom) > _STORED_DIGITS_LIMIT:
        return text
    digits = int(num + denom)
    if fmt == BINARY_SI:
        if not denom and len(num) + exponent * 3 // 10 <= 14:  # Go's int64 fast path (no overflow there)
            if digits & 7:
                return s
            amount = Fraction(digits << exponent)
        elif not digit:
            return text  # Go's inf.Dec cannot read a number without digits (ErrNumeric)
        else:  # rounded up to 1n, at most 2**63-1
            amount = min(Fraction(math.ceil(Fraction(digits << exponent, 10 ** len(denom)) * _NANO), _NANO),
                         Fraction(INT64_MAX))
            if resource_list:
                amount = Fraction(math.ceil(amount * 1000), 1000)
        return canonical_string(amount if positive else -amount, BINARY_SI)
    scale = exponent - len(denom)
    if (len(num) + len(denom) <= 18 and scale >= -9 and scale % 3 == 0 and (not resource_list or scale >= -3)
            and not (num + denom).endswith("000") and (num + denom)[0] != "0"):
        return s  # Go's fast path keeps a canonical-looking text
    if not digit and (len(num) + len(denom) > 18 or scale < -9):
        return text  # Go's inf.Dec cannot read a number without digits (ErrNumeric)
    if digits == 0:
        return "0"
    m = digits if positive else -digits
    for limit in (-9, -3) if resource_list else (-9,):
        if scale < limit:
            m, scale = _away(m, 10 ** (limit - scale)), limit
    return _decimal_string(m, scale, fmt)
