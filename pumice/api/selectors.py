"""Label and field selectors: parsing the query-string forms and matching objects.

Label selector strings (``labelSelector=``): comma-separated requirements, each one of
``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)``,
``key notin (a,b)``, ``key>3``, ``key<3``. An empty string selects everything.

Field selector strings (``fieldSelector=``): comma-separated ``path=value``, ``path==value`` or
``path!=value`` terms over dotted field paths (``metadata.name``, ``spec.nodeName``,
``involvedObject.uid``); ``\\,``, ``\\=`` and ``\\\\`` escape separators inside values. A missing
field reads as ``""``.

Also :func:`from_label_selector` turns a metav1.LabelSelector dict (``matchLabels`` /
``matchExpressions``) into the same :class:`LabelSelector`, for controllers.

Errors: every parser raises :class:`SelectorError` (a ValueError) with a message naming the bad
term.

Mirrors: k8s.io/apimachinery pkg/labels/selector.go (Parse), pkg/fields/selector.go
(ParseSelector), pkg/apis/meta/v1/helpers.go (LabelSelectorAsSelector).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "SelectorError",
    "field_value",
    "from_label_selector",
    "parse_field_selector",
    "parse_label_selector",
]


class SelectorError(ValueError):
    """A selector string or a metav1.LabelSelector that does not parse."""


@dataclass(frozen=True)
class LabelRequirement:
    """One label requirement.

    ``op`` is one of ``"="``, ``"!="``, ``"in"``, ``"notin"``, ``"exists"``, ``"!"``, ``">"``,
    ``"<"``; ``values`` holds the operands (one for ``=``, ``!=``, ``>``, ``<``).
    """

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "=":
            return labels.get(self.key) == self.values[0]
        if op == "!=":
            return labels.get(self.key) != self.values[0]
        if op == "in":
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == "notin":
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        v = labels.get(self.key)
        if v is None:
            return False
        try:
            have, want = int(v), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == ">" else have < want

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return f"!{self.key}"
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        return f"{self.key}{self.op}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of :class:`LabelRequirement`; empty selects everything."""

    requirements: tuple[LabelRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _lex_label(s: str) -> list[str]:
    """Split a label selector into tokens: identifiers, operators, parens and commas."""
    tokens: list[str] = []
    i, n = 0, len(s)
    special = "=!(),<> \t"
    while i < n:
        c = s[i]
        if c in " \t":
            i += 1
        elif c in "(),":
            tokens.append(c)
            i += 1
        elif c == "=":
            if s.startswith("==", i):
                tokens.append("==")
                i += 2
            else:
                tokens.append("=")
                i += 1
        elif c == "!":
            if s.startswith("!=", i):
                tokens.append("!=")
                i += 2
            else:
                tokens.append("!")
                i += 1
        elif c in "<>":
            tokens.append(c)
            i += 1
        else:
            j = i
            while j < n and s[j] not in special:
                j += 1
            tokens.append(s[i:j])
            i = j
    return tokens


def parse_label_selector(s: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query string.

    Raises:
        SelectorError: on a syntax error (unbalanced parens, a missing value, an unknown operator).
    """
    if not s or not s.strip():
        return LabelSelector()
    toks = _lex_label(s)
    reqs: list[LabelRequirement] = []
    i = 0

    def need(cond: bool, what: str) -> None:
        if not cond:
            raise SelectorError(f"unable to parse requirement: {what} in label selector {s!r}")

    while i < len(toks):
        t = toks[i]
        if t == "!":
            need(i + 1 < len(toks) and toks[i + 1] not in "(),=!<>", "missing key after '!'")
            reqs.append(LabelRequirement(toks[i + 1], "!"))
            i += 2
        else:
            need(t not in ("(", ")", ",", "=", "==", "!=", "<", ">"), f"unexpected {t!r}")
            key = t
            i += 1
            if i >= len(toks) or toks[i] == ",":
                reqs.append(LabelRequirement(key, "exists"))
            else:
                op = toks[i]
                if op in ("=", "==", "!=", "<", ">"):
                    i += 1
                    value = ""
                    if i < len(toks) and toks[i] not in (",", "(", ")"):
                        value = toks[i]
                        i += 1
                    need(op in ("=", "==", "!=") or value != "", f"missing value after {op!r}")
                    reqs.append(LabelRequirement(key, "=" if op == "==" else op, (value,)))
                elif op in ("in", "notin"):
                    i += 1
                    need(i < len(toks) and toks[i] == "(", f"expected '(' after {op}")
                    i += 1
                    values: list[str] = []
                    while i < len(toks) and toks[i] != ")":
                        if toks[i] != ",":
                            need(toks[i] not in ("(", "=", "==", "!=", "!", "<", ">"), f"bad value {toks[i]!r}")
                            values.append(toks[i])
                        i += 1
                    need(i < len(toks), "missing ')'")
                    i += 1
                    reqs.append(LabelRequirement(key, op, tuple(values)))
                else:
                    raise SelectorError(
                        f"unable to parse requirement: unknown operator {op!r} in label selector {s!r}"
                    )
        if i < len(toks):
            need(toks[i] == ",", f"expected ',' but found {toks[i]!r}")
            i += 1
            need(i < len(toks), "trailing ','")
    return LabelSelector(tuple(reqs))


def from_label_selector(sel: Mapping[str, Any] | None) -> LabelSelector:
    """Turn a metav1.LabelSelector dict into a :class:`LabelSelector`.

    None selects nothing in upstream Go (``labels.Nothing()``); here None and ``{}`` both select
    everything, which is what callers of pod-template selectors expect; check for None first
    where the distinction matters.

    Raises:
        SelectorError: on an unknown ``operator`` or a missing ``values`` list.
    """
    if not sel:
        return LabelSelector()
    reqs = [LabelRequirement(k, "=", (str(v),)) for k, v in sorted((sel.get("matchLabels") or {}).items())]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in sel.get("matchExpressions") or []:
        op = ops.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        values = tuple(str(v) for v in expr.get("values") or ())
        if op in ("in", "notin") and not values:
            raise SelectorError(f"values: Required value: must be specified when operator is {expr['operator']}")
        reqs.append(LabelRequirement(str(expr.get("key", "")), op, values))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldRequirement:
    """``path op value`` with ``op`` ``"="`` or ``"!="``."""

    path: str
    op: str
    value: str


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field path in ``obj`` (``""`` when missing; booleans as
    ``"true"``/``"false"``)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True)
class FieldSelector:
    """A conjunction of :class:`FieldRequirement`; empty selects everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for r in self.requirements:
            v = field_value(obj, r.path)
            if (v == r.value) != (r.op == "="):
                return False
        return True

    def exact(self, path: str) -> str | None:
        """The value required by an ``=`` term on ``path``, or None (used for indexing)."""
        for r in self.requirements:
            if r.path == path and r.op == "=":
                return r.value
        return None

    def paths(self) -> set[str]:
        return {r.path for r in self.requirements}


def _split_unescaped(s: str, sep: str) -> list[str]:
    out, cur, i = [], [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            cur.append(s[i : i + 2])
            i += 2
            continue
        if c == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def _unescape(v: str) -> str:
    out, i = [], 0
    while i < len(v):
        if v[i] == "\\" and i + 1 < len(v):
            out.append(v[i + 1])
            i += 2
        else:
            out.append(v[i])
            i += 1
    return "".join(out)


def parse_field_selector(s: str | None) -> FieldSelector:
    """Parse a ``fieldSelector`` query string.

    Raises:
        SelectorError: when a term has no operator (``invalid selector: 'x'``).
    """
    if not s or not s.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for term in _split_unescaped(s, ","):
        if not term:
            continue
        # find the first unescaped operator
        i, found = 0, None
        while i < len(term):
            c = term[i]
            if c == "\\":
                i += 2
                continue
            if term.startswith("!=", i):
                found = (i, "!=", 2)
                break
            if term.startswith("==", i):
                found = (i, "=", 2)
                break
            if c == "=":
                found = (i, "=", 1)
                break
            i += 1
        if found is None:
            raise SelectorError(f"invalid selector: '{s}'; can't understand '{term}'")
        pos, op, width = found
        path = term[:pos].strip()
        if not path:
            raise SelectorError(f"invalid selector: '{s}'; missing field name in '{term}'")
        reqs.append(FieldRequirement(path, op, _unescape(term[pos + width :])))
    return FieldSelector(tuple(reqs))
