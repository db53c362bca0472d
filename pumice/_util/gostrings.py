"""Go's quoting of strings, for texts that must read as upstream's (error messages, shell words).

Mirrors: Go's strconv.Quote (``%q`` of a string) and unicode.IsPrint.
"""

from __future__ import annotations

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def is_print(ch: str) -> bool:
    """Go's ``unicode.IsPrint`` of one character: letters, marks, numbers, punctuation, symbols and
    the ASCII space (what Python's ``str.isprintable`` accepts)."""
    return ch.isprintable()


def quote(s: str) -> str:
    """``s`` as Go's ``strconv.Quote`` (and so ``fmt``'s ``%q``) writes it: in double quotes,
    ``"`` and ``\\`` escaped, printable characters as they are, the seven C escapes as such, other
    characters as ``\\xHH`` (ASCII), ``\\uHHHH`` or ``\\UHHHHHHHH``.

    >>> quote('a "b"\\n\\x01é')
    '"a \\\\"b\\\\"\\\\n\\\\x01é"'
    """
    out = ['"']
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif is_print(ch):
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)
