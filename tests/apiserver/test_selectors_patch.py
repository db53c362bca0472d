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


@pytest.mark.parametrize(("ops", "text"), [
    ([{"op": "add"}], "add operation failed to decode path: missing value"),
    ([{"op": "add", "path": 5, "value": 1}], "add operation failed to decode path: missing value"),
    ([{"op": "add", "path": "/x/y", "value": 1}], 'add operation does not apply: doc is missing path: "/x/y": missing value'),
    ([{"op": "add", "path": "/a/9", "value": 1}], "error in add for path: '/a/9': Unable to access invalid index: 9: "
                                                  "invalid index referenced"),
    ([{"op": "add", "path": "/a/x", "value": 1}], "error in add for path: '/a/x': value was not a proper array index: "
                                                  "'x': strconv.Atoi: parsing \"x\": invalid syntax"),
    ([{"op": "remove", "path": "/zz"}], "error in remove for path: '/zz': Unable to remove nonexistent key: zz: "
                                        "missing value"),
    ([{"op": "replace", "value": 1}], "replace operation failed to decode path: operation missing path field: "
                                      "missing value"),
    ([{"op": "replace", "path": "/a/5", "value": 1}], "replace operation does not apply: doc is missing key: /a/5: "
                                                      "missing value"),
    ([{"op": "move", "path": "/b"}], "move operation failed to decode from: operation, missing from field: missing value"),
    ([{"op": "move", "from": "/q", "path": "/b"}], "error in move for path: 'q': Unable to remove nonexistent key: q: "
                                                   "missing value"),
    ([{"op": "copy", "from": "/b/c"}], "copy operation failed to decode path: missing value"),
    ([{"op": "test", "path": "/b/c", "value": 1.0}], "testing value /b/c failed: test failed"),
    ([{"op": "test", "path": "/b/c", "value": True}], "testing value /b/c failed: test failed"),
    ([{"op": "nosuch", "path": "/a"}], "Unexpected kind: nosuch"),
    ([{"path": "/a"}], "Unexpected kind: unknown"),
])
def test_json_patch_errors_are_evanphx_v4s(ops: list, text: str) -> None:
    with pytest.raises(PatchError) as e:
        json_patch({"a": [1, 2], "b": {"c": 1}}, ops)
    assert str(e.value) == text and not e.value.bad_request


def test_json_patch_takes_what_evanphx_v4_takes() -> None:
    doc = {"a": [1, 2], "b": {"c": 1, "n": None}}
    assert json_patch(doc, [{"op": "add", "path": "/z"}])["z"] is None  # no value: null
    assert json_patch(doc, [{"op": "add", "path": "/a/-2", "value": 9}])["a"] == [1, 9, 2]
    assert json_patch(doc, [{"op": "remove", "path": "/a/-1"}])["a"] == [1]
    assert json_patch(doc, [{"op": "replace", "path": "/a/01", "value": 7}])["a"] == [1, 7]
    assert json_patch(doc, [{"op": "test", "path": "/b/n", "value": None},
                            {"op": "test", "path": "/b/missing", "value": None}]) == doc
    assert json_patch(doc, [{"op": "replace", "path": "", "value": 3}]) == doc
    assert json_patch(doc, None) == doc
    for bad, go_type in (({"op": "add"}, "jsonpatch.Patch"), ([1], "jsonpatch.Operation")):
        with pytest.raises(PatchError) as e:
            json_patch(doc, bad)
        assert e.value.bad_request and str(e.value).endswith(f"into Go value of type {go_type}")
