"""Access control of the HTTP API: authenticate the request, authorize it, and serve the
create-only review kinds and the TokenRequest subresource that need the user.

Order, as kube-apiserver's handler chain: authentication (401 ``Unauthorized`` on a bad or missing
token), authorization (403 ``Forbidden`` with kube-apiserver's message), then the request.

- Requests over the in-process transport are the API server's loopback user (system:masters).
- ``Impersonate-User`` / ``Impersonate-Group`` (``kubectl --as``) switch the user when the
  requester may ``impersonate`` them.
- Without an ``Authorization`` header: ``/version``, ``/healthz``, ``/livez``, ``/readyz`` are
  public; everything else answers 401, unless the server has no admin token at all (then the
  caller is the admin, as before authentication existed).
- ``pods/exec``, ``pods/attach`` and ``pods/portforward`` over a WebSocket upgrade (a GET) need
  ``create`` on the subresource as well as ``get``, as kube-apiserver 1.31+ checks.

Mirrors: k8s.io/apiserver pkg/endpoints/filters (authentication.go, authorization.go),
pkg/server/filters; kubernetes pkg/registry/core/serviceaccount/storage/token.go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pumice.api import Obj
from pumice.apiserver import authapi, errors
from pumice.apiserver.authn import (
    ADMIN_USER,
    LOOPBACK_USER,
    SA_PREFIX,
    Authenticator,
    ServiceAccountTokenIssuer,
    UserInfo,
)
from pumice.apiserver.authz import Attributes, RBACAuthorizer, forbidden_message, request_attributes
from pumice.apiserver.errors import StatusError

__all__ = ["PUBLIC_PATHS", "Access"]


PUBLIC_PATHS = frozenset({"/version", "/version/", "/healthz", "/livez", "/readyz"})
_CONNECT = frozenset({"exec", "attach", "portforward"})


class Access:
    """Authentication, authorization and the review APIs of one API server.

    Args:
        authenticator: the token authenticator chain.
        authorizer: RBAC over the stored objects.
        issuer: signs TokenRequest tokens.
        get: ``get(plural, namespace, name)`` -> stored core/v1 object or None.
        now: the project clock's ``now``.
        mode: ``"RBAC"`` or ``"AlwaysAllow"``.
    """

    def __init__(self, authenticator: Authenticator, authorizer: RBACAuthorizer, issuer: ServiceAccountTokenIssuer,
                 get: Callable[[str, str, str], Obj | None], now: Callable[[], float], mode: str = "RBAC") -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.issuer = issuer
        self.get = get
        self.now = now
        self.mode = mode

    def authenticate(self, scope: Mapping[str, Any], authorization: str) -> UserInfo | None:
        """The user of a request, or None for an anonymous request to a public path.

        Raises:
            StatusError: 401.
        """
        if scope.get("extensions", {}).get("pumice.in_process"):
            return LOOPBACK_USER
        path = scope.get("path", "")
        if not authorization:
            if self.authenticator.admin_token is None and not self.authenticator.static_tokens:
                return ADMIN_USER
            if path in PUBLIC_PATHS:
                return None
            raise StatusError(401, "Unauthorized", "Unauthorized")
        scheme_, _, token = authorization.partition(" ")
        user = self.authenticator.authenticate(token.strip()) if scheme_.lower() == "bearer" else None
        if user is None:
            if path in PUBLIC_PATHS:
                return None
            raise StatusError(401, "Unauthorized", "Unauthorized")
        return user

    def impersonate(self, user: UserInfo | None, headers: list[tuple[bytes, bytes]]) -> UserInfo | None:
        """Apply ``Impersonate-User`` / ``Impersonate-Group`` headers (``kubectl --as``,
        ``--as-group``): the requester needs the ``impersonate`` verb on ``users`` (or on the
        ``serviceaccounts`` of ``system:serviceaccount:<ns>:<name>``) and on each ``groups``.

        Raises:
            StatusError: 403 when not allowed, 400 for groups without a user.
        """
        as_user = ""
        as_groups: list[str] = []
        for k, v in headers:
            # only two names matter; no Latin-1 letter lowercases to ASCII, so a name whose first
            # twelve bytes are not "impersonate-" in any ASCII case is neither (most requests)
            if k[:12].lower() != b"impersonate-":
                continue
            name = k.decode("latin-1").lower()
            if name == "impersonate-user":
                as_user = v.decode("latin-1")
            elif name == "impersonate-group":
                as_groups.append(v.decode("latin-1"))
        if not as_user:
            if as_groups:
                raise errors.bad_request("requested [" + ", ".join(f"{{Group {g}}}" for g in as_groups)
                                         + "] without impersonating a user")
            return user
        requester = user or UserInfo("system:anonymous", groups=("system:unauthenticated",))
        if as_user.startswith(SA_PREFIX):
            ns, _, sa = as_user[len(SA_PREFIX):].partition(":")
            checks = [Attributes(requester, "impersonate", True, resource="serviceaccounts", namespace=ns, name=sa)]
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
        else:
            checks = [Attributes(requester, "impersonate", True, resource="users", name=as_user)]
            groups = []
        checks += [Attributes(requester, "impersonate", True, resource="groups", name=g) for g in as_groups]
        if not requester.is_master and self.mode != "AlwaysAllow":
            for a in checks:
                if not self.authorizer.authorize(a)[0]:
                    what = f'{a.resource} "{a.name}"'
                    raise StatusError(403, f'{what} is forbidden: User "{requester.name}" cannot impersonate resource '
                                           f'"{a.resource}" in API group "" '
                                           + (f'in the namespace "{a.namespace}"' if a.namespace
                                              else "at the cluster scope"), "Forbidden",
                                      {"name": a.name, "kind": a.resource})
        for g in as_groups:
            if g not in groups:
                groups.append(g)
        if as_user != "system:anonymous" and "system:authenticated" not in groups:
            groups.append("system:authenticated")
        return UserInfo(as_user, groups=tuple(groups))

    def authorize(self, user: UserInfo | None, method: str, path: str, query: Mapping[str, str],
                  upgrade: bool = False) -> None:
        """Raise 403 unless ``user`` may send this request."""
        if user is None or user.is_master or self.mode == "AlwaysAllow":
            return
        a = request_attributes(user, method, path, query)
        self._check(a)
        if upgrade and a.resource_request and a.resource == "pods" and a.subresource in _CONNECT and a.verb == "get":
            self._check(Attributes(user, "create", True, path=a.path, api_group=a.api_group,
                                   api_version=a.api_version, resource=a.resource, subresource=a.subresource,
                                   namespace=a.namespace, name=a.name))

    def _check(self, a: Attributes) -> None:
        allowed, _ = self.authorizer.authorize(a)
        if allowed:
            return
        details: Obj = {}
        if a.resource_request:
            if a.name:
                details["name"] = a.name
            if a.api_group:
                details["group"] = a.api_group
            details["kind"] = a.resource
        raise StatusError(403, forbidden_message(a), "Forbidden", details)

    def special_post(self, user: UserInfo | None, group: str, plural: str, namespace: str | None, name: str | None,
                     sub: str, body: Any, dry_run: bool) -> Obj | None:
        """Serve a POST to a create-only review kind or ``serviceaccounts/<name>/token``; None when
        the request is an ordinary one.

        Raises:
            StatusError: as the handlers in :mod:`pumice.apiserver.authapi`.
        """
        requester = user or UserInfo("system:anonymous", groups=("system:unauthenticated",))
        if group == "" and plural == "serviceaccounts" and sub == "token" and name:
            return authapi.token_request(self.issuer, self.get, namespace or "", name, body, self.now(),
                                         dry_run=dry_run)
        if name is not None or sub or plural not in authapi.REVIEW_PLURALS:
            return None
        if plural == "tokenreviews":
            return authapi.token_review(self.authenticator, body)
        if plural == "selfsubjectreviews":
            return authapi.self_subject_review(requester, body)
        if plural == "selfsubjectrulesreviews":
            return authapi.rules_review(self.authorizer, requester, body)
        kind = {"selfsubjectaccessreviews": "SelfSubjectAccessReview", "subjectaccessreviews": "SubjectAccessReview",
                "localsubjectaccessreviews": "LocalSubjectAccessReview"}[plural]
        if kind == "LocalSubjectAccessReview" and namespace is None:
            raise errors.method_not_allowed()
        return authapi.access_review(self.authorizer, kind, body, requester=requester,
                                     namespace=namespace if kind == "LocalSubjectAccessReview" else None)
