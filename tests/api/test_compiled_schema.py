""":class:`pumice.api.schema.CompiledSchema` (and the module functions built on it) answer exactly
as the plain walkers they replaced (``schema_reference.py``, kept verbatim as the oracle): the same
causes in the same order, the same type verdict, the same defaulted and pruned objects (key order
included) and the same pruned paths, on every built-in CRD schema and on a schema using every
keyword the walkers read, for real samples, objects drawn from the schemas and seeded mutants of
both (wrong types, nulls, unknown and missing fields). One compiled schema serves every object of
its schema, so the parts a walk compiled for one object are reused for the next."""

from __future__ import annotations

import copy
import functools
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from pumice.api import schema as kschema
from pumice.api.crds import builtin_crds
from pumice.testing.mutate import value_paths
from pumice.testing.paths import shared_dir
from pumice.testing.volcano import podgroup, queue

from . import schema_reference as ref
from .test_schema import SCHEMA as TEST_SCHEMA

WRONG: list[Any] = ["x", "", 3, -1, 2**40, 2.5, 4.0, True, False, None, [], {}, [1, "a"], [None], {"k": None},
                    {"apiVersion": "v1"}]

#: every keyword the walkers read, with nesting: combinators, nullables, defaults of maps,
#: list types, embedded resources, kept unknown fields, counts, a type name no check knows
COMBOS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object"},
        "spec": {
            "type": "object", "required": ["a", "nul"], "minProperties": 1, "maxProperties": 12,
            "properties": {
                "a": {"type": "integer", "minimum": 1, "exclusiveMinimum": True, "maximum": 9,
                      "exclusiveMaximum": True, "format": "int64"},
                "nul": {"type": "string", "nullable": True},
                "any": {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string", "pattern": "^[a-c]+$"}]},
                "one": {"oneOf": [{"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}},
                                  {"type": "array", "items": {"type": "string"}}]},
                "all": {"type": "object", "allOf": [{"properties": {"p": {"type": "string", "maxLength": 2}}},
                                                    {"required": ["q"]}],
                        "properties": {"p": {"type": "string"}, "q": {"type": "boolean", "default": False}}},
                "ios": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "pattern": "^[0-9]+m?$"},
                "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"},
                        "maxItems": 4, "minItems": 1},
                "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                        "items": {"type": "object", "properties": {"k": {"type": "string"},
                                                                   "v": {"type": "integer", "default": 1}}}},
                "dflt": {"type": "object", "additionalProperties": {"type": "object", "default": {"z": 1},
                                                                     "properties": {"z": {"type": "integer"},
                                                                                    "w": {"type": "string",
                                                                                          "default": "w"}}}},
                "drop": {"type": "object", "additionalProperties": {"type": "string"}},
                "keepnull": {"type": "object", "additionalProperties": {"type": "string", "nullable": True}},
                "emb": {"type": "object", "x-kubernetes-embedded-resource": True,
                        "properties": {"metadata": {"type": "object"}, "spec": {"type": "object", "properties": {
                            "n": {"type": "integer", "default": 2}}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"k": {"type": "object", "properties": {"b": {"type": "number"}}}}},
                "open": {"type": "object", "additionalProperties": True},
                "odd": {"type": "whatever", "enum": [1, "1", True, None]},
                "untyped": {"description": "no type"},
                "notaschema": True,
                "deep": {"type": "array", "items": {"type": "array", "items": {"type": "object", "properties": {
                    "e": {"type": "string", "enum": ["a", "b"], "minLength": 1},
                    "d": {"type": "object", "nullable": True, "default": {"x": 1},
                          "properties": {"x": {"type": "integer", "format": "int32"}}}}}}},
            },
        },
        "status": {"type": "object", "default": {}, "properties": {"n": {"type": "integer", "default": 0},
                                                                    "s": {"type": "string"}}},
    },
}


def _schemas() -> list[tuple[str, dict[str, Any]]]:
    out = [("test_schema", TEST_SCHEMA), ("combos", COMBOS)]
    for crd in builtin_crds():
        for v in crd["spec"]["versions"]:
            out.append((f"{crd['spec']['names']['kind']}/{v['name']}", v["schema"]["openAPIV3Schema"]))
    return out


@functools.cache
def _samples() -> dict[str, list[dict[str, Any]]]:
    """Real objects by kind: the upstream samples in ../shared, and pumice's own test objects."""
    out: dict[str, list[dict[str, Any]]] = {
        "PodGroup": [podgroup("pg", min_member=2, min_resources="1,1Gi", phase="Inqueue")],
        "Queue": [queue("q", weight=2, capability="4,8Gi", guarantee="1,1Gi")],
    }
    root = shared_dir() / "samples"
    for path in sorted(Path(root).rglob("*.yaml")):
        if path.stat().st_size > 32_000:  # installers and CRD bundles: no custom objects of note
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        for doc in docs:
            if isinstance(doc, dict) and isinstance(doc.get("kind"), str):
                out.setdefault(doc["kind"], []).append(doc)
    return out


