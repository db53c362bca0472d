"""The API refuses GCS fault tolerance until pumice implements KubeRay's Redis cleanup."""

from __future__ import annotations

import pytest
import yaml

from pumice.client.base import ApiError
from pumice.controllers.ray.admission import GCS_FT_REJECTED, admission_plugins
from pumice.testing.cluster import local_cluster
from pumice.testing.paths import samples_dir


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((samples_dir() / "kuberay" / name).read_text()) if d]


async def test_the_external_redis_sample_is_refused_with_the_reason() -> None:
    mutating, validating = admission_plugins()
    async with local_cluster(admission=[*mutating, *validating]) as c:
        cluster = next(d for d in _docs("ray-cluster.external-redis.yaml") if d["kind"] == "RayCluster")
        cluster["metadata"].setdefault("namespace", "default")
        with pytest.raises(ApiError) as e:
            await c.client.create(cluster)
        assert e.value.code == 422
        assert GCS_FT_REJECTED in e.value.message
        fields = {cause["field"] for cause in e.value.status["details"]["causes"]}
        assert fields & {"spec.gcsFaultToleranceOptions", "metadata.annotations[ray.io/ft-enabled]"}


async def test_the_sample_rayjob_is_accepted() -> None:
    mutating, validating = admission_plugins()
    async with local_cluster(admission=[*mutating, *validating]) as c:
        for d in _docs("ray-job.sample.yaml"):
            d["metadata"].setdefault("namespace", "default")
            created = await c.client.create(d)
            assert created["metadata"]["uid"]
