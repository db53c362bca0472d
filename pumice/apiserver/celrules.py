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
  string, else ``message``, else ``failed rule: <rule>``. A rule whose evaluation fails gives
  ``<error> evaluating rule: <rule>``.

:func:`rule_compile_causes` lists the rules of a CRD that do not compile (422 at CRD create).

Mirrors: k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel (compilation.go, validation.go),
pkg/apis/apiextensions/validation (rule compilation at CRD create), CRDValidationRatcheting.

Deviates: rules are parsed but not type-checked against the schema at CRD create (a rule naming a
field the schema lacks is refused at evaluation, not at create); no cost budget; of Kubernetes'
CEL libraries only what the interpreter has built in (``has``, ``size``, ``matches``,
``startsWith``/``endsWith``/``contains``, macros ``all``/``exists``/``exists_one``/``map``/
``filter``, ``timestamp``/``duration``) is there, so a rule using ``quantity()``, ``url()``,
``ip()``, the string or list extensions is skipped with one logged warning per rule instead of
being evaluated; optional types (``.?``) do not parse.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import cel

from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.schema import json_type_name

__all__ = ["RuleSet", "compile_rules", "rule_compile_causes"]

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


def _compile(source: Any) -> Any:
    """The compiled program of ``source``.

    Raises:
        ValueError: it does not parse (cel's message, one line per error).
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("rule is not specified")
    return cel.compile(source)


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


def rule_compile_causes(schema: Any, where: str) -> list[FieldCause]:
    """The causes of every rule (or messageExpression) under ``schema`` that does not compile,
    with the schema path ``where`` (e.g. ``spec.versions[0].schema.openAPIV3Schema``), as the
    CRD validation gives them: ``<where>...x-kubernetes-validations[i].rule: Invalid value:
    "<rule>": compilation failed: <error>``."""
    found: list[tuple[tuple[Step, ...], str, Obj]] = []
    _walk(schema, (), where, found)
    causes: list[FieldCause] = []
    for _steps, path, node in found:
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
                    detail = " ".join(str(e).split())
                    causes.append(FieldCause(f"{at}.{key}", f'Invalid value: "{rule.get(key)}": compilation failed: '
                                             f"{detail}"))
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
                log.warning("CRD validation rule %r left out: it does not compile: %s", rule.get("rule"),
                            " ".join(str(e).split()))
                continue
            refs = program.references()
            rules.append(_Rule(
                steps=steps, source=str(rule["rule"]), program=program,
                transition="oldSelf" in (refs.get("variables") or ()), message=str(rule.get("message") or ""),
                message_program=mprogram, reason=str(rule.get("reason") or "FieldValueInvalid"),
                field_path=str(rule.get("fieldPath") or ""), type_name=str(node.get("type") or ""),
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


def _evaluate(rule: _Rule, path: str, value: Any, prior: Any) -> FieldCause | None:
    env: dict[str, Any] = {"self": value}
    if prior is not _NONE:
        env["oldSelf"] = prior
    field = _join(path, rule.field_path.lstrip(".")) if rule.field_path else path
    try:
        ok = rule.program.execute(env)
    except RuntimeError as e:
        if "Undefined variable or function" in str(e):
            if (rule.source, str(e)) not in _warned:
                _warned.add((rule.source, str(e)))
                log.warning("CRD validation rule %r not evaluated: %s (not supported by pumice's CEL runtime)",
                            rule.source, e)
            return None
        return _cause(rule, field, value, f"{e} evaluating rule: {rule.source}")
    except (KeyError, TypeError, ValueError, ArithmeticError, OverflowError) as e:
        detail = f"no such key: {e.args[0]}" if isinstance(e, KeyError) and e.args else str(e)
        return _cause(rule, field, value, f"{detail} evaluating rule: {rule.source}")
    if ok is True:
        return None
    if ok is not False:
        return _cause(rule, field, value, f"rule did not evaluate to a boolean: {rule.source}")
    message = rule.message or f"failed rule: {rule.source}"
    if rule.message_program is not None:
        try:
            text = rule.message_program.execute(env)
        except (RuntimeError, KeyError, TypeError, ValueError, ArithmeticError, OverflowError) as e:
            log.warning("messageExpression of CRD validation rule %r failed: %s; its message is used", rule.source, e)
        else:
            if isinstance(text, str) and text.strip():
                message = text
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
