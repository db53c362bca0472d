from __future__ import annotations

import pytest

from pumice.api.apply import ApplyConflict, SchemaListTypes, parse_fields_v1, server_side_apply


def deployment(replicas=1, image="app:1", labels=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default", "labels": labels or {"app": "d"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}}}


def test_create_records_an_apply_entry_for_the_manager():
    out = server_side_apply(None, deployment(), manager="kubectl", kind="Deployment", force=False)
    [entry] = out["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl" and entry["operation"] == "Apply" and entry["fieldsType"] == "FieldsV1"
    assert entry["apiVersion"] == "apps/v1"
    fv1 = entry["fieldsV1"]
    assert "f:replicas" in fv1["f:spec"]
    assert 'k:{"name":"app"}' in fv1["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert "f:name" not in fv1["f:metadata"]
    assert fv1["f:metadata"] == {"f:labels": {"f:app": {}}}


def test_identity_only_metadata_is_not_a_managed_field():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"a": "1"}}
    out = server_side_apply(None, cm, manager="m", kind="ConfigMap", force=False)
    assert out["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_reapply_updates_values_and_keeps_other_live_fields():
    live = server_side_apply(None, deployment(), manager="kubectl", kind="Deployment", force=False)
    live["status"] = {"replicas": 1}
    live["metadata"]["uid"] = "u"
    out = server_side_apply(live, deployment(replicas=3, image="app:2"), manager="kubectl", kind="Deployment",
                            force=False)
    assert out["spec"]["replicas"] == 3
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "app", "image": "app:2"}]
    assert out["status"] == {"replicas": 1} and out["metadata"]["uid"] == "u"
    assert len(out["metadata"]["managedFields"]) == 1


def test_fields_dropped_from_the_applied_config_are_removed():
    live = server_side_apply(None, deployment(labels={"app": "d", "tier": "web"}), manager="m", kind="Deployment",
                             force=False)
    out = server_side_apply(live, deployment(labels={"app": "d"}), manager="m", kind="Deployment", force=False)
    assert out["metadata"]["labels"] == {"app": "d"}


def test_containers_merge_by_name_between_managers():
    live = server_side_apply(None, deployment(), manager="a", kind="Deployment", force=False)
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"template": {"spec": {"containers": [{"name": "side", "image": "s"}]}}}}
    out = server_side_apply(live, sidecar, manager="b", kind="Deployment", force=False)
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["app", "side"]
    assert {e["manager"] for e in out["metadata"]["managedFields"]} == {"a", "b"}


def test_changing_a_field_another_manager_owns_conflicts_unless_forced():
    live = server_side_apply(None, deployment(replicas=1), manager="a", kind="Deployment", force=False)
    change = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 5}}
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(live, change, manager="b", kind="Deployment", force=False)
    assert str(err.value) == 'Apply failed with 1 conflict: conflict with "a": .spec.replicas'
    out = server_side_apply(live, change, manager="b", kind="Deployment", force=True)
    assert out["spec"]["replicas"] == 5
    owners = {e["manager"]: parse_fields_v1(e["fieldsV1"]) for e in out["metadata"]["managedFields"]}
    assert (("f", "spec"), ("f", "replicas")) not in owners["a"]
    assert (("f", "spec"), ("f", "replicas")) in owners["b"]


def test_same_value_from_two_managers_is_shared_not_a_conflict():
    live = server_side_apply(None, deployment(replicas=2), manager="a", kind="Deployment", force=False)
    same = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2}}
    out = server_side_apply(live, same, manager="b", kind="Deployment", force=False)
    assert out["spec"]["replicas"] == 2


def test_custom_resource_lists_are_atomic():
    rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
          "spec": {"workerGroupSpecs": [{"groupName": "a", "replicas": 1}, {"groupName": "b", "replicas": 1}]}}
    live = server_side_apply(None, rc, manager="m", kind="RayCluster", force=False)
    rc2 = {**rc, "spec": {"workerGroupSpecs": [{"groupName": "a", "replicas": 2}]}}
    out = server_side_apply(live, rc2, manager="m", kind="RayCluster", force=False)
    assert out["spec"]["workerGroupSpecs"] == [{"groupName": "a", "replicas": 2}]


def test_dropped_list_items_and_nested_fields_are_removed_whole():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "a", "image": "i", "env": [{"name": "X", "value": "1"},
                                                                      {"name": "Y", "value": "2"}]},
                                   {"name": "b", "image": "j"}]}}
    live = server_side_apply(None, pod, manager="m", kind="Pod", force=False)
    smaller = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "a", "image": "i", "env": [{"name": "X", "value": "1"}]}]}}
    out = server_side_apply(live, smaller, manager="m", kind="Pod", force=False)
    assert out["spec"] == smaller["spec"]


