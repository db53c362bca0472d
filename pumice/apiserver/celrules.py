"""CRD validation rules (``x-kubernetes-validations``): CEL expressions compiled once per CRD
version and evaluated on every write of its custom resources.

:func:`compile_rules` walks a version's ``openAPIV3Schema`` and compiles every rule (and
``messageExpression``) it finds with the ``common-expression-language`` package (Python bindings
of a Rust CEL interpreter); a schema without rules gives None, so such kinds pay nothing per
write. :meth:`RuleSet.validate` evaluates the rules against an object and, on an update, its old
version:

- ``self`` is the value at the rule's schema node (the whole object at the root); a rule is
  evaluated for every value the node describes (each item of an array, each value of a map).
- ``oldSelf`` (transition rules): the old value at the same place, correlated through object
  properties, map values and ``x-kubernetes-list-type: map`` items (by their keys); a transition
  rule is evaluated only on an update where the old value exists.
- Ratcheting: on an update, a value equal to its correlated old value is not checked again (the
  same errors would be ignored upstream); a status update therefore checks no spec rule.
- A failing rule gives ``<path>: Invalid value: "<schema type>": <message>`` (``reason``
  FieldValueForbidden / FieldValueRequired / FieldValueDuplicate give those forms; ``fieldPath``
  extends the path); the message is ``messageExpression``'s value when it evaluates to a non-empty
  one-line string, else ``message``, else ``failed rule: <rule>``. A rule whose evaluation fails
  gives ``<error> evaluating rule: <name>`` (``<name>``: the rule's message, else its text, as
  upstream's ruleErrorString), or for arguments of the wrong type ``'no such overload': call
  arguments did not match a supported operator, function or macro signature for rule: <name>``.

:func:`rule_compile_causes` lists the rules of a CRD that kube-apiserver refuses at create (422):
a rule or messageExpression that does not parse, an unknown ``reason``, and a rule whose plain
field selections on ``self`` / ``oldSelf`` name a field the structural schema does not declare
(cel-go's ``undefined field 'x'``, see :func:`undefined_fields`).

Kubernetes' CEL libraries (quantity, url, ip, cidr, format, regex ``find``/``findAll``, the
string, list and set extensions) are :mod:`pumice.apiserver.cellib`; a rule is handed only the
library functions it references, so rules without them cost what they did. Optional values work
through functions (``optional.of``/``none``/``ofNonZeroValue``, ``hasValue``, ``value``,
``orValue``, ``or``). Property names CEL must escape are seen as upstream names them (``x-y`` as
``x__dash__y``, ``namespace`` as ``__namespace__``); only a rule that mentions an escaped name
pays for the renamed copy of its value.

Mirrors: k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel (compilation.go, validation.go),
pkg/apis/apiextensions/validation (rule compilation at CRD create), CRDValidationRatcheting.

Deviates:

- The type-check at CRD create covers selection chains on ``self`` / ``oldSelf`` and on the
  variables of comprehensions over them (through properties, indexes, map values); the types of
  other expressions (function and macro results, operand types of operators) are not inferred, so
  such a mistake is found when the rule runs (``no such key`` / ``no such overload``).
- No cost budget: neither the static estimate at CRD create (per-rule and per-CRD limits) nor
  the runtime budget per write.
- CEL's optional syntax (``self.?x``, ``m[?k]``, ``[?v]``, ``{?k: v}``) does not parse in the
  interpreter (``common-expression-language`` 0.10.0, the newest on PyPI): the CRD is accepted as
  kube-apiserver accepts it, and the rule is left out with one logged warning.
- A rule calling a function that is still missing is skipped with one logged warning per rule
  instead of being evaluated: ``string(ip)`` / ``string(cidr)`` (the interpreter's ``string``
  cannot be extended), quantity ``mul``/``div``/``divInt``, ``semver``, ``authz``, two-variable
  comprehensions (``all(k, v, ...)``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import cel

from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.schema import json_type_name
from pumice.apiserver import cellib

__all__ = ["RuleSet", "compile_rules", "rule_compile_causes", "undefined_fields"]

log = logging.getLogger(__name__)

_REASONS = ("FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate")

# a path step: ("p", name) object property, ("m", None) map value, ("i", keys) array item
# (keys: the x-kubernetes-list-map-keys of a map-type list, else None)
Step = tuple[str, Any]


@dataclass(frozen=True)
class _Rule:
    steps: tuple[Step, ...]
    source: str
    program: Any
    transition: bool
    message: str
    message_program: Any
    reason: str
    field_path: str
    type_name: str
    functions: dict[str, Any]
    escaping: Any  # the rule's schema node when a property under it needs CEL escaping, else None


def _compile(source: Any) -> Any:
    """The compiled program of ``source``.

    Raises:
        ValueError: it does not parse (cel's message, one line per error).
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("rule is not specified")
    return cel.compile(source)


_OPTIONAL_SYNTAX = ("unsupported syntax '.?'", "unsupported syntax '[?'", "unsupported syntax '?'")


def _optional_syntax(error: ValueError) -> bool:
    """True when ``error`` is the interpreter refusing CEL's optional syntax (``.?``, ``[?``,
    ``{?``), which kube-apiserver accepts: such a rule is kept out and logged, the CRD accepted."""
    text = str(error)
    return any(marker in text for marker in _OPTIONAL_SYNTAX)


def _walk(schema: Any, steps: tuple[Step, ...], where: str, out: list[tuple[tuple[Step, ...], str, Obj]]) -> None:
    """Collect ``(steps, schema path, node)`` of every schema node with rules, in schema order."""
    if not isinstance(schema, dict):
        return
    if schema.get("x-kubernetes-validations"):
        out.append((steps, where, schema))
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            _walk(sub, (*steps, ("p", name)), f"{where}.properties[{name}]", out)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _walk(extra, (*steps, ("m", None)), f"{where}.additionalProperties", out)
    items = schema.get("items")
    if isinstance(items, dict):
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ()) \
            if schema.get("x-kubernetes-list-type") == "map" else None
        _walk(items, (*steps, ("i", keys or None)), f"{where}.items", out)


