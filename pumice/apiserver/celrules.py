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
``orValue``, ``or``).

Mirrors: k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel (compilation.go, validation.go),
pkg/apis/apiextensions/validation (rule compilation at CRD create), CRDValidationRatcheting.

Deviates:

- The type-check at CRD create covers plain selection chains on ``self`` / ``oldSelf`` only
  (through properties, map values); types of other expressions (comprehension variables, items
  after an index, function results, operand types of operators) are not checked, so such a
  mistake is found when the rule runs (``no such key`` / ``no such overload``), not at create.
- No cost budget: neither the static estimate at CRD create (per-rule and per-CRD limits) nor
  the runtime budget per write.
- CEL's optional syntax (``self.?x``, ``m[?k]``, ``[?v]``, ``{?k: v}``) does not parse in the
  interpreter (``common-expression-language`` 0.10.0, the newest on PyPI): the CRD is accepted as
  kube-apiserver accepts it, and the rule is left out with one logged warning.
- A rule calling a function that is still missing (``string(ip)``, quantity ``mul``/``div``,
  ``semver``, ``authz``, the two-variable comprehensions ...) is skipped with one logged warning
  per rule instead of being evaluated (``string(ip)``/``string(cidr)`` fail with ``no such
  overload`` instead: the interpreter's ``string`` cannot be extended).
- Field names that CEL must escape (``x-y`` as ``x__dash__y``, ``namespace`` as
  ``__namespace__``) pass the create check but are not unescaped at evaluation (``no such key``).
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


def _selections(source: str) -> list[list[tuple[int, str]]]:
    """The plain field-selection chains on ``self`` / ``oldSelf`` in ``source``: each a list of
    ``(offset of the '.', field name)``, ending before an index, a method call or anything else."""
    tokens = [(m.lastgroup, m.group(), m.start()) for m in _TOKENS.finditer(source) if m.lastgroup != "sp"]
    chains: list[list[tuple[int, str]]] = []
    for i, (kind, text, _pos) in enumerate(tokens):
        if kind != "id" or text not in ("self", "oldSelf") or (i and tokens[i - 1][1] == "."):
            continue
        chain: list[tuple[int, str]] = []
        j = i + 1
        while j + 1 < len(tokens) and tokens[j][1] == "." and tokens[j + 1][0] == "id":
            if j + 2 < len(tokens) and tokens[j + 2][1] == "(":
                break  # a method call (self.size(), self.all(x, ...)), not a field
            chain.append((tokens[j][2], tokens[j + 1][1]))
            j += 2
        if chain:
            chains.append(chain)
    return chains


def undefined_fields(source: str, node: Any, *, root: bool) -> list[str]:
    """cel-go's ``undefined field`` errors for ``source`` evaluated at schema ``node``: every
    plain selection on ``self`` / ``oldSelf`` (``self.spec.replicas``, ``has(self.x)``) is walked
    through the structural schema, and a name an object's ``properties`` lacks is an error
    (``ERROR: <input>:1:5: undefined field 'x'`` with the source line and a caret, as cel-go
    prints it). ``root``: ``node`` is the resource's top level, which also has apiVersion, kind
    and metadata.

    Only these chains are checked: a chain stops at an index, a method or macro call, a map
    (``additionalProperties``), ``x-kubernetes-preserve-unknown-fields``,
    ``x-kubernetes-int-or-string`` or an embedded resource's apiVersion/kind/metadata; types of
    other expressions are not inferred (no full type-check).

    Mirrors: k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel/compilation.go (the checked
    compile against the schema's DeclType), cel-go's checker error text.
    """
    errors: list[str] = []
    lines = source.split("\n")
    for chain in _selections(source):
        at: Any = node
        top = root
        for pos, name in chain:
            if not isinstance(at, dict) or at.get("x-kubernetes-preserve-unknown-fields") \
                    or at.get("x-kubernetes-int-or-string"):
                break
            if (top or at.get("x-kubernetes-embedded-resource")) and name in ("apiVersion", "kind", "metadata"):
                break
            top = False
            props = at.get("properties")
            if isinstance(at.get("additionalProperties"), dict):
                at = at["additionalProperties"]
                continue
            if at.get("type") != "object" or not isinstance(props, dict) or not props:
                break
            field = name if name in props else _unescape(name)
            if field in props:
                at = props[field]
                continue
            line = source.count("\n", 0, pos)
            col = pos - (source.rfind("\n", 0, pos) + 1)
            errors.append(f"ERROR: <input>:{line + 1}:{col + 1}: undefined field '{name}'\n"
                          f" | {lines[line]}\n | {'.' * col}^")
            break
    return errors


def rule_compile_causes(schema: Any, where: str) -> list[FieldCause]:
    """The causes of every rule (or messageExpression) under ``schema`` that does not compile,
    with the schema path ``where`` (e.g. ``spec.versions[0].schema.openAPIV3Schema``), as the
    CRD validation gives them: ``<where>...x-kubernetes-validations[i].rule: Invalid value:
    "<rule>": compilation failed: <error>``."""
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
                try:
                    _compile(rule.get(key))
                except ValueError as e:
                    if _optional_syntax(e):
                        continue  # accepted as kube-apiserver does; the rule is left out (compile_rules)
                    detail = " ".join(str(e).split())
                    causes.append(FieldCause(f"{at}.{key}", f'Invalid value: "{rule.get(key)}": compilation failed: '
                                             f"{detail}"))
                    continue
                undefined = undefined_fields(str(rule[key]), node, root=not steps)
                if undefined:
                    causes.append(FieldCause(f"{at}.{key}", f'Invalid value: "{rule.get(key)}": compilation failed: '
                                             + " ".join(" ".join(u.split()) for u in undefined)))
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
    env: dict[str, Any] = {"self": value}
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
        if library_error is not None:
            return _failure(rule, field, value, library_error)
        if "Undefined variable or function" in str(e):
            if (rule.source, str(e)) not in _warned:
                _warned.add((rule.source, str(e)))
                log.warning("CRD validation rule %r not evaluated: %s (not supported by pumice's CEL runtime)",
                            rule.source, e)
            return None
        return _failure(rule, field, value, str(e))
    except (KeyError, TypeError, ValueError, ArithmeticError, OverflowError) as e:
        detail = f"no such key: {e.args[0]}" if isinstance(e, KeyError) and e.args else str(e)
        return _failure(rule, field, value, detail)
    if ok is True:
        return None
    if ok is not False:
        return _cause(rule, field, value, f"rule did not evaluate to a boolean: {rule.source}")
    message = rule.message.strip() or f"failed rule: {rule.source.strip()}"
    if rule.message_program is not None:
        try:
            text = rule.message_program.execute(env)
        except (RuntimeError, KeyError, TypeError, ValueError, ArithmeticError, OverflowError) as e:
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
