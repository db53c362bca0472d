"""Authentication: who sent a request.

Three bearer-token authenticators, tried in order (the first that recognises a token wins):

1. the admin token (``<data_dir>/token``, today's single token): user ``pumice-admin`` in the group
   ``system:masters``, which authorization never refuses;
2. a static token file (kube-apiserver's ``--token-auth-file``): CSV lines
   ``token,user,uid,"group1,group2"`` (groups optional);
3. ServiceAccount tokens: JWTs signed with the key in ``<data_dir>/sa.key`` (ES256), issued by
   :class:`ServiceAccountTokenIssuer` for the TokenRequest subresource. A token is accepted while it
   is unexpired, names one of the API audiences, its ServiceAccount still exists with the uid in the
   token and, for a token bound to a Pod or Secret, that object still exists with the bound uid.

Every authenticated user is also in ``system:authenticated``. Requests over the in-process transport
are the API server's own loopback client: ``system:apiserver`` in ``system:masters``.

Mirrors: k8s.io/apiserver pkg/authentication (user.Info, bearertoken, tokenfile),
kubernetes pkg/serviceaccount (claims.go, jwt.go: the ``kubernetes.io`` private claims and the
user info of a ServiceAccount), pkg/registry/core/serviceaccount/storage/token.go (TokenRequest).

Deviates: no token-expiration extension (a 3607 s kubelet token lives 3607 s; the node agent
refreshes it), no legacy Secret-based tokens, no OIDC or client certificates.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pumice._util.files import write_durably
from pumice.api import Obj

__all__ = [
    "ADMIN_USER",
    "DEFAULT_ISSUER",
    "LOOPBACK_USER",
    "Authenticator",
    "BoundObject",
    "ServiceAccountTokenIssuer",
    "TokenFileError",
    "UserInfo",
    "load_token_file",
    "service_account_username",
]

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SYSTEM_MASTERS = "system:masters"
SYSTEM_AUTHENTICATED = "system:authenticated"
SA_PREFIX = "system:serviceaccount:"



@dataclass(frozen=True)
class UserInfo:
    """An authenticated user (k8s.io/apiserver pkg/authentication/user.Info).

    ``extra`` values are lists of strings, as on the wire of TokenReview/SubjectAccessReview.
    """

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def is_master(self) -> bool:
        return SYSTEM_MASTERS in self.groups

    def wire(self) -> Obj:
        """The ``userInfo`` of a TokenReview / SelfSubjectReview status."""
        out: Obj = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN_USER = UserInfo("pumice-admin", groups=(SYSTEM_MASTERS, SYSTEM_AUTHENTICATED))
LOOPBACK_USER = UserInfo("system:apiserver", uid="", groups=(SYSTEM_MASTERS, SYSTEM_AUTHENTICATED))


def service_account_username(namespace: str, name: str) -> str:
    """``system:serviceaccount:<namespace>:<name>``."""
    return f"{SA_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", SYSTEM_AUTHENTICATED)


class TokenFileError(ValueError):
    """A static token file line is malformed (the message names the line)."""


def load_token_file(path: Path | str) -> dict[str, UserInfo]:
    """Parse a kube-apiserver ``--token-auth-file``: ``token,user,uid[,"g1,g2"]`` per line;
    blank lines and ``#`` comments are skipped.

    Returns:
        token -> user.

    Raises:
        TokenFileError: fewer than three columns, an empty token or user, a repeated token.
        OSError: the file cannot be read.
    """
    text = Path(path).read_text()
    out: dict[str, UserInfo] = {}
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3:
            raise TokenFileError(f"{path}:{lineno}: expected token,user,uid[,groups]; got {len(row)} columns")
        token, user, uid = row[0].strip(), row[1].strip(), row[2].strip()
        if not token or not user:
            raise TokenFileError(f"{path}:{lineno}: empty token or user name")
        if token in out:
            raise TokenFileError(f"{path}:{lineno}: duplicate token")
        groups = tuple(g.strip() for g in (row[3] if len(row) > 3 else "").split(",") if g.strip())
        if SYSTEM_AUTHENTICATED not in groups:
            groups = (*groups, SYSTEM_AUTHENTICATED)
        out[token] = UserInfo(user, uid, groups)
    return out


@dataclass(frozen=True)
class BoundObject:
    """The object a token is bound to (TokenRequest ``spec.boundObjectRef``)."""

    kind: str
    name: str
    uid: str


def _load_or_create_key(path: Path | None) -> ec.EllipticCurvePrivateKey:
    if path is not None and path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{path}: the service account signing key must be an EC P-256 key")
        return key
    key = ec.generate_private_key(ec.SECP256R1())
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # durably: a key lost at a power cut would invalidate every token handed out
        write_durably(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()), mode=0o600)
    return key


class ServiceAccountTokenIssuer:
    """Signs and verifies bound ServiceAccount tokens (ES256 JWTs).

    Args:
        key_path: PEM file of the signing key (created when missing); None keeps a fresh key in
            memory (tokens then die with the process).
        issuer: the ``iss`` claim (kube-apiserver ``--service-account-issuer``).
        audiences: the API audiences (``--api-audiences``; default: the issuer).

    The ``kid`` header is the base64url SHA-256 of the public key's DER (kube-apiserver's keyIDFromPublicKey).
    """

    def __init__(self, key_path: Path | None, *, issuer: str = DEFAULT_ISSUER,
                 audiences: tuple[str, ...] | None = None) -> None:
        self._key = _load_or_create_key(key_path)
        self._public = self._key.public_key()
        der = self._public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        import base64

        self.kid = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")
        self.issuer = issuer
        self.audiences = tuple(audiences) if audiences else (issuer,)

    def public_key_pem(self) -> bytes:
        return self._public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def issue(self, *, namespace: str, name: str, sa_uid: str, audiences: list[str], now: float,
              expiration_seconds: int, bound: BoundObject | None = None, node: BoundObject | None = None) -> str:
        """A signed token for ServiceAccount ``namespace/name``.

        Args:
            audiences: the ``aud`` claim (non-empty).
            now: seconds since the epoch (the project clock).
            expiration_seconds: lifetime.
            bound: the Pod or Secret the token is bound to.
            node: the Node of a bound Pod (``kubernetes.io.node``).
        """
        k8s: Obj = {"namespace": namespace, "serviceaccount": {"name": name, "uid": sa_uid}}
        if bound is not None:
            k8s[bound.kind.lower()] = {"name": bound.name, "uid": bound.uid}
        if node is not None:
            k8s["node"] = {"name": node.name, "uid": node.uid}
        claims: Obj = {
            "aud": list(audiences),
            "exp": int(now) + int(expiration_seconds),
            "iat": int(now),
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": k8s,
            "nbf": int(now),
            "sub": service_account_username(namespace, name),
        }
        return jwt.encode(claims, self._key, algorithm="ES256", headers={"kid": self.kid})

    def verify(self, token: str, *, now: float) -> Obj | None:
        """The claims of a token this issuer signed, unexpired and for one of the API audiences;
        None when the token is not one of ours (another authenticator may know it) or invalid."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        if header.get("kid") != self.kid:
            return None
        try:
            claims: Obj = jwt.decode(
                token, self._public, algorithms=["ES256"], audience=list(self.audiences), issuer=self.issuer,
                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False},
            )
        except jwt.PyJWTError:
            return None
        # time checks against the project clock, with kube-apiserver's 60 s leeway
        if not (int(claims.get("nbf", 0)) - 60 <= now < int(claims.get("exp", 0)) + 60):
            return None
        if not claims.get("sub", "").startswith(SA_PREFIX):
            return None
        return claims


