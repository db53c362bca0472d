"""Go's encoding/json float text (floatEncoder) and the value a float has after kube-apiserver held
it in an unstructured object (a custom resource): 1.0 is written 1, 1e21 as 1e+21, -0.0 as -0."""

from __future__ import annotations

import msgspec
import pytest

from pumice.api.gojson import GoFloat, enc_hook, go_number, go_value


@pytest.mark.parametrize(("number", "text"), [
    (1.0, "1"), (0.5, "0.5"), (1e21, "1e+21"), (1e-7, "1e-7"), (-0.0, "-0"), (0.0, "0"), (1e-6, "0.000001"),
    (1.5e-6, "0.0000015"), (9.99e-7, "9.99e-7"), (1e20, "100000000000000000000"), (123456789.0, "123456789"),
    (1.5e300, "1.5e+300"), (-2.5e-10, "-2.5e-10"), (0.1, "0.1"), (12345.678, "12345.678"),
    (5e-324, "5e-324"), (-1e21, "-1e+21"), (7, "7"),
])
def test_a_float_is_written_as_go_s_encoding_json_writes_it(number: float, text: str) -> None:
    # ES6-like: strconv 'f' with the shortest digits, 'e' below 1e-6 and from 1e21 (e-07 -> e-7)
    assert go_number(number) == text


@pytest.mark.parametrize(("number", "kind", "json"), [
    (1.0, int, b"1"), (3e1, int, b"30"), (1e20, int, b"100000000000000000000"), (0.5, float, b"0.5"),
    (1e-7, float, b"1e-7"), (1e21, GoFloat, b"1e+21"), (-0.0, GoFloat, b"-0"), (1e-6, GoFloat, b"0.000001"),
])
def test_a_float_s_value_after_go_held_it_encodes_to_go_s_text(number: float, kind: type, json: bytes) -> None:
    value = go_value(number)
    assert type(value) is kind and value == number
    assert msgspec.json.encode({"v": value}, enc_hook=enc_hook) == b'{"v":' + json + b"}"
