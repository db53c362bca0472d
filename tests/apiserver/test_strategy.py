"""Per-kind strategy objects: a registered strategy is what the registry consults."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pumice.api.admission import FieldCause
from pumice.api.scheme import ResourceKind
from pumice.apiserver import strategy as kstrategy
from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

from .builders import configmap


class _NoForbiddenKey(kstrategy.Strategy):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[str] = []

    def prepare_create(self, reg, rk: ResourceKind, obj: dict) -> None:  # type: ignore[no-untyped-def]
        super().prepare_create(reg, rk, obj)
        obj.setdefault("data", {})["prepared"] = "yes"

    def validate(self, reg, rk: ResourceKind, obj: dict, old: dict | None) -> list[FieldCause]:  # type: ignore[no-untyped-def]
        causes = super().validate(reg, rk, obj, old)
        if "forbidden" in (obj.get("data") or {}):
            causes.append(FieldCause("data.forbidden", "Forbidden: not here", "FieldValueForbidden"))
        return causes

    def after_write(self, reg, rk: ResourceKind, stored) -> None:  # type: ignore[no-untyped-def]
        self.written.append(stored.obj["metadata"]["name"])


@pytest.fixture
def configmap_strategy() -> Iterator[_NoForbiddenKey]:
    before = kstrategy.STRATEGIES.get(("", "configmaps"))
    s = _NoForbiddenKey()
    kstrategy.register("", "configmaps", s)
    yield s
    if before is None:
        kstrategy.STRATEGIES.pop(("", "configmaps"), None)
    else:
        kstrategy.register("", "configmaps", before)


async def test_a_registered_strategy_prepares_validates_and_sees_writes(
        cluster: LocalCluster, configmap_strategy: _NoForbiddenKey) -> None:
    cm = await cluster.client.create(configmap("c1", data={"a": "1"}))
    assert cm["data"] == {"a": "1", "prepared": "yes"}
    assert configmap_strategy.written == ["c1"]
    with pytest.raises(ApiError) as e:
        await cluster.client.create(configmap("c2", data={"forbidden": "1"}))
    assert e.value.code == 422
    assert e.value.status["details"]["causes"][0]["field"] == "data.forbidden"


def test_pod_binding_and_eviction_are_the_pod_strategys_post_subresources() -> None:
    from pumice.api.scheme import BUILTIN_KINDS

    pods = next(rk for rk in BUILTIN_KINDS if rk.plural == "pods")
    assert set(kstrategy.strategy_for(pods).post_subresources) == {"binding", "eviction"}
    configmaps = next(rk for rk in BUILTIN_KINDS if rk.plural == "configmaps")
    assert kstrategy.strategy_for(configmaps).post_subresources == {}
