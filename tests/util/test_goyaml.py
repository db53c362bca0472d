"""pumice._util.goyaml: YAML as go-yaml v2 marshals a map (kubectl-ray's --dry-run output)."""

from __future__ import annotations

import pytest

from pumice._util.goyaml import dump, key_less, resolve


@pytest.mark.parametrize(("a", "b"), [
    ("a", "b"), ("B", "a"),  # letters by code point
    ("a_b", "aB"), ("a-b", "ab"), ("a.b", "aa"),  # a non-letter before a letter
    ("group-2", "group-10"), ("x9", "x10"),  # digit runs by their number
    ("a", "ab"),  # a prefix first
])
def test_key_order(a: str, b: str) -> None:
    assert key_less(a, b) and not key_less(b, a)


def test_dump_quotes_what_would_read_as_another_type_in_double_quotes() -> None:
    assert dump({"n": "2", "t": "true", "e": "", "f": "1.5", "s": "2Gi", "i": 3, "b": False, "m": {}}) == (
        'b: false\ne: ""\nf: "1.5"\ni: 3\nm: {}\n"n": "2"\ns: 2Gi\nt: "true"\n')  # a key "n" too (go-yaml: false)


def test_dump_quotes_what_go_yaml_reads_as_no_string_where_pyyaml_does() -> None:
    # go-yaml v2 encode.go stringv quotes a string its own resolve reads as another type
    assert dump({"a": "y", "b": "1e3", "c": "09", "d": "-.5", "e": "0o17", "f": "1_000"}) == (
        'a: "y"\nb: "1e3"\nc: "09"\nd: "-.5"\ne: "0o17"\nf: "1_000"\n')


def test_dump_writes_a_multi_line_string_as_a_literal_block() -> None:
    assert dump({"script": "echo a\necho b\n"}) == "script: |\n  echo a\n  echo b\n"


def test_a_number_longer_than_int_takes_is_text_and_dumps() -> None:
    """review21 W-7: go-yaml's ParseInt/ParseUint fail (range) and ParseFloat gives +Inf, so a
    5,000-digit plain scalar is a string; kubectl-ray --dry-run writes it (was int()'s ValueError)."""
    big = "1" * 5000
    assert resolve(big) == ("tag:yaml.org,2002:str", big)
    assert resolve("-0b" + big) == ("tag:yaml.org,2002:str", "-0b" + big)
    assert dump({"a": big}) == f'a: "{big}"\n'


def test_lt_lt_resolves_to_text() -> None:
    """review21 W-1: go-yaml v2's resolve has no merge tag ('<' has no hint); a merge is the
    decoder's isMerge of a mapping key."""
    assert resolve("<<") == ("tag:yaml.org,2002:str", "<<")
