"""Go's regexp compile errors for patterns Python's re refuses (trial 12 F-6 e)."""

from __future__ import annotations

import pytest

from pumice._util.goregexp import compile_error


@pytest.mark.parametrize(("pattern", "error"), [
    ("([", "missing closing ]: `[`"),
    ("n([", "missing closing ]: `[`"),
    ("(a", "missing closing ): `(a`"),
    ("a)", "unexpected ): `a)`"),
    ("*", "missing argument to repetition operator: `*`"),
    ("a**", "invalid nested repetition operator: `**`"),
    ("x{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
    ("\\", "trailing backslash at end of expression: ``"),
    ("\\q", "invalid escape sequence: `\\q`"),
    ("[z-a]", "invalid character class range: `z-a`"),
])
def test_common_errors_in_gos_words(pattern: str, error: str) -> None:
    assert compile_error(pattern) == "error parsing regexp: " + error


def test_a_good_pattern_has_no_error() -> None:
    assert compile_error("node-[0-9]+") is None
