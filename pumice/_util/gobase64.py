"""Go's standard base64 decoding, as Go's ``encoding/json`` reads a ``[]byte`` field.

kube-apiserver decodes a request body into Go structs; a ``[]byte`` field (a ConfigMap's
``binaryData`` values, a Secret's ``data`` values, a ``caBundle``...) is a JSON string that
``base64.StdEncoding`` must decode, else the decode fails with
``illegal base64 data at input byte <n>``. What Go accepts differs from Python's
``base64.b64decode(validate=True)``: ``\\r`` and ``\\n`` anywhere are skipped, the padding is
required, and the offset in the error is where Go's decoder stops.

Mirrors: Go encoding/base64 (``StdEncoding.DecodeString``, ``decodeQuantum``, ``CorruptInputError``).
"""

from __future__ import annotations

import base64
import re

__all__ = ["CorruptInputError", "canonical", "raw_url_error", "std_decode"]

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_VALUES = {c: i for i, c in enumerate(_ALPHABET)}
#: what Go decodes without skipping a newline, whole: quanta of 4, the last one padded
_PLAIN = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class CorruptInputError(ValueError):
    """Go's ``base64.CorruptInputError``: ``offset`` is the byte of the input where decoding failed."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")
        self.offset = offset


def std_decode(s: str | bytes) -> bytes:
    """The bytes of ``s`` decoded as Go's ``base64.StdEncoding.DecodeString`` does (a string is
    taken as its UTF-8 bytes, as Go's JSON decoder holds it).

    Raises:
        CorruptInputError: where Go's decoder fails (``illegal base64 data at input byte <n>``).
    """
    src = s.encode("utf-8", "surrogatepass") if isinstance(s, str) else bytes(s)
    if _PLAIN.fullmatch(src):  # the pattern admits only what decodes
        return base64.b64decode(src)
    return _decode_slow(src)


def canonical(s: str) -> str:
    """``s`` as Go writes the bytes it decodes to back (``base64.StdEncoding.EncodeToString``):
    newlines gone, padding bits zero. ``s`` itself when it is canonical already.

    Raises:
        CorruptInputError: ``s`` is not base64 to Go.
    """
    data = std_decode(s)
    out = base64.b64encode(data).decode()
    return s if out == s else out


def _decode_slow(src: bytes) -> bytes:
    """Go's decodeQuantum loop over the whole input (newlines, padding and the error offset)."""
    out = bytearray()
    si, n = 0, len(src)
    while True:
        dbuf = [0, 0, 0, 0]
        dlen = 4
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return bytes(out)
                # StdEncoding has padding: a quantum cut short is an error at its start
                raise CorruptInputError(si - j)
            c = src[si]
            si += 1
            v = _VALUES.get(c)
            if v is not None:
                dbuf[j] = v
                j += 1
                continue
            if c in (0x0A, 0x0D):
                continue
            if c != 0x3D:  # '='
                raise CorruptInputError(si - 1)
            # padding: the end of the input, with nothing but newlines after it
            if j in (0, 1):
                raise CorruptInputError(si - 1)
            if j == 2:
                while si < n and src[si] in (0x0A, 0x0D):
                    si += 1
                if si == n:
                    raise CorruptInputError(n)
                if src[si] != 0x3D:
                    raise CorruptInputError(si - 1)
                si += 1
            while si < n and src[si] in (0x0A, 0x0D):
                si += 1
            if si < n:
                raise CorruptInputError(si)
            dlen = j
            break
        val = dbuf[0] << 18 | dbuf[1] << 12 | dbuf[2] << 6 | dbuf[3]
        chunk = bytes(((val >> 16) & 0xFF, (val >> 8) & 0xFF, val & 0xFF))
        out += chunk[:dlen - 1]
        if dlen < 4:
            return bytes(out)


_URL_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def raw_url_error(s: str) -> CorruptInputError | None:
    """Where Go's ``base64.RawURLEncoding.DecodeString`` fails on ``s`` (the URL alphabet, no
    padding: an ``=`` is an illegal byte like any other; ``\\r`` and ``\\n`` are skipped; a last
    quantum of one character is illegal at that character), or None when it decodes.

    Mirrors: Go encoding/base64 (decodeQuantum with NoPadding)."""
    src = s.encode("utf-8", "surrogatepass")
    kept = 0
    last = -1
    for i, c in enumerate(src):
        if c in (0x0A, 0x0D):
            continue
        if c not in _URL_ALPHABET:
            return CorruptInputError(i)
        kept += 1
        last = i
    if kept % 4 == 1:
        return CorruptInputError(last)
    return None
