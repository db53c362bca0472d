"""IntOrString as apimachinery's intstr reads it: one implementation shared by the Deployment and
DaemonSet controllers, the disruption budget arithmetic and Deployment validation."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api.intstr import int_value, scaled_value


@pytest.mark.parametrize(("value", "total", "up", "want"), [
    ("25%", 10, True, 3), ("25%", 10, False, 2), (2, 10, True, 2), ("0%", 5, True, 0), ("100%", 3, False, 3),
    ("+50%", 3, True, 2), ("33%", 100, False, 33),
])
def test_scaled_values_round_like_intstr(value: Any, total: int, up: bool, want: int) -> None:
    assert scaled_value(value, total, round_up=up) == want


@pytest.mark.parametrize("value", ["ten", "5", "\u0665"])
def test_a_string_that_is_not_a_percentage_is_an_error_a_bare_number_too(value: str) -> None:
    """Before, podutil took ``"5"`` as 5 (str.isdigit, also true for the Arabic-Indic five)."""
    with pytest.raises(ValueError) as e:
        scaled_value(value, 10, round_up=True)
    assert str(e.value) == "invalid value for IntOrString: invalid type: string is not a percentage"


def test_bad_percentage_is_intstrs_error_not_pythons() -> None:
    """trial-10 F-8 d5: ``200x%`` made the controller log Python's int() text."""
    with pytest.raises(ValueError) as e:
        scaled_value("200x%", 10, round_up=True)
    assert str(e.value) == ('invalid value for IntOrString: invalid value "200x%": '
                            'strconv.Atoi: parsing "200x": invalid syntax')


def test_no_value_takes_the_default_and_none_at_all_is_an_error() -> None:
    assert scaled_value(None, 8, round_up=False, default="25%") == 2
    with pytest.raises(ValueError, match=r"^nil value for IntOrString$"):
        scaled_value(None, 8, round_up=False)


@pytest.mark.parametrize(("value", "want"), [
    (7, 7), ("7", 7), ("-3", -3), ("abc", 0), ("25%", 0), ("", 0),
    ("99999999999999999999", 2**63 - 1), ("-99999999999999999999", -(2**63)),
])
def test_int_value_is_atoi_with_the_error_dropped(value: int | str, want: int) -> None:
    assert int_value(value) == want

