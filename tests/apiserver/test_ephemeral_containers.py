"""pods/ephemeralcontainers: GET, PATCH and PUT change only spec.ephemeralContainers; existing ones
may not change or go, and an ephemeral container takes only the fields kube-apiserver allows."""

from __future__ import annotations

import json

import httpx2

from pumice.testing.cluster import LocalCluster

from .builders import pod

URL = "/api/v1/namespaces/default/pods/p/ephemeralcontainers"
SMP = {"Content-Type": "application/strategic-merge-patch+json"}


def http(cluster: LocalCluster) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cluster.app), base_url="http://apiserver",
                              headers={"Authorization": f"Bearer {cluster.server.token}"})


def debugger(name: str = "debugger-1", **extra: object) -> dict[str, object]:
    return {"name": name, "image": "busybox", "command": ["sh"], "stdin": True, "tty": True,
            "targetContainerName": "main", **extra}


def message(r: httpx2.Response) -> str:
    assert r.json()["kind"] == "Status", r.text
    return str(r.json()["message"])


async def test_kubectl_debugs_patch_adds_an_ephemeral_container_and_nothing_else(cluster: LocalCluster) -> None:
    await cluster.client.create(pod("p"))
    async with http(cluster) as h:
        body = {"spec": {"ephemeralContainers": [debugger()], "containers": [{"name": "main", "image": "evil"}]},
                "metadata": {"labels": {"sneaky": "yes"}}}
        r = await h.patch(URL, content=json.dumps(body), headers=SMP)
        assert r.status_code == 200, r.text
        got = r.json()
        [ec] = got["spec"]["ephemeralContainers"]
        assert ec["name"] == "debugger-1" and ec["targetContainerName"] == "main"
        assert ec["terminationMessagePolicy"] == "File" and ec["imagePullPolicy"] == "Always"
        assert got["spec"]["containers"][0]["image"] == "busybox:1.36" and "sneaky" not in got["metadata"].get(
            "labels", {})
        assert (await h.get(URL)).json()["spec"]["ephemeralContainers"] == [ec]
        # PUT: a second one added (the first unchanged)
        got["spec"]["ephemeralContainers"].append(debugger("debugger-2"))
        r = await h.put(URL, content=json.dumps(got))
        assert r.status_code == 200, r.text
        assert [c["name"] for c in r.json()["spec"]["ephemeralContainers"]] == ["debugger-1", "debugger-2"]


async def test_existing_ephemeral_containers_may_not_change_or_go(cluster: LocalCluster) -> None:
    await cluster.client.create(pod("p"))
    async with http(cluster) as h:
        got = (await h.patch(URL, content=json.dumps({"spec": {"ephemeralContainers": [debugger()]}}),
                             headers=SMP)).json()
        changed = json.loads(json.dumps(got))
        changed["spec"]["ephemeralContainers"][0]["image"] = "alpine"
        r = await h.put(URL, content=json.dumps(changed))
        assert r.status_code == 422
        assert message(r) == ('Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
                              'containers "debugger-1" may not be changed\n')
        got["spec"]["ephemeralContainers"] = []
        r = await h.put(URL, content=json.dumps(got))
        assert r.status_code == 422
        assert message(r) == ('Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
                              'containers "debugger-1" may not be removed\n')


async def test_an_ephemeral_container_takes_only_the_allowed_fields_and_a_real_target(cluster: LocalCluster) -> None:
    await cluster.client.create(pod("p"))
    async with http(cluster) as h:
        bad = debugger("main", ports=[{"containerPort": 80}], targetContainerName="nope", image="")
        r = await h.patch(URL, content=json.dumps({"spec": {"ephemeralContainers": [bad]}}), headers=SMP)
        assert r.status_code == 422
        assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
            ("spec.ephemeralContainers[0].image", "Required value"),
            ("spec.ephemeralContainers[0].name", 'Duplicate value: "main"'),
            ("spec.ephemeralContainers[0].targetContainerName", 'Not found: "nope"'),
            ("spec.ephemeralContainers[0].ports", "Forbidden: cannot be set for an Ephemeral Container"),
        ]
        assert (await h.get("/api/v1/namespaces/default/pods/p")).json()["spec"].get("ephemeralContainers") is None


async def test_an_ephemeral_container_gets_the_container_checks_and_may_target_an_init_container(
        cluster: LocalCluster) -> None:
    """validateEphemeralContainers runs validateContainerCommon (the name is a DNS-1123 label) and
    takes init containers as targets (was: any name stored; an init container target refused)."""
    await cluster.client.create(pod("p", initContainers=[{"name": "setup", "image": "busybox:1.36"}]))
    async with http(cluster) as h:
        bad = debugger("Bad_Name", imagePullPolicy="Sometimes")
        r = await h.patch(URL, content=json.dumps({"spec": {"ephemeralContainers": [bad]}}), headers=SMP)
        assert r.status_code == 422, r.text
        assert [(c["field"], c["message"].split(":")[0]) for c in r.json()["details"]["causes"]] == [
            ("spec.ephemeralContainers[0].name", 'Invalid value'),
            ("spec.ephemeralContainers[0].imagePullPolicy", "Unsupported value"),
        ]
        good = debugger("debugger-1", targetContainerName="setup")
        r = await h.patch(URL, content=json.dumps({"spec": {"ephemeralContainers": [good]}}), headers=SMP)
        assert r.status_code == 200, r.text


async def test_a_pod_create_may_not_carry_ephemeral_containers(cluster: LocalCluster) -> None:
    """ValidatePodCreate: ``spec.ephemeralContainers: Forbidden: cannot be set on create`` (was: stored)."""
    async with http(cluster) as h:
        r = await h.post("/api/v1/namespaces/default/pods", json=pod("p", ephemeralContainers=[debugger()]))
        assert r.status_code == 422, r.text
        assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
            ("spec.ephemeralContainers", "Forbidden: cannot be set on create")]
