"""A watch from the resourceVersion of a list of a kind nothing has written yet is valid even
after other kinds were written (it used to answer 410 Expired: the kind's history was taken to
start at the revision its state was first looked at, not at the load revision)."""

from __future__ import annotations

from pumice.apiserver.storage import MemoryStorage
from pumice.apiserver.store import Store


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

