"""Admission for HyperNodes (``topology.volcano.sh/v1alpha1`` ``hypernodes``, CREATE and UPDATE).

Two layers, as upstream:

- the CRD's CEL rules on every ``members[].selector``: exactly one of ``exactMatch``,
  ``regexMatch``, ``labelMatch`` (a 422 Invalid, worded as the apiserver words a failed
  ``x-kubernetes-validations`` rule), and ``labelMatch`` only for ``type: Node`` (documented
  upstream, enforced there by the controller ignoring it; pumice refuses it here);
- the ``validatehypernode.volcano.sh`` webhook: at least one member, and every regex pattern
  compiles (a 400 webhook denial with the field-error text).

Mirrors: volcano pkg/webhooks/admission/hypernodes/validate/admit_hypernode.go and the CEL rules of
staging/src/volcano.sh/apis/pkg/apis/topology/v1alpha1/hypernode_types.go.
Deviates: patterns are compiled with Python's ``re`` (upstream: Go RE2); the common errors are
worded as Go's regexp words them (:mod:`pumice._util.goregexp`), the rarer ones keep Python's
description.
"""

from __future__ import annotations

from typing import Any

from pumice._util.goregexp import compile_error
from pumice.api.admission import AdmissionError, AdmissionRequest, FieldCause, ObjectReader
from pumice.api.volcano.constants import MemberType
from pumice.controllers.volcano.admission._common import deny, is_kind

VALIDATE_WEBHOOK = "validatehypernode.volcano.sh"
ONE_OF_REQUIRED = "Either ExactMatch or RegexMatch or LabelMatch must be specified"
ONLY_ONE = "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified"
LABEL_MATCH_NODE_ONLY = "labelMatch can only be used with member type Node"


def cel_causes(hypernode: dict[str, Any]) -> list[FieldCause]:
    """The CRD-level rule failures of ``hypernode`` (empty when it passes)."""
    causes: list[FieldCause] = []
    for i, m in enumerate((hypernode.get("spec") or {}).get("members") or []):
        sel = (m or {}).get("selector") or {}
        n = sum(1 for k in ("exactMatch", "regexMatch", "labelMatch") if sel.get(k) is not None)
        path = f"spec.members[{i}].selector"
        if n == 0:
            causes.append(FieldCause(path, f'Invalid value: "object": {ONE_OF_REQUIRED}'))
        elif n > 1:
            causes.append(FieldCause(path, f'Invalid value: "object": {ONLY_ONE}'))
        if sel.get("labelMatch") is not None and (m or {}).get("type") != MemberType.NODE:
            causes.append(FieldCause(f"{path}.labelMatch", f'Invalid value: "object": {LABEL_MATCH_NODE_ONLY}'))
    return causes


def webhook_errors(hypernode: dict[str, Any]) -> list[str]:
    """The webhook's field errors, in upstream's ``field.ErrorList`` wording (root path ``[]``)."""
    errs: list[str] = []
    members = (hypernode.get("spec") or {}).get("members") or []
    if not members:
        errs.append("[].spec.members: Invalid value: []v1alpha1.MemberSpec(nil): member must have at least one member")
    for m in members:
        pattern = (((m or {}).get("selector") or {}).get("regexMatch") or {}).get("pattern") or ""
        if not pattern:
            continue
        why = compile_error(pattern)
        if why is not None:
            errs.append(f'[].spec.members.selector.regexMatch.pattern: Invalid value: "{pattern}": '
                        f"member regexMatch pattern is invalid: {why}")
    return errs


class HyperNodeValidator:
    name = VALIDATE_WEBHOOK

    def handles(self, req: AdmissionRequest) -> bool:
        return is_kind(req, "topology.volcano.sh", "hypernodes") and req.operation in ("CREATE", "UPDATE")

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        hn = req.obj or {}
        causes = cel_causes(hn)
        if causes:
            detail = ", ".join(f"{c.field}: {c.message}" for c in causes)
            raise AdmissionError(f'HyperNode.topology.volcano.sh "{req.name}" is invalid: {detail}', code=422,
                                 reason="Invalid", causes=causes)
        errs = webhook_errors(hn)
        if errs:
            msg = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
            raise deny(self.name, msg)
