"""The write path's memos (status bodies, unknown fields of built-in kinds, pruning and defaulting
of custom resources, Pod spec validation, the admission chain's plugins per kind) change no
answer: the same seeded sequence of writes, with wrong types, unknown fields, missing defaults
and invalid values, and with stored objects changed behind the registry's back (a remembered
value that is no longer what is stored), gives the same Statuses, causes, warnings and stored
bytes on a registry with every memo and on one with none."""

from __future__ import annotations

import copy
import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import msgspec
import pytest

from pumice._util.clock import FakeClock
from pumice.api import schema as kschema
from pumice.api import validation
from pumice.api.admission import AdmissionRequest
from pumice.api.scheme import POD, ResourceKind
from pumice.apiserver.errors import StatusError
from pumice.apiserver.registry import Registry
from pumice.testing.cluster import LocalCluster, local_cluster
from pumice.testing.mutate import value_paths
from pumice.testing.volcano import pod, podgroup, queue

WRONG: list[Any] = ["x", 3, 2.5, True, None, [], {}, [1, "a"], {"k": None}]


class _NoMemo:
    """A memo that remembers nothing (the registry then checks everything in full)."""

    @staticmethod
    def usable(encoded: bytes) -> bool:
        return False

    def __contains__(self, key: Any) -> bool:
        return False

    def add(self, key: Any) -> None:
        pass

    def clear(self) -> None:
        pass


def _forget_everything(reg: Registry) -> None:
    """Make ``reg`` check everything in full, as before the memos: nothing remembered, the status
    body checked whole, nothing set aside from pruning."""
    for name in ("_zero_free_specs", "_typed_specs", "_typed_metas", "_clean_cr_parts", "_clean_status_rests"):
        assert hasattr(reg, name)
        setattr(reg, name, _NoMemo())
    reg._known_parts = None  # type: ignore[assignment]

    def check_status_body(rk: ResourceKind, namespace: str | None, body: Any, name: str, old: Any) -> tuple[Any, bool]:
        return reg._check_body(rk, namespace, reg._own(body, old), name), False

    reg._check_status_body = check_status_body  # type: ignore[method-assign]
    reg._unchanged_parts = lambda check, schema, body: ({}, [])  # type: ignore[method-assign]
    reg._status_only_version = lambda rk: None  # type: ignore[method-assign]

    def validate_cr_status_formats(rk: ResourceKind, obj: Any, *, typed: bool = False) -> None:
        Registry._validate_cr_status_formats(reg, rk, obj)  # always the whole schema check

    reg._validate_cr_status_formats = validate_cr_status_formats  # type: ignore[method-assign]


@pytest.fixture
async def pair() -> AsyncIterator[tuple[LocalCluster, LocalCluster]]:
    async with AsyncExitStack() as stack:
        fast = await stack.enter_async_context(local_cluster(clock=FakeClock()))
        full = await stack.enter_async_context(local_cluster(clock=FakeClock()))
        _forget_everything(full.server.registry)
        yield fast, full


def _mutant(base: Any, rng: random.Random) -> Any:
    """``base``, or a copy with one to three values replaced by a wrong one or an unknown field
    added."""
    out = copy.deepcopy(base)
    if rng.random() < 0.4:
        return out
    for _ in range(rng.choice([1, 1, 2, 3])):
        paths = [p for p in value_paths(out) if p]
        if not paths:
            break
        path = rng.choice(paths)
        parent = out
        for k in path[:-1]:
            parent = parent[k]
        if rng.random() < 0.2 and isinstance(parent, dict):
            parent["unknownField"] = "u"
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(WRONG))
    return out


async def _outcome(call: Any) -> tuple[Any, ...]:
    try:
        result = await call
    except StatusError as e:
        return ("error", e.code, e.reason, e.message, (e.details or {}).get("causes"))
    stored = result[0]
    return ("ok", stored.data, result[1:])


