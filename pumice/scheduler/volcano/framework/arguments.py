"""Typed plugin and action arguments, parsed once when the configuration is loaded.

Arguments arrive as the YAML mapping of the configuration (upstream keys such as
``binpack.weight``). Each plugin or action declares a frozen :class:`Arguments` struct whose
fields carry the upstream key as their wire name (:func:`arg`); :func:`decode` turns the mapping
into that struct with ``msgspec.convert`` in lax mode, so ``"3"`` is accepted for an integer and
``"true"`` for a boolean as upstream's ``GetInt``/``GetBool`` accept them from YAML.

Unknown top-level keys are ignored, as upstream's free ``Arguments`` map ignores keys no plugin
reads (an argument of a newer Volcano, a typo). A top-level value of the wrong type in the struct
of an upstream plugin or action (``lenient_types = True``) is ignored too and its default kept, as
upstream's GetInt/GetBool/GetFloat64/GetString log it and leave the default. :func:`decode` reports
each ignored key to the :func:`ignored_arguments` block around it (the configuration loader turns
them into warnings), or logs a warning when there is none.

Mirrors: volcano pkg/scheduler/framework/arguments.go (GetInt/GetFloat64/GetBool/GetString).
Deviates: pumice's own plugins (``lenient_types = False``) refuse a wrong type with
:class:`ArgumentError`; lax conversion accepts ``"3"`` for an integer, which upstream's GetInt
does not; upstream ignores unknown keys silently.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, ClassVar, Generic, TypeVar, cast

import msgspec

log = logging.getLogger(__name__)

_IGNORED: ContextVar[list[str] | None] = ContextVar("pumice_ignored_arguments", default=None)


@contextlib.contextmanager
def ignored_arguments() -> Iterator[list[str]]:
    """Collect, in order, one line per argument :func:`decode` ignores inside the block (instead
    of logging them): ``unknown argument 'gang.bogus' ignored`` or ``binpack.weight: expected an
    integer, got 'heavy'; the default is used``. Use: ``with ignored_arguments() as lines: ...``."""
    keys: list[str] = []
    token = _IGNORED.set(keys)
    try:
        yield keys
    finally:
        _IGNORED.reset(token)


class ArgumentError(ValueError):
    """An argument key is unknown or its value has the wrong type; the message names the key."""


class Arguments(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Base of every plugin's and action's argument struct (frozen). :func:`decode` drops the
    unknown top-level keys before conversion; nested structs still reject theirs. An upstream
    plugin's or action's struct sets ``lenient_types = True`` (see the module docstring)."""

    lenient_types: ClassVar[bool] = False


A = TypeVar("A", bound=Arguments)


def arg(key: str, default: Any) -> Any:
    """Declare a struct field bound to upstream argument ``key`` (its wire name)."""
    return msgspec.field(default=default, name=key)


_EXPECTED = {"int": "an integer", "float": "a number", "bool": "a boolean", "str": "a string"}
_TYPE_RE = re.compile(r"Expected `([^`]+)`, got `[^`]+` - at `\$\.?(.*)`")
_UNKNOWN_RE = re.compile(r"unknown field `(.+)`")


def _argument_error(err: msgspec.ValidationError, arguments: Mapping[str, Any]) -> tuple[ArgumentError, str | None]:
    """The error for ``err`` and, for a wrong type of a top-level key, that key."""
    text = str(err)
    m = _UNKNOWN_RE.search(text)
    if m:
        return ArgumentError(f"unknown argument {m.group(1)!r}"), None
    m = _TYPE_RE.search(text)
    if m:
        key = m.group(2).strip("[]\"'")
        want = _EXPECTED.get(m.group(1).split(" ")[0], f"a {m.group(1)}")
        return ArgumentError(f"{key}: expected {want}, got {arguments.get(key)!r}"), key if key in arguments else None
    return ArgumentError(text), None


def _ignored(cls: type, line: str) -> None:
    sink = _IGNORED.get()
    if sink is None:
        log.warning("%s: %s", cls.__name__, line)
    else:
        sink.append(line)


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
    Returns:
        the struct; a key that is neither declared nor ``extra``, and with ``cls.lenient_types`` a
        top-level key of the wrong type, is left out and reported (see :func:`ignored_arguments`).
    Raises:
        ArgumentError: a wrong type (of a pumice plugin, or nested), or an unknown key inside a
            nested struct (the message names the key).
    """
    given = dict(arguments or {})
    declared = {f.encode_name for f in msgspec.structs.fields(cls)}
    extras = {k: given.pop(k) for k in list(given) if k not in declared and extra is not None and extra(k)}
    if extras:
        given["extra"] = extras
    for k in [k for k in given if k not in declared and not (k == "extra" and extras)]:
        del given[k]
        _ignored(cls, f"unknown argument {k!r} ignored")
    while True:
        try:
            return msgspec.convert(given, cls, strict=False)
        except msgspec.ValidationError as e:
            err, key = _argument_error(e, given)
            if not cls.lenient_types or key is None or key == "extra":
                raise err from None
            del given[key]
            _ignored(cls, f"{err}; the default is used")


class NoArguments(Arguments, frozen=True):
    """For plugins and actions that take none."""


def parser(cls: type[A]) -> Callable[[Mapping[str, Any] | None], A]:
    """The ``parse_arguments`` of a plugin whose arguments need no check beyond their types:
    ``parser(BinpackArgs)(mapping)`` is ``decode(BinpackArgs, mapping)``.

    Raises (when called):
        ArgumentError: wrong type (unknown keys are dropped, see :func:`decode`).
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
        """Raises: ArgumentError: wrong type (the message names the key); unknown keys are dropped."""
        return cast("A", decode(cls.arguments, arguments))
