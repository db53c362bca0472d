"""Pure helpers: selector parsing and JSON patches."""

from __future__ import annotations

import pytest

from pumice.api.patch import PatchError, json_patch, merge_patch
from pumice.api.selectors import (
    SelectorError,
    from_label_selector,
    parse_field_selector,
    parse_label_selector,
)


def test_label_selector_round_trip() -> None:
    sel = parse_label_selector("a=1, b!=2,c in (x, y),d notin (z),e,!f")
    assert str(sel) == "a=1,b!=2,c in (x,y),d notin (z),e,!f"
    assert sel.matches({"a": "1", "c": "x", "e": ""})
    assert not sel.matches({"a": "1", "c": "x", "e": "", "f": "1"})


@pytest.mark.parametrize("bad", ["a in (x", "=x", "a,,b", "a in x"])
def test_bad_label_selectors_raise(bad: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(bad)


def test_match_expressions() -> None:
    sel = from_label_selector({"matchLabels": {"a": "1"},
                               "matchExpressions": [{"key": "b", "operator": "In", "values": ["x"]}]})
    assert sel.matches({"a": "1", "b": "x"}) and not sel.matches({"a": "1"})


def test_field_selector_with_escapes() -> None:
    fs = parse_field_selector(r"metadata.name=a\,b,spec.nodeName!=n1")
    assert fs.matches({"metadata": {"name": "a,b"}, "spec": {"nodeName": "n2"}})
    assert fs.exact("metadata.name") == "a,b"


def test_merge_patch_deletes_with_null() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None}, "d": [1]}) == {"a": {"c": 2}, "d": [1]}


def test_json_patch_operations() -> None:
    doc = {"a": [1, 2], "b": {"c": 1}}
    out = json_patch(doc, [{"op": "add", "path": "/a/-", "value": 3}, {"op": "move", "from": "/b/c", "path": "/d"},
                           {"op": "replace", "path": "/a/0", "value": 0}, {"op": "copy", "from": "/d", "path": "/e"}])
    assert out == {"a": [0, 2, 3], "b": {}, "d": 1, "e": 1}
    assert doc == {"a": [1, 2], "b": {"c": 1}}
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "remove", "path": "/zz"}])


def test_json_patch_replace_sets_a_missing_object_member_as_kube_apiserver_does() -> None:
    # kube-apiserver applies JSON patches with evanphx/json-patch v4, whose replace does not check
    # that an object member exists; Ray's autoscaler replaces a scaleStrategy the group lacks.
    spec = {"spec": {"workerGroupSpecs": [{"groupName": "g", "replicas": 1}]}}
    out = json_patch(spec, [{"op": "replace", "path": "/spec/workerGroupSpecs/0/scaleStrategy",
                             "value": {"workersToDelete": ["w-1"]}},
                            {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 0}])
    assert out["spec"]["workerGroupSpecs"][0] == {"groupName": "g", "replicas": 0,
                                                  "scaleStrategy": {"workersToDelete": ["w-1"]}}
    with pytest.raises(PatchError):
        json_patch(spec, [{"op": "replace", "path": "/spec/missing/x", "value": 1}])
    with pytest.raises(PatchError):
        json_patch(spec, [{"op": "replace", "path": "/spec/workerGroupSpecs/1", "value": {}}])
