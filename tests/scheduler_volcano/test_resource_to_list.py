"""A Queue's status.allocated is written as Volcano's ConvertRes2ResList writes it
(pkg/scheduler/util/scheduler_helper.go): memory is NewQuantity(bytes, BinarySI).String()
(``2Gi``; pumice wrote ``2147483648``), cpu and scalars NewMilliQuantity(m, DecimalSI).String()."""

from __future__ import annotations

from pumice.scheduler.volcano.api.resource import Resource


def test_allocated_lists_write_quantity_strings() -> None:
    r = Resource.from_list({"cpu": "1500m", "memory": "2Gi", "pods": "2", "nvidia.com/gpu": "1"})
    assert r.to_list() == {"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": "1", "pods": "2"}
    big = Resource.from_list({"cpu": "1000", "memory": "1000"})
    assert big.to_list() == {"cpu": "1k", "memory": "1k"}
    assert Resource.from_list({"memory": "1G"}).to_list() == {"cpu": "0", "memory": "1000000000"}


def test_allocated_lists_always_name_cpu_and_memory_and_truncate() -> None:
    # ConvertRes2ResList sets cpu and memory whatever their amount, and converts with int64()
    assert Resource().to_list() == {"cpu": "0", "memory": "0"}
    assert Resource.from_list({"nvidia.com/gpu": "2"}).to_list() == {"cpu": "0", "memory": "0", "nvidia.com/gpu": "2"}
    assert Resource(1999.9, 1023.99, {"pods": 2.5}).to_list() == {"cpu": "1999m", "memory": "1023", "pods": "2"}
