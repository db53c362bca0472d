"""Label and field selectors: parsing the query-string forms and matching objects.

Label selector strings (``labelSelector=``): comma-separated requirements, each one of
``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)``,
``key notin (a,b)``, ``key>3``, ``key<3``. An empty string selects everything. A value set
needs a comma between values (``in (a b)`` is an error); ``()`` and a comma with nothing on
one side stand for the empty value, as upstream's parser reads them.

Field selector strings (``fieldSelector=``): comma-separated ``path=value``, ``path==value`` or
``path!=value`` terms over dotted field paths (``metadata.name``, ``spec.nodeName``,
``involvedObject.uid``); ``\\,``, ``\\=`` and ``\\\\`` escape separators inside values. A missing
field reads as ``""``.

The other label-matching forms all become the same :class:`LabelSelector`, so every label match
in pumice is made here (a test checks that no other module matches labels by hand):

- :func:`from_label_selector`: a metav1.LabelSelector dict (``matchLabels`` /
  ``matchExpressions``); None selects nothing, ``{}`` selects everything.
- :func:`from_set`: a plain label map (a Service's ``spec.selector``, a nodeSelector, KubeRay's
  association selectors); ``{}`` selects everything.
- :func:`from_node_selector_requirements`: the ``matchExpressions`` of a NodeSelectorTerm or a
  preferred scheduling term (adds ``Gt``/``Lt``).
- :func:`as_selector`: either dict form (a metav1.LabelSelector when its keys are only
  ``matchLabels``/``matchExpressions``, else a label map).

Semantics (kube-apiserver's): ``in``/``=`` need the key present with a listed value;
``notin``/``!=`` also hold when the key is absent; ``>``/``<`` need the key present with an
integer value. A requirement that cannot be built (an unknown operator, ``In`` without values,
``Exists`` with values, a non-integer ``Gt`` operand) raises instead of matching or not.

Errors: every parser raises :class:`SelectorError` (a ValueError) with a message naming the bad
term.

Mirrors: k8s.io/apimachinery pkg/labels/selector.go (Parse, NewRequirement,
Requirement.Matches, SelectorFromSet, Nothing), pkg/fields/selector.go (ParseSelector),
pkg/apis/meta/v1/helpers.go (LabelSelectorAsSelector); k8s.io/component-helpers
scheduling/corev1/nodeaffinity (NodeSelectorRequirementsAsSelector).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "NOTHING",
    "FieldRequirement",
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "SelectorError",
    "as_selector",
    "field_value",
    "format_label_selector",
    "from_label_selector",
    "from_node_selector_requirements",
    "from_set",
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
    """A conjunction of :class:`LabelRequirement`; empty selects everything.

    ``nothing`` marks the selector of a nil metav1.LabelSelector (upstream ``labels.Nothing()``):
    it matches no labels at all and is not :attr:`empty`.
    """

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


NOTHING = LabelSelector(nothing=True)


def _requirement(key: str, op: str, values: tuple[str, ...], where: str) -> LabelRequirement:
    """A checked requirement (upstream NewRequirement's operator/value rules).

    Raises:
        SelectorError: ``in``/``notin`` without values, ``exists``/``!`` with values, ``=``/``!=``
            without exactly one value, ``>``/``<`` without exactly one integer value.
    """
    if op in ("in", "notin") and not values:
        raise SelectorError(f"{where}: for 'in', 'notin' operators, values set can't be empty")
    if op in ("exists", "!") and values:
        raise SelectorError(f"{where}: values set must be empty for exists and does not exist")
    if op in ("=", "!=") and len(values) != 1:
        raise SelectorError(f"{where}: exact-match compatibility requires one single value")
    if op in (">", "<"):
        if len(values) != 1:
            raise SelectorError(f"{where}: for 'Gt', 'Lt' operators, exactly one value is required")
        try:
            int(values[0])
        except ValueError:
            raise SelectorError(f"{where}: for 'Gt', 'Lt' operators, the value must be an integer") from None
    return LabelRequirement(key, op, values)


def _lex_label(s: str) -> list[str]:
    """Split a label selector into tokens: identifiers, operators, parens and commas."""
    tokens: list[str] = []
    i, n = 0, len(s)
    special = "=!(),<> \t\r\n"
    while i < n:
        c = s[i]
        if c in " \t\r\n":
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


_SET_SYNTAX = frozenset({"(", ")", ",", "=", "==", "!=", "!", "<", ">"})


def _set_values(toks: list[str], i: int) -> tuple[tuple[str, ...], int]:
    """The values of ``in``/``notin`` from ``toks[i]`` (its ``(``) and the index after its ``)``.

    Values are identifiers separated by single commas; ``()`` is the set {""}, and a comma
    with no identifier before or after it (``(,a``, ``a,)``, ``a,,b``) adds "" as upstream does.
    The values come sorted and without repeats (upstream keeps them in a string set).

    Raises:
        SelectorError: with apimachinery's wording, e.g. ``unable to parse requirement: found
            '2', expected: ',' or ')'`` for ``in (1 2)``; the end of the string reads as ``''``.
    Mirrors: k8s.io/apimachinery pkg/labels/selector.go Parser.parseValues, parseIdentifiersList.
    """
    def tok(j: int) -> str:
        return toks[j] if j < len(toks) else ""

    def fail(found: str, expected: str) -> SelectorError:
        return SelectorError(f"unable to parse requirement: found '{found}', expected: {expected}")

    if tok(i) != "(":
        raise SelectorError(f"unable to parse requirement: found '{tok(i)}' expected: '('")
    i += 1
    if tok(i) == ")":
        return ("",), i + 1
    if not tok(i) or (tok(i) in _SET_SYNTAX and tok(i) != ","):
        raise fail(tok(i), "',', ')' or identifier")
    values: set[str] = set()
    while True:
        t = tok(i)
        i += 1
        if t == ",":
            if not values:
                values.add("")  # "(,"
            if tok(i) == ")":
                values.add("")  # ",)"
                return tuple(sorted(values)), i + 1
            if tok(i) == ",":
                values.add("")  # ",,"
        elif t and t not in _SET_SYNTAX:
            values.add(t)
            if tok(i) == ")":
                return tuple(sorted(values)), i + 1
            if tok(i) != ",":
                raise fail(tok(i), "',' or ')'")
        else:
            raise fail(t, "',', or identifier")


_BINARY_OPS = ("in", "notin", "=", "==", "!=", ">", "<")
_INT64 = re.compile(r"[+-]?[0-9]+")


def _string_requirement(key: str, op: str, values: tuple[str, ...]) -> LabelRequirement:
    """The requirement a selector string spells (its key already checked), with the value
    checks and field paths of upstream's NewRequirement as the string parser calls it.

    Raises:
        SelectorError: ``unable to parse requirement: values[0]: Invalid value: "x": for 'Gt',
            'Lt' operators, the value must be an integer`` or ``values[0][key]: Invalid value:
            ...`` (a bad label value); several as ``[a, b]``.
    """
    from pumice.api.validation import is_label_value

    errs: list[str] = []
    if op in (">", "<"):
        for i, v in enumerate(values):
            if not _INT64.fullmatch(v) or not -(2**63) <= int(v) < 2**63:
                errs.append(f"values[{i}]: Invalid value: {json.dumps(v)}: for 'Gt', 'Lt' operators, the value must be an integer")
    for i, v in enumerate(values):
        v_errs = is_label_value(v)
        if v_errs:
            errs.append(f"values[{i}][{key}]: Invalid value: {json.dumps(v)}: {'; '.join(v_errs)}")
    if errs:
        raise SelectorError("unable to parse requirement: " + (errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]"))
    return LabelRequirement(key, "=" if op == "==" else op, values)


def parse_label_selector(s: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query string, requirement by requirement, left to right.

    Raises:
        SelectorError: at the first error, in apimachinery's words: ``found 'x', expected: !,
            identifier, or 'end of string'``, ``found 'x', expected: ',' or 'end of string'``,
            ``found 'x', expected: identifier after ','``; inside a requirement, prefixed
            ``unable to parse requirement: ``: ``found 'b', expected: in, notin, =, ==, !=, >, <``,
            ``found '(', expected: identifier``, ``<nil>: Invalid value: "a b": ...`` (a bad key),
            the value-set errors of :func:`_set_values`, and the value checks of
            :func:`_string_requirement`. The end of the string reads as ``''``.
    Mirrors: k8s.io/apimachinery pkg/labels/selector.go Parser.parse, parseRequirement,
    parseKeyAndInferOperator, parseOperator, parseExactValue.
    """
    from pumice.api.validation import is_qualified_name

    if not s or not s.strip():
        return LabelSelector()
    toks = _lex_label(s)

    def tok(j: int) -> str:
        return toks[j] if j < len(toks) else ""

    def is_identifier(t: str) -> bool:
        return t != "" and t not in _SET_SYNTAX

    def requirement(i: int) -> tuple[LabelRequirement, int]:
        op = ""
        if tok(i) == "!":
            op, i = "!", i + 1
        key = tok(i)
        if not is_identifier(key):
            raise SelectorError(f"unable to parse requirement: found '{key}', expected: identifier")
        key_errs = is_qualified_name(key)
        if key_errs:  # upstream checks the key with no field path: "<nil>"
            raise SelectorError(f"unable to parse requirement: <nil>: Invalid value: {json.dumps(key)}: {'; '.join(key_errs)}")
        i += 1
        if op == "!":
            return LabelRequirement(key, "!"), i
        if tok(i) in ("", ","):
            return LabelRequirement(key, "exists"), i
        op, i = tok(i), i + 1
        if op not in _BINARY_OPS:
            raise SelectorError(f"unable to parse requirement: found '{op}', expected: {', '.join(_BINARY_OPS)}")
        if op in ("in", "notin"):
            values, i = _set_values(toks, i)
        elif tok(i) in ("", ","):
            values = ("",)
        elif is_identifier(tok(i)):
            values, i = (tok(i),), i + 1
        else:
            raise SelectorError(f"unable to parse requirement: found '{tok(i)}', expected: identifier")
        return _string_requirement(key, op, values), i

    reqs: list[LabelRequirement] = []
    i = 0
    while tok(i) != "":
        if tok(i) != "!" and not is_identifier(tok(i)):
            raise SelectorError(f"found '{tok(i)}', expected: !, identifier, or 'end of string'")
        req, i = requirement(i)
        reqs.append(req)
        if tok(i) == ",":
            i += 1
            if tok(i) != "!" and not is_identifier(tok(i)):
                raise SelectorError(f"found '{tok(i)}', expected: identifier after ','")
        elif tok(i) != "":
            raise SelectorError(f"found '{tok(i)}', expected: ',' or 'end of string'")
    return LabelSelector(tuple(reqs))


_LABEL_SELECTOR_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
_NODE_SELECTOR_OPS = {**_LABEL_SELECTOR_OPS, "Gt": ">", "Lt": "<"}


Frozen = tuple[tuple[str, str, tuple[str, ...]], ...]


def _freeze(exprs: Any) -> Frozen:
    out = []
    for e in exprs or ():
        if isinstance(e, dict):
            values = e.get("values")
            out.append((str(e.get("key", "")), str(e.get("operator", "")), tuple(map(str, values)) if values else ()))
        else:
            out.append(("", "", ()))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _expressions(frozen: Frozen, node: bool) -> tuple[LabelRequirement, ...]:
    # cached: schedulers convert the same Pod terms once per (task, node) pair
    ops, what = (_NODE_SELECTOR_OPS, "node selector") if node else (_LABEL_SELECTOR_OPS, "label selector")
    reqs: list[LabelRequirement] = []
    for key, operator, values in frozen:
        op = ops.get(operator)
        if op is None:
            raise SelectorError(f"unknown {what} operator {operator!r} ({', '.join(ops)})")
        reqs.append(_requirement(key, op, values, f"{key} {operator}"))
    return tuple(reqs)


@functools.lru_cache(maxsize=4096)
def _node_selector(frozen: Frozen) -> LabelSelector:
    return LabelSelector(_expressions(frozen, True))


@functools.lru_cache(maxsize=4096)
def _label_selector(match_labels: tuple[tuple[str, str], ...], frozen: Frozen) -> LabelSelector:
    return LabelSelector(tuple(LabelRequirement(k, "=", (v,)) for k, v in match_labels)
                         + _expressions(frozen, False))


def from_label_selector(sel: Mapping[str, Any] | None) -> LabelSelector:
    """Turn a metav1.LabelSelector dict into a :class:`LabelSelector`.

    None selects nothing (:data:`NOTHING`); ``{}`` (no matchLabels, no matchExpressions)
    selects everything. Workload controllers that must not adopt with an empty selector check
    :attr:`LabelSelector.empty` themselves, as upstream's do.

    Raises:
        SelectorError: on an operator other than In, NotIn, Exists, DoesNotExist, on In/NotIn
            without values, or Exists/DoesNotExist with values.
    """
    if sel is None:
        return NOTHING
    return _label_selector(tuple(sorted((str(k), str(v)) for k, v in (sel.get("matchLabels") or {}).items())),
                           _freeze(sel.get("matchExpressions")))


def from_set(labels: Mapping[str, Any] | None) -> LabelSelector:
    """The selector of a plain label map (``{"app": "web"}``: every pair must be present);
    None or ``{}`` selects everything.

    Mirrors: k8s.io/apimachinery pkg/labels SelectorFromSet.
    """
    return LabelSelector(tuple(LabelRequirement(k, "=", (str(v),)) for k, v in sorted((labels or {}).items())))


def from_node_selector_requirements(exprs: Any) -> LabelSelector:
    """The selector of a NodeSelectorTerm's ``matchExpressions`` (In, NotIn, Exists,
    DoesNotExist, Gt, Lt). An empty list selects everything; callers that treat an empty term
    as matching nothing (required node affinity) check that themselves.

    Raises:
        SelectorError: on an unknown operator or values that do not fit it.
    """
    return _node_selector(_freeze(exprs))


def as_selector(sel: Mapping[str, Any] | LabelSelector | None) -> LabelSelector:
    """A :class:`LabelSelector` from either dict form: a metav1.LabelSelector when all its keys
    are ``matchLabels``/``matchExpressions`` with map/list values, else a plain label map
    (:func:`from_set`). None reads as the metav1.LabelSelector nil (selects nothing).

    Raises:
        SelectorError: as :func:`from_label_selector`.
    """
    if isinstance(sel, LabelSelector):
        return sel
    if sel is None:
        return NOTHING
    if sel and set(sel) <= {"matchLabels", "matchExpressions"} and all(
            isinstance(v, (dict, list)) or v is None for v in sel.values()):
        return from_label_selector(sel)
    return from_set(sel)


def format_label_selector(sel: Mapping[str, Any] | None) -> str:
    """A selector in either dict form (see :func:`as_selector`) as kubectl prints it:
    requirements sorted by key, ``in``/``notin`` values sorted, ``<none>`` when it selects
    everything, ``<error>`` when it does not convert.

    Mirrors: k8s.io/apimachinery pkg/apis/meta/v1 FormatLabelSelector, pkg/labels FormatLabels.
    """
    if not isinstance(sel, Mapping):
        return "<none>"
    try:
        reqs = as_selector(sel).requirements
    except SelectorError:
        return "<error>"
    ordered = sorted((LabelRequirement(r.key, r.op, tuple(sorted(r.values)) if r.op in ("in", "notin") else r.values)
                      for r in reqs), key=lambda r: r.key)
    return str(LabelSelector(tuple(ordered))) or "<none>"


@dataclass(frozen=True)
class FieldRequirement:
    """``path op value`` with ``op`` ``"="`` or ``"!="``."""

    path: str
    op: str
    value: str


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted field path in ``obj`` (``""`` when missing; booleans as
    ``"true"``/``"false"``)."""
    return field_value_at(obj, path.split("."))


def field_value_at(obj: Mapping[str, Any], parts: Sequence[str]) -> str:
    """:func:`field_value` of a path already split at its dots (for callers that read the same
    path of many objects: the API server's field indexes, per write and per event)."""
    cur: Any = obj
    for part in parts:
        if type(cur) is not dict and not isinstance(cur, Mapping):  # a plain dict skips the ABC check
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if cur is True:
        return "true"
    if cur is False:
        return "false"
    return cur if type(cur) is str else str(cur)


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
