"""pumice._util.gostrings.quote against Go's strconv.Quote (cases from Go's strconv quote_test.go
table, written out here as Go prints them)."""

import pytest

from pumice._util.gostrings import atoi, quote


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
