"""The informer cache's indexes after any sequence of adds, updates and removes are the indexes
built afresh over what is cached (the cache keeps each object's index values from when it was
stored instead of calling the index function on the old object again)."""

from __future__ import annotations

import random
from typing import Any

from pumice.client.informer import NAMESPACE_INDEX, OWNER_UID_INDEX, Store, label_index, label_indexer


def _obj(rng: random.Random, name: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": rng.choice(["a", "b", ""])}
    if rng.random() < 0.7:
        md["labels"] = {"app": rng.choice(["x", "y", "z"])}
    if rng.random() < 0.6:
        md["ownerReferences"] = [{"uid": rng.choice(["u1", "u2"]), "controller": rng.random() < 0.8}]
    return {"metadata": md, "spec": {"nodeName": rng.choice(["n1", "n2", ""])}}


def _node(obj: Any) -> list[str]:
    n = (obj.get("spec") or {}).get("nodeName")
    return [n, "any"] if n else []


def test_indexes_match_a_fresh_build_after_random_changes() -> None:
    rng = random.Random(11)
    store = Store()
    store.add_indexer("node", _node)
    names = [f"p{i}" for i in range(12)]
    for step in range(3000):
        name = rng.choice(names)
        key = name
        if rng.random() < 0.25:
            store._remove(key)
        else:
            obj = _obj(rng, name)
            md = obj["metadata"]
            key = f"{md['namespace']}/{name}" if md["namespace"] else name
            store._put(key, obj)
        if step == 1500:  # an index added while objects are cached
            store.add_indexer(label_index("app"), label_indexer("app"))
        fresh = Store()
        fresh.add_indexer("node", _node)
        if step >= 1500:
            fresh.add_indexer(label_index("app"), label_indexer("app"))
        cached = store.keys()  # sorted keys (the store has no __iter__)
        for k in cached:
            held = store.get_by_key(k)
            assert held is not None
            fresh._put(k, held)
        for index in ("node", NAMESPACE_INDEX, OWNER_UID_INDEX) + ((label_index("app"),) if step >= 1500 else ()):
            assert store._indices[index] == fresh._indices[index], (step, index)
    assert store._indices["node"], "the sequence left objects on nodes"
