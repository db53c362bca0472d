"""Field ownership of non-apply writes (operation: Update) and its meeting with server-side
apply, ported in spirit from k8s.io/apimachinery pkg/util/managedfields/internal tests
(managedfieldsupdater_test, capmanagers_test, skipnonapplied_test) and kube-apiserver's
behaviour seen through kubectl."""

from __future__ import annotations

import copy
import json

import pytest

from pumice.api.apply import (
    ApplyConflict,
    field_manager_errors,
    manager_or_user_agent,
    parse_fields_v1,
    server_side_apply,
    update_managed_fields,
)

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"


def cm(**data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default", "uid": "u"},
            "data": dict(data)}


def created(obj: dict, manager: str = "kubectl-create", time: str = T0) -> dict:
    obj = copy.deepcopy(obj)
    update_managed_fields(None, obj, manager=manager, api_version="v1", kind="ConfigMap", builtin=True, time=time)
    return obj


def updated(old: dict, change, manager: str, time: str = T1, **kw) -> dict:
    new = copy.deepcopy(old)
    change(new)
    update_managed_fields(old, new, manager=manager, api_version="v1", kind=new["kind"], builtin=True, time=time,
                          **kw)
    return new


def owners(obj: dict) -> dict[str, set]:
    return {e["manager"]: parse_fields_v1(e["fieldsV1"]) for e in obj["metadata"].get("managedFields", [])}


A = (("f", "data"), ("f", "a"))
B = (("f", "data"), ("f", "b"))


def test_a_create_records_an_update_entry_with_the_fields_it_set() -> None:
    obj = created(cm(a="1"))
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T0,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}]


def test_identity_metadata_is_owned_by_nobody_and_labels_are() -> None:
    obj = cm(a="1")
    obj["metadata"]["labels"] = {"app": "x"}
    fv1 = created(obj)["metadata"]["managedFields"][0]["fieldsV1"]
    assert fv1["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}


def test_an_update_moves_the_fields_it_changes_to_its_manager() -> None:
    obj = created(cm(a="1", b="1"))
    new = updated(obj, lambda o: o["data"].update(a="2"), "kubectl-edit")
    got = owners(new)
    assert A in got["kubectl-edit"] and A not in got["kubectl-create"] and B in got["kubectl-create"]
    edit = next(e for e in new["metadata"]["managedFields"] if e["manager"] == "kubectl-edit")
    assert edit["time"] == T1 and edit["operation"] == "Update" and edit["apiVersion"] == "v1"


def test_a_manager_whose_fields_are_all_taken_is_dropped() -> None:
    obj = created(cm(a="1"), manager="m1")
    obj = updated(obj, lambda o: o.pop("data"), "m2")
    assert "managedFields" not in obj["metadata"] or all(e["manager"] != "m1"
                                                         for e in obj["metadata"]["managedFields"])


def test_removed_fields_leave_their_owner() -> None:
    obj = created(cm(a="1", b="2"))
    new = updated(obj, lambda o: o["data"].pop("b"), "kubectl-edit")
    assert B not in owners(new)["kubectl-create"]
    assert "kubectl-edit" not in owners(new)  # it only removed: it owns nothing


def test_a_write_that_changes_nothing_keeps_managed_fields_as_they_were() -> None:
    obj = created(cm(a="1"))
    new = updated(obj, lambda o: None, "someone", time=T2)
    assert new["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_the_same_manager_again_unions_its_fields_and_takes_the_new_time() -> None:
    obj = created(cm(a="1"), manager="m")
    new = updated(obj, lambda o: o["data"].update(b="1"), "m", time=T2)
    [entry] = new["metadata"]["managedFields"]
    assert parse_fields_v1(entry["fieldsV1"]) >= {A, B} and entry["time"] == T2


def test_a_status_write_is_recorded_with_its_subresource_and_a_main_write_owns_no_status() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}}
    update_managed_fields(None, pod, manager="kubectl-run", api_version="v1", kind="Pod", builtin=True, time=T0,
                          ignore=frozenset({"status"}))
    assert "f:status" not in pod["metadata"]["managedFields"][0]["fieldsV1"]
    new = updated(pod, lambda o: o["status"].update(phase="Running"), "kubelet", subresource="status")
    kubelet = next(e for e in new["metadata"]["managedFields"] if e["manager"] == "kubelet")
    assert kubelet["subresource"] == "status"
    assert kubelet["fieldsV1"] == {"f:status": {"f:phase": {}}}
    assert list(kubelet) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"]


