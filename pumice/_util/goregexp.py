"""Go's ``regexp`` compile errors for a pattern Python's ``re`` refuses.

pumice compiles patterns with Python's ``re`` where upstream compiles Go's RE2 syntax
(``regexp.Compile``). The syntax the two share fails alike, and for the common failures this
module words the error as Go's ``regexp/syntax.Error`` does: ``error parsing regexp: <code>:
`<expr>``` (``missing closing ]: `[```, ``missing closing ): `(a```, ``unexpected ): `a)```,
``missing argument to repetition operator: `*```, ``invalid nested repetition operator: `**```,
``trailing backslash at end of expression: ````, ``invalid escape sequence: `\\q```, ``invalid
character class range: `z-a```). Any other failure keeps Python's description in the same
frame.

Mirrors: Go regexp/syntax parse.go (ErrorCode texts, the Expr each error carries).
"""

from __future__ import annotations

import re

__all__ = ["compile_error"]


def _repeat_op(pattern: str, pos: int) -> str:
    """The repetition operator at ``pos`` (``*``, ``+?``, ``{2,3}``), as Go shows it."""
    end = pattern.index("}", pos) + 1 if pattern[pos] == "{" and "}" in pattern[pos:] else pos + 1
    if end < len(pattern) and pattern[end] == "?":
        end += 1
    return pattern[pos:end]


def _previous_op_start(pattern: str, pos: int) -> int:
    """Where the repetition operator that ends just before ``pos`` starts."""
    start = pos - 1
    if start > 0 and pattern[start] == "?" and pattern[start - 1] in "*+?}":
        start -= 1
    if pattern[start] == "}":
        start = pattern.rfind("{", 0, start)
    return max(start, 0)


def compile_error(pattern: str) -> str | None:
    """None when ``pattern`` compiles, else the error in Go's words (see the module)."""
    try:
        re.compile(pattern)
    except re.error as e:
        return f"error parsing regexp: {_go_words(pattern, e)}"
    return None


def _go_words(pattern: str, e: re.error) -> str:
    msg, pos = e.msg, e.pos if e.pos is not None else 0
    if msg == "unterminated character set":
        return f"missing closing ]: `{pattern[pos:]}`"
    if msg.startswith("missing ), unterminated subpattern"):
        return f"missing closing ): `{pattern}`"
    if msg == "unbalanced parenthesis":
        return f"unexpected ): `{pattern}`"
    if msg == "nothing to repeat":
        return f"missing argument to repetition operator: `{_repeat_op(pattern, pos)}`"
    if msg == "multiple repeat":
        start = _previous_op_start(pattern, pos)
        return f"invalid nested repetition operator: `{pattern[start:pos] + _repeat_op(pattern, pos)}`"
    if msg == "bad escape (end of pattern)":
        return "trailing backslash at end of expression: ``"
    if msg.startswith("bad escape "):
        return f"invalid escape sequence: `{msg.removeprefix('bad escape ')}`"
    if msg.startswith("bad character range "):
        return f"invalid character class range: `{msg.removeprefix('bad character range ')}`"
    return f"{msg}: `{pattern}`"
