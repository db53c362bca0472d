"""Structural schemas (apiextensions.k8s.io/v1 ``openAPIV3Schema``): wire-type markers for the
typed models, and (below) validation, defaulting and pruning of custom resources.

Type markers: the ray.io and volcano.sh Structs annotate their fields with these so that
:func:`pumice.api.crds.builtin_crds` can turn ``msgspec.json.schema`` output into the structural
schema the upstream CRDs declare (``format: int32``, ``x-kubernetes-int-or-string``, which
defaults are published in the CRD).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

#: JSON-schema key marking a field whose Python default is also the CRD ``default:``; removed
#: by the CRD generator. Fields without it publish no default (Go zero values are not defaults).
CRD_DEFAULT_MARK = "x-pumice-crd-default"

#: JSON-schema key marking a field the CRD lists as required although the model gives it a
#: default (upstream ``minReplicas``: required, defaulted by the server before validation).
CRD_REQUIRED_MARK = "x-pumice-crd-required"

#: Upstream's resource.Quantity pattern (apimachinery ``resource.Quantity`` OpenAPI definition).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

Int32 = Annotated[int, msgspec.Meta(extra_json_schema={"format": "int32"})]
Int64 = Annotated[int, msgspec.Meta(extra_json_schema={"format": "int64"})]
#: RFC 3339 timestamp string (``metav1.Time``), e.g. ``"2024-01-02T03:04:05Z"``.
DateTime = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
#: ``intstr.IntOrString``.
IntOrString = Annotated[int | str, msgspec.Meta(extra_json_schema={"x-kubernetes-int-or-string": True})]
#: ``resource.Quantity``: ``"500m"``, ``"1Gi"``, ``2``.
Quantity = Annotated[
    int | str,
    msgspec.Meta(extra_json_schema={"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]
#: ``corev1.ResourceList``: resource name -> quantity.
ResourceList = dict[str, Quantity]


def crd_default(*, required: bool = False, **extra: Any) -> msgspec.Meta:
    """Meta marking the field's Python default as the CRD's published ``default:``.

    ``required`` also lists the field in its parent's ``required``; ``extra`` adds further schema
    keys (``minimum=1``, ``enum=[...]``) to the field.
    """
    marks: dict[str, Any] = {CRD_DEFAULT_MARK: True}
    if required:
        marks[CRD_REQUIRED_MARK] = True
    return msgspec.Meta(extra_json_schema={**marks, **extra})


def extra(**schema: Any) -> msgspec.Meta:
    """Meta adding schema keys (``minimum``, ``maximum``, ``enum``, ``maxLength``...) verbatim."""
    return msgspec.Meta(extra_json_schema=schema)