def test_keyed_list_items_and_set_values_use_upstream_notation() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["x/y"]},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    update_managed_fields(None, pod, manager="m", api_version="v1", kind="Pod", builtin=True, time=T0)
    fv1 = pod["metadata"]["managedFields"][0]["fieldsV1"]
    assert fv1["f:metadata"] == {"f:finalizers": {".": {}, 'v:"x/y"': {}}}
    # a PodSpec's containers has no omitempty: Go serializes it (null) in the empty Pod, so the list
    # itself is not added, only its item (kube-apiserver v1.34.4, kubectl create)
    assert fv1["f:spec"] == {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}}


def test_a_built_in_objects_always_serialized_fields_are_never_added_themselves() -> None:
    # kube-apiserver v1.34.4 on kubectl create of a Deployment: no ".": {} on spec.template, its
    # metadata and spec, spec.strategy (non-pointer structs) nor containers (no omitempty); a
    # pointer struct (rollingUpdate) and maps (labels) are added; a PUT that brings a container's
    # resources where the container was has them as its non-pointer struct: no ".": {} either
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "d"}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                  "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c"}]}}}}
    update_managed_fields(None, d, manager="kubectl-create", api_version="apps/v1", kind="Deployment", builtin=True,
                          time=T0)
    assert d["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:replicas": {}, "f:selector": {},
                   "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}},
                   "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                  "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:name": {}}}}}}}
    new = copy.deepcopy(d)
    new["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    update_managed_fields(d, new, manager="kubectl-edit", api_version="apps/v1", kind="Deployment", builtin=True,
                          time=T1)
    edit = next(e for e in new["metadata"]["managedFields"] if e["manager"] == "kubectl-edit")
    assert edit["fieldsV1"] == {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"c"}': {
        "f:resources": {"f:limits": {".": {}, "f:cpu": {}}}}}}}}}


def test_an_object_whose_managed_fields_were_reset_stays_untracked() -> None:
    obj = created(cm(a="1"))

    def reset(o: dict) -> None:
        o["metadata"]["managedFields"] = [{}]
        o["data"]["a"] = "2"

    new = updated(obj, reset, "kubectl-edit")
    assert "managedFields" not in new["metadata"]
    again = updated(new, lambda o: o["data"].update(b="3"), "other")
    assert "managedFields" not in again["metadata"]


def test_managed_fields_sent_with_a_status_write_are_ignored() -> None:
    obj = created(cm(a="1"))

    def forge(o: dict) -> None:
        o["metadata"]["managedFields"] = [{"manager": "forged", "operation": "Update", "apiVersion": "v1",
                                           "fieldsType": "FieldsV1", "fieldsV1": {}}]
        o["data"]["a"] = "2"

    new = updated(obj, forge, "writer", subresource="status")
    assert "forged" not in owners(new)


def test_more_than_ten_update_managers_merge_the_oldest_into_ancient_changes() -> None:
    obj = created(cm(k0="0"), manager="m00", time="2026-01-01T00:00:00Z")
    for i in range(1, 12):
        obj = updated(obj, lambda o, i=i: o["data"].update({f"k{i}": str(i)}), f"m{i:02d}",
                      time=f"2026-01-01T00:00:{i:02d}Z")
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(managers) == 10 and "ancient-changes" in managers
    assert "m00" not in managers and "m01" not in managers and "m02" not in managers
    bucket = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "ancient-changes")
    assert {(("f", "data"), ("f", f"k{i}")) for i in range(3)} <= parse_fields_v1(bucket["fieldsV1"])
    assert bucket["time"] == "2026-01-01T00:00:02Z"


def test_entries_are_ordered_apply_first_then_by_time() -> None:
    obj = created(cm(a="1"), manager="zz", time=T1)
    obj = server_side_apply(obj, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                  "data": {"x": "1"}}, manager="kubectl", kind="ConfigMap", force=False, time=T2)
    obj = updated(obj, lambda o: o["data"].update(b="1"), "aa", time=T2)
    assert [(e["operation"], e["manager"]) for e in obj["metadata"]["managedFields"]] == \
        [("Apply", "kubectl"), ("Update", "zz"), ("Update", "aa")]


# ---- server-side apply against Update managers -----------------------------------------------


