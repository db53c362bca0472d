"""Go's encoding/json syntax error texts (scanner.go), as pumice.api.gojson.syntax_error gives them."""

from __future__ import annotations

import pytest

from pumice.api.gojson import summarize, syntax_error


@pytest.mark.parametrize(("data", "want"), [
    (b'{"a": [1, 2.5e-3, true, false, null, "x\\u00e9\\n"]}', None),
    (b"  7  ", None),
    (b"", "unexpected end of JSON input"),
    (b"{", "unexpected end of JSON input"),
    (b'{"a":1', "unexpected end of JSON input"),
    (b"{not json", "invalid character 'n' looking for beginning of object key string"),
    (b"{'a':1}", "invalid character '\\'' looking for beginning of object key string"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    (b"[1 2]", "invalid character '2' after array element"),
    (b'{"a":}', "invalid character '}' looking for beginning of value"),
    (b"tx", "invalid character 'x' in literal true (expecting 'r')"),
    (b"nul1", "invalid character '1' in literal null (expecting 'l')"),
    (b"-a", "invalid character 'a' in numeric literal"),
    (b"1.e", "invalid character 'e' after decimal point in numeric literal"),
    (b"1e+", "unexpected end of JSON input"),
    (b"1eq", "invalid character 'q' in exponent of numeric literal"),
    (b"01", "invalid character '1' after top-level value"),
    (b'"a\\x"', "invalid character 'x' in string escape code"),
    (b'"\\u00g0"', "invalid character 'g' in \\u hexadecimal character escape"),
    (b'"a\tb"', "invalid character '\\t' in string literal"),
    (b'"a\x01"', "invalid character '\\x01' in string literal"),
    (b"{} {}", "invalid character '{' after top-level value"),
])
def test_syntax_errors_read_as_gos(data: bytes, want: str | None) -> None:
    assert syntax_error(data) == want


def test_a_body_is_summarized_as_kube_apiserver_quotes_it() -> None:
    assert summarize(b"") == "<empty>"
    assert summarize(b"{short") == "{short"
    assert summarize(b"{" + b"x" * 40) == "{" + "x" * 29 + " ..."
    assert summarize(b"\x00\x01") == "0001"