_TOKENS = re.compile(r"""
    (?P<str>[rR]?[bB]?[rR]?(?:\'\'\'[\s\S]*?\'\'\'|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[0-9][0-9A-Za-z_.]*)
  | (?P<sp>\s+)
  | (?P<op>.)""", re.X)

_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
             "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}


def _unescape(name: str) -> str:
    """The property a CEL identifier names: Kubernetes escapes keywords as ``__in__`` and ``.``,
    ``-``, ``/``, ``__`` as ``__dot__``, ``__dash__``, ``__slash__``, ``__underscores__``."""
    if name.startswith("__") and name.endswith("__") and name[2:-2] in _RESERVED:
        return name[2:-2]
    return (name.replace("__underscores__", "\0").replace("__dot__", ".").replace("__dash__", "-")
            .replace("__slash__", "/").replace("\0", "__"))


_MACROS = {"all", "exists", "exists_one", "map", "filter"}


class _Scope:
    """A comprehension macro's variable: its name, the tokens it is bound in, and the schema of
    the items it ranges over (None: not known, its selections are not checked)."""

    __slots__ = ("elements", "end", "known", "start", "var")

    def __init__(self, var: str, start: int, end: int) -> None:
        self.var, self.start, self.end = var, start, end
        self.elements: Any = None
        self.known = False


_ESCAPED_PARTS = re.compile(r"__|[./-]|[^A-Za-z0-9_./-]")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def _escape(name: str) -> str | None:
    """The CEL identifier of property ``name`` (``x-y`` -> ``x__dash__y``, ``namespace`` ->
    ``__namespace__``); None when CEL cannot name it (it is then not visible to rules).

    Mirrors: k8s.io/apiserver pkg/cel/escaping.go Escape.
    """
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    unsupported = False

    def part(m: re.Match[str]) -> str:
        nonlocal unsupported
        if m.group() in _ESCAPES:
            return _ESCAPES[m.group()]
        unsupported = True
        return ""

    out = _ESCAPED_PARTS.sub(part, name)
    return None if unsupported else out


def _needs_escaping(schema: Any) -> bool:
    """True when a property name under ``schema`` is not a plain CEL identifier."""
    if not isinstance(schema, dict):
        return False
    props = schema.get("properties")
    if isinstance(props, dict) and any(_escape(k) != k or _needs_escaping(v) for k, v in props.items()):
        return True
    return _needs_escaping(schema.get("additionalProperties")) or _needs_escaping(schema.get("items"))


