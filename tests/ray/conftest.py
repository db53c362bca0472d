"""Shared helpers for the KubeRay controller tests: sample loading and keyword builders."""

from __future__ import annotations

import copy

import pytest
import yaml

from pumice.api import Obj, scheme
from pumice.api.scheme import Scheme
from pumice.testing.fake_client import FakeClient
from pumice.testing.paths import shared_dir


def load_sample(name: str, kind: str | None = None) -> Obj:
    """The first document of ``samples/kuberay/<name>`` (of ``kind`` when given), namespaced."""
    docs = [d for d in yaml.safe_load_all((shared_dir() / "samples" / "kuberay" / name).read_text()) if d]
    for d in docs:
        if kind is None or d.get("kind") == kind:
            d.setdefault("metadata", {}).setdefault("namespace", "default")
            return copy.deepcopy(d)
    raise LookupError(f"{kind} not in {name}")


QUICK_READINESS: Obj = {"httpGet": {"path": "/api/healthz", "port": 52365}, "initialDelaySeconds": 1,
                        "periodSeconds": 1, "timeoutSeconds": 2, "failureThreshold": 10}
"""For the real-Ray tests' own containers: the readiness check KubeRay injects for Ray >= 2.53 (the
node's ``/api/healthz`` on the agent port), asked every second from the first. The injected one
starts after 10 s and repeats every 5 s, which on an idle machine is most of a head node's start.
A container that sets its own probe keeps it (KubeRay injects one only when none is set); the
injected probes stay covered by the tests that run the samples' containers as they are
(test_sample_rayjob_succeeds, the RayService test, the job-submit tests)."""


def ray_scheme() -> Scheme:
    s = Scheme.builtin()
    for rk in (scheme.RAY_CLUSTER, scheme.RAY_JOB, scheme.RAY_SERVICE, scheme.POD_GROUP):
        s.add(rk)
    return s


@pytest.fixture
def client() -> FakeClient:
    return FakeClient(ray_scheme())


_OPT_IN = {
    "ray_long": "long real-Ray acceptance: run with -m ray_long (make test-ray-long)",
    "kuberay_operator": "builds the real KubeRay operator: run with -m kuberay_operator (make test-kuberay)",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``ray_long`` and ``kuberay_operator`` tests run only when ``-m`` names their marker."""
    selected = config.getoption("-m") or ""
    for marker, reason in _OPT_IN.items():
        if marker in selected:
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)
