"""IntOrString values (``maxSurge: 1``, ``maxUnavailable: "25%"``) read as apimachinery reads
them. Wire values are a Python ``int`` or ``str``.

Mirrors: k8s.io/apimachinery pkg/util/intstr/intstr.go (IntValue, ValueOrDefault,
GetScaledValueFromIntOrPercent with getIntOrPercentValueSafely).
"""

from __future__ import annotations

import math

from pumice._util.gostrings import atoi, quote

__all__ = ["int_value", "scaled_value"]

_INT64_MAX = 2**63 - 1


def int_value(value: int | str) -> int:
    """IntOrString.IntValue: an int as it is; a string's ``strconv.Atoi`` with the error dropped
    (0 for ``"abc"`` or ``"25%"``; Atoi's clamp to the int64 range for a number out of it)."""
    if isinstance(value, int):
        return value
    try:
        return atoi(value)
    except ValueError as e:
        if not str(e).endswith("value out of range"):
            return 0
        return -_INT64_MAX - 1 if value.startswith("-") else _INT64_MAX


def scaled_value(value: int | str | None, total: int, *, round_up: bool, default: int | str | None = None) -> int:
    """GetScaledValueFromIntOrPercent(ValueOrDefault(value, default), total, round_up): an int as
    it is, or ``"25%"`` of ``total`` (a count) rounded up or down, computed in float64 as upstream.
    A string must be a percentage: ``"5"`` is an error, as upstream.

    Raises:
        ValueError: with upstream's text: ``nil value for IntOrString`` (no value and no default),
            ``invalid value for IntOrString: invalid type: string is not a percentage``,
            ``invalid value for IntOrString: invalid value "x%": strconv.Atoi: parsing "x": ...``.
    """
    v = default if value is None else value
    if v is None:
        raise ValueError("nil value for IntOrString")
    if isinstance(v, int):
        return v
    if not v.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        pct = atoi(v[:-1])
    except ValueError as e:
        raise ValueError(f"invalid value for IntOrString: invalid value {quote(v)}: {e}") from None
    x = float(pct) * float(total) / 100
    return math.ceil(x) if round_up else math.floor(x)
