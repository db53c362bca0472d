"""Serving CustomResourceDefinitions: what a CRD object makes the server serve.

:func:`crd_info` reads an ``apiextensions.k8s.io/v1`` CustomResourceDefinition into a
:class:`CustomResource` (names, scope, per-version schema, printer columns and subresources);
:func:`validate_crd` returns the field causes that make a CRD invalid.

Mirrors: k8s.io/apiextensions-apiserver pkg/apiserver/customresource_handler.go (crdInfo),
pkg/apis/apiextensions/validation/validation.go (a subset; CEL rules that do not compile are
refused, see :mod:`pumice.apiserver.celrules`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pumice._util.goregexp import compile_error
from pumice._util.gostrings import quote
from pumice.api import Obj
from pumice.api.admission import FieldCause
from pumice.api.apply import SchemaListTypes
from pumice.api.schema import CompiledSchema
from pumice.api.scheme import ResourceKind
from pumice.apiserver.celrules import RuleSet, compile_rules, rule_compile_causes


@dataclass(frozen=True)
class CustomVersion:
    """One served version of a CRD."""

    name: str
    served: bool
    storage: bool
    schema: Obj | None
    printer_columns: list[Obj] = field(default_factory=list)
    status: bool = False
    scale: Obj | None = None  # {specReplicasPath, statusReplicasPath, labelSelectorPath}
    #: the schema's compiled x-kubernetes-validations (None: the schema has none)
    rules: RuleSet | None = None
    #: the schema ready for the API server's checks (None: no schema)
    compiled: CompiledSchema | None = None
    #: how server-side apply and managedFields merge the schema's lists (None: no schema)
    list_types: SchemaListTypes | None = None
    #: the field selector paths ``selectableFields`` declares (``spec.color`` for the jsonPath
    #: ``.spec.color``), served for list and watch besides metadata.name and metadata.namespace
    selectable_fields: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CustomResource:
    """A CRD as served: ``resource`` is the storage key ``"<group>/<plural>"``."""

    crd_name: str
    group: str
    plural: str
    singular: str
    kind: str
    list_kind: str
    namespaced: bool
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    versions: dict[str, CustomVersion]
    storage_version: str

    @property
    def resource(self) -> str:
        return f"{self.group}/{self.plural}"

    def kinds(self) -> list[ResourceKind]:
        out = []
        for v in self.versions.values():
            if not v.served:
                continue
            subs = tuple(s for s, on in (("status", v.status), ("scale", v.scale is not None)) if on)
            out.append(ResourceKind(
                self.group, v.name, self.kind, self.plural, namespaced=self.namespaced,
                singular=self.singular, short_names=self.short_names, categories=self.categories,
                subresources=subs,
            ))
        return out


def crd_info(crd: Obj) -> CustomResource:
    """Read a (valid) CRD object."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    versions: dict[str, CustomVersion] = {}
    storage = ""
    top_schema = (spec.get("validation") or {}).get("openAPIV3Schema")
    for v in spec.get("versions") or []:
        subs = v.get("subresources") or spec.get("subresources") or {}
        schema = (v.get("schema") or {}).get("openAPIV3Schema") or top_schema
        cols = v.get("additionalPrinterColumns") or spec.get("additionalPrinterColumns") or []
        versions[v["name"]] = CustomVersion(
            name=v["name"], served=bool(v.get("served", True)), storage=bool(v.get("storage", False)),
            schema=schema, printer_columns=list(cols), status="status" in subs, scale=subs.get("scale"),
            rules=compile_rules(schema) if schema else None, compiled=CompiledSchema(schema) if schema else None,
            list_types=SchemaListTypes(schema) if schema else None,
            selectable_fields=frozenset(str(f.get("jsonPath") or "").removeprefix(".")
                                        for f in v.get("selectableFields") or [] if isinstance(f, dict)),
        )
        if v.get("storage"):
            storage = v["name"]
    kind = names.get("kind", "")
    return CustomResource(
        crd_name=crd.get("metadata", {}).get("name", ""), group=spec.get("group", ""),
        plural=names.get("plural", ""), singular=names.get("singular") or kind.lower(), kind=kind,
        list_kind=names.get("listKind") or f"{kind}List", namespaced=spec.get("scope") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
        versions=versions, storage_version=storage or next(iter(versions), ""),
    )


#: RE2 syntax Python's re lacks: a pattern using it that Python cannot compile is not refused
_RE2_ONLY = ("\\p", "\\P", "\\z", "\\C", "\\Q", "(?U")


