"""The API server's type checks take a fast path when a body has no type error; on seeded
mutations of real objects (wrong types, nulls, at every depth) the fast paths agree with the
full checks: the same causes, and the same clean-up of nulls."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from pumice.api import fields
from pumice.api import schema as kschema
from pumice.api.crds import builtin_crds
from pumice.api.scheme import POD
from pumice.apiserver.errors import StatusError
from pumice.apiserver.strategy import blocking_cause, blocks_rules
from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster
from pumice.testing.mutate import value_paths
from pumice.testing.volcano import pod, podgroup, queue

WRONG = ["x", 3, 2.5, True, None, [], {}, [1, "a"], {"k": None}]


def _mutants(base: dict[str, Any], rng: random.Random, n: int) -> list[dict[str, Any]]:
    out = [copy.deepcopy(base)]
    for _ in range(n):
        o = copy.deepcopy(base)
        for _ in range(rng.choice([1, 1, 2, 3])):
            paths = [p for p in value_paths(o) if p]
            path = rng.choice(paths)
            parent = o
            for k in path[:-1]:
                parent = parent[k]
            parent[path[-1]] = copy.deepcopy(rng.choice(WRONG))
        out.append(o)
    return out


def _crd_schema(kind: str) -> dict[str, Any]:
    crd = next(c for c in builtin_crds() if c["spec"]["names"]["kind"] == kind)
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_crd_fast_check_is_never_clean_when_validate_reports_a_type_error() -> None:
    rng = random.Random(5)
    cases = [("PodGroup", podgroup("pg", min_member=2, min_resources="1,1Gi", phase="Inqueue")),
             ("Queue", queue("q", weight=2, capability="4,8Gi", guarantee="1,1Gi"))]
    typed = clean = 0
    for kind, obj in cases:
        sch = _crd_schema(kind)
        assert not kschema.has_type_errors(sch, {k: v for k, v in obj.items() if k != "metadata"})
        for body in _mutants({k: v for k, v in obj.items() if k != "metadata"}, rng, 300):
            types = [c for c in kschema.validate(sch, copy.deepcopy(body)) if c.reason == "FieldValueTypeInvalid"]
            fast = kschema.has_type_errors(sch, copy.deepcopy(body))
            if types:
                typed += 1
                assert fast, (kind, body, types)
            elif not fast:
                clean += 1
    assert typed > 50 and clean > 5


def test_builtin_fast_path_gives_the_same_causes_and_clean_up_as_the_full_walk() -> None:
    rng = random.Random(9)
    tree = fields.model_for(POD)
    base = pod("p", group="g", requests="1,1Gi", labels={"a": "b"}, tolerations=[{"key": "k", "operator": "Exists"}])
    base["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    bad = 0
    for body in _mutants(base, rng, 400):
        slow_obj, fast_obj = copy.deepcopy(body), copy.deepcopy(body)
        slow: list[Any] = []
        fields._types(tree, slow_obj, "", slow)
        fast = fields.type_causes(tree, fast_obj)
        assert [(c.field, c.message, c.reason) for c in fast] == [(c.field, c.message, c.reason) for c in slow]
        assert fast_obj == slow_obj
        bad += bool(slow)
    assert 50 < bad < 400


def test_integer_ranges_are_checked_alike_by_the_fast_path_and_the_full_walk() -> None:
    """Trial 5 F-2: integers out of their field's format (int32 / int64) are causes on both paths,
    and values at the bounds are not."""
    rng = random.Random(11)
    tree = fields.model_for(POD)
    base = pod("p", group="g", requests="1,1Gi")
    base["spec"].update(priority=0, terminationGracePeriodSeconds=30,
                        securityContext={"supplementalGroups": [1, 2]})
    base["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    ints = [2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**23]
    seen = set()
    for _ in range(300):
        body = copy.deepcopy(base)
        path = rng.choice([p for p in value_paths(body) if p and isinstance(_get(body, p), int)])
        _set(body, path, rng.choice(ints))
        slow_obj, fast_obj = copy.deepcopy(body), copy.deepcopy(body)
        slow: list[Any] = []
        fields._types(tree, slow_obj, "", slow)
        fast = fields.type_causes(tree, fast_obj)
        assert [(c.field, c.message, c.reason) for c in fast] == [(c.field, c.message, c.reason) for c in slow]
        value, leaf = _get(body, path), path[-1]
        fmt = "int32" if leaf in ("priority", "containerPort") else "int64"
        lo, hi = (-(2**31), 2**31 - 1) if fmt == "int32" else (-(2**63), 2**63 - 1)
        if lo <= value <= hi:
            assert fast == []
        else:
            (c,) = fast
            assert c.reason == "FieldValueInvalid" and c.message.endswith(f"in body must be of type {fmt}")
        seen.add((leaf, lo <= value <= hi))
    assert {("priority", False), ("priority", True), ("terminationGracePeriodSeconds", False),
            ("terminationGracePeriodSeconds", True), (1, False)} <= seen


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    _get(obj, path[:-1])[path[-1]] = value


def test_remembered_specs_give_the_same_verdict_and_clean_up_as_the_full_walk() -> None:
    """types_clean (the registry's check with clean specs remembered by their JSON) is True
    exactly when type_causes finds nothing, leaves the object as the full walk does, and a spec
    remembered clean is one the full walk also finds clean (mutants of the same Pod, in a seeded
    order, so many specs repeat: those that were clean are looked up, not walked)."""
    rng = random.Random(13)
    tree = fields.model_for(POD)
    base = pod("p", group="g", requests="1,1Gi", labels={"a": "b"})
    base["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    base["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}]}
    clean = fields.FixedPoints(limit=64)
    bodies = _mutants(base, rng, 300)
    remembered = 0
    for body in [rng.choice(bodies) for _ in range(1500)]:
        slow_obj, fast_obj = copy.deepcopy(body), copy.deepcopy(body)
        slow = fields.type_causes(tree, slow_obj)
        spec = fast_obj.get("spec")
        known = isinstance(spec, dict) and (tree, fields._encode(spec)) in clean
        remembered += known
        ok = fields.types_clean(tree, fast_obj, clean)
        assert ok == (not slow), body
        fast = [] if ok else fields.type_causes(tree, fast_obj)  # as the registry does
        assert [(c.field, c.message) for c in fast] == [(c.field, c.message) for c in slow]
        assert fast_obj == slow_obj
    assert remembered > 300


def test_a_spec_with_a_nan_is_never_taken_for_a_remembered_one() -> None:
    """NaN, an infinity and null all encode as JSON null, so an encoding with null in it is never
    a key: a clean spec is remembered, one with a NaN is checked in full and gets its cause."""
    tree = fields.model_for(POD)
    clean = fields.FixedPoints()
    assert not clean.usable(fields._encode({"a": float("nan"), "b": float("inf")}))
    ok = pod("p", group="g", requests="1,1Gi")
    assert fields.types_clean(tree, copy.deepcopy(ok), clean)
    assert (tree, fields._encode(ok["spec"])) in clean
    with_nan = copy.deepcopy(ok)
    with_nan["spec"]["terminationGracePeriodSeconds"] = float("nan")
    assert not fields.types_clean(tree, copy.deepcopy(with_nan), clean)
    assert [c.field for c in fields.type_causes(tree, copy.deepcopy(with_nan))] == [
        "spec.terminationGracePeriodSeconds"]


def _custom_cases() -> list[tuple[str, str, dict[str, Any]]]:
    from pumice.simulate.workload import vcjob_manifest

    job = vcjob_manifest("j", workers=[{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}] * 2, queue="q",
                         duration=60.0)
    job["status"] = {"state": {"phase": "Running"}, "running": 2, "minAvailable": 2}
    return [("scheduling.volcano.sh/v1beta1", "PodGroup",
             podgroup("pg", min_member=2, min_resources="1,1Gi", phase="Inqueue")),
            ("scheduling.volcano.sh/v1beta1", "Queue", queue("q", weight=2, capability="4,8Gi", guarantee="1,1Gi")),
            ("batch.volcano.sh/v1alpha1", "Job", job)]


async def test_remembered_custom_resource_parts_give_the_causes_of_the_full_schema_walk(cluster: LocalCluster) -> None:
    """The registry remembers the top-level values of a custom resource (spec, status) that
    passed the type check or the schema validation, by schema and JSON, and walks only the
    others. Over seeded mutants of a PodGroup, a Queue and a vcjob, drawn with repeats so that
    most specs are remembered ones, the type check raises exactly the 422 causes that
    has_type_errors + validate give on the whole body (all of validate's, with a type error), and the validation returns validate's
    causes, in the same order."""
    reg = cluster.server.registry
    rng = random.Random(29)
    remembered = typed = invalid = 0
    for api_version, kind, base in _custom_cases():
        rk = cluster.scheme.by_api_version_kind(api_version, kind)
        assert rk is not None
        cr = reg.custom(rk)
        assert cr is not None
        schema = cr.versions[rk.version].schema
        assert schema is not None
        bodies = _mutants({k: v for k, v in base.items() if k not in ("apiVersion", "kind", "metadata")}, rng, 150)
        for body in [rng.choice(bodies) for _ in range(600)]:
            full = copy.deepcopy(body)
            kschema.default(schema, full)
            # with a type error, every cause of the schema on the defaulted body (session 15:
            # apiextensions' one pass, after the decoding's defaults), and the blocking cause when
            # the version has rules
            causes = [c for c in kschema.validate(schema, full)
                      if not (c.reason == "FieldValueTypeInvalid" and c.message.startswith("Invalid value: null"))] \
                if kschema.has_type_errors(schema, copy.deepcopy(body)) else []
            if causes and cr.versions[rk.version].rules is not None and blocks_rules(causes):
                causes.append(blocking_cause())
            want_types = [(c.field, c.message) for c in causes]
            want = [(c.field, c.reason, c.message) for c in kschema.validate(schema, copy.deepcopy(body))]
            left, _ = reg._schema_parts("types", schema, body)
            remembered += len(left) < len(body)
            obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "default"},
                   **copy.deepcopy(body)}
            try:
                reg._check_types(rk, obj)
                got_types: list[tuple[str, str]] = []
            except StatusError as e:
                assert e.code == 422 and e.details is not None
                got_types = [(c["field"], c["message"]) for c in e.details["causes"]]
            assert got_types == want_types, body
            got = [(c.field, c.reason, c.message) for c in reg.schema_causes(schema, copy.deepcopy(body))]
            assert got == want, body
            typed += bool(want_types)
            invalid += bool(want)
    assert remembered > 600 and typed > 100 and invalid > typed


async def test_a_changed_crd_schema_checks_a_remembered_spec_again(cluster: LocalCluster) -> None:
    """A spec remembered clean under the old schema of a CRD is walked again once the CRD
    changes: here minMember becomes a string, and the same PodGroup spec gets its 422."""
    crds = cluster.scheme.by_api_version_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    pgs = cluster.scheme.by_api_version_kind("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert crds is not None and pgs is not None
    await cluster.client.create(podgroup("a", namespace="default", min_member=2))
    await cluster.client.create(podgroup("b", namespace="default", min_member=2))  # its spec is a remembered one now
    crd = await cluster.client.get(crds, "podgroups.scheduling.volcano.sh")
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["minMember"] = {"type": "string"}
    await cluster.client.update(crd)
    with pytest.raises(ApiError) as e:
        await cluster.client.create(podgroup("c", namespace="default", min_member=2))
    assert e.value.code == 422
    assert [c["field"] for c in e.value.status["details"]["causes"]] == ["spec.minMember"]


async def test_a_changed_crd_schema_gets_a_newly_compiled_schema(cluster: LocalCluster) -> None:
    """Each served CRD version checks with a CompiledSchema read from its schema once. After a CRD
    update, status writes and creates follow the new schema: a status value the old schema
    took (and whose compiled parts were walked) is refused under a new maximum, a new default is
    set, and a property the new schema drops is pruned."""
    crds = cluster.scheme.by_api_version_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    pgs = cluster.scheme.by_api_version_kind("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert crds is not None and pgs is not None
    c = cluster.client
    await c.create(podgroup("a", namespace="default", min_member=2))
    await c.patch(pgs, "a", {"status": {"running": 5, "phase": "Running"}}, "default")
    crd = await c.get(crds, "podgroups.scheduling.volcano.sh")
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    props["status"]["properties"]["running"]["maximum"] = 3
    props["spec"]["properties"]["minMember"]["default"] = 7
    del props["spec"]["properties"]["priorityClassName"]
    await c.update(crd)
    with pytest.raises(ApiError) as e:
        await c.patch(pgs, "a", {"status": {"running": 5, "phase": "Pending"}}, "default")
    assert e.value.code == 422
    assert [c["field"] for c in e.value.status["details"]["causes"]] == ["status.running"]
    b = podgroup("b", namespace="default", priority_class="high")
    del b["spec"]["minMember"]
    created = await c.create(b)
    assert created["spec"]["minMember"] == 7 and "priorityClassName" not in created["spec"]


def test_a_full_memo_forgets_its_oldest_key_first() -> None:
    """FixedPoints keeps at most ``limit`` keys and drops the oldest added first; adding a key it
    holds keeps that key's place (so it is still dropped by age)."""
    memo = fields.FixedPoints(limit=3)
    for k in (b"1", b"2", b"3"):
        memo.add(("t", k))
    memo.add(("t", b"1"))  # held: at the limit, the oldest (itself) goes and it comes back last
    assert [("t", k) in memo for k in (b"1", b"2", b"3")] == [True, True, True]
    memo.add(("t", b"4"))
    assert [("t", k) in memo for k in (b"1", b"2", b"3", b"4")] == [True, False, True, True]
    for i in range(5, 50):
        memo.add(("t", str(i).encode()))
    assert [k for k in (str(i).encode() for i in range(50)) if ("t", k) in memo] == [b"47", b"48", b"49"]
