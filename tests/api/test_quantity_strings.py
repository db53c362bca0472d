"""The quantity module's writers: every resource amount pumice prints goes through
``canonical_string`` (apimachinery resource.Quantity.String())."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pumice.api.quantity import (
    BINARY_SI,
    DECIMAL_SI,
    format_bytes,
    format_millis,
    resource_format,
    resource_string,
)


@pytest.mark.parametrize(("millis", "text"), [
    (0, "0"), (1500, "1500m"), (2000, "2"), (10**6, "1k"), (1_500_000, "1500"), (-500, "-500m")])
def test_format_millis_is_new_milli_quantity_decimal_si_string(millis: int, text: str) -> None:
    assert format_millis(millis) == text  # resource.NewMilliQuantity(millis, DecimalSI).String()


@pytest.mark.parametrize(("n", "text"), [
    (0, "0"), (512, "512"), (1000, "1k"), (1024, "1Ki"), (2000, "2000"), (2**30, "1Gi"),
    (10**9, "1000000000"), (3 * 2**29, "1536Mi")])
def test_format_bytes_is_new_quantity_binary_si_string(n: int, text: str) -> None:
    # resource.NewQuantity(n, BinarySI).String(): binary only from 1024 on
    assert format_bytes(n) == text


@pytest.mark.parametrize(("name", "fmt"), [
    ("memory", BINARY_SI), ("ephemeral-storage", BINARY_SI), ("hugepages-2Mi", BINARY_SI),
    ("requests.memory", BINARY_SI), ("limits.ephemeral-storage", BINARY_SI), ("requests.storage", BINARY_SI),
    ("gold.storageclass.storage.k8s.io/requests.storage", BINARY_SI),
    ("cpu", DECIMAL_SI), ("requests.cpu", DECIMAL_SI), ("pods", DECIMAL_SI), ("nvidia.com/gpu", DECIMAL_SI),
    ("count/deployments.apps", DECIMAL_SI), ("gold.storageclass.storage.k8s.io/persistentvolumeclaims", DECIMAL_SI)])
def test_resource_format_is_binary_for_byte_amounts(name: str, fmt: str) -> None:
    assert resource_format(name) == fmt


def test_resource_string_writes_each_resource_in_its_format() -> None:
    assert resource_string("cpu", Fraction(3, 2)) == "1500m"
    assert resource_string("requests.memory", Fraction(2**31)) == "2Gi"
    assert resource_string("memory", Fraction(1000)) == "1k"
    assert resource_string("pods", Fraction(1000)) == "1k"
    assert resource_string("nvidia.com/gpu", Fraction(1, 2)) == "500m"
    assert resource_string("cpu", Fraction(1, 10**4)) == "100u"
