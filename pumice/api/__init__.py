"""pumice.api: wire types and the helpers over them (scheme, selectors, conditions and metadata,
quantities, validation, tables, CRD models).

``Obj`` is the one name for a Kubernetes object (or any JSON object) in wire form: a plain dict
as decoded from JSON (``{"apiVersion", "kind", "metadata", ...}``).
"""

from typing import Any

Obj = dict[str, Any]

__all__ = ["Obj"]
