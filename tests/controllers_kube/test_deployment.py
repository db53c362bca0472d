"""Deployments through the whole chain: scaling, rolling out, Recreate, revision history."""

from __future__ import annotations

from pumice.api import Obj
from pumice.api.scheme import DEPLOYMENT, POD, REPLICA_SET
from pumice.controllers.kube.deployment import POD_TEMPLATE_HASH, REVISION
from pumice.controllers.kube.podutil import is_active

from .conftest import Env, deployment, eventually


async def pods_of(env: Env, app: str) -> list[Obj]:
    return [p for p in (await env.client.list(POD, "default", label_selector=f"app={app}")).items if is_active(p)]


async def rollout_complete(env: Env, name: str, replicas: int) -> bool:
    d = await env.client.get(DEPLOYMENT, name, "default")
    st = d.get("status") or {}
    progressing = next((c for c in st.get("conditions") or [] if c["type"] == "Progressing"), {})
    return (st.get("observedGeneration", 0) >= d["metadata"]["generation"] and st.get("updatedReplicas") == replicas
            and st.get("replicas") == replicas and st.get("availableReplicas") == replicas
            and progressing.get("reason") == "NewReplicaSetAvailable")


async def set_replicas(env: Env, name: str, n: int) -> None:
    await env.client.patch(DEPLOYMENT, name, {"spec": {"replicas": n}}, "default")


async def test_deployment_scales_3_to_5_to_2(env: Env) -> None:
    await env.client.create(deployment("web", 3))
    await eventually(lambda: rollout_complete(env, "web", 3), what="3 available")
    assert len(await pods_of(env, "web")) == 3
    await set_replicas(env, "web", 5)
    await eventually(lambda: rollout_complete(env, "web", 5), what="5 available")
    await set_replicas(env, "web", 2)
    await eventually(lambda: rollout_complete(env, "web", 2), what="2 available")

    async def two_pods() -> bool:
        return len(await pods_of(env, "web")) == 2

    await eventually(two_pods, what="surplus pods deleted")
    rss = (await env.client.list(REPLICA_SET, "default")).items
    assert len(rss) == 1
    rs = rss[0]
    assert rs["metadata"]["name"] == f"web-{rs['metadata']['labels'][POD_TEMPLATE_HASH]}"
    assert rs["metadata"]["annotations"][REVISION] == "1"
    d = await env.client.get(DEPLOYMENT, "web", "default")
    conds = {c["type"]: c for c in d["status"]["conditions"]}
    assert conds["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conds["Progressing"]["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has successfully progressed.'


async def test_rolling_update_with_max_unavailable_0_never_drops_below_replicas(env: Env) -> None:
    await env.client.create(deployment("web", 3, max_unavailable=0, max_surge=1))
    await eventually(lambda: rollout_complete(env, "web", 3))
    lowest: list[int] = []

    def watch_availability() -> None:
        d = env.kube.deployment.deployments.store.get("default", "web")  # type: ignore[union-attr]
        if d and d.get("status", {}).get("observedGeneration") == d["metadata"].get("generation"):
            lowest.append(int(d["status"].get("availableReplicas") or 0))

    inf = env.kube.deployment.deployments  # type: ignore[union-attr]
    inf.add_event_handler(None, lambda _o, _n: watch_availability(), None)
    await env.client.patch(DEPLOYMENT, "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:2", "resources": {"requests": {"cpu": "100m"}}}]}}}}, "default")
    await eventually(lambda: rollout_complete(env, "web", 3), what="rollout to nginx:2")
    pods = await pods_of(env, "web")

    async def only_new() -> bool:
        ps = await pods_of(env, "web")
        return len(ps) == 3 and all(p["spec"]["containers"][0]["image"] == "nginx:2" for p in ps)

    await eventually(only_new, what="old pods gone")
    assert lowest and min(lowest) >= 3
    rss = {rs["metadata"]["annotations"][REVISION]: rs for rs in (await env.client.list(REPLICA_SET, "default")).items}
    assert sorted(rss) == ["1", "2"]
    assert rss["1"]["spec"]["replicas"] == 0 and rss["2"]["spec"]["replicas"] == 3
    d = await env.client.get(DEPLOYMENT, "web", "default")
    assert d["metadata"]["annotations"][REVISION] == "2"
    assert len(pods) >= 3


async def test_recreate_removes_old_pods_before_creating_new_ones(env: Env) -> None:
    await env.client.create(deployment("db", 2, strategy="Recreate"))
    await eventually(lambda: rollout_complete(env, "db", 2))
    mixed: list[bool] = []

    def check(_o: Obj, _n: Obj) -> None:
        pods = [p for p in env.kubelet._pods.store.list("default") if is_active(p)  # type: ignore[union-attr]
                and p["metadata"].get("labels", {}).get("app") == "db"]
        mixed.append(len({p["spec"]["containers"][0]["image"] for p in pods}) > 1)

    env.kubelet._pods.add_event_handler(None, check, None)  # type: ignore[union-attr]
    await env.client.patch(DEPLOYMENT, "db", {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "postgres:2", "resources": {"requests": {"cpu": "100m"}}}]}}}}, "default")
    await eventually(lambda: rollout_complete(env, "db", 2), what="recreate rollout")
    assert not any(mixed)


async def test_revision_history_limit_deletes_the_oldest_replicasets(env: Env) -> None:
    d = deployment("web", 1)
    d["spec"]["revisionHistoryLimit"] = 1
    await env.client.create(d)
    for i in range(2, 5):
        await eventually(lambda: rollout_complete(env, "web", 1))
        await env.client.patch(DEPLOYMENT, "web", {"spec": {"template": {"spec": {"containers": [
            {"name": "web", "image": f"nginx:{i}", "resources": {"requests": {"cpu": "100m"}}}]}}}}, "default")
    await eventually(lambda: rollout_complete(env, "web", 1))

    async def two_left() -> bool:
        return len((await env.client.list(REPLICA_SET, "default")).items) == 2

    await eventually(two_left, what="history trimmed to 1 old revision")
    revs = sorted(int(rs["metadata"]["annotations"][REVISION]) for rs in (await env.client.list(REPLICA_SET, "default")).items)
    assert revs == [3, 4]
