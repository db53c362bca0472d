"""Helpers for tests that change decoded JSON objects in every place (seeded mutation tests)."""

from __future__ import annotations

from typing import Any

__all__ = ["value_paths"]


def value_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into the JSON value ``obj``, depth first, ``prefix`` (the whole value) first: a
    path is a tuple of map keys (str) and list indexes (int), e.g. ``("spec", "containers", 0)``."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += value_paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += value_paths(v, (*prefix, i))
    return out
