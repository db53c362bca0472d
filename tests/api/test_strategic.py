from __future__ import annotations

import pytest

from pumice.api.strategic import MergeError, strategic_merge_patch


def pod():
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"],
                     "ownerReferences": [{"uid": "u1", "name": "rs", "kind": "ReplicaSet", "apiVersion": "apps/v1"}]},
        "spec": {
            "containers": [
                {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "name": "http"}]},
                {"name": "side", "image": "side:1"},
            ],
            "tolerations": [{"key": "k1", "operator": "Exists"}],
            "volumes": [{"name": "v1", "emptyDir": {}}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]},
    }


def test_containers_merge_by_name():
    out = strategic_merge_patch(pod(), {"spec": {"containers": [{"name": "side", "image": "side:2"},
                                                               {"name": "new", "image": "n"}]}}, "Pod")
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [
        ("app", "app:1"), ("side", "side:2"), ("new", "n")]
    assert out["spec"]["containers"][0]["env"][0] == {"name": "A", "value": "1"}


def test_env_merges_by_name_inside_a_container():
    out = strategic_merge_patch(pod(), {"spec": {"containers": [
        {"name": "app", "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]}]}}, "Pod")
    assert out["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"}, {"name": "B", "value": "20"}, {"name": "C", "value": "3"}]


def test_patch_delete_removes_a_list_element():
    out = strategic_merge_patch(pod(), {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["app"]


def test_patch_replace_in_a_list_and_in_a_map():
    out = strategic_merge_patch(pod(), {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o"}]}},
                                "Pod")
    assert out["spec"]["containers"] == [{"name": "only", "image": "o"}]
    out = strategic_merge_patch(pod(), {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}, "Pod")
    assert out["metadata"]["labels"] == {"c": "3"}


def test_patch_delete_on_a_map_removes_it():
    out = strategic_merge_patch(pod(), {"status": {"$patch": "delete"}}, "Pod")
    assert "status" not in out


def test_null_deletes_a_key_and_maps_merge():
    out = strategic_merge_patch(pod(), {"metadata": {"labels": {"a": None, "c": "3"}}}, "Pod")
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}


def test_tolerations_are_replaced():
    out = strategic_merge_patch(pod(), {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}}, "Pod")
    assert out["spec"]["tolerations"] == [{"key": "k2", "operator": "Exists"}]


def test_conditions_merge_by_type_and_owner_references_by_uid():
    out = strategic_merge_patch(pod(), {"status": {"conditions": [{"type": "Ready", "status": "True"}]},
                                        "metadata": {"ownerReferences": [{"uid": "u2", "name": "x"}]}}, "Pod")
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
    assert [o["uid"] for o in out["metadata"]["ownerReferences"]] == ["u1", "u2"]


def test_finalizers_union_and_delete_from_primitive_list():
    out = strategic_merge_patch(pod(), {"metadata": {"finalizers": ["y"]}}, "Pod")
    assert out["metadata"]["finalizers"] == ["x", "y"]
    out = strategic_merge_patch(pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}, "Pod")
    assert out["metadata"]["finalizers"] == []


def test_set_element_order_reorders_the_merged_list():
    out = strategic_merge_patch(pod(), {"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
                                                 "containers": [{"name": "app", "image": "app:2"}]}}, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["side", "app"]


def test_retain_keys_drops_unlisted_keys():
    dep = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    out = strategic_merge_patch(dep, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, "Deployment")
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_deployment_template_containers_merge_by_name():
    dep = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}}}
    out = strategic_merge_patch(dep, {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "2"}]}}}},
                                "Deployment")
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]


def test_original_is_not_modified():
    original = pod()
    strategic_merge_patch(original, {"spec": {"containers": [{"name": "app", "image": "x"}]}}, "Pod")
    assert original == pod()


@pytest.mark.parametrize("patch, words", [
    # trial 11 F-11 b: the element printed as Go's %v (mergepatch.ErrNoMergeKey), not a Python repr
    ({"spec": {"containers": [{"image": "x", "args": ["a", 1]}]}},
     r"map: map\[args:\[a 1\] image:x\] does not contain declared merge key: name"),
    ({"metadata": {"$patch": "explode"}}, "unknown patch type"),
    ({"metadata": {"$setElementOrder/finalizers": "x"}}, "must be a list"),
])
def test_bad_patches_raise_value_error(patch, words):
    with pytest.raises(ValueError, match=words):
        strategic_merge_patch(pod(), patch, "Pod")


def test_an_element_missing_from_the_set_element_order_list_is_refused():
    # trial 11 F-11 f: validatePatchWithSetOrderList: the patch list's elements must be in the
    # $setElementOrder list, in order
    patch = {"spec": {"$setElementOrder/containers": [{"name": "z"}],
                      "containers": [{"name": "app", "image": "x"}]}}
    with pytest.raises(MergeError) as e:
        strategic_merge_patch(pod(), patch, "Pod")
    assert str(e.value) == ("The order in patch list:\n[map[image:x name:app]]\n doesn't match $setElementOrder "
                            "list:\n[map[name:z]]\n")
    patch["spec"]["$setElementOrder/containers"] = [{"name": "app"}, {"name": "z"}]  # a superset is fine
    assert strategic_merge_patch(pod(), patch, "Pod")["spec"]["containers"][0]["image"] == "x"
    out_of_order = {"metadata": {"$setElementOrder/finalizers": ["b", "a"], "finalizers": ["a", "b"]}}
    with pytest.raises(MergeError, match="doesn't match"):
        strategic_merge_patch(pod(), out_of_order, "Pod")
    deleting = {"spec": {"$setElementOrder/containers": [{"name": "app"}],
                         "containers": [{"name": "gone", "$patch": "delete"}, {"name": "app", "image": "y"}]}}
    assert strategic_merge_patch(pod(), deleting, "Pod")["spec"]["containers"][0]["image"] == "y"


def test_a_delete_directive_removes_every_element_with_its_merge_key_before_the_rest_merges():
    # the patch client-side kubectl apply (CreateThreeWayMergePatch, overwrite) sends to go from two
    # Service ports 53 (UDP "dns", TCP "dns-tcp") to "dns" and "http"; upstream's StrategicMergePatch
    # (mergeSliceWithSpecialElements, deleteMatchingEntries) leaves only "http": ports merge by port
    # alone, so deleting port 53 takes both (tools/ssa_oracle ran both steps)
    live = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "s"}, "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                                       {"name": "dns-tcp", "port": 53}]}}
    patch = {"spec": {"$setElementOrder/ports": [{"port": 53}, {"port": 80}],
                      "ports": [{"name": "http", "port": 80},
                                {"$patch": "delete", "name": "dns", "port": 53, "protocol": "UDP"}]}}
    assert strategic_merge_patch(live, patch, "Service")["spec"]["ports"] == [{"name": "http", "port": 80}]
    # a container's two ports 53: both deleted, then the patch's UDP one added back
    pod = {"spec": {"containers": [{"name": "dns", "ports": [{"containerPort": 53, "name": "dns", "protocol": "UDP"},
                                                             {"containerPort": 53, "name": "dns-tcp"}]}]}}
    patch = {"spec": {"containers": [{"$setElementOrder/ports": [{"containerPort": 53}], "name": "dns", "ports": [
        {"containerPort": 53, "name": None, "protocol": "UDP"}, {"$patch": "delete", "containerPort": 53}]}]}}
    out = strategic_merge_patch(pod, patch, "Pod")
    assert out["spec"]["containers"][0]["ports"] == [{"containerPort": 53, "protocol": "UDP"}]