#: ``lookup(kind, namespace, name)`` -> the stored object (``kind``: serviceaccounts, pods, secrets,
#: nodes) or None
Lookup = Callable[[str, str, str], Obj | None]


class Authenticator:
    """The authenticator chain of the API server (see the module docstring).

    Args:
        admin_token: the admin bearer token (None: no admin token, e.g. in-process only).
        static_tokens: token -> user, from :func:`load_token_file`.
        issuer: the ServiceAccount token issuer (None: ServiceAccount tokens are not accepted).
        lookup: reads stored objects to check that a token's ServiceAccount and bound object live.
        now: the project clock's ``now``.
    """

    def __init__(self, admin_token: str | None, *, static_tokens: Mapping[str, UserInfo] | None = None,
                 issuer: ServiceAccountTokenIssuer | None = None, lookup: Lookup | None = None,
                 now: Callable[[], float] | None = None) -> None:
        self.admin_token = admin_token
        self.static_tokens = dict(static_tokens or {})
        self.issuer = issuer
        self.lookup = lookup
        self._now = now

    def authenticate(self, token: str) -> UserInfo | None:
        """The user a bearer token belongs to, or None (the API answers 401)."""
        if not token:
            return None
        if self.admin_token is not None and hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return ADMIN_USER
        user = self.static_tokens.get(token)
        if user is not None:
            return user
        if self.issuer is None or token.count(".") != 2:
            return None
        now = self._now() if self._now is not None else 0.0
        claims = self.issuer.verify(token, now=now)
        if claims is None:
            return None
        return self._service_account_user(claims)

    def _service_account_user(self, claims: Obj) -> UserInfo | None:
        k8s = claims.get("kubernetes.io") or {}
        ns = str(k8s.get("namespace", ""))
        sa = k8s.get("serviceaccount") or {}
        name, sa_uid = str(sa.get("name", "")), str(sa.get("uid", ""))
        if claims.get("sub") != service_account_username(ns, name):
            return None
        if self.lookup is not None:
            live = self.lookup("serviceaccounts", ns, name)
            if live is None or (live.get("metadata") or {}).get("uid") != sa_uid:
                return None
            for kind, plural in (("pod", "pods"), ("secret", "secrets")):
                ref = k8s.get(kind)
                if ref:
                    obj = self.lookup(plural, ns, str(ref.get("name", "")))
                    md = (obj or {}).get("metadata") or {}
                    if obj is None or md.get("uid") != ref.get("uid") or md.get("deletionTimestamp"):
                        return None
        extra: dict[str, tuple[str, ...]] = {}
        if k8s.get("pod"):
            extra["authentication.kubernetes.io/pod-name"] = (str(k8s["pod"].get("name", "")),)
            extra["authentication.kubernetes.io/pod-uid"] = (str(k8s["pod"].get("uid", "")),)
        if k8s.get("node"):
            extra["authentication.kubernetes.io/node-name"] = (str(k8s["node"].get("name", "")),)
            extra["authentication.kubernetes.io/node-uid"] = (str(k8s["node"].get("uid", "")),)
        if claims.get("jti"):
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={claims['jti']}",)
        return UserInfo(service_account_username(ns, name), sa_uid, service_account_groups(ns), extra)
