"""Kubernetes name and quantity checks used by the Volcano admission plugins, with the
apimachinery message texts (``k8s.io/apimachinery/pkg/util/validation``). The DNS-1123 checks
and the qualified-name check are :mod:`pumice.api.validation`'s, re-exported.

All functions are pure and return a list of error strings (empty when valid).
"""

from __future__ import annotations

from typing import Any

from pumice.api.quantity import ERR_FORMAT_WRONG, QuantityError, parse_quantity
from pumice.api.validation import is_dns1123_label as is_dns1123_label
from pumice.api.validation import is_dns1123_subdomain as is_dns1123_subdomain
from pumice.api.validation import is_qualified_name as is_qualified_name


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
            errs.append(f"{path}.{rname}: Invalid value: {q!r}: {ERR_FORMAT_WRONG}")
            continue
        if v < 0:
            errs.append(f"{path}.{rname}: Invalid value: \"{q}\": must be greater than or equal to 0")
    return errs
