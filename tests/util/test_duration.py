"""Go ``time.ParseDuration``: values and error texts (cases after Go's src/time/time_test.go)."""

from __future__ import annotations

import pytest

from pumice._util.duration import parse_go_duration, parse_go_duration_ns

NS, US, MS, S, M, H = 1, 10**3, 10**6, 10**9, 60 * 10**9, 3600 * 10**9


@pytest.mark.parametrize(("text", "ns"), [
    ("0", 0), ("-0", 0), ("+0", 0),
    ("5s", 5 * S), ("-5s", -5 * S), ("+5s", 5 * S), ("1478s", 1478 * S),
    ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS), ("5.s", 5 * S), (".5s", 500 * MS),
    ("1.004s", S + 4 * MS), ("100.00100s", 100 * S + MS),
    ("10ns", 10), ("11us", 11 * US), ("12\u00b5s", 12 * US), ("12\u03bcs", 12 * US), ("13ms", 13 * MS),
    ("15m", 15 * M), ("16h", 16 * H), ("3h30m", 3 * H + 30 * M), ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)), ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    ("9007199254740993ns", (1 << 53) + 1),  # exact, where a float sum would not be
    ("9223372036854775807ns", (1 << 63) - 1), ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036854ms775us807ns", (1 << 63) - 1), ("-9223372036854775808ns", -(1 << 63)),
    ("0.3333333333333333333h", 20 * M),
    ("0.100000000000000000000h", 6 * M),  # the fraction's extra digits only stop adding precision
    ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
])
def test_values(text: str, ns: int) -> None:
    assert parse_go_duration_ns(text) == ns
    assert parse_go_duration(text) == ns / 1e9


@pytest.mark.parametrize(("text", "error"), [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("1e20h", 'time: unknown unit "e" in duration "1e20h"'),
    ("3 minutes", 'time: unknown unit " minutes" in duration "3 minutes"'),
    ("\uFFFD", 'time: invalid duration "\\xef\\xbf\\xbd"'),
    ("\udcffff", 'time: invalid duration "\\xffff"'),  # an argv byte that is not UTF-8
    ('"1s', 'time: invalid duration "\\"1s"'),
    # beyond int64 nanoseconds (~292 years)
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
    ("100000000000000000000h", 'time: invalid duration "100000000000000000000h"'),
])
def test_errors_are_gos(text: str, error: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_go_duration_ns(text)
    assert str(e.value) == error
