"""ray.io objects with GCS fault tolerance are accepted by the API (the KubeRay controllers validate
them, as upstream, which ships no ray.io admission webhook by default)."""

from __future__ import annotations

import yaml

from pumice.testing.cluster import local_cluster
from pumice.testing.paths import samples_dir


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((samples_dir() / "kuberay" / name).read_text()) if d]


async def test_the_external_redis_sample_is_accepted() -> None:
    async with local_cluster() as c:
        cluster = next(d for d in _docs("ray-cluster.external-redis.yaml") if d["kind"] == "RayCluster")
        cluster["metadata"].setdefault("namespace", "default")
        created = await c.client.create(cluster)
        assert created["spec"]["gcsFaultToleranceOptions"]["redisAddress"] == "redis:6379"