def _pattern_causes(schema: object, where: str, out: list[FieldCause]) -> None:
    """Append a cause for every ``pattern`` under ``schema`` that is not a regular expression
    (``<where>.properties[a].pattern: Invalid value: "([": must be a valid regular expression,
    but isn't: <error>``), as kube-apiserver refuses such a CRD. Python's ``re`` stands in for
    Go's RE2; a pattern with RE2-only syntax that ``re`` cannot compile is let through."""
    if not isinstance(schema, dict):
        return
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        why = compile_error(pattern)
        if why is not None and not any(tok in pattern for tok in _RE2_ONLY):
            out.append(FieldCause(f"{where}.pattern", f'Invalid value: "{pattern}": must be a valid regular '
                                  f"expression, but isn't: {why}"))
    for name, sub in (schema.get("properties") or {}).items() if isinstance(schema.get("properties"), dict) else ():
        _pattern_causes(sub, f"{where}.properties[{name}]", out)
    for key in ("items", "additionalProperties"):
        _pattern_causes(schema.get(key), f"{where}.{key}", out)


#: the most selectableFields one CRD version may declare (validation.go MaxSelectableFields)
MAX_SELECTABLE_FIELDS = 8

_PATH_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|[.\[\]]|[^.\[\]]+")


def selectable_field_path(json_path: str, schema: Any) -> tuple[list[str], Any]:
    """The field names ``json_path`` (``.spec.color``) walks in a structural ``schema``, and the
    schema it ends on: each ``.name`` step is a declared property (or, where the schema has no
    properties but ``additionalProperties``, a map key); array notation is not allowed.

    Mirrors: apiextensions-apiserver pkg/apiserver/schema/cel/validation.go ValidFieldPath (with
    WithFieldPathAllowArrayNotation(false)).

    Raises:
        ValueError: upstream's text: ``does not refer to a valid field``, ``array notation is
            not allowed``, ``unexpected end of JSON path``, ``expected [ or . but got: spec``.
    """
    names: list[str] = []
    tokens = _PATH_TOKENS.findall(json_path)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "[":
            raise ValueError("array notation is not allowed")
        if tok != ".":
            raise ValueError(f"expected [ or . but got: {tok}")
        i += 1
        if i >= len(tokens):
            raise ValueError("unexpected end of JSON path")
        name = tokens[i]
        props = schema.get("properties") if isinstance(schema, dict) else None
        extra = schema.get("additionalProperties") if isinstance(schema, dict) else None
        if isinstance(props, dict) and props:
            if name not in props:
                raise ValueError("does not refer to a valid field")
            schema = props[name]
        elif isinstance(extra, dict):
            schema = extra
        else:
            raise ValueError("does not refer to a valid field")
        names.append(name)
        i += 1
    return names, schema