def test_custom_resource_metadata_lists_keep_object_meta_semantics():
    rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r", "finalizers": ["a"]}}
    live = server_side_apply(None, rc, manager="m", kind="RayCluster", force=False)
    other = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r", "finalizers": ["b"]}}
    out = server_side_apply(live, other, manager="n", kind="RayCluster", force=False)
    assert out["metadata"]["finalizers"] == ["a", "b"]


def test_a_volcano_job_is_not_treated_as_a_batch_job():
    vcjob = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
             "spec": {"tasks": [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 1}]}}
    live = server_side_apply(None, vcjob, manager="m", kind="Job", force=False)
    fewer = {**vcjob, "spec": {"tasks": [{"name": "a", "replicas": 2}]}}
    out = server_side_apply(live, fewer, manager="m", kind="Job", force=False)
    assert out["spec"]["tasks"] == [{"name": "a", "replicas": 2}]


#: a custom resource schema with one list of each type (x-kubernetes-list-type map with two
#: keys, one of them defaulted; set; no marker)
_MARKED = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
              "items": {"type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string"},
                                                         "protocol": {"type": "string", "default": "TCP"}}}},
    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    "args": {"type": "array", "items": {"type": "string"}},
}}}}


def _widget(**spec):
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def test_custom_resource_lists_merge_by_their_schema_markers():
    lists = SchemaListTypes(_MARKED)
    live = server_side_apply(None, _widget(ports=[{"port": 80, "name": "http"}], tags=["a"], args=["x"]),
                             manager="one", kind="Widget", force=False, lists=lists)
    spec = live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
    assert set(spec["f:ports"]) == {'k:{"port":80,"protocol":"TCP"}'}  # key fields in name order
    assert set(spec["f:tags"]) == {'v:"a"'} and spec["f:args"] == {}
    out = server_side_apply(live, _widget(ports=[{"port": 443, "protocol": "TCP"}], tags=["b"]),
                            manager="two", kind="Widget", force=False, lists=lists)
    assert out["spec"] == {"ports": [{"port": 80, "name": "http"}, {"port": 443, "protocol": "TCP"}],
                           "tags": ["a", "b"], "args": ["x"]}
    with pytest.raises(ApplyConflict) as e:
        server_side_apply(out, _widget(args=["y"]), manager="two", kind="Widget", force=False, lists=lists)
    assert e.value.conflicts == [('"one"', ".spec.args")]


def test_a_keyed_item_that_omits_a_key_field_without_default_is_keyed_by_the_others():
    # structured-merge-diff keyedAssociativeListItemToPathElement: the absent key field is left out
    lists = SchemaListTypes(_MARKED)
    live = server_side_apply(None, _widget(ports=[{"port": 80}]), manager="one", kind="Widget", force=False,
                             lists=lists)
    out = server_side_apply(live, _widget(ports=[{"name": "x"}]), manager="two", kind="Widget", force=False,
                            lists=lists)
    assert out["spec"]["ports"] == [{"port": 80}, {"name": "x"}]
    two = next(e for e in out["metadata"]["managedFields"] if e["manager"] == "two")
    assert two["fieldsV1"] == {"f:spec": {"f:ports": {'k:{"protocol":"TCP"}': {".": {}, "f:name": {}}}}}


def test_a_keyed_item_without_any_key_field_is_refused_with_upstreams_message():
    lists = SchemaListTypes({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "rules": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "path"],
                  "items": {"type": "object", "properties": {"host": {"type": "string"}, "path": {"type": "string"},
                                                             "x": {"type": "integer"}}}}}}}})
    message = ('.spec.rules: element 1: associative list with keys has an element that omits all key fields '
               '["host" "path"] (and doesn\'t have default values for any key fields)')
    with pytest.raises(ValueError) as e:
        server_side_apply(None, _widget(rules=[{"host": "a"}, {"x": 1}]), manager="one", kind="Widget", force=False,
                          lists=lists)
    assert str(e.value) == message


def test_schema_list_types_walk_maps_and_list_items():
    schema = {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {
        "type": "array", "items": {"type": "object", "properties": {
            "inner": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}}}}}}}
    lists = SchemaListTypes(schema)
    assert lists(("m", "any-key")) == (None, False, {})
    assert lists(("m", "any-key", "inner")) == (None, True, {})
    assert lists(("nothing", "here")) == (None, False, {})
