"""Query parameters as kube-apiserver's parameter codec reads them.

A request's options (ListOptions, PatchOptions, DeleteOptions, PodLogOptions, PodExecOptions ...)
come from ``url.Values``: each name maps to a list of values and every scalar option takes the
first one. A bool option is false only for ``0`` or ``false`` in any case; anything else given,
the empty string and ``abc`` included, is true.

Mirrors: k8s.io/apimachinery pkg/runtime/conversion.go (Convert_Slice_string_To_bool,
Convert_Slice_string_To_Pointer_bool, Convert_Slice_string_To_string) and the generated
``autoConvert_url_Values_To_*`` functions that call them.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl

__all__ = ["query_bool", "query_list", "query_values"]


def query_values(raw: str) -> dict[str, str]:
    """The query string ``raw`` (without ``?``) as one value per name: the first of a repeated
    name, as the codec's scalar conversions take ``values[0]``; ``a`` and ``a=`` give ``""``."""
    out: dict[str, str] = {}
    for k, v in parse_qsl(raw, keep_blank_values=True):
        out.setdefault(k, v)
    return out


def query_list(raw: str, name: str) -> list[str] | None:
    """Every value of ``name`` in the query string ``raw``, in order, for an option that is a list
    (``dryRun``: the codec copies all of ``values[name]``); None when ``name`` is absent. ``a=`` gives
    ``[""]``."""
    values = [v for k, v in parse_qsl(raw, keep_blank_values=True) if k == name]
    return values or None


def query_bool(query: Mapping[str, str], name: str) -> bool | None:
    """The bool option ``name`` of ``query``: None when absent (the caller's zero value: false for
    a ``bool`` option, nil for a ``*bool`` one); False for ``0`` or ``false`` in any case; True for
    anything else, the empty string included. It never fails: the codec has no invalid bool."""
    v = query.get(name)
    if v is None:
        return None
    return v != "0" and v.casefold() != "false"  # strings.EqualFold: "falſe" is false too