async def _both(pair: tuple[LocalCluster, LocalCluster], method: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    got = []
    for c in pair:
        got.append(await _outcome(getattr(c.server.registry, method)(*copy.deepcopy(args), **copy.deepcopy(kwargs))))
    assert got[0] == got[1], (method, args, kwargs)
    return got[0]


def _behind_the_back(pair: tuple[LocalCluster, LocalCluster], res: str, ns: str, name: str,
                     change: dict[str, Any]) -> None:
    """Store a changed copy of an object without any check (a remembered value goes stale)."""
    for c in pair:
        s = c.server.store.get(res, ns, name)
        assert s is not None
        obj = s.copy()
        obj.update(copy.deepcopy(change))
        c.server.store.put(res, obj)


async def test_pod_status_patches_answer_alike_with_and_without_the_memos(
        pair: tuple[LocalCluster, LocalCluster]) -> None:
    """Pod status patches (the node agent's): statuses with wrong types and unknown fields, drawn
    with repeats, on Pods whose stored spec or metadata is now and then replaced behind the
    registry's back by one with a wrong type; the fast path is taken (the remembered bodies
    are used) and every answer matches the full checks."""
    rng = random.Random(41)
    base_status = {"phase": "Running", "hostIP": "10.0.0.1", "startTime": "2024-01-01T00:00:00Z",
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
                   "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "busybox",
                                          "imageID": "", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]}
    statuses = [_mutant(base_status, rng) for _ in range(40)]
    for i in range(4):
        await _both(pair, "create", POD, "default", pod(f"p{i}", namespace="default", requests="1,1Gi"))
    fast_hits = 0
    original = Registry._check_status_body

    def counting(self: Registry, *a: Any) -> tuple[Any, bool]:
        nonlocal fast_hits
        out = original(self, *a)
        fast_hits += out[1] and self is pair[0].server.registry
        return out

    Registry._check_status_body = counting  # type: ignore[method-assign]
    try:
        for _ in range(400):
            name = f"p{rng.randrange(4)}"
            r = rng.random()
            if r < 0.05:
                bad = rng.choice([{"spec": {"containers": "x"}}, {"spec": {"containers": [{"name": 3, "image": "b"}]}},
                                  {"metadata": {"name": name, "namespace": "default", "labels": {"a": 1}}}])
                _behind_the_back(pair, "/pods", "default", name, bad)
            elif r < 0.1:
                good = pod(name, namespace="default", requests=rng.choice(["1,1Gi", "2,2Gi"]))
                _behind_the_back(pair, "/pods", "default", name, {"spec": good["spec"]})
            else:
                await _both(pair, "patch", POD, "default", name, "merge", {"status": rng.choice(statuses)},
                            sub="status")
    finally:
        Registry._check_status_body = original  # type: ignore[method-assign]
    assert fast_hits > 100


