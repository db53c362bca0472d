"""DefaultStorageClass and DefaultIngressClass admission choose the default class as upstream's
GetDefaultClass does: the newest annotated class, ties (classes made in one second: creation
times are RFC 3339 seconds) by the smallest name."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api.admission import AdmissionRequest
from pumice.api.scheme import ResourceKind
from pumice.apiserver.admission import DefaultIngressClass, DefaultStorageClass

SC = ResourceKind(group="storage.k8s.io", version="v1", kind="StorageClass", plural="storageclasses",
                  namespaced=False)
IC = ResourceKind(group="networking.k8s.io", version="v1", kind="IngressClass", plural="ingressclasses",
                  namespaced=False)
PVC = ResourceKind(group="", version="v1", kind="PersistentVolumeClaim", plural="persistentvolumeclaims",
                   namespaced=True)
ING = ResourceKind(group="networking.k8s.io", version="v1", kind="Ingress", plural="ingresses", namespaced=True)


class _Reader:
    """The stored classes, as the server's ObjectReader gives them (key order: by name)."""

    def __init__(self, kind: ResourceKind, objs: list[dict[str, Any]]) -> None:
        self._kind, self._objs = kind, sorted(objs, key=lambda o: o["metadata"]["name"])

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return next((o for o in self._objs if o["metadata"]["name"] == name), None)

    async def list(self, kind: ResourceKind, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self._objs)

    def kind(self, api_version: str, kind: str) -> ResourceKind | None:
        return self._kind if kind == self._kind.kind else None


def _class(name: str, created: str, annotation: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": {annotation: "true"}}}


T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"
GA, BETA = "storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"


@pytest.mark.parametrize(("classes", "want"), [
    ([_class("b", T0, GA), _class("a", T0, GA), _class("c", T0, GA)], "a"),  # one second: smallest name
    ([_class("a", T0, GA), _class("b", T1, GA)], "b"),  # the newest
    ([_class("z", T0, GA), _class("y", T1, BETA)], "y"),  # the beta annotation counts too
])
async def test_a_claim_gets_the_newest_default_storage_class_ties_by_the_smallest_name(
        classes: list[dict[str, Any]], want: str) -> None:
    pvc: dict[str, Any] = {"metadata": {"name": "c", "namespace": "default"}, "spec": {}}
    req = AdmissionRequest("CREATE", PVC, "default", "c", pvc, None)
    await DefaultStorageClass().admit(req, _Reader(SC, classes))
    assert pvc["spec"]["storageClassName"] == want


async def test_a_claim_with_the_beta_class_annotation_even_empty_gets_no_default() -> None:
    pvc: dict[str, Any] = {"metadata": {"name": "c", "namespace": "default",
                                        "annotations": {"volume.beta.kubernetes.io/storage-class": ""}}, "spec": {}}
    req = AdmissionRequest("CREATE", PVC, "default", "c", pvc, None)
    await DefaultStorageClass().admit(req, _Reader(SC, [_class("a", T0, GA)]))
    assert "storageClassName" not in pvc["spec"]


async def test_an_ingress_gets_the_newest_default_ingress_class_ties_by_the_smallest_name() -> None:
    ann = "ingressclass.kubernetes.io/is-default-class"
    ing: dict[str, Any] = {"metadata": {"name": "i", "namespace": "default"}, "spec": {}}
    req = AdmissionRequest("CREATE", ING, "default", "i", ing, None)
    await DefaultIngressClass().admit(req, _Reader(IC, [_class("n2", T0, ann), _class("n1", T0, ann)]))
    assert ing["spec"]["ingressClassName"] == "n1"