def _selectable_field_causes(version: Obj, where: str, out: list[FieldCause]) -> None:
    """A version's ``selectableFields``: each ``jsonPath`` must name a string, boolean or integer
    field of the version's schema outside ``metadata``, once; at most
    :data:`MAX_SELECTABLE_FIELDS` of them.

    Mirrors: apiextensions-apiserver validation.go ValidateCustomResourceSelectableFields.

    Deviates: an update that keeps more than 8 unchanged fields is refused as a create is
    (upstream lets it through)."""
    fields = version.get("selectableFields")
    if not isinstance(fields, list) or not fields:
        return
    schema = (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"), dict) else None
    if not isinstance(schema, dict):
        out.append(FieldCause(f"{where}.selectableFields", 'Invalid value: "": may only be set when '
                                                           "`version.schema.openAPIV3Schema` is not included"))
        return
    seen: set[str] = set()
    for j, f in enumerate(fields):
        at = f"{where}.selectableFields[{j}].jsonPath"
        path = f.get("jsonPath") if isinstance(f, dict) else None
        if not path or not isinstance(path, str):
            out.append(FieldCause(at, "Required value", "FieldValueRequired"))
            continue
        try:
            names, found = selectable_field_path(path, schema)
        except ValueError as e:
            out.append(FieldCause(at, f"Invalid value: {quote(path)}: is an invalid path: {e}"))
            continue
        if names and names[0] == "metadata":
            out.append(FieldCause(at, f"Invalid value: {quote(path)}: must not point to fields in metadata"))
        if not isinstance(found, dict) or found.get("type") not in ("string", "boolean", "integer"):
            out.append(FieldCause(at, f"Invalid value: {quote(path)}: must point to a field of type string, boolean "
                                      "or integer. Enum string fields and strings with formats are allowed."))
        key = ".".join(names)
        if key in seen:
            out.append(FieldCause(at, f"Duplicate value: {quote(path)}", "FieldValueDuplicate"))
        seen.add(key)
    if len(seen) > MAX_SELECTABLE_FIELDS:
        out.append(FieldCause(f"{where}.selectableFields", f"Too many: {len(seen)}: must have at most "
                                                           f"{MAX_SELECTABLE_FIELDS} items", "FieldValueTooMany"))


def _has_all_schemas(spec: Obj) -> bool:
    """Every version has an ``openAPIV3Schema`` (or the spec a top-level one)."""
    if ((spec.get("validation") or {}) if isinstance(spec.get("validation"), dict) else {}).get("openAPIV3Schema"):
        return True
    return all(isinstance(v, dict) and isinstance(v.get("schema"), dict) and v["schema"].get("openAPIV3Schema")
               for v in spec.get("versions") or [])


def validate_crd(crd: Obj, old: Obj | None = None) -> list[FieldCause]:
    """The causes that make ``crd`` invalid (empty when it is fine); ``old`` is the stored CRD on
    an update. Every version needs a schema (``Required value: schemas are required``) on create,
    and on an update of a CRD that had them all (apiextensions requireOpenAPISchema)."""
    causes: list[FieldCause] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [FieldCause("spec", "Required value", "FieldValueRequired")]
    group = spec.get("group")
    names = spec.get("names") or {}
    if not group:
        causes.append(FieldCause("spec.group", "Required value", "FieldValueRequired"))
    elif "." not in group:
        causes.append(FieldCause("spec.group", f'Invalid value: "{group}": should be a domain with at least one dot'))
    for k in ("plural", "kind"):
        if not names.get(k):
            causes.append(FieldCause(f"spec.names.{k}", "Required value", "FieldValueRequired"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(FieldCause("spec.scope", f'Unsupported value: "{spec.get("scope")}": supported values: '
                                 '"Cluster", "Namespaced"', "FieldValueNotSupported"))
    versions = spec.get("versions")
    if not versions or not isinstance(versions, list):
        causes.append(FieldCause("spec.versions", "Invalid value: must have exactly one version marked as storage version"))
    else:
        top = spec.get("validation")
        has_top = isinstance(top, dict) and bool(top.get("openAPIV3Schema"))
        old_spec = old.get("spec") if old is not None else None
        require_schema = not has_top and (not isinstance(old_spec, dict) or _has_all_schemas(old_spec))
        storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
        if len(storage) != 1:
            causes.append(FieldCause("spec.versions", "Invalid value: must have exactly one version marked as storage version"))
        for i, v in enumerate(versions):
            if not isinstance(v, dict) or not v.get("name"):
                causes.append(FieldCause(f"spec.versions[{i}].name", "Required value", "FieldValueRequired"))
            if require_schema and isinstance(v, dict) and not (isinstance(v.get("schema"), dict)
                                                                and v["schema"].get("openAPIV3Schema")):
                causes.append(FieldCause(f"spec.versions[{i}].schema.openAPIV3Schema",
                                         "Required value: schemas are required", "FieldValueRequired"))
            if isinstance(v, dict) and isinstance(v.get("schema"), dict):
                where = f"spec.versions[{i}].schema.openAPIV3Schema"
                causes += rule_compile_causes(v["schema"].get("openAPIV3Schema"), where)
                _pattern_causes(v["schema"].get("openAPIV3Schema"), where, causes)
            for j, col in enumerate((v.get("additionalPrinterColumns") or []) if isinstance(v, dict) else []):
                # ValidateCustomResourceColumnDefinition -> validateSimpleJSONPath (upstream's
                # field path really is "JSONPath")
                at = f"spec.versions[{i}].additionalPrinterColumns[{j}].JSONPath"
                path = col.get("jsonPath") if isinstance(col, dict) else None
                if not path:
                    causes.append(FieldCause(at, "Required value", "FieldValueRequired"))
                elif isinstance(path, str) and not path.startswith("."):
                    causes.append(FieldCause(at, f"Invalid value: {quote(path)}: must be a simple json path "
                                                 "starting with ."))
            if isinstance(v, dict):
                _selectable_field_causes(v, f"spec.versions[{i}]", causes)
    name = crd.get("metadata", {}).get("name", "")
    if group and names.get("plural") and name != f"{names['plural']}.{group}":
        causes.append(FieldCause("metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group'))
    return causes


def crd_status(crd: Obj, now: str) -> Obj:
    """The status the server writes on an accepted CRD: NamesAccepted and Established."""
    spec = crd.get("spec", {})
    names = dict(spec.get("names", {}))
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    old = crd.get("status") or {}
    stored = list(old.get("storedVersions") or [])
    for s in storage:
        if s not in stored:
            stored.append(s)
    return {
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"},
        ],
        "acceptedNames": names,
        "storedVersions": stored,
    }
