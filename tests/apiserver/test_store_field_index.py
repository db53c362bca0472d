"""An index the store makes on first use (``Store.index_field``; the vcjob admission finds a
Queue's children by ``spec.parent`` with it): built from the objects already stored, then kept by
every write and delete, so :meth:`Store.list_by_field` answers as a scan of every object would."""

from __future__ import annotations

from pumice.api.selectors import field_value
from pumice.apiserver.storage import MemoryStorage
from pumice.apiserver.store import Store

QUEUES = "scheduling.volcano.sh/queues"


def queue(name: str, parent: str | None = None) -> dict:
    spec = {"weight": 1, **({"parent": parent} if parent is not None else {})}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def names(store: Store, parent: str) -> list[str]:
    return [s.obj["metadata"]["name"] for s in store.list_by_field(QUEUES, "spec.parent", parent)]


def scanned(store: Store, parent: str) -> list[str]:
    return [s.obj["metadata"]["name"] for s in store.list(QUEUES) if field_value(s.obj, "spec.parent") == parent]


def test_an_index_made_on_first_use_follows_every_write_and_delete() -> None:
    store = Store(MemoryStorage())
    for q in (queue("root"), queue("b", "root"), queue("a", "root"), queue("c", "a")):
        store.put(QUEUES, q)
    store.index_field(QUEUES, "spec.parent")
    store.index_field(QUEUES, "spec.parent")  # a second call keeps the index as it is
    assert names(store, "root") == ["a", "b"] == scanned(store, "root")
    assert names(store, "a") == ["c"]
    store.put(QUEUES, queue("c", "b"))  # re-parented
    store.put(QUEUES, queue("d", "b"))
    assert names(store, "a") == [] == scanned(store, "a")
    assert names(store, "b") == ["c", "d"] == scanned(store, "b")
    store.delete(QUEUES, "", "d")
    store.put(QUEUES, queue("c"))  # no parent any more
    assert names(store, "b") == [] == scanned(store, "b")
    assert names(store, "") == ["c", "root"] == scanned(store, "")
    assert names(store, "nope") == []


def test_an_index_of_a_resource_nothing_stored_yet_fills_from_its_first_write() -> None:
    store = Store(MemoryStorage())
    store.index_field(QUEUES, "spec.parent")
    store.put(QUEUES, queue("a", "root"))
    assert names(store, "root") == ["a"]