def applied(**data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": dict(data)}


def test_apply_conflicts_with_the_fields_a_create_set() -> None:
    obj = created(cm(a="1"))
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(obj, applied(a="2"), manager="kubectl", kind="ConfigMap", force=False, time=T1)
    assert str(err.value) == 'Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.a'
    assert err.value.conflicts == [('"kubectl-create" using v1', ".data.a")]


def test_apply_names_a_subresource_manager_as_upstream_prints_it() -> None:
    obj = created(cm(a="1"))
    obj = updated(obj, lambda o: o["data"].update(a="5"), "kubectl", subresource="scale", time=None)
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(obj, applied(a="2"), manager="kubectl", kind="ConfigMap", force=False, time=T2)
    assert str(err.value) == ('Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
                              'using v1: .data.a')


def test_several_conflicts_are_grouped_by_manager() -> None:
    obj = created(cm(a="1", b="1"), manager="one")
    obj = updated(obj, lambda o: o["data"].update(c="1"), "two")
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(obj, applied(a="2", b="2", c="2"), manager="kubectl", kind="ConfigMap", force=False)
    assert str(err.value) == ('Apply failed with 3 conflicts: conflicts with "one" using v1:\n- .data.a\n- .data.b\n'
                              'conflicts with "two" using v1:\n- .data.c')


def test_force_takes_the_fields_from_the_update_manager() -> None:
    obj = created(cm(a="1", b="1"))
    out = server_side_apply(obj, applied(a="2"), manager="kubectl", kind="ConfigMap", force=True, time=T1)
    assert out["data"] == {"a": "2", "b": "1"}
    got = owners(out)
    assert A in got["kubectl"] and A not in got["kubectl-create"] and B in got["kubectl-create"]
    apply = next(e for e in out["metadata"]["managedFields"] if e["operation"] == "Apply")
    assert apply["time"] == T1


def test_applying_the_same_value_shares_the_field() -> None:
    obj = created(cm(a="1"))
    out = server_side_apply(obj, applied(a="1"), manager="kubectl", kind="ConfigMap", force=False, time=T1)
    got = owners(out)
    assert A in got["kubectl"] and A in got["kubectl-create"]


def test_an_update_takes_a_field_from_an_apply_manager() -> None:
    obj = server_side_apply(None, applied(a="1"), manager="kubectl", kind="ConfigMap", force=False, time=T0)
    obj["metadata"]["uid"] = "u"
    new = updated(obj, lambda o: o["data"].update(a="3"), "kubectl-edit")
    assert "kubectl" not in owners(new) and A in owners(new)["kubectl-edit"]


def test_an_apply_manager_whose_set_becomes_empty_is_dropped() -> None:
    obj = server_side_apply(None, applied(a="1"), manager="m1", kind="ConfigMap", force=False, time=T0)
    obj = server_side_apply(obj, applied(b="1"), manager="m2", kind="ConfigMap", force=False, time=T1)
    out = server_side_apply(obj, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                            manager="m2", kind="ConfigMap", force=False, time=T2)
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == ["m1"]
    assert out["data"] == {"a": "1"}


def test_fields_owned_by_an_update_manager_survive_the_appliers_prune() -> None:
    obj = server_side_apply(None, applied(a="1", b="1"), manager="kubectl", kind="ConfigMap", force=False, time=T0)
    obj["metadata"]["uid"] = "u"
    obj = updated(obj, lambda o: o["data"].update(b="2"), "kubectl-edit")
    out = server_side_apply(obj, applied(a="1"), manager="kubectl", kind="ConfigMap", force=False, time=T2)
    assert out["data"] == {"a": "1", "b": "2"}


def test_apply_onto_an_untracked_object_conflicts_with_before_first_apply() -> None:
    obj = cm(a="1")
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(obj, applied(a="2"), manager="kubectl", kind="ConfigMap", force=False, time=T1)
    assert str(err.value) == 'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a'


# ---- field manager names ---------------------------------------------------------------------


def test_the_manager_defaults_to_the_user_agent_prefix() -> None:
    assert manager_or_user_agent("", "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146") == "kubectl"
    assert manager_or_user_agent("mine", "kubectl/v1.32.3") == "mine"
    assert manager_or_user_agent("", "a\x01b/1") == "ab"
    assert manager_or_user_agent("", "x" * 200) == "x" * 128
    assert manager_or_user_agent("", "") == ""


def test_field_manager_validation_uses_upstream_words() -> None:
    assert field_manager_errors("kubectl-create") == []
    assert field_manager_errors("m" * 129) == [("FieldValueTooLong", "Too long: may not be more than 128 bytes")]
    assert field_manager_errors("\x01bad") == [
        ("FieldValueInvalid", 'Invalid value: "\\x01bad": invalid character U+0001 (at position 0)')]
    assert field_manager_errors("é\x7f") == [
        ("FieldValueInvalid", 'Invalid value: "é\\x7f": invalid character U+007F (at position 2)')]


def test_editing_a_field_set_in_place_matches_decoding_and_encoding_it() -> None:
    """The write path edits FieldsV1 along the changed paths only; it must give what the set
    difference and union give, key order included, and leave its input alone."""
    import json
    import random

    from pumice.api.apply import _fv1_edit, fields_v1

    rng = random.Random(7)

    def path() -> tuple:
        return tuple((rng.choice("fk"), rng.choice("abcd")) for _ in range(rng.randint(1, 4)))

    for _ in range(2000):
        base = {path() for _ in range(rng.randint(0, 8))}
        fv1 = fields_v1(base)
        before = json.dumps(fv1)
        remove = [path() for _ in range(rng.randint(0, 3))] + rng.sample(sorted(base), min(len(base), 2))
        add = [path() for _ in range(rng.randint(0, 3))]
        assert json.dumps(_fv1_edit(fv1, remove, add)) == json.dumps(fields_v1((base - set(remove)) | set(add)))
        assert json.dumps(fv1) == before


# ------------------------------------------------ client-side apply -> server-side apply (trial-9 F-2)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def client_side_applied(**data: str) -> dict:
    """What ``kubectl apply`` (client side) stores: the data and kubectl's annotation, both
    owned by ``kubectl-client-side-apply``."""
    obj = cm(**data)
    record = {"apiVersion": "v1", "kind": "ConfigMap", "data": dict(data),
              "metadata": {"annotations": {}, "name": "c", "namespace": "default"}}
    obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n"}
    return created(obj, manager="kubectl-client-side-apply")


def test_kubectl_apply_takes_over_client_side_fields_that_still_hold_their_last_applied_value() -> None:
    obj = client_side_applied(a="1", b="1")
    out = server_side_apply(obj, applied(a="2", b="1"), manager="kubectl", kind="ConfigMap", force=False, time=T1)
    assert out["data"] == {"a": "2", "b": "1"}
    got = owners(out)
    assert got["kubectl"] == {A, B}
    # .data.a moved to kubectl; .data.b, applied with the same value, is shared; the annotation stays
    assert A not in got["kubectl-client-side-apply"] and B in got["kubectl-client-side-apply"]
    assert (("f", "metadata"), ("f", "annotations"), ("f", LAST_APPLIED)) in got["kubectl-client-side-apply"]
    # the annotation now records this apply, as Go writes it (keys sorted, HTML-safe, a newline)
    assert out["metadata"]["annotations"][LAST_APPLIED] == (
        '{"apiVersion":"v1","data":{"a":"2","b":"1"},"kind":"ConfigMap","metadata":{"name":"c"}}\n')
    assert obj["data"] == {"a": "1", "b": "1"}  # the live object is left alone


def test_only_the_kubectl_manager_is_forgiven() -> None:
    obj = client_side_applied(a="1")
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(obj, applied(a="2"), manager="other", kind="ConfigMap", force=False, time=T1)
    assert str(err.value) == 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a'
    out = server_side_apply(obj, applied(a="2"), manager="other", kind="ConfigMap", force=True, time=T1)
    assert json.loads(out["metadata"]["annotations"][LAST_APPLIED])["data"] == {"a": "1"}  # not kept in step


def test_a_field_changed_since_the_client_side_apply_still_conflicts_and_only_it() -> None:
    obj = client_side_applied(a="1", b="1")
    obj = updated(obj, lambda o: o["data"].update(a="9"), "kubectl-patch")
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(obj, applied(a="2", b="2"), manager="kubectl", kind="ConfigMap", force=False, time=T2)
    assert err.value.conflicts == [('"kubectl-patch" using v1', ".data.a")]


DEEP = '{"apiVersion":"v1","data":' + '{"x":' * 3000 + "1" + "}" * 3000 + "}"


@pytest.mark.parametrize("record", ["", "{not json", '{"apiVersion":"v2","data":{"a":"1"}}', "[1]", DEEP],
                         ids=["empty", "not-json", "other-version", "not-an-object", "too-deep"])
def test_without_a_usable_last_applied_record_nothing_is_forgiven(record: str) -> None:
    obj = client_side_applied(a="1")
    obj["metadata"]["annotations"][LAST_APPLIED] = record
    with pytest.raises(ApplyConflict):
        server_side_apply(obj, applied(a="2"), manager="kubectl", kind="ConfigMap", force=False, time=T1)


def test_kubectl_apply_adds_no_last_applied_record_where_there_was_none() -> None:
    out = server_side_apply(created(cm(a="1")), applied(a="2"), manager="kubectl", kind="ConfigMap", force=True)
    assert "annotations" not in out["metadata"]


def test_a_last_applied_record_past_the_annotation_limit_is_dropped() -> None:
    obj = client_side_applied(a="1")
    big = applied(a="2")
    big["metadata"]["annotations"] = {"big": "x" * (200 * 1024)}
    out = server_side_apply(obj, big, manager="kubectl", kind="ConfigMap", force=False, time=T1)
    assert out["data"] == {"a": "2"} and set(out["metadata"]["annotations"]) == {"big"}
