"""ServiceAccounts (the default one per Namespace, the root CA ConfigMap, the token volume of Pods),
ClusterRole aggregation, and the PersistentVolume binder."""

from __future__ import annotations

import copy
from typing import Any

from pumice.api import Obj
from pumice.api.scheme import (
    CLUSTER_ROLE,
    CONFIG_MAP,
    EVENT,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    SERVICE_ACCOUNT,
)
from pumice.client.base import is_not_found

from .conftest import chain, eventually

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


async def _get(client: Any, kind: Any, name: str, ns: str | None = None) -> Obj | None:
    try:
        obj: Obj = await client.get(kind, name, ns)
        return obj
    except Exception as e:
        if is_not_found(e):
            return None
        raise


async def test_every_namespace_gets_a_default_service_account_that_comes_back_when_deleted() -> None:
    async with chain(nodes=1, root_ca=CA) as env:
        c = env.client
        await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        await eventually(lambda: _get(c, SERVICE_ACCOUNT, "default", "team"), what="default SA in team")
        await eventually(lambda: _get(c, SERVICE_ACCOUNT, "default", "kube-system"), what="default SA in kube-system")
        await c.delete(SERVICE_ACCOUNT, "default", "team")
        await eventually(lambda: _get(c, SERVICE_ACCOUNT, "default", "team"), what="default SA recreated")


async def test_root_ca_configmap_is_published_and_restored() -> None:
    async with chain(nodes=1, root_ca=CA) as env:
        c = env.client

        async def ca_is(value: str) -> bool:
            cm = await _get(c, CONFIG_MAP, "kube-root-ca.crt", "default")
            return cm is not None and cm["data"] == {"ca.crt": value}

        await eventually(lambda: ca_is(CA), what="kube-root-ca.crt")
        cm = await c.get(CONFIG_MAP, "kube-root-ca.crt", "default")
        assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith("Contains a CA bundle")
        cm["data"] = {"ca.crt": "tampered"}
        await c.update(cm)
        await eventually(lambda: ca_is(CA), what="kube-root-ca.crt restored")


async def test_pod_of_an_existing_service_account_gets_the_projected_token_volume() -> None:
    async with chain(nodes=1, manager=False) as env:
        c = env.client
        await c.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default",
                                                                                  "namespace": "default"}})
        await c.create({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "quiet", "namespace": "default"}, "automountServiceAccountToken": False})
        pod = await c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        vols = pod["spec"]["volumes"]
        assert len(vols) == 1 and vols[0]["name"].startswith("kube-api-access-")
        sources = vols[0]["projected"]["sources"]
        assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
        assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
        assert pod["spec"]["containers"][0]["volumeMounts"] == [
            {"name": vols[0]["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
        quiet = await c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "default"},
                                "spec": {"serviceAccountName": "quiet", "containers": [{"name": "c", "image": "b"}]}})
        assert not quiet["spec"].get("volumes")
        # no ServiceAccount (yet): the Pod is admitted without the volume (see the plugin's docstring)
        await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}})
        bare = await c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "fresh"},
                               "spec": {"containers": [{"name": "c", "image": "b"}]}})
        assert not bare["spec"].get("volumes") and bare["spec"]["serviceAccountName"] == "default"


async def test_aggregated_cluster_role_collects_rules_of_labelled_roles() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        await c.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": "rayjobs-edit",
                                     "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
                        "rules": [{"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["create"]}]})

        async def edit_has_rayjobs() -> bool:
            role = await c.get(CLUSTER_ROLE, "edit")
            return {"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["create"]} in role["rules"]

        await eventually(edit_has_rayjobs, what="edit aggregated")
        # admin aggregates edit's label too: through system:aggregate-to-edit's rules
        admin = await c.get(CLUSTER_ROLE, "admin")
        await eventually(lambda: _admin_has_edit(c), what="admin aggregated")
        assert admin["aggregationRule"]["clusterRoleSelectors"]


async def _admin_has_edit(c: Any) -> bool:
    admin = await c.get(CLUSTER_ROLE, "admin")
    return any("roles" in (r.get("resources") or []) for r in admin.get("rules") or [])


PV = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-small"},
      "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
               "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/var/tmp/pv-small"}}}
PVC = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                "resources": {"requests": {"storage": "500Mi"}}}}


async def test_claim_binds_to_the_smallest_fitting_volume_and_releases_it_on_delete() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        big = copy.deepcopy(PV)
        big["metadata"]["name"] = "pv-big"
        big["spec"]["capacity"]["storage"] = "10Gi"
        await c.create(big)
        await c.create(copy.deepcopy(PV))
        await c.create(copy.deepcopy(PVC))

        async def bound() -> bool:
            pvc = await c.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
            return (pvc.get("status") or {}).get("phase") == "Bound"

        await eventually(bound, what="claim bound")
        pvc = await c.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
        assert pvc["spec"]["volumeName"] == "pv-small"
        assert pvc["status"]["capacity"] == {"storage": "1Gi"}
        assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        pv = await c.get(PERSISTENT_VOLUME, "pv-small")
        assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
        await eventually(lambda: _phase(c, "pv-small", "Bound"), what="volume Bound")
        await eventually(lambda: _phase(c, "pv-big", "Available"), what="other volume Available")
        await c.delete(PERSISTENT_VOLUME_CLAIM, "data", "default")
        await eventually(lambda: _phase(c, "pv-small", "Released"), what="volume Released")


async def _phase(c: Any, name: str, phase: str) -> bool:
    pv = await c.get(PERSISTENT_VOLUME, name)
    return (pv.get("status") or {}).get("phase") == phase


async def test_claim_of_a_provisioning_class_is_handed_to_its_provisioner() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        pvc = copy.deepcopy(PVC)
        del pvc["spec"]["storageClassName"]  # the default class "standard" is filled in by admission
        created = await c.create(pvc)
        assert created["spec"]["storageClassName"] == "standard"

        async def annotated() -> bool:
            p = await c.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
            return (p["metadata"].get("annotations") or {}).get("volume.kubernetes.io/storage-provisioner") == \
                "pumice.dev/local-path"

        await eventually(annotated, what="provisioner annotation")
        await eventually(lambda: _has_event(c, "ExternalProvisioning"), what="ExternalProvisioning event")



async def _has_event(c: Any, reason: str) -> bool:
    return any(e.get("reason") == reason for e in (await c.list(EVENT, "default")).items)
