"""Authorization cost: requests authorized per second by RBAC, beside the system:masters bypass
(the admin token's path, measured in the same run as the baseline).

An in-memory API server holds ``--namespaces`` namespaces, one RoleBinding per namespace (a user
bound to the aggregated-rule ClusterRole ``system:aggregate-to-edit``) and ``--cluster-bindings``
extra ClusterRoleBindings for other users. Timed: ``Access.authorize`` (what every HTTP request
goes through) for an allowed request of a bound user, a denied request, and the admin.

Usage: python bench/authz.py [--namespaces 200] [--cluster-bindings 100] [--requests 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from pumice.apiserver.authn import ADMIN_USER, UserInfo
from pumice.apiserver.errors import StatusError
from pumice.testing.cluster import local_cluster


def _rate(fn, n: int) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t0)


async def main(namespaces: int, cluster_bindings: int, requests: int) -> None:
    async with local_cluster(install_crds=False) as cl:
        c = cl.client
        for i in range(namespaces):
            await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i}"}})
            await c.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                            "metadata": {"name": "edit", "namespace": f"team-{i}"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                        "name": "system:aggregate-to-edit"},
                            "subjects": [{"kind": "User", "name": f"user-{i}"}]})
        for i in range(cluster_bindings):
            await c.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                            "metadata": {"name": f"viewer-{i}"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                        "name": "system:aggregate-to-view"},
                            "subjects": [{"kind": "User", "name": f"viewer-{i}"}]})
        access = cl.server.access
        user = UserInfo("user-7", groups=("system:authenticated",))
        path = "/api/v1/namespaces/team-7/configmaps"

        def allowed() -> None:
            access.authorize(user, "POST", path, {})

        def denied() -> None:
            try:
                access.authorize(user, "POST", "/api/v1/namespaces/team-8/configmaps", {})
            except StatusError:
                return
            raise AssertionError("expected a 403")

        def admin() -> None:
            access.authorize(ADMIN_USER, "POST", path, {})

        base = _rate(admin, requests)
        ok = _rate(allowed, requests // 10)
        no = _rate(denied, requests // 10)
        print(f"namespaces={namespaces} rolebindings={namespaces} clusterrolebindings="
              f"{cluster_bindings + 4}")
        print(f"system:masters bypass (baseline): {base:,.0f} authorizations/s")
        print(f"RBAC allowed (RoleBinding):       {ok:,.0f}/s  ratio to baseline {ok / base:.4f}")
        print(f"RBAC denied (every binding read): {no:,.0f}/s  ratio to baseline {no / base:.4f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--namespaces", type=int, default=200)
    ap.add_argument("--cluster-bindings", type=int, default=100)
    ap.add_argument("--requests", type=int, default=20000)
    a = ap.parse_args()
    asyncio.run(main(a.namespaces, a.cluster_bindings, a.requests))
