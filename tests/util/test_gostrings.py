"""pumice._util.gostrings.quote against Go's strconv.Quote (cases from Go's strconv quote_test.go
table, written out here as Go prints them)."""

import pytest

from pumice._util.gostrings import atoi, parse_int, parse_uint, quote


@pytest.mark.parametrize(("s", "go"), [
    ("", '""'),
    ("abc", '"abc"'),
    ('say "hi"', r'"say \"hi\""'),
    ("a\\b", r'"a\\b"'),
    ("\a\b\f\r\n\t\v", r'"\a\b\f\r\n\t\v"'),
    ("\x01\x7f", r'"\x01\x7f"'),
    ("日本語", '"日本語"'),
    ("\u00ad", r'"\u00ad"'),          # soft hyphen: format character, not printable
    ("\u2028", r'"\u2028"'),          # line separator
    ("\U000e0001", r'"\U000e0001"'),  # language tag: not printable
    ("😀", '"😀"'),
])
def test_quote_as_go_strconv_quote(s: str, go: str) -> None:
    assert quote(s) == go


@pytest.mark.parametrize(("s", "n"), [("0", 0), ("42", 42), ("-7", -7), ("+3", 3), ("007", 7),
                                      ("9223372036854775807", 2**63 - 1), ("-9223372036854775808", -(2**63))])
def test_atoi_takes_what_go_strconv_atoi_takes(s: str, n: int) -> None:
    assert atoi(s) == n


@pytest.mark.parametrize("s", ["", " 1", "1 ", "٣", "²", "1_000", "0x10", "1.0", "+", "9223372036854775808"])
def test_atoi_refuses_what_go_strconv_atoi_refuses(s: str) -> None:
    with pytest.raises(ValueError, match=r"strconv\.Atoi: parsing"):
        atoi(s)


@pytest.mark.parametrize(("s", "base", "unsigned", "go"), [
    ("-0x1F", 0, False, -31), ("0o17", 0, False, 15), ("0O17", 0, False, 15), ("017", 0, False, 15),
    ("0b11", 0, False, 3), ("0", 0, False, 0), ("+7", 0, False, 7), ("09", 0, False, None), ("0x", 0, False, None),
    ("", 0, False, None), ("-", 0, False, None), ("1_0", 0, False, None), ("٣", 0, False, None),
    ("-9223372036854775808", 0, False, -(2**63)), ("9223372036854775808", 0, False, None),
    ("9223372036854775808", 0, True, 2**63), ("18446744073709551616", 0, True, None), ("+1", 0, True, None),
    ("+101", 2, False, 5), ("0b1", 2, False, None),
])
def test_parse_int_as_go_strconv(s: str, base: int, unsigned: bool, go: int | None) -> None:
    # strconv.ParseInt(s, base, 64) / ParseUint(s, base, 64); None: Go's error
    assert parse_int(s, base, unsigned=unsigned) == go


BIG = "1" * 5000  # more digits than CPython's int() takes (sys.get_int_max_str_digits(): 4,300)


def test_a_number_of_any_length_is_out_of_range_not_int_s_limit() -> None:
    """review21 W-7: ``int()`` of a decimal text over 4,300 digits raises its own ValueError (a 500
    from a YAML body); Go's parsers answer "value out of range" without converting."""
    assert [parse_int(BIG), parse_int(BIG, unsigned=True), parse_int("-" + BIG, 10), parse_int("0x" + BIG)] == \
        [None] * 4
    assert parse_int("0" * 5000 + "17", 10) == 17  # leading zeros count for nothing, as in Go
    with pytest.raises(ValueError, match=r'^strconv\.Atoi: parsing "1{5000}": value out of range$'):
        atoi(BIG)
    with pytest.raises(ValueError, match=r'^strconv\.ParseUint: parsing "1{5000}": value out of range$'):
        parse_uint(BIG)
