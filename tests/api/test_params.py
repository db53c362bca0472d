"""Query parameters read as kube-apiserver's parameter codec reads them (apimachinery
pkg/runtime/conversion.go Convert_Slice_string_To_bool, the first value of a repeated name)."""

from __future__ import annotations

import pytest

from pumice.api.params import query_bool, query_values


@pytest.mark.parametrize("value", ["0", "false", "False", "FALSE", "fAlSe", "fal\u017fe"])
def test_only_0_and_false_in_any_case_are_false(value: str) -> None:
    assert query_bool({"watch": value}, "watch") is False


@pytest.mark.parametrize("value", ["", "1", "true", "True", "abc", "no", "00", "f", " false"])
def test_any_other_value_the_empty_string_included_is_true(value: str) -> None:
    assert query_bool({"watch": value}, "watch") is True


def test_an_absent_parameter_is_none() -> None:
    assert query_bool({}, "watch") is None


def test_a_repeated_name_keeps_its_first_value_and_a_bare_name_is_empty() -> None:
    assert query_values("watch=0&watch=1&pretty&limit=") == {"watch": "0", "pretty": "", "limit": ""}