def _escaped_view(value: Any, schema: Any) -> Any:
    """``value`` with its object properties named as CEL names them (see :func:`_escape`); map
    keys (``additionalProperties``) stay as they are, as upstream."""
    if not isinstance(schema, dict):
        return value
    if type(value) is dict:
        props = schema.get("properties")
        if isinstance(props, dict) and props:
            out: dict[str, Any] = {}
            for k, v in value.items():
                key = _escape(k) if k in props else k
                if key is not None:
                    out[key] = _escaped_view(v, props.get(k))
            return out
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return {k: _escaped_view(v, extra) for k, v in value.items()}
        return value
    if type(value) is list and isinstance(schema.get("items"), dict):
        return [_escaped_view(v, schema["items"]) for v in value]
    return value


def _closing(tokens: list[tuple[str, str, int]], at: int) -> int:
    """The index of the bracket closing the one at ``at`` (the last token when unbalanced)."""
    pair = {"(": ")", "[": "]", "{": "}"}[tokens[at][1]]
    depth = 0
    for i in range(at, len(tokens)):
        text = tokens[i][1]
        if text == tokens[at][1]:
            depth += 1
        elif text == pair:
            depth -= 1
            if depth == 0:
                return i
    return len(tokens) - 1


def undefined_fields(source: str, node: Any, *, root: bool) -> list[str]:
    """cel-go's ``undefined field`` errors for ``source`` evaluated at schema ``node``.

    Every selection chain on ``self`` / ``oldSelf`` (``self.spec.replicas``, ``has(self.x)``,
    ``self.items[0].name``) and on the variable of a comprehension over such a chain
    (``self.ports.all(p, p.name != '')``: ``p`` ranges over the items' schema) is walked through
    the structural schema; a name an object's ``properties`` lacks is an error, printed as cel-go
    prints it (``ERROR: <input>:1:5: undefined field 'x'``, the source line, a caret under the
    ``.``). ``root``: ``node`` is the resource's top level, which also has apiVersion, kind and
    metadata.

    A chain stops (is not checked further) at a method or function call, a map's
    ``additionalProperties`` key access continues into its values, and it stops at
    ``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-int-or-string``, a node without
    properties, and an embedded resource's apiVersion/kind/metadata; the types of other
    expressions (function results, operands) are not inferred: this is no full type-check.

    Mirrors: k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel/compilation.go (the checked
    compile against the schema's DeclType), cel-go's checker error text.
    """
    tokens = [(m.lastgroup or "", m.group(), m.start()) for m in _TOKENS.finditer(source) if m.lastgroup != "sp"]
    scopes: dict[int, _Scope] = {}  # index of the macro's name token -> its scope
    for k in range(len(tokens) - 4):
        if tokens[k][1] == "." and tokens[k + 1][1] in _MACROS and tokens[k + 2][1] == "(" \
                and tokens[k + 3][0] == "id" and tokens[k + 4][1] == ",":
            scopes[k + 1] = _Scope(tokens[k + 3][1], k + 4, _closing(tokens, k + 2))
    lines = source.split("\n")
    errors: list[str] = []

    def walk(j: int, at: Any, top: bool) -> None:
        """Walk the chain after the base identifier at ``j - 1`` from schema ``at``."""
        while j + 1 < len(tokens):
            text = tokens[j][1]
            if text == "[":
                close = _closing(tokens, j)
                if isinstance(at, dict) and at.get("type") == "array":
                    at, j, top = at.get("items"), close + 1, False
                    continue
                if isinstance(at, dict) and isinstance(at.get("additionalProperties"), dict):
                    at, j, top = at["additionalProperties"], close + 1, False
                    continue
                return
            if text != "." or tokens[j + 1][0] != "id":
                return
            name = tokens[j + 1][1]
            if j + 2 < len(tokens) and tokens[j + 2][1] == "(":
                scope = scopes.get(j + 1)
                if scope is not None and isinstance(at, dict) and at.get("type") == "array":
                    scope.elements, scope.known = at.get("items"), True
                return  # a method or macro call: its result is not typed here
            if not isinstance(at, dict) or at.get("x-kubernetes-preserve-unknown-fields") \
                    or at.get("x-kubernetes-int-or-string"):
                return
            if (top or at.get("x-kubernetes-embedded-resource")) and name in ("apiVersion", "kind", "metadata"):
                return
            top = False
            if isinstance(at.get("additionalProperties"), dict):
                at = at["additionalProperties"]
                j += 2
                continue
            props = at.get("properties")
            if at.get("type") != "object" or not isinstance(props, dict) or not props:
                return
            field = name if name in props else _unescape(name)
            if field not in props:
                pos = tokens[j][2]
                line = source.count("\n", 0, pos)
                col = pos - (source.rfind("\n", 0, pos) + 1)
                errors.append(f"ERROR: <input>:{line + 1}:{col + 1}: undefined field '{name}'\n"
                              f" | {lines[line]}\n | {'.' * col}^")
                return
            at = props[field]
            j += 2

    for i, (kind, text, _pos) in enumerate(tokens):
        if kind != "id" or (i and tokens[i - 1][1] == "."):
            continue
        inner = max((s for s in scopes.values() if s.var == text and s.start < i <= s.end),
                    key=lambda s: s.start, default=None)
        if inner is not None:
            if inner.known and inner.elements is not None:
                walk(i + 1, inner.elements, False)
        elif text in ("self", "oldSelf"):
            walk(i + 1, node, root)
    return errors


