"""The system PriorityClasses cannot be deleted one by one (trial 19 F-9: `kubectl delete
priorityclass --all` deleted system-cluster-critical and system-node-critical, and every Pod naming
them was refused until a restart).

Ports kube-apiserver's pkg/registry/scheduling/priorityclass/storage/storage.go REST.Delete: 403
before the object is read; a DELETE of the collection goes through the store and still removes
them, as upstream's."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from pumice.testing.cluster import HttpServer, serve_http
from pumice.testing.kubectl import Kubectl

PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"
SYSTEM = ("system-node-critical", "system-cluster-critical")


def refusal(name: str) -> dict[str, object]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: this is a system priority class '
                       "and cannot be deleted",
            "reason": "Forbidden", "details": {"name": name, "group": "scheduling.k8s.io", "kind": "priorityclasses"},
            "code": 403}


@pytest.mark.parametrize("name", SYSTEM)
@pytest.mark.parametrize("dry_run", [False, True])
async def test_a_system_priority_class_cannot_be_deleted(http: httpx2.AsyncClient, name: str, dry_run: bool) -> None:
    r = await http.delete(f"{PCS}/{name}", params={"dryRun": "All"} if dry_run else {})
    assert (r.status_code, r.json()) == (403, refusal(name))
    assert (await http.get(f"{PCS}/{name}")).status_code == 200


async def test_the_refusal_comes_before_the_object_is_read(http: httpx2.AsyncClient) -> None:
    r = await http.request("DELETE", f"{PCS}/system-node-critical", json={"preconditions": {"uid": "not-its-uid"}})
    assert (r.status_code, r.json()) == (403, refusal("system-node-critical"))


async def test_other_priority_classes_are_deleted(http: httpx2.AsyncClient) -> None:
    assert (await http.post(PCS, json={"metadata": {"name": "high"}, "value": 1000})).status_code == 201
    assert (await http.delete(f"{PCS}/high")).status_code == 200
    assert (await http.get(f"{PCS}/high")).status_code == 404


async def test_a_delete_of_the_collection_removes_them_as_upstreams_store_does(http: httpx2.AsyncClient) -> None:
    r = await http.delete(PCS)
    assert r.status_code == 200, r.text
    assert (await http.get(PCS)).json()["items"] == []


# ------------------------------------------------------------------ kubectl


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("syspc")) as s:
        yield s


@pytest.mark.kubectl
def test_kubectl_delete_all_priority_classes_keeps_the_system_ones(kubectl: Kubectl) -> None:
    kubectl("create", "priorityclass", "high", "--value=1000")
    p = kubectl("delete", "priorityclass", "--all", check=False)
    assert p.returncode != 0
    assert 'priorityclass.scheduling.k8s.io "high" deleted' in p.stdout
    for name in SYSTEM:
        assert (f'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "{name}" is forbidden: this is a '
                "system priority class and cannot be deleted") in p.stderr
    assert kubectl("get", "priorityclass", "-o", "name").stdout.split() == [f"priorityclass.scheduling.k8s.io/{n}"
                                                                           for n in sorted(SYSTEM)]
