"""A watch from the resourceVersion of a list of a kind nothing has written yet is valid even
after other kinds were written (it used to answer 410 Expired: the kind's history was taken to
start at the revision its state was first looked at, not at the load revision)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pumice.api.selectors import field_value, field_value_at
from pumice.apiserver.storage import MemoryStorage
from pumice.apiserver.store import _PARTS, Store


def cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_watch_from_an_older_revision_of_an_untouched_kind_replays_nothing_and_does_not_expire() -> None:
    store = Store(MemoryStorage())
    store.put("/configmaps", cm("a"))
    listed_at = store.revision  # an empty list of Pods carries this revision
    store.put("/configmaps", cm("b"))
    store.put("/configmaps", cm("c"))
    w = store.watch("/pods", "default", resource_version=listed_at)
    assert w.queue.empty()
    store.put("/pods", {**cm("p"), "kind": "Pod"})
    kind, stored = w.queue.get_nowait()  # type: ignore[misc]
    assert (kind, stored.obj["metadata"]["name"]) == ("ADDED", "p")



def _reference_field_value(obj: Any, path: str) -> str:
    # field_value as it was before field_value_at (the Mapping check on every level)
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def test_the_indexed_field_reader_is_field_value() -> None:
    # the store reads its indexed fields with field_value_at over paths split once: the same
    # strings as field_value, for every shape a stored object's field can have
    values: list[object] = ["node-1", "", None, True, False, 0, 7, 1.5, [], ["a"], {}, {"x": 1}, "true"]
    objs: list[object] = [{}, {"spec": None}, {"spec": "text"}, {"spec": []}, {"metadata": {}}, [], "x"]
    for v in values:
        objs += [{"spec": {"nodeName": v}}, {"metadata": {"name": v}},
                 {"spec": OrderedDict(nodeName=v)}, {"spec": MappingProxyType({"nodeName": v})},
                 OrderedDict(spec={"nodeName": v})]
    for obj in objs:
        for path, parts in _PARTS.items():
            want = _reference_field_value(obj, path)
            assert field_value_at(obj, parts) == want, (obj, path)  # type: ignore[arg-type]
            assert field_value(obj, path) == want, (obj, path)  # type: ignore[arg-type]
    assert set(_PARTS) == {"spec.nodeName", "metadata.name"}