def rule_compile_causes(schema: Any, where: str) -> list[FieldCause]:
    """The causes of every rule (or messageExpression) under ``schema`` that does not compile,
    with the schema path ``where`` (e.g. ``spec.versions[0].schema.openAPIV3Schema``), as the
    CRD validation gives them: ``<where>...x-kubernetes-validations[i].rule: Invalid value:
    "<rule>": compilation failed: <error>`` (``messageExpression compilation failed`` for a
    messageExpression). Deviates: the value shown is the expression, where kube-apiserver prints
    the whole ValidationRule struct (with pointer addresses when reason is set)."""
    found: list[tuple[tuple[Step, ...], str, Obj]] = []
    _walk(schema, (), where, found)
    causes: list[FieldCause] = []
    for steps, path, node in found:
        rules = node["x-kubernetes-validations"]
        if not isinstance(rules, list):
            causes.append(FieldCause(f"{path}.x-kubernetes-validations", "Invalid value: must be a list of rules"))
            continue
        for i, rule in enumerate(rules):
            at = f"{path}.x-kubernetes-validations[{i}]"
            if not isinstance(rule, dict):
                causes.append(FieldCause(at, "Invalid value: must be an object with a rule"))
                continue
            for key in ("rule", "messageExpression"):
                if key == "messageExpression" and key not in rule:
                    continue
                failed = "compilation failed" if key == "rule" else "messageExpression compilation failed"
                try:
                    _compile(rule.get(key))
                except ValueError as e:
                    if _optional_syntax(e):
                        continue  # accepted as kube-apiserver does; the rule is left out (compile_rules)
                    detail = " ".join(str(e).split())
                    causes.append(FieldCause(f"{at}.{key}", f'Invalid value: "{rule.get(key)}": {failed}: {detail}'))
                    continue
                undefined = undefined_fields(str(rule[key]), node, root=not steps)
                if undefined:
                    detail = " ".join(" ".join(u.split()) for u in undefined)
                    causes.append(FieldCause(f"{at}.{key}", f'Invalid value: "{rule.get(key)}": {failed}: {detail}'))
            reason = rule.get("reason")
            if reason is not None and reason not in _REASONS:
                supported = ", ".join(f'"{r}"' for r in _REASONS)
                causes.append(FieldCause(f"{at}.reason", f'Unsupported value: "{reason}": supported values: '
                                         f"{supported}", "FieldValueNotSupported"))
    return causes


