"""pumice._util.gostrings.quote against Go's strconv.Quote (cases from Go's strconv quote_test.go
table, written out here as Go prints them)."""

import pytest

from pumice._util.gostrings import quote


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
