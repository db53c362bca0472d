"""A create's managedFields are taken where kube-apiserver's create handler takes them: after the
decoder's defaulting and before the strategy's PrepareForCreate, so the manager owns what it sent
and the defaults, not what PrepareForCreate adds (differential run, session 16)."""

from __future__ import annotations

from typing import Any

import httpx2


def _owned(obj: dict[str, Any]) -> dict[str, Any]:
    entries = obj["metadata"]["managedFields"]
    assert [e["operation"] for e in entries] == ["Update"]
    fields: dict[str, Any] = entries[0]["fieldsV1"]
    return fields


async def test_a_jobs_generated_selector_and_labels_are_not_owned(http: httpx2.AsyncClient) -> None:
    job = {"metadata": {"name": "j1"}, "spec": {"template": {"metadata": {"labels": {"app": "j1"}}, "spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    got = (await http.post("/apis/batch/v1/namespaces/default/jobs", json=job)).json()
    uid = got["metadata"]["uid"]
    # the generated selector and labels are there, and shown on the Job (its labels are its template's)
    assert got["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert got["metadata"]["labels"] == got["spec"]["template"]["metadata"]["labels"]
    assert got["metadata"]["labels"]["job-name"] == "j1"
    owned = _owned(got)
    assert "f:selector" not in owned["f:spec"]
    assert owned["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}  # copied by the defaulter
    assert owned["f:spec"]["f:template"]["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    assert "f:backoffLimit" in owned["f:spec"]  # a default is owned


async def test_a_job_whose_template_has_no_labels_owns_no_labels(http: httpx2.AsyncClient) -> None:
    job = {"metadata": {"name": "j2"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    got = (await http.post("/apis/batch/v1/namespaces/default/jobs", json=job)).json()
    assert got["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j2"
    owned = _owned(got)
    assert "f:metadata" not in owned and "f:metadata" not in owned["f:spec"]["f:template"]


async def test_a_namespaces_finalizer_is_not_owned_but_its_name_label_is(http: httpx2.AsyncClient) -> None:
    got = (await http.post("/api/v1/namespaces", json={"metadata": {"name": "owned"}})).json()
    assert got["spec"]["finalizers"] == ["kubernetes"]
    assert _owned(got) == {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}


async def test_a_daemonsets_template_generation_annotation_is_owned(http: httpx2.AsyncClient) -> None:
    ds = {"metadata": {"name": "ds1"}, "spec": {"selector": {"matchLabels": {"app": "ds1"}}, "template": {
        "metadata": {"labels": {"app": "ds1"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    got = (await http.post("/apis/apps/v1/namespaces/default/daemonsets", json=ds)).json()
    assert got["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert _owned(got)["f:metadata"] == {"f:annotations": {".": {}, "f:deprecated.daemonset.template.generation": {}}}
