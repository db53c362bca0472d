"""Kubernetes name and quantity checks used by the Volcano admission plugins, with the
apimachinery message texts (``k8s.io/apimachinery/pkg/util/validation``). The DNS-1123 checks
are :mod:`pumice.api.validation`'s, re-exported.

All functions are pure and return a list of error strings (empty when valid).
"""

from __future__ import annotations

import re
from typing import Any

from pumice.api.quantity import QuantityError, parse_quantity
from pumice.api.validation import QUALIFIED_NAME_FMT
from pumice.api.validation import is_dns1123_label as is_dns1123_label
from pumice.api.validation import is_dns1123_subdomain as is_dns1123_subdomain

_QUALIFIED_NAME_FMT = QUALIFIED_NAME_FMT
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME_FMT}$")


def is_qualified_name(value: str) -> list[str]:
    """Errors of ``IsQualifiedName`` (an optional DNS subdomain prefix and a 63-char name)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {m}" for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                f"'123-abc', regex used for validation is '{_QUALIFIED_NAME_FMT}') with an optional "
                "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME_RE.match(name):
        errs.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
                    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                    f"regex used for validation is '{_QUALIFIED_NAME_FMT}')")
    return errs


def go_list(items: list[str]) -> str:
    """Format a list the way Go's ``%v`` prints a ``[]string``: ``[a b c]``."""
    return "[" + " ".join(items) + "]"


def quantity_errors(resources: Any, path: str) -> list[str]:
    """Errors for a ResourceList: each value must parse and be non-negative."""
    errs: list[str] = []
    if resources is None:
        return errs
    if not isinstance(resources, dict):
        return [f"{path}: Invalid value: {resources!r}: must be a map of resource name to quantity"]
    for rname, q in resources.items():
        try:
            v = parse_quantity(q)
        except (QuantityError, TypeError):
            errs.append(f"{path}.{rname}: Invalid value: {q!r}: quantities must match the regular "
                        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
            continue
        if v < 0:
            errs.append(f"{path}.{rname}: Invalid value: \"{q}\": must be greater than or equal to 0")
    return errs
