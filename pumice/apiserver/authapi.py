"""The create-only authentication and authorization APIs, and the TokenRequest subresource.

- ``POST serviceaccounts/<name>/token`` (authentication.k8s.io/v1 TokenRequest): a bound token;
- authentication.k8s.io/v1 ``tokenreviews`` and ``selfsubjectreviews`` (``kubectl auth whoami``);
- authorization.k8s.io/v1 ``selfsubjectaccessreviews`` (``kubectl auth can-i``),
  ``subjectaccessreviews``, ``localsubjectaccessreviews`` and ``selfsubjectrulesreviews``
  (``kubectl auth can-i --list``).

Nothing here is stored: each POST answers 201 with the request object and its ``status`` filled in.

Mirrors: kubernetes pkg/registry/core/serviceaccount/storage/token.go,
pkg/registry/authentication/{tokenreview,selfsubjectreview}, pkg/registry/authorization/
{selfsubjectaccessreview,subjectaccessreview,localsubjectaccessreview,selfsubjectrulesreview},
pkg/apis/authentication/validation (TokenRequest limits).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pumice._util.clock import rfc3339
from pumice.api import Obj, protobuf
from pumice.api.admission import FieldCause
from pumice.api.godecode import unmarshal_error
from pumice.apiserver import errors
from pumice.apiserver.authn import Authenticator, BoundObject, ServiceAccountTokenIssuer, UserInfo
from pumice.apiserver.authz import Attributes, RBACAuthorizer
from pumice.apiserver.errors import StatusError

__all__ = [
    "REVIEW_PLURALS",
    "access_review",
    "rules_review",
    "self_subject_review",
    "token_request",
    "token_review",
]


#: the lifetime kubelets ask for; such tokens are extended to a year (kube-apiserver's default
#: --service-account-extend-token-expiration), with a warnafter at the requested time
WARN_ONLY_SECONDS = 3607
EXTENDED_SECONDS = 365 * 24 * 3600
MIN_SECONDS = 600

AUTHN = "authentication.k8s.io"
AUTHZ = "authorization.k8s.io"

#: the create-only kinds served here (declared in :data:`pumice.api.scheme.BUILTIN_KINDS`)
REVIEW_PLURALS = frozenset({"tokenreviews", "selfsubjectreviews", "selfsubjectaccessreviews",
                            "subjectaccessreviews", "localsubjectaccessreviews", "selfsubjectrulesreviews"})

#: ``get(plural, namespace, name)`` -> stored object or None
GetFn = Callable[[str, str, str], Obj | None]


def _invalid(kind: str, group: str, name: str, causes: list[FieldCause]) -> StatusError:
    parts = [f"{c.field}: {c.message}" for c in causes]
    body = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return StatusError(422, f'{kind}.{group} "{name}" is invalid: {body}', "Invalid",
                       {"name": name, "group": group, "kind": kind,
                        "causes": [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes]})


def _body(body: Any, kind: str, group: str) -> Obj:
    """The request body as ``kind``, checked as Go's decoder reads it into the kind's struct.

    Raises:
        StatusError: 400 not an object, another kind, or a value of the wrong JSON type
            (``<kind> in version "v1" cannot be handled as a <kind>: json: cannot unmarshal ...``,
            as kube-apiserver's transformDecodeError words it; trial 16 F-1: ``spec: "x"`` was a 500,
            ``audiences: "abc"`` a token for the audiences a, b and c).
    """
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of the request must be a {group}/v1 {kind}")
    if body.get("kind") not in (None, kind):
        raise errors.bad_request(f"the body of the request was of kind {body.get('kind')!r}, expected {kind}")
    why = unmarshal_error(protobuf.message_for(f"{group}/v1", kind), body)
    if why is not None:
        raise errors.DecodeError(f'{kind} in version "v1" cannot be handled as a {kind}: {why}', why)
    return body


def token_request(issuer: ServiceAccountTokenIssuer, get: GetFn, namespace: str, name: str, body: Any,
                  now: float, *, dry_run: bool = False) -> Obj:
    """``POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token``.

    Returns:
        the TokenRequest with ``spec`` defaulted and ``status.token`` / ``status.expirationTimestamp``.

    Raises:
        StatusError: 404 (no ServiceAccount, no bound object), 400 (bound Pod runs as another
            ServiceAccount; unsupported bound kind), 409 (bound uid differs), 422 (lifetime).
    """
    tr = _body(body, "TokenRequest", AUTHN)
    sa = get("serviceaccounts", namespace, name)
    if sa is None:
        raise StatusError(404, f'serviceaccounts "{name}" not found', "NotFound",
                          {"name": name, "kind": "serviceaccounts"})
    spec = dict(tr.get("spec") or {})
    seconds = spec.get("expirationSeconds", 3600)
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise _invalid("TokenRequest", AUTHN, name, [FieldCause("spec.expirationSeconds",
                                                               f"Invalid value: {seconds!r}: must be an integer")])
    if seconds < MIN_SECONDS:
        raise _invalid("TokenRequest", AUTHN, name, [FieldCause(
            "spec.expirationSeconds", f"Invalid value: {seconds}: may not specify a duration less than 10 minutes")])
    if seconds > 1 << 32:
        raise _invalid("TokenRequest", AUTHN, name, [FieldCause(
            "spec.expirationSeconds", f"Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds")])
    audiences = list(spec.get("audiences") or issuer.audiences)
    bound: BoundObject | None = None
    node: BoundObject | None = None
    ref = spec.get("boundObjectRef")
    if ref:
        kind, ref_name, ref_uid = ref.get("kind", ""), str(ref.get("name", "")), str(ref.get("uid", "") or "")
        plural = {"Pod": "pods", "Secret": "secrets"}.get(kind)
        if plural is None or ref.get("apiVersion", "v1") != "v1":
            raise errors.bad_request(f'cannot bind token to object of type {ref.get("apiVersion", "")}, '
                                     f'Kind={kind}')
        obj = get(plural, namespace, ref_name)
        if obj is None:
            raise StatusError(404, f'{plural} "{ref_name}" not found', "NotFound", {"name": ref_name, "kind": plural})
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if kind == "Pod" and (obj.get("spec") or {}).get("serviceAccountName", "default") != name:
            raise errors.bad_request(f'cannot bind token for serviceaccount "{name}" to pod running with different '
                                     "serviceaccount name.")
        if ref_uid and ref_uid != uid:
            raise StatusError(409, f'Operation cannot be fulfilled on {kind} "{ref_name}": the UID in the bound '
                              f"object reference ({ref_uid}) does not match the UID in record. The object might "
                              "have been deleted and then recreated", "Conflict", {"name": ref_name, "kind": kind})
        bound = BoundObject(kind, ref_name, uid)
        node_name = (obj.get("spec") or {}).get("nodeName") if kind == "Pod" else None
        if node_name:
            n = get("nodes", "", node_name)
            if n is not None:
                node = BoundObject("Node", node_name, str((n.get("metadata") or {}).get("uid", "")))
        spec["boundObjectRef"] = {"kind": kind, "apiVersion": "v1", "name": ref_name, "uid": uid}
    spec["audiences"] = audiences
    spec["expirationSeconds"] = seconds
    lifetime = seconds
    if seconds == WARN_ONLY_SECONDS and bound is not None and bound.kind == "Pod" and \
            set(audiences) <= set(issuer.audiences):
        lifetime = EXTENDED_SECONDS
    sa_uid = str((sa.get("metadata") or {}).get("uid", ""))
    token = "" if dry_run else issuer.issue(namespace=namespace, name=name, sa_uid=sa_uid, audiences=audiences,
                                            now=now, expiration_seconds=lifetime, bound=bound, node=node)
    md = dict(tr.get("metadata") or {})
    md.update({"name": name, "namespace": namespace, "creationTimestamp": None})
    return {"kind": "TokenRequest", "apiVersion": f"{AUTHN}/v1", "metadata": md, "spec": spec,
            "status": {"token": token, "expirationTimestamp": rfc3339(now + seconds)}}


def token_review(authn: Authenticator, body: Any) -> Obj:
    """TokenReview: whether ``spec.token`` authenticates, and as whom."""
    tr = _body(body, "TokenReview", AUTHN)
    spec = tr.get("spec") or {}
    user = authn.authenticate(str(spec.get("token") or ""))
    status: Obj = {"authenticated": user is not None, "user": user.wire() if user else {}}
    if user is None:
        status["error"] = "invalid bearer token"
    else:
        status["audiences"] = list(spec.get("audiences") or (authn.issuer.audiences if authn.issuer else ()))
    return {**tr, "apiVersion": f"{AUTHN}/v1", "kind": "TokenReview", "metadata": _meta(tr), "status": status}


def self_subject_review(user: UserInfo, body: Any) -> Obj:
    """SelfSubjectReview: the requesting user (``kubectl auth whoami``)."""
    r = _body(body, "SelfSubjectReview", AUTHN)
    return {"apiVersion": f"{AUTHN}/v1", "kind": "SelfSubjectReview", "metadata": _meta(r),
            "status": {"userInfo": user.wire()}}


def _meta(obj: Obj) -> Obj:
    md = dict(obj.get("metadata") or {})
    md["creationTimestamp"] = None
    return md


def _attributes(user: UserInfo, spec: Obj, namespace: str | None = None) -> Attributes:
    ra = spec.get("resourceAttributes")
    nra = spec.get("nonResourceAttributes")
    if ra:
        return Attributes(user, str(ra.get("verb", "")), True, api_group=str(ra.get("group", "")),
                          api_version=str(ra.get("version", "")), resource=str(ra.get("resource", "")),
                          subresource=str(ra.get("subresource", "")),
                          namespace=namespace if namespace is not None else str(ra.get("namespace", "")),
                          name=str(ra.get("name", "")))
    return Attributes(user, str((nra or {}).get("verb", "")), False, path=str((nra or {}).get("path", "")))


def access_review(authz: RBACAuthorizer, kind: str, body: Any, *, requester: UserInfo,
                  namespace: str | None = None) -> Obj:
    """SelfSubjectAccessReview (the requester), SubjectAccessReview and LocalSubjectAccessReview
    (the user named in ``spec``).

    Raises:
        StatusError: 422 when neither or both of resourceAttributes and nonResourceAttributes are set,
            or (SubjectAccessReview) no user or group is named; 400 when a LocalSubjectAccessReview's
            namespace differs from the URL's.
    """
    r = _body(body, kind, AUTHZ)
    spec = dict(r.get("spec") or {})
    has_r, has_n = bool(spec.get("resourceAttributes")), bool(spec.get("nonResourceAttributes"))
    if has_r == has_n:
        msg = ("Invalid value: \"\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
               if not has_r else "Invalid value: \"\": cannot be specified in combination with resourceAttributes")
        raise _invalid(kind, AUTHZ, "", [FieldCause("spec.resourceAttributes" if not has_r
                                                    else "spec.nonResourceAttributes", msg)])
    if kind == "SelfSubjectAccessReview":
        user = requester
    else:
        if not spec.get("user") and not spec.get("groups"):
            raise _invalid(kind, AUTHZ, "", [FieldCause("spec.user", 'Invalid value: "": at least one of user or '
                                                                     "group must be specified")])
        extra = {k: tuple(v) for k, v in (spec.get("extra") or {}).items()}
        user = UserInfo(str(spec.get("user") or ""), str(spec.get("uid") or ""), tuple(spec.get("groups") or ()),
                        extra)
    if kind == "LocalSubjectAccessReview":
        ra = spec.get("resourceAttributes") or {}
        if has_n or (ra.get("namespace") or namespace) != namespace:
            raise errors.bad_request(f"spec.resourceAttributes.namespace must match namespace: {namespace}")
    allowed, reason = authz.authorize(_attributes(user, spec, namespace))
    status: Obj = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    md = _meta(r)
    if namespace is not None:
        md["namespace"] = namespace
    return {"kind": kind, "apiVersion": f"{AUTHZ}/v1", "metadata": md, "spec": spec, "status": status}


def rules_review(authz: RBACAuthorizer, user: UserInfo, body: Any) -> Obj:
    """SelfSubjectRulesReview: the rules that apply to the requester in ``spec.namespace``.

    Raises:
        StatusError: 400 when ``spec.namespace`` is empty.
    """
    r = _body(body, "SelfSubjectRulesReview", AUTHZ)
    ns = str((r.get("spec") or {}).get("namespace") or "")
    if not ns:
        raise errors.bad_request("no namespace on request")
    resource_rules: list[Obj] = []
    non_resource_rules: list[Obj] = []
    for rule in authz.rules_for(user, ns):
        if rule.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": list(rule.get("verbs") or []),
                                       "nonResourceURLs": list(rule["nonResourceURLs"])})
        else:
            out = {"verbs": list(rule.get("verbs") or []), "apiGroups": list(rule.get("apiGroups") or []),
                   "resources": list(rule.get("resources") or [])}
            if rule.get("resourceNames"):
                out["resourceNames"] = list(rule["resourceNames"])
            resource_rules.append(out)
    return {"kind": "SelfSubjectRulesReview", "apiVersion": f"{AUTHZ}/v1", "metadata": _meta(r),
            "spec": {"namespace": ns},
            "status": {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                       "incomplete": False}}
