"""ServiceAccount tokens for projected volumes: the node agent asks the API server for a token bound
to the Pod (TokenRequest), as the kubelet's token manager does.

Mirrors: kubernetes pkg/kubelet/token/token_manager.go (GetServiceAccountToken) and
pkg/volume/projected (the serviceAccountToken source).
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.client.base import KubeClient

__all__ = ["request_token", "token_sources"]


def token_sources(pod: Obj) -> list[Obj]:
    """Every ``serviceAccountToken`` projection of the Pod's volumes."""
    out: list[Obj] = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        for s in (v.get("projected") or {}).get("sources") or []:
            if "serviceAccountToken" in s:
                out.append(s["serviceAccountToken"] or {})
    return out


async def request_token(client: KubeClient, pod: Obj, source: Obj) -> str:
    """A token for the Pod's ServiceAccount, bound to the Pod, for ``source``'s audience and lifetime.

    Raises:
        ApiError: the API server refused (no such ServiceAccount, forbidden, ...).
        TypeError: the client cannot send raw requests.
    """
    md = pod.get("metadata") or {}
    ns = md.get("namespace") or "default"
    sa = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    body: Obj = {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "metadata": {"name": sa, "namespace": ns},
        "spec": {"expirationSeconds": int(source.get("expirationSeconds") or 3600),
                 "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": md.get("name"), "uid": md.get("uid")}},
    }
    if source.get("audience"):
        body["spec"]["audiences"] = [source["audience"]]
    request = getattr(client, "request", None)
    if request is None:
        raise TypeError("the node agent's client cannot send a TokenRequest")
    out = await request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token", body=body)
    return str(out["status"]["token"])