def compile_rules(schema: Any) -> RuleSet | None:
    """The compiled rules of one CRD version's ``openAPIV3Schema``; None when it has none. A rule
    that does not compile is left out and logged (a CRD with one is refused at create, see
    :func:`rule_compile_causes`)."""
    found: list[tuple[tuple[Step, ...], str, Obj]] = []
    _walk(schema, (), "", found)
    rules: list[_Rule] = []
    for steps, _path, node in found:
        raw = node["x-kubernetes-validations"]
        for rule in raw if isinstance(raw, list) else ():
            if not isinstance(rule, dict):
                continue
            try:
                program = _compile(rule.get("rule"))
                mexpr = rule.get("messageExpression")
                mprogram = _compile(mexpr) if mexpr else None
            except ValueError as e:
                why = "it uses CEL's optional syntax, which pumice's CEL runtime does not parse" \
                    if _optional_syntax(e) else "it does not compile"
                log.warning("CRD validation rule %r left out: %s: %s", rule.get("rule"), why, " ".join(str(e).split()))
                continue
            refs = program.references()
            functions = cellib.functions_for(refs)
            if mprogram is not None:
                functions.update(cellib.functions_for(mprogram.references()))
            rules.append(_Rule(
                steps=steps, source=str(rule["rule"]), program=program,
                transition="oldSelf" in (refs.get("variables") or ()), message=str(rule.get("message") or ""),
                message_program=mprogram, reason=str(rule.get("reason") or "FieldValueInvalid"),
                field_path=str(rule.get("fieldPath") or ""), type_name=str(node.get("type") or ""),
                functions=functions,
                escaping=node if "__" in str(rule["rule"]) + str(mexpr or "") and _needs_escaping(node) else None,
            ))
    return RuleSet(tuple(rules)) if rules else None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _places(steps: tuple[Step, ...], new: Any, old: Any, path: str) -> list[tuple[str, Any, Any]]:
    """Every ``(path, value, correlated old value or _NONE)`` the schema node of ``steps``
    describes in ``new``."""
    if not steps:
        return [(path, new, old)]
    (kind, arg), rest = steps[0], steps[1:]
    out: list[tuple[str, Any, Any]] = []
    if kind == "p":
        if type(new) is dict and arg in new:
            sub_old = old.get(arg, _NONE) if type(old) is dict else _NONE
            out += _places(rest, new[arg], sub_old, _join(path, arg))
    elif kind == "m":
        if type(new) is dict:
            for k, v in new.items():
                sub_old = old.get(k, _NONE) if type(old) is dict else _NONE
                out += _places(rest, v, sub_old, f"{path}[{k}]")
    elif type(new) is list:
        by_key: dict[Any, Any] = {}
        if arg and type(old) is list:
            for item in old:
                if type(item) is dict:
                    by_key[tuple(item.get(k) for k in arg)] = item
        for i, item in enumerate(new):
            sub_old = by_key.get(tuple(item.get(k) for k in arg), _NONE) if arg and type(item) is dict else _NONE
            out += _places(rest, item, sub_old, f"{path}[{i}]")
    return out


class _Missing:
    __slots__ = ()


_NONE: Any = _Missing()


@dataclass(frozen=True)
class RuleSet:
    """The compiled ``x-kubernetes-validations`` of one CRD version."""

    rules: tuple[_Rule, ...]

    def validate(self, obj: Obj, old: Obj | None) -> list[FieldCause]:
        """The causes of the rules ``obj`` breaks (``old``: the stored object on an update).

        The whole object is ``self`` at the root (apiVersion, kind, metadata with name and
        generateName only, as upstream exposes them)."""
        new_root = _root_view(obj)
        old_root = _root_view(old) if old is not None else _NONE
        causes: list[FieldCause] = []
        unchanged: dict[str, bool] = {}  # top-level property -> equal to the stored one
        for rule in self.rules:
            if old is not None and rule.steps and rule.steps[0][0] == "p":
                top = rule.steps[0][1]
                same = unchanged.get(top)
                if same is None:
                    same = unchanged[top] = top in new_root and top in old_root and new_root[top] == old_root[top]
                if same:
                    continue  # ratcheting of the whole top-level value (a status update: the spec)
            for path, value, prior in _places(rule.steps, new_root, old_root, ""):
                if prior is not _NONE and prior == value:
                    continue  # ratcheting: unchanged since the stored object
                if rule.transition and prior is _NONE:
                    continue
                cause = _evaluate(rule, path, value, prior)
                if cause is not None:
                    causes.append(cause)
        return causes


def _root_view(obj: Obj) -> Obj:
    md = obj.get("metadata") or {}
    view = dict(obj)
    view["metadata"] = {k: md[k] for k in ("name", "generateName") if k in md}
    return view


