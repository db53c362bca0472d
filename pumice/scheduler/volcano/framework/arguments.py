"""Typed plugin and action arguments.

Arguments arrive as the YAML mapping of the configuration (upstream keys such as
``binpack.weight``). Each plugin or action declares a frozen dataclass whose fields carry the
upstream key in ``metadata["key"]``; :func:`decode` parses the mapping once.

Mirrors: volcano pkg/scheduler/framework/arguments.go (GetInt/GetFloat64/GetBool/GetString).
Deviates: unknown keys and wrong types raise :class:`ArgumentError` instead of being logged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class ArgumentError(ValueError):
    """An argument key is unknown or its value has the wrong type; the message names the key."""


def arg(key: str, default: Any) -> Any:
    """Declare a dataclass field bound to upstream argument ``key``."""
    return dataclasses.field(default=default, metadata={"key": key})


def _coerce(key: str, typ: Any, v: Any) -> Any:
    t = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    if t.startswith("bool"):
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return v.lower() == "true"
        raise ArgumentError(f"{key}: expected a boolean, got {v!r}")
    if t.startswith("int"):
        if isinstance(v, bool):
            raise ArgumentError(f"{key}: expected an integer, got {v!r}")
        if isinstance(v, int):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str):
            try:
                return int(v)
            except ValueError:
                pass
        raise ArgumentError(f"{key}: expected an integer, got {v!r}")
    if t.startswith("float"):
        if isinstance(v, bool):
            raise ArgumentError(f"{key}: expected a number, got {v!r}")
        if isinstance(v, int | float):
            return float(v)
        if isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                pass
        raise ArgumentError(f"{key}: expected a number, got {v!r}")
    if t.startswith("str"):
        if isinstance(v, str | int | float) and not isinstance(v, bool):
            return str(v)
        raise ArgumentError(f"{key}: expected a string, got {v!r}")
    return v


def decode(
    cls: type[T],
    arguments: Mapping[str, Any] | None,
    *,
    extra: Callable[[str], bool] | None = None,
) -> T:
    """Build ``cls`` from ``arguments``.

    Args:
        cls: a dataclass whose fields were declared with :func:`arg`.
        arguments: the YAML mapping (None = all defaults).
        extra: accepts keys outside the declared fields (e.g. ``binpack.resources.<name>``);
            those are collected into a field named ``extra`` when ``cls`` has one.
    Raises:
        ArgumentError: unknown key or wrong type.
    """
    fields = {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kw: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for k, v in (arguments or {}).items():
        f = fields.get(k)
        if f is None or "key" not in f.metadata:
            if extra is not None and extra(k):
                extras[k] = v
                continue
            raise ArgumentError(f"unknown argument {k!r}")
        kw[f.name] = _coerce(k, f.type, v)
    if extras and "extra" in {f.name for f in dataclasses.fields(cls)}:  # type: ignore[arg-type]
        kw["extra"] = extras
    return cls(**kw)


@dataclasses.dataclass(frozen=True)
class NoArguments:
    """For plugins and actions that take none."""
