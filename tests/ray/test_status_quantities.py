"""RayCluster status quantities print as KubeRay's Go Quantity does (trial 10 F-2: a worker cpu of
``1e400`` printed as a 401-digit integer; Go keeps the DecimalExponent format, with the exponent a
multiple of 3 as AsCanonicalBytes makes it: ``10e399``)."""

from __future__ import annotations

from fractions import Fraction

from pumice.api.quantity import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, canonical_string
from pumice.controllers.ray.common import resources as res


def group(cpu: str | None, memory: str | None = None, replicas: int = 1) -> dict:
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"groupName": "g", "replicas": replicas, "minReplicas": 0, "maxReplicas": 10,
            "template": {"spec": {"containers": [{"name": "w", "resources": {"requests": req}}]}}}


def spec(head: dict, *workers: dict) -> dict:
    return {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "resources": {"requests": head}}]}}},
            "workerGroupSpecs": list(workers)}


def status(sp: dict, name: str) -> str:
    return res.status_quantity(*res.desired_quantities(sp), name)


def test_canonical_strings_keep_the_format() -> None:
    assert canonical_string("1e400") == "10e399" and canonical_string("1e3") == "1e3"
    assert canonical_string(Fraction(10) ** 400, DECIMAL_EXPONENT) == "10e399"
    assert canonical_string(Fraction(3 * 10**9), DECIMAL_SI) == "3G"
    assert canonical_string(Fraction(3 * 2**30), BINARY_SI) == "3Gi"
    assert canonical_string(Fraction(3, 2), DECIMAL_SI) == "1500m"
    assert canonical_string("2048Mi") == "2Gi" and canonical_string("1000m") == "1"


def test_a_huge_worker_cpu_prints_as_upstream_does() -> None:
    sp = spec({}, group("1e400"))
    assert status(sp, "cpu") == "10e399"
    # the head's DecimalSI cpu comes first: the sum is DecimalSI, all its digits (as Go prints it)
    assert status(spec({"cpu": "1"}, group("1e400")), "cpu") == "1" + "0" * 399 + "1"


def test_the_first_quantity_gives_the_format() -> None:
    assert status(spec({"cpu": "500m", "memory": "2G"}, group("1", "1G", replicas=2)), "memory") == "4G"
    assert status(spec({"cpu": "500m", "memory": "2Gi"}, group("1", "1Gi", replicas=2)), "memory") == "4Gi"
    assert status(spec({"cpu": "500m"}, group("1", replicas=2)), "cpu") == "2500m"
    # a zero head takes the workers' format
    assert status(spec({"memory": "0"}, group(None, "1Gi", replicas=3)), "memory") == "3Gi"
    assert status(spec({}), "cpu") == "0"


def test_one_walk_gives_the_sums_and_their_formats_suspended_groups_left_out() -> None:
    suspended = {**group("5", "5Gi", replicas=3), "suspend": True}
    sp = spec({"cpu": "500m"}, group("1", "2G", replicas=2), suspended, group("0", "1Gi", replicas=0))
    total, formats = res.desired_quantities(sp)
    assert total == {"cpu": Fraction(5, 2), "memory": Fraction(4 * 10**9)}
    assert formats == {"cpu": DECIMAL_SI, "memory": DECIMAL_SI}
    assert res.desired_resources(sp) == total
    assert res.min_resources(sp) == {"cpu": Fraction(1, 2), "memory": Fraction(0)}
