"""Admission plugin protocol, shared by the API server (which runs the chain) and the components
that contribute plugins (Volcano's webhooks become plugins here) without importing each other.

The API server runs, for each write: every :class:`MutatingPlugin` that ``handles`` the request,
in registration order, then every :class:`ValidatingPlugin`. A plugin rejects by raising
:class:`AdmissionError`, which the server turns into a ``Status`` (default 400 BadRequest for
webhook-style denials, 422 Invalid when ``causes`` are given, 403 Forbidden when asked).

Mirrors: k8s.io/apiserver/pkg/admission (Attributes, MutationInterface, ValidationInterface).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pumice.api.scheme import ResourceKind

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@dataclass
class FieldCause:
    """One field error of an Invalid Status: ``{"reason": ..., "message": ..., "field": ...}``."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


@dataclass
class AdmissionError(Exception):
    """Raised by a plugin to deny a request.

    Attributes:
        message: the Status message (upstream text where a webhook has one).
        code: HTTP code; 400 by default (a webhook denial), 403, 404, 422 ...
        reason: Status reason; derived from ``code`` when empty.
        causes: field causes (422 Invalid).
    """

    message: str
    code: int = 400
    reason: str = ""
    causes: list[FieldCause] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


def forbidden(req: AdmissionRequest, why: str) -> AdmissionError:
    """A 403 denial worded as upstream's ``admission.NewForbidden``:
    ``<resource> "<name>" is forbidden: <why>`` (``pods "p1"``, ``priorityclasses.scheduling.k8s.io
    "g2"``; without a name ``pods is forbidden: <why>``).

    Mirrors: k8s.io/apiserver pkg/admission/errors.go NewForbidden, apimachinery errors.NewForbidden."""
    resource = f"{req.kind.plural}.{req.kind.group}" if req.kind.group else req.kind.plural
    who = f'{resource} "{req.name}"' if req.name else resource
    return AdmissionError(f"{who} is forbidden: {why}", code=403)


class ObjectReader(Protocol):
    """Read-only view of the stored objects given to plugins (no I/O beyond the store)."""

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The stored object, or None."""
        ...

    async def list(self, kind: ResourceKind, namespace: str | None = None) -> list[dict[str, Any]]:
        """Stored objects of a kind (all namespaces when None)."""
        ...

    async def list_by_field(self, kind: ResourceKind, path: str, value: str,
                            namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        """Stored objects of a kind whose field ``path`` (dotted, as a field selector names it)
        equals ``value``, in key order (all namespaces when None); the API server's reader
        answers from an index of that field."""
        ...

    def kind(self, api_version: str, kind: str) -> ResourceKind | None:
        """Resolve a served kind (None when not served, e.g. a CRD not yet installed)."""
        ...


@dataclass
class AdmissionRequest:
    """What a plugin sees.

    ``obj`` is the new object (CREATE/UPDATE; a mutating plugin may change it in place), ``old``
    the stored one (UPDATE/DELETE): the store's own object, read-only (a plugin must not change
    it; it is not copied for every request). ``subresource`` is ``""`` for the main resource.
    """

    operation: Operation
    kind: ResourceKind
    namespace: str | None
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    subresource: str = ""
    dry_run: bool = False
    user: str = "admin"


class MutatingPlugin(Protocol):
    name: str

    def handles(self, req: AdmissionRequest) -> bool:
        """Whether the plugin runs for ``req``: a function of ``req.operation``, ``req.kind`` and
        ``req.subresource`` only (and of the plugin's configuration when it is registered); the
        server asks once per such triple and remembers the answer."""
        ...

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        """Mutate ``req.obj`` in place; raise AdmissionError to deny."""
        ...


class ValidatingPlugin(Protocol):
    name: str

    def handles(self, req: AdmissionRequest) -> bool:
        """As :meth:`MutatingPlugin.handles`: a function of ``req.operation``, ``req.kind`` and
        ``req.subresource`` only."""
        ...

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        """Raise AdmissionError to deny."""
        ...