def _draw(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A value for ``schema``, mostly of the right shape."""
    if not isinstance(schema, dict):
        return rng.choice(WRONG)
    if rng.random() < 0.03:
        return copy.deepcopy(rng.choice(WRONG))
    if "enum" in schema and rng.random() < 0.8:
        return copy.deepcopy(rng.choice(schema["enum"]))
    if schema.get("x-kubernetes-int-or-string"):
        return rng.choice([1, 250, "100m", "2Gi", "1.5", "bad value"])
    t = schema.get("type")
    if t == "object" or (t is None and "properties" in schema):
        obj: dict[str, Any] = {}
        props = schema.get("properties") or {}
        keep = 0.7 if depth < 2 else 0.35 if depth < 6 else 0.0
        for name, sub in props.items():
            if rng.random() < keep:
                obj[name] = _draw(sub, rng, depth + 1)
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict) and depth < 6:
            for i in range(rng.randint(0, 2)):
                obj[f"k{i}"] = _draw(addl, rng, depth + 1)
        return obj
    if t == "array":
        return [_draw(schema.get("items"), rng, depth + 1) for _ in range(rng.randint(0, 2 if depth < 6 else 0))]
    if t == "string":
        return rng.choice(["", "a", "abc", "2024-01-02T03:04:05Z", "UPPER", "x" * 70])
    if t == "integer":
        return rng.choice([0, 1, -1, 7, 2**31, 3.0])
    if t == "number":
        return rng.choice([0.5, 1, -2.25])
    if t == "boolean":
        return rng.choice([True, False])
    return rng.choice(["s", 1, None, {"a": 1}])


def _mutate(obj: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    o = copy.deepcopy(obj)
    for _ in range(rng.choice([1, 1, 2, 3])):
        paths = [p for p in value_paths(o) if p]
        if not paths:
            break
        path = rng.choice(paths)
        parent = o
        for k in path[:-1]:
            parent = parent[k]
        op = rng.random()
        if op < 0.15 and isinstance(parent, dict):
            del parent[path[-1]]
        elif op < 0.3 and isinstance(parent, dict):
            parent[rng.choice(["zz", "unknownField", "apiVersion", "kind", "metadata"])] = rng.choice(WRONG)
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(WRONG))
    return o


def _causes(causes: list[Any]) -> list[tuple[str, str, str]]:
    return [(c.field, c.reason, c.message) for c in causes]


def _agree(compiled: kschema.CompiledSchema, schema: dict[str, Any], obj: Any) -> None:
    want = _causes(ref.validate(schema, copy.deepcopy(obj)))
    assert _causes(compiled.validate(copy.deepcopy(obj))) == want, obj
    assert _causes(kschema.validate(schema, copy.deepcopy(obj))) == want
    for sub in ("spec", "status"):
        if isinstance(obj, dict) and sub in obj:
            assert _causes(compiled.validate({sub: copy.deepcopy(obj[sub])})) == \
                _causes(ref.validate(schema, {sub: copy.deepcopy(obj[sub])}))
    want_types = ref.has_type_errors(schema, copy.deepcopy(obj))
    assert compiled.has_type_errors(copy.deepcopy(obj)) == want_types
    assert kschema.has_type_errors(schema, copy.deepcopy(obj)) == want_types
    # prune then default, as the API server does, and each alone
    a, b = copy.deepcopy(obj), copy.deepcopy(obj)
    assert compiled.prune(a) == ref.prune(schema, b)
    assert msgspec.json.encode(a) == msgspec.json.encode(b)
    compiled.default(a)
    ref.default(schema, b)
    assert msgspec.json.encode(a) == msgspec.json.encode(b)
    a, b = copy.deepcopy(obj), copy.deepcopy(obj)
    kschema.default(schema, a)
    ref.default(schema, b)
    assert msgspec.json.encode(a) == msgspec.json.encode(b)
    assert kschema.prune(schema, a) == ref.prune(schema, b)
    assert msgspec.json.encode(a) == msgspec.json.encode(b)


@pytest.mark.parametrize(("name", "schema"), _schemas(), ids=[n for n, _ in _schemas()])
def test_compiled_schema_answers_as_the_plain_walkers(name: str, schema: dict[str, Any]) -> None:
    rng = random.Random(name)
    compiled = kschema.CompiledSchema(schema)
    kind = name.split("/")[0]
    bases = [copy.deepcopy(o) for o in _samples().get(kind, [])][:6]
    bases += [_draw(schema, rng) for _ in range(6)]
    findings = clean = 0
    for base in bases:
        for obj in [base] + [_mutate(base, rng) for _ in range(25)]:
            _agree(compiled, schema, obj)
            if ref.validate(schema, copy.deepcopy(obj)):
                findings += 1
            else:
                clean += 1
    assert findings and clean  # both outcomes were compared