_warned: set[tuple[str, str]] = set()


def _error_string(rule: _Rule) -> str:
    """How a failing rule is named in an error: its message when it has one, else its text
    (upstream's ruleErrorString)."""
    return rule.message.strip() or rule.source.strip()


def _failure(rule: _Rule, field: str, value: Any, detail: str) -> FieldCause:
    """The cause of a rule whose evaluation failed with ``detail``."""
    if detail.lower().startswith("no such overload"):
        return _cause(rule, field, value, "'no such overload': call arguments did not match a supported operator, "
                      f"function or macro signature for rule: {_error_string(rule)}")
    return _cause(rule, field, value, f"{detail} evaluating rule: {_error_string(rule)}")


def _evaluate(rule: _Rule, path: str, value: Any, prior: Any) -> FieldCause | None:
    if rule.escaping is not None:
        env: dict[str, Any] = {"self": _escaped_view(value, rule.escaping)}
        if prior is not _NONE:
            env["oldSelf"] = _escaped_view(prior, rule.escaping)
    else:
        env = {"self": value}
        if prior is not _NONE:
            env["oldSelf"] = prior
    if rule.functions:
        env.update(rule.functions)
        cellib.take_error()  # forget a library error an earlier rule absorbed (``||``, ``&&``)
    field = _join(path, rule.field_path.lstrip(".")) if rule.field_path else path
    try:
        ok = rule.program.execute(env)
    except RuntimeError as e:
        library_error = cellib.take_error() if rule.functions else None
        # the library's text when this error is that library error, not one an earlier part of
        # the rule absorbed (``||``, ``&&``) before another function failed
        if library_error is not None and library_error in str(e):
            return _failure(rule, field, value, library_error)
        if "Undefined variable or function" in str(e):
            if (rule.source, str(e)) not in _warned:
                _warned.add((rule.source, str(e)))
                log.warning("CRD validation rule %r not evaluated: %s (not supported by pumice's CEL runtime)",
                            rule.source, e)
            return None
        return _failure(rule, field, value, str(e))
    except (LookupError, TypeError, ValueError, ArithmeticError) as e:
        # KeyError: a missing map key; IndexError: a list index out of range (the package's
        # "index out of bounds: 5"; cel-go says "index '5' out of range in list size '1'")
        detail = f"no such key: {e.args[0]}" if isinstance(e, KeyError) and e.args else str(e)
        return _failure(rule, field, value, detail)
    except Exception as e:  # the evaluator failed in a way not listed above: the rule fails, as in cel-go
        log.warning("CRD validation rule %r: evaluation failed with %s: %s", rule.source, type(e).__name__, e,
                    exc_info=True)
        return _failure(rule, field, value, str(e) or type(e).__name__)
    if ok is True:
        return None
    if ok is not False:
        return _cause(rule, field, value, f"rule did not evaluate to a boolean: {rule.source}")
    message = rule.message.strip() or f"failed rule: {rule.source.strip()}"
    if rule.message_program is not None:
        try:
            text = rule.message_program.execute(env)
        except Exception as e:  # any failure of the message expression: logged, the rule's message used
            cellib.take_error()
            log.warning("messageExpression of CRD validation rule %r failed: %s; its message is used", rule.source, e)
        else:
            if isinstance(text, str) and text.strip() and "\n" not in text.strip():
                message = text.strip()
            else:
                log.warning("messageExpression of CRD validation rule %r gave %r, not a non-empty one-line "
                            "string; its message is used", rule.source, text)
    return _cause(rule, field, value, message)


def _cause(rule: _Rule, field: str, value: Any, message: str) -> FieldCause:
    shown = rule.type_name or json_type_name(value)
    if rule.reason == "FieldValueForbidden":
        return FieldCause(field, f"Forbidden: {message}", "FieldValueForbidden")
    if rule.reason == "FieldValueRequired":
        return FieldCause(field, f"Required value: {message}", "FieldValueRequired")
    if rule.reason == "FieldValueDuplicate":
        return FieldCause(field, f'Duplicate value: "{shown}": {message}', "FieldValueDuplicate")
    return FieldCause(field, f'Invalid value: "{shown}": {message}', "FieldValueInvalid")
