"""A Pod's container image must not have leading or trailing whitespace (trial 10 F-4); a pod
template's may (upstream checks it for Pods only: validateContainersOnlyForPod)."""

from __future__ import annotations

from pumice.api.scheme import ResourceKind
from pumice.api.validation import validate_object

POD = ResourceKind(group="", version="v1", kind="Pod", plural="pods")
DEPLOY = ResourceKind(group="apps", version="v1", kind="Deployment", plural="deployments")


def pod(image: str, init_image: str = "x") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ws", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": image}], "initContainers": [{"name": "i", "image": init_image}],
                     "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}}


def found(obj: dict) -> list[tuple[str, str]]:
    return [(c.field, c.message) for c in validate_object(POD, obj, None) if c.field.endswith(".image")]


def test_an_image_with_surrounding_whitespace_is_refused_for_a_pod() -> None:
    assert found(pod(" x ")) == [
        ("spec.containers[0].image", 'Invalid value: " x ": must not have leading or trailing whitespace')]
    assert found(pod("x", init_image="x\t")) == [
        ("spec.initContainers[0].image", 'Invalid value: "x\\t": must not have leading or trailing whitespace')]
    assert found(pod("x\u00a0")) != []  # Go's unicode.IsSpace: no-break space too
    assert found(pod("registry.example.com/x:1")) == []


def test_a_pod_template_is_not_checked() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
               "metadata": {"labels": {"a": "b"}}, "spec": pod(" x ")["spec"]}}}
    assert [c for c in validate_object(DEPLOY, dep, None) if c.field.endswith(".image")] == []
