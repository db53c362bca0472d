"""The quantity module's writers: every resource amount pumice prints goes through
``canonical_string`` (apimachinery resource.Quantity.String())."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pumice.api.quantity import (
    BINARY_SI,
    DECIMAL_SI,
    canonical_string,
    format_bytes,
    format_millis,
    resource_format,
    resource_string,
    stored_string,
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


#: text -> (stored in a single Quantity field, stored in a ResourceList), each read from
#: kube-apiserver v1.34.4 (an HPA target value and a Deployment's container requests/limits)
KUBE_STORED = {
    "1000m": ("1", "1"), "1024Mi": ("1Gi", "1Gi"), "0.5": ("500m", "500m"), "1e3": ("1e3", "1e3"),
    "1E3": ("1E3", "1E3"), "+5": ("+5", "+5"), "01": ("01", "01"), "1.": ("1.", "1."), "1.500": ("1.500", "1.500"),
    "1.5n": ("2n", "1m"), "1.5Gi": ("1536Mi", "1536Mi"), "8Ei": ("9223372036854775807", "9223372036854775807"),
    "2048Ki": ("2Mi", "2Mi"), "1025Ki": ("1025Ki", "1025Ki"), "0100m": ("0100m", "0100m"), " 1Gi ": ("1Gi", "1Gi"),
    "10e3": ("10e3", "10e3"), "1000e3": ("1e6", "1e6"), "1.5e-3": ("1500e-6", "2e-3"), "1e-10": ("1e-9", "1e-3"),
    "0.0001Ki": ("102400u", "103m"), "1000000000000000000000": ("1", "1"), "1e21": ("1e21", "1e21"),
    "1e400": ("10e399", "10e399"), "-1.5Gi": ("-1536Mi", "-1536Mi"), "-1.5n": ("-2n", "-1m"), "-0": ("0", "0"),
    "00": ("0", "0"), ".": ("0", "0"), "1.0000000001": ("1000000001n", "1001m"), "1000Ki": ("1000Ki", "1000Ki"),
    "1.23456789012345678": ("1234567891n", "1235m"), "12345678901234567890": ("12345678901234567890",) * 2,
    "1i": ("1i", "1i"), "abc": ("abc", "abc"),  # not quantities: kept for validation to refuse
}


@pytest.mark.parametrize("text", sorted(KUBE_STORED))
def test_stored_string_is_what_kube_apiserver_stores(text: str) -> None:
    single, in_list = KUBE_STORED[text]
    assert (stored_string(text), stored_string(text, resource_list=True)) == (single, in_list)


def test_a_decimal_si_amount_past_exa_has_no_suffix_as_in_go() -> None:
    # suffix.go constructBytes finds no suffix for 10**21 and CanonicalizeBytes writes none
    assert canonical_string(Fraction(10**21), DECIMAL_SI) == "1"
    assert format_millis(10**24) == "1"
