"""Typed plugin and action arguments, parsed once when the configuration is loaded.

Arguments arrive as the YAML mapping of the configuration (upstream keys such as
``binpack.weight``). Each plugin or action declares a frozen :class:`Arguments` struct whose
fields carry the upstream key as their wire name (:func:`arg`); :func:`decode` turns the mapping
into that struct with ``msgspec.convert`` in lax mode, so ``"3"`` is accepted for an integer and
``"true"`` for a boolean as upstream's ``GetInt``/``GetBool`` accept them from YAML.

Mirrors: volcano pkg/scheduler/framework/arguments.go (GetInt/GetFloat64/GetBool/GetString).
Deviates: unknown keys and wrong types raise :class:`ArgumentError` instead of being logged.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, TypeVar, cast

import msgspec


class ArgumentError(ValueError):
    """An argument key is unknown or its value has the wrong type; the message names the key."""


class Arguments(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Base of every plugin's and action's argument struct (frozen; unknown keys rejected)."""


A = TypeVar("A", bound=Arguments)


def arg(key: str, default: Any) -> Any:
    """Declare a struct field bound to upstream argument ``key`` (its wire name)."""
    return msgspec.field(default=default, name=key)


_EXPECTED = {"int": "an integer", "float": "a number", "bool": "a boolean", "str": "a string"}
_TYPE_RE = re.compile(r"Expected `([^`]+)`, got `[^`]+` - at `\$\.?(.*)`")
_UNKNOWN_RE = re.compile(r"unknown field `(.+)`")


def _argument_error(err: msgspec.ValidationError, arguments: Mapping[str, Any]) -> ArgumentError:
    text = str(err)
    m = _UNKNOWN_RE.search(text)
    if m:
        return ArgumentError(f"unknown argument {m.group(1)!r}")
    m = _TYPE_RE.search(text)
    if m:
        key = m.group(2).strip("[]\"'")
        want = _EXPECTED.get(m.group(1).split(" ")[0], f"a {m.group(1)}")
        return ArgumentError(f"{key}: expected {want}, got {arguments.get(key)!r}")
    return ArgumentError(text)


def decode(
    cls: type[A],
    arguments: Mapping[str, Any] | None,
    *,
    extra: Callable[[str], bool] | None = None,
) -> A:
    """Build ``cls`` from ``arguments``.

    Args:
        cls: an :class:`Arguments` struct whose fields were declared with :func:`arg`.
        arguments: the YAML mapping (None = all defaults).
        extra: accepts keys outside the declared fields (e.g. ``binpack.resources.<name>``);
            those are collected into the struct's field named ``extra``.
    Raises:
        ArgumentError: unknown key or wrong type (the message names the key).
    """
    given = dict(arguments or {})
    if extra is not None:
        declared = {f.encode_name for f in msgspec.structs.fields(cls)}
        extras = {k: given.pop(k) for k in list(given) if k not in declared and extra(k)}
        if extras:
            given["extra"] = extras
    try:
        return msgspec.convert(given, cls, strict=False)
    except msgspec.ValidationError as e:
        raise _argument_error(e, given) from None


class NoArguments(Arguments, frozen=True):
    """For plugins and actions that take none."""


def parser(cls: type[A]) -> Callable[[Mapping[str, Any] | None], A]:
    """The ``parse_arguments`` of a plugin whose arguments need no check beyond their types:
    ``parser(BinpackArgs)(mapping)`` is ``decode(BinpackArgs, mapping)``.

    Raises (when called):
        ArgumentError: unknown key or wrong type.
    """
    return functools.partial(decode, cls)


class Configured(Generic[A]):
    """Base of an action class: ``Action(args)`` keeps the parsed struct as ``self.args``, and
    ``Action.parse_arguments(mapping)`` decodes the class's :attr:`arguments` struct (run once,
    at configuration load).

    Subclasses set ``arguments`` to their struct (default :class:`NoArguments`) and subscript the
    base with it (``class AllocateAction(Configured[AllocateArgs])``) so ``self.args`` is typed.
    """

    arguments: ClassVar[type[Arguments]] = NoArguments

    def __init__(self, args: A) -> None:
        self.args = args

    @classmethod
    def parse_arguments(cls, arguments: Mapping[str, Any]) -> A:
        """Raises: ArgumentError: unknown key or wrong type (the message names the key)."""
        return cast("A", decode(cls.arguments, arguments))