async def test_custom_resource_writes_answer_alike_with_and_without_the_memos(
        pair: tuple[LocalCluster, LocalCluster]) -> None:
    """Queue status patches and PodGroup patches of the main resource (the scheduler's), with
    wrong types, unknown fields (pruned, with a warning) and fields left out that have schema
    defaults, drawn with repeats, and a stored spec now and then replaced behind the registry's
    back: the same answers and stored bytes with and without the memos."""
    rng = random.Random(43)
    fast, _ = pair
    qk = fast.scheme.by_api_version_kind("scheduling.volcano.sh/v1beta1", "Queue")
    pgk = fast.scheme.by_api_version_kind("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert isinstance(qk, ResourceKind) and isinstance(pgk, ResourceKind)
    await _both(pair, "create", qk, None, queue("q", weight=2, capability="4,8Gi"))
    for i in range(3):
        await _both(pair, "create", pgk, "default", podgroup(f"g{i}", namespace="default", queue="q", min_member=2))
    q_statuses = [_mutant({"state": "Open", "allocated": {"cpu": "1", "memory": "1Gi"}, "running": 1}, rng)
                  for _ in range(30)]
    pg_base = podgroup("g", namespace="default", queue="q", min_member=2, min_resources="1,1Gi", phase="Running")
    pg_bodies = [_mutant({"spec": pg_base["spec"], "status": pg_base["status"]}, rng) for _ in range(40)]
    pg_bodies += [{"spec": {"minMember": 2, "queue": None}, "status": {"phase": "Pending"}}] * 3  # queue: its default
    warned = 0
    for _ in range(400):
        r = rng.random()
        if r < 0.05:
            _behind_the_back(pair, "scheduling.volcano.sh/podgroups", "default", f"g{rng.randrange(3)}",
                             {"spec": rng.choice([{"minMember": "two"}, {"minMember": 2, "queue": "q"}])})
        elif r < 0.45:
            await _both(pair, "patch", qk, None, "q", "merge", {"status": rng.choice(q_statuses)}, sub="status")
        else:
            got = await _both(pair, "patch", pgk, "default", f"g{rng.randrange(3)}", "merge",
                              rng.choice(pg_bodies))
            warned += got[0] == "ok" and bool(got[2][1])
    assert warned > 10


async def test_podgroup_status_only_patches_answer_alike_with_and_without_the_memos(
        pair: tuple[LocalCluster, LocalCluster]) -> None:
    """PodGroup status merge patches of the main resource (the scheduler's; PodGroup has no
    status subresource), with managedFields tracking off as in ``pumice simulate``: statuses with
    wrong types, unknown fields (pruned, with a warning), invalid values and null, drawn with
    repeats; now and then another write (spec, labels) or a stored object replaced behind the
    registry's back with a wrong type. The status-only checks are taken (a PodGroup whose rest
    was proven clean) and every answer, warning and stored byte matches the full checks."""
    rng = random.Random(53)
    fast, _ = pair
    for c in pair:
        c.server.registry.track_update_managers = False
    pgk = fast.scheme.by_api_version_kind("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert isinstance(pgk, ResourceKind)
    for i in range(3):
        await _both(pair, "create", pgk, "default", podgroup(f"g{i}", namespace="default", queue="q", min_member=2))
    base = podgroup("g", namespace="default", queue="q", min_member=2, phase="Running")["status"]
    base = {**base, "conditions": [{"type": "Scheduled", "status": "True", "transitionID": "t",
                                    "lastTransitionTime": "2024-01-01T00:00:00Z"}], "running": 2}
    statuses: list[Any] = [_mutant(base, rng) for _ in range(40)] + [None, "x", {"phase": "Pending"},
                                                                     {"running": -1}, {"succeeded": 2**40}]
    taken = 0
    original = Registry._clean_rest

    def counting(self: Registry, *a: Any) -> bool:
        nonlocal taken
        out = original(self, *a)
        taken += out
        return out

    Registry._clean_rest = counting  # type: ignore[method-assign]
    try:
        for _ in range(400):
            name = f"g{rng.randrange(3)}"
            r = rng.random()
            if r < 0.03:
                _behind_the_back(pair, "scheduling.volcano.sh/podgroups", "default", name,
                                 {"spec": {"minMember": "two"}})
            elif r < 0.06:
                _behind_the_back(pair, "scheduling.volcano.sh/podgroups", "default", name,
                                 {"spec": {"minMember": 2, "queue": "q"}})
            elif r < 0.1:
                await _both(pair, "patch", pgk, "default", name, "merge",
                            rng.choice([{"metadata": {"labels": {"k": rng.choice(["a", "-bad"])}}},
                                        {"spec": {"minMember": rng.choice([1, 3, "x"])}}]))
            else:
                await _both(pair, "patch", pgk, "default", name, "merge", {"status": rng.choice(statuses)},
                            field_validation=rng.choice(["", "", "Ignore", "Strict"]))
    finally:
        Registry._clean_rest = original  # type: ignore[method-assign]
    assert taken > 40


async def test_vcjob_status_puts_answer_alike_with_and_without_the_memos(
        pair: tuple[LocalCluster, LocalCluster]) -> None:
    """vcjob status PUTs (the job controller's), with the last object written sent again with a
    new status: statuses with wrong types and unknown fields, metadata now and then with a wrong
    type, another label or a stale resourceVersion, drawn with repeats. The same answers and
    stored bytes with and without the memos, and every stored object is the stored one with
    its status replaced."""
    rng = random.Random(59)
    fast, _ = pair
    for c in pair:
        c.server.registry.track_update_managers = False  # as in pumice simulate: the stored metadata stays as sent
    jk = fast.scheme.by_api_version_kind("batch.volcano.sh/v1alpha1", "Job")
    assert isinstance(jk, ResourceKind)
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "default", "labels": {"a": "b"}},
           "spec": {"minAvailable": 1, "queue": "default", "tasks": [{"name": "w", "replicas": 1, "template": {
               "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}]}}
    await _both(pair, "create", jk, "default", job)
    base = {"state": {"phase": "Running", "lastTransitionTime": "2024-01-01T00:00:00Z"}, "minAvailable": 1,
            "running": 1, "taskStatusCount": {"w": {"phase": {"Running": 1}}}, "version": 1}
    statuses = [_mutant(base, rng) for _ in range(30)]
    metas: list[Any] = [{}, {}, {}, {"labels": {"a": 1}}, {"labels": {"a": "c"}}, {"resourceVersion": "1"},
                        {"resourceVersion": 7}, {"annotations": {"x": "y"}}]
    replaced = 0
    for _ in range(200):
        s = fast.server.store.get("batch.volcano.sh/jobs", "default", "j")
        assert s is not None
        body = s.copy()
        body["metadata"].update(copy.deepcopy(rng.choice(metas)))
        body["status"] = copy.deepcopy(rng.choice(statuses))
        got = await _both(pair, "update", jk, "default", "j", body, sub="status")
        after = fast.server.store.get("batch.volcano.sh/jobs", "default", "j")
        assert after is not None
        if got[0] == "ok" and after.rv != s.rv:
            want = s.copy()
            want["status"] = after.obj["status"]
            want["metadata"]["resourceVersion"] = str(after.rv)
            assert after.data == msgspec.json.encode(want)
            replaced += 1
    assert replaced > 30


async def test_vcjob_status_time_checks_answer_alike_on_the_short_walk(
        pair: tuple[LocalCluster, LocalCluster], monkeypatch: pytest.MonkeyPatch) -> None:
    """vcjob status PUTs whose statuses carry good and bad transition times (in the state and in
    each condition), nulls, wrong types, unknown fields and map keys that read like a date-time
    cause: the date-time check that walks only the times (taken when the status type check
    passed) gives the same Statuses, causes and stored bytes as the whole schema check."""
    rng = random.Random(61)
    fast, _ = pair
    for c in pair:
        c.server.registry.track_update_managers = False
    walks: list[bool] = []
    original = kschema.CompiledSchema.date_time_causes

    def counting(self: kschema.CompiledSchema, obj: Any) -> Any:
        out = original(self, obj)
        walks.append(out is not None)
        return out

    monkeypatch.setattr(kschema.CompiledSchema, "date_time_causes", counting)
    jk = fast.scheme.by_api_version_kind("batch.volcano.sh/v1alpha1", "Job")
    assert isinstance(jk, ResourceKind)
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "default"},
           "spec": {"minAvailable": 1, "queue": "default", "tasks": [{"name": "w", "replicas": 1, "template": {
               "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}]}}
    await _both(pair, "create", jk, "default", job)
    times: list[Any] = ["2024-01-01T00:00:00Z", "2024-02-30T00:00:00Z", "2024-01-01 00:00:00", "yesterday",
                        "2024-01-01t23:59:59.5+01:00", "in body must be of type date", "", None, 5, {"a": 1}]
    keys = ["w", "in body must be of type date", "x.y"]
    for i in range(160):
        s = fast.server.store.get("batch.volcano.sh/jobs", "default", "j")
        assert s is not None
        body = s.copy()
        status: dict[str, Any] = {
            "state": {"phase": "Running", "lastTransitionTime": rng.choice(times)}, "version": i,
            "conditions": [{"status": "Running", "lastTransitionTime": rng.choice(times)}
                           for _ in range(rng.randrange(3))],
            "taskStatusCount": {rng.choice(keys): {"phase": {"Running": rng.choice([1, 1, 1, None, "one"])}}}}
        if rng.random() < 0.2:
            status = _mutant(status, rng)
        body["status"] = status
        await _both(pair, "update", jk, "default", "j", body, sub="status")
    assert walks.count(True) > 40


async def test_date_time_causes_are_validates_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """:meth:`CompiledSchema.date_time_causes` of values free of type errors equals the date-time
    causes :meth:`CompiledSchema.validate` finds, in order, under schemas with date-time formats
    in properties, additional properties and items, required and nullable values; it declines
    (None) under allOf / anyOf / oneOf and where a value has the wrong type."""
    dt = {"type": "string", "format": "date-time"}
    schema = {"type": "object", "properties": {
        "status": {"type": "object", "required": ["at"], "properties": {
            "at": dt, "n": {"type": "integer"}, "plain": {"type": "string"},
            "maybe": {**dt, "nullable": True},
            "list": {"type": "array", "items": {"type": "object", "properties": {"t": dt, "u": {"type": "string",
                                                                                             "format": "datetime"}}}},
            "map": {"type": "object", "additionalProperties": dt},
            "deep": {"type": "object", "properties": {"x": {"type": "object", "properties": {"t": dt}}}}}},
        "other": {"type": "object", "properties": {"choice": {"anyOf": [dt, {"type": "integer"}]}}}}}
    compiled = kschema.CompiledSchema(schema)
    rng = random.Random(7)
    times = ["2024-01-01T00:00:00Z", "2024-13-01T00:00:00Z", "nope", "", "in body must be of type date",
             "2024-01-01T24:00:00Z"]
    checked = 0
    for _ in range(400):
        status: dict[str, Any] = {}
        for key in ("at", "n", "plain", "maybe"):
            if rng.random() < 0.8:
                status[key] = {"n": 1, "plain": "p", "maybe": rng.choice([*times, None])}.get(key, rng.choice(times))
        if rng.random() < 0.7:
            status["list"] = [{"t": rng.choice(times), "u": rng.choice(times)} for _ in range(rng.randrange(3))]
        if rng.random() < 0.7:
            status["map"] = {rng.choice(["a", "in body must be of type date", "b.c"]): rng.choice(times)
                             for _ in range(rng.randrange(3))}
        if rng.random() < 0.5:
            status["deep"] = {"x": {"t": rng.choice(times)}}
        if rng.random() < 0.1:
            status["at"] = None  # required: reported as such, not walked
        obj = {"status": status}
        if compiled.has_type_errors(obj):
            continue
        want = [c for c in compiled.validate(obj)
                if c.reason == "FieldValueTypeInvalid" and kschema.DATE_TIME_TYPE in c.message]
        assert compiled.date_time_causes(obj) == want, obj
        checked += 1
    assert checked > 300
    assert compiled.date_time_causes({"other": {"choice": "2024-01-01T00:00:00Z"}}) is None
    assert compiled.date_time_causes({"status": {"list": {"t": 1}}}) is None
    assert compiled.date_time_causes({"status": {"deep": {"x": {"t": 5}}}}) is None
    # only the times' paths are walked: a type error elsewhere is the caller's type check's to find
    assert compiled.date_time_causes({"status": {"n": "x", "at": "x"}}) == [
        c for c in compiled.validate({"status": {"at": "x"}}) if c.reason == "FieldValueTypeInvalid"]


async def test_pod_creates_and_metadata_patches_answer_alike_with_and_without_the_memos(
        pair: tuple[LocalCluster, LocalCluster], monkeypatch: pytest.MonkeyPatch) -> None:
    """Pod creates and metadata/spec patches of the main resource, with specs that carry unknown
    fields and invalid values, drawn with repeats (validate_pod_spec's memo is swapped for
    one that remembers nothing during the second registry's turn)."""
    rng = random.Random(47)
    specs = [_mutant(pod("x", namespace="default", requests="1,1Gi")["spec"], rng) for _ in range(30)]
    memos = (validation._VALID, _NoMemo())
    names: list[str] = []

    async def both(method: str, *args: Any) -> tuple[Any, ...]:
        got = []
        for c, memo in zip(pair, memos, strict=True):
            monkeypatch.setattr(validation, "_VALID", memo)
            got.append(await _outcome(getattr(c.server.registry, method)(*copy.deepcopy(args))))
        assert got[0] == got[1], args
        return got[0]

    for i in range(300):
        if rng.random() < 0.5 or not names:
            body = pod(f"p{i}", namespace="default")
            body["spec"] = rng.choice(specs)
            if (await both("create", POD, "default", body))[0] == "ok":
                names.append(f"p{i}")
        else:
            patch: dict[str, Any] = {"metadata": {"labels": {"k": rng.choice(["a", "b", "-bad"])}}}
            if rng.random() < 0.3:
                patch["spec"] = {"activeDeadlineSeconds": rng.choice([5, -1, "x"])}
            await both("patch", POD, "default", rng.choice(names), "merge", patch)
    assert len(names) > 50


async def test_a_plugin_added_later_is_asked_and_a_removed_one_is_not(pair: tuple[LocalCluster, LocalCluster]) -> None:
    """The chain remembers which plugins handle a kind until a plugin is added or removed."""
    fast, _ = pair
    seen: list[str] = []

    class Recorder:
        name = "Recorder"

        def handles(self, req: AdmissionRequest) -> bool:
            return req.kind.plural == "pods"

        async def validate(self, req: AdmissionRequest, reader: Any) -> None:
            seen.append(req.name)

    reg = fast.server.registry
    await reg.create(POD, "default", pod("a", namespace="default"))
    fast.add_admission_plugin(Recorder())
    await reg.create(POD, "default", pod("b", namespace="default"))
    fast.server.admission.remove("Recorder")
    await reg.create(POD, "default", pod("c", namespace="default"))
    assert seen == ["b"]


def test_remembered_label_key_verdicts_are_each_keys_own() -> None:
    """Label and annotation keys' verdicts are remembered per key string: a bad key after good
    ones (and a good one after a bad one) gets its own causes, as the uncached rule gives."""
    for _ in range(2):
        assert validation.validate_labels({"app": "a", "example.com/role": "b"}, "metadata.labels") == []
        bad = validation.validate_labels({"app": "a", "-app": "b", "example.com/-role": "c"}, "metadata.labels")
        assert [(c.field, c.message) for c in bad] == [
            ("metadata.labels", f'Invalid value: "-app": {e}') for e in validation.is_qualified_name("-app")] + [
            ("metadata.labels", f'Invalid value: "example.com/-role": {e}')
            for e in validation.is_qualified_name("example.com/-role")]
        assert validation.validate_annotations({"Example.com/Key": "v"}, "metadata.annotations") == []
        assert [c.field for c in validation.validate_annotations({"a b": "v"}, "metadata.annotations")] == [
            "metadata.annotations"]


def test_uids_are_the_uuid_modules_version_4_text() -> None:
    """Registry._uid sets the variant and version bits as uuid.UUID(int=..., version=4) does and
    writes the same text, for the same draws of the seeded generator."""
    import uuid

    class _Reg:
        _rng = random.Random(5)

    rng = random.Random(5)
    draws = [0, (1 << 128) - 1, 0x0123456789ABCDEF0123456789ABCDEF]
    for n in draws:
        _Reg._rng = random.Random(0)
        _Reg._rng.getrandbits = lambda k, n=n: n  # type: ignore[method-assign,misc]
        assert Registry._uid(_Reg()) == str(uuid.UUID(int=n, version=4))  # type: ignore[arg-type]
    _Reg._rng = random.Random(5)
    for _ in range(2000):
        assert Registry._uid(_Reg()) == str(uuid.UUID(int=rng.getrandbits(128), version=4))  # type: ignore[arg-type]
