"""API errors as kube-apiserver reports them: a ``Status`` object with reason, code, message and
details.

Every failure inside the server raises :class:`StatusError`; the HTTP layer turns it into a
response with content type exactly ``application/json``.

Mirrors: k8s.io/apimachinery pkg/api/errors/errors.go (NewNotFound, NewAlreadyExists,
NewConflict, NewInvalid, NewBadRequest, NewGone, NewResourceExpired ...).
"""

from __future__ import annotations

from typing import Any

from pumice._util.gostrings import sprint_v
from pumice.api.admission import FieldCause
from pumice.api.patch import MAX_JSON_PATCH_OPERATIONS, PatchError
from pumice.api.scheme import ResourceKind

__all__ = [
    "StatusError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "invalid",
    "method_not_allowed",
    "not_found",
    "resource_version_set_on_create",
    "status_success",
    "unsupported_media_type",
]

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class StatusError(Exception):
    """An API failure.

    Attributes:
        code: HTTP status.
        reason: Status reason (``NotFound``, ``AlreadyExists`` ...); derived from ``code`` when empty.
        message: Status message.
        details: Status details (``name``, ``group``, ``kind``, ``causes``) or None.
    """

    def __init__(self, code: int, message: str, reason: str = "", details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason or _REASONS.get(code, "")
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        st: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # omitempty: an unknown error has none
            st["reason"] = self.reason
        if self.details is not None:
            st["details"] = self.details
        st["code"] = self.code
        return st


def _qualified(rk: ResourceKind) -> str:
    return f"{rk.plural}.{rk.group}" if rk.group else rk.plural


def _details(rk: ResourceKind | None, name: str, kind: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if rk is not None and rk.group:
        d["group"] = rk.group
    if kind is not None:
        d["kind"] = kind
    elif rk is not None:
        d["kind"] = rk.plural
    return d


def not_found(rk: ResourceKind, name: str) -> StatusError:
    return StatusError(404, f'{_qualified(rk)} "{name}" not found', "NotFound", _details(rk, name))


def already_exists(rk: ResourceKind, name: str) -> StatusError:
    return StatusError(409, f'{_qualified(rk)} "{name}" already exists', "AlreadyExists", _details(rk, name))


def precondition_conflict(rk: ResourceKind, name: str, why: str) -> StatusError:
    """409 of a DELETE whose preconditions do not hold: rest.BeforeDelete names the kind, not the
    resource (``Operation cannot be fulfilled on Deployment.apps "d": <why>``; details.kind the Kind)."""
    what = f"{rk.kind}.{rk.group}" if rk.group else rk.kind
    return StatusError(409, f'Operation cannot be fulfilled on {what} "{name}": {why}', "Conflict",
                       _details(rk, name, rk.kind))


def conflict(rk: ResourceKind, name: str, why: str, *, sub: str = "") -> StatusError:
    what = _qualified(rk) + (f"/{sub}" if sub else "")
    return StatusError(409, f'Operation cannot be fulfilled on {what} "{name}": {why}', "Conflict", _details(rk, name))


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(rk: ResourceKind, name: str, causes: list[FieldCause]) -> StatusError:
    """422 Invalid; message ``<Kind> "<name>" is invalid: <field>: <message>`` (bracketed list for
    several causes; a cause repeated word for word is shown once, as field.ErrorList.ToAggregate
    drops repeats, while the details list every cause)."""
    parts = list(dict.fromkeys(f"{c.field}: {c.message}" if c.field else c.message for c in causes))
    body = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = _details(rk, name, rk.kind)
    details["causes"] = [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes]
    return StatusError(422, f'{rk.kind}.{rk.group} "{name}" is invalid: {body}' if rk.group
                       else f'{rk.kind} "{name}" is invalid: {body}', "Invalid", details)


def internal(why: str) -> StatusError:
    """500 InternalError ``Internal error occurred: <why>``, the cause in details (apimachinery
    errors.NewInternalError)."""
    return StatusError(500, f"Internal error occurred: {why}", "InternalError", {"causes": [{"message": why}]})


def resource_version_unset(rk: ResourceKind, name: str) -> StatusError:
    """422 Invalid for a PUT without ``metadata.resourceVersion`` of a kind that allows no
    unconditional update: ``<plural>.<group> "<name>" is invalid: metadata.resourceVersion: Invalid
    value: 0x0: must be specified for an update``, details kind the plural (upstream names the
    resource there).

    Mirrors: apiserver pkg/registry/generic/registry/store.go Update (newResourceVersion == 0)."""
    message = "Invalid value: 0x0: must be specified for an update"
    details = _details(rk, name, rk.plural)
    details["causes"] = [{"reason": "FieldValueInvalid", "message": message, "field": "metadata.resourceVersion"}]
    return StatusError(422, f'{_qualified(rk)} "{name}" is invalid: metadata.resourceVersion: {message}', "Invalid",
                       details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, message, "BadRequest")


class DecodeError(StatusError):
    """A 400 :func:`cannot_handle`; ``why`` is the decoder's own error (a patch handler words the
    same failure its own way, see the registry's patch)."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(400, message, "BadRequest")
        self.why = why


def cannot_handle(rk: ResourceKind, why: str) -> DecodeError:
    """400 for a body kube-apiserver's decoder cannot read into the kind's Go struct (``why``: the
    decoder's error, e.g. ``illegal base64 data at input byte 3``).

    Mirrors: apiserver pkg/endpoints/handlers/rest.go transformDecodeError (the body's kind is
    always known here: the decoder defaults it from the URL)."""
    return DecodeError(f'{rk.kind} in version "{rk.version}" cannot be handled as a {rk.kind}: {why}', why)


#: the Go package of an API group's internal types where it is not the group's first label
_INTERNAL_PACKAGES = {"": "core", "events.k8s.io": "core", "internal.apiserver.k8s.io": "apiserverinternal"}


def wrong_kind(rk: ResourceKind, kind: str) -> DecodeError:
    """400 for a body of a built-in kind served at ``rk``'s version other than ``rk``'s own
    (``kind``): kube-apiserver's decoder reads it as that kind and then fails to convert it into
    ``rk``'s internal type, ``Secret in version "v1" cannot be handled as a ConfigMap: converting
    (v1.Secret) to (core.ConfigMap): unknown conversion`` (the versioned and the internal Go
    packages: the version, and the group's internal package).

    Mirrors: apimachinery pkg/conversion/converter.go (Converter.Convert's unknown conversion),
    apiserver pkg/endpoints/handlers/rest.go transformDecodeError."""
    package = _INTERNAL_PACKAGES.get(rk.group, rk.group.split(".")[0])
    why = f"converting ({rk.version}.{kind}) to ({package}.{rk.kind}): unknown conversion"
    return DecodeError(f'{kind} in version "{rk.version}" cannot be handled as a {rk.kind}: {why}', why)


def strict_decoding(rk: ResourceKind, listed: str) -> StatusError:
    """400 for a body refused under ``fieldValidation=Strict`` (unknown or duplicate fields,
    ``listed`` as the decoder words them), in kube-apiserver's words."""
    return cannot_handle(rk, f"strict decoding error: {listed}")


def forbidden(rk: ResourceKind | None, name: str, why: str, verb: str = "create") -> StatusError:
    qual = _qualified(rk) if rk else ""
    msg = f'{qual} "{name}" is forbidden: {why}' if rk else why
    return StatusError(403, msg, "Forbidden", _details(rk, name))


def resource_version_set_on_create() -> StatusError:
    """A create whose body sets a non-zero ``metadata.resourceVersion``: 400 BadRequest with the
    storage's message (kubectl: ``Error from server (BadRequest): resourceVersion should not be set
    on objects to be created``).

    Mirrors: apiserver pkg/storage/errors.go ErrResourceVersionSetOnCreate, the message of the etcd3
    store's Create. Deviates: kube-apiserver answers it as an unknown error (500, no reason); pumice
    answers bad input with a 4xx, never a 500, so the client sees whose fault it is.
    """
    return StatusError(400, "resourceVersion should not be set on objects to be created", "BadRequest")


def merge_error(message: str) -> StatusError:
    """The Status for a strategic merge patch that strategicpatch refuses with a plain Go error
    (``$setElementOrder`` out of order, an element without its merge key, a wrong argument type):
    400 BadRequest with the library's text as the message.

    Deviation: kube-apiserver does not classify these errors (interpretStrategicMergePatchError
    passes them through) and ErrorToAPIStatus answers them with 500 and no reason; pumice answers
    bad input with a 4xx, never a 500, so it gives them the 400 that the library's classified
    format errors (ErrBadPatchFormatForSetElementOrderList ...) get upstream, with the same text."""
    return StatusError(400, message, "BadRequest")


def json_patch_error(e: PatchError) -> StatusError:
    """The Status for a JSON patch that fails: one that does not decode is 400 with Go's decoding
    text; one that does not apply is 422 with the generic text and empty details, the reason
    (evanphx/json-patch's text) not sent, as kube-apiserver answers (the caller logs it).

    Mirrors: apiserver pkg/endpoints/handlers/patch.go applyJSPatch (NewBadRequest;
    NewGenericServerResponse(422, ..., isUnexpectedResponse=false))."""
    if e.bad_request:
        return StatusError(400, str(e), "BadRequest")
    return StatusError(422, "the server rejected our request due to an error in our request", "Invalid", {})


def json_patch_too_long(count: int) -> StatusError:
    """413 for a JSON patch of more than MAX_JSON_PATCH_OPERATIONS operations (applyJSPatch,
    NewRequestEntityTooLargeError)."""
    return StatusError(413, f"Request entity too large: The allowed maximum operations in a JSON patch is "
                            f"{MAX_JSON_PATCH_OPERATIONS}, got {count}", "RequestEntityTooLarge")


def too_large_resource_version(wanted: int, current: int) -> StatusError:
    """A read at a ``resourceVersion`` newer than the store's: 504 Timeout ``Timeout: Too large
    resource version: <wanted>, current: <current>``, cause ``ResourceVersionTooLarge``, retry
    after 1 s.

    Mirrors: apiserver pkg/storage/errors.go NewTooLargeResourceVersionError (apimachinery
    NewTimeoutError adds the ``Timeout: `` prefix).
    """
    return StatusError(504, f"Timeout: Too large resource version: {wanted}, current: {current}", "Timeout",
                       {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": 1})


def expired(message: str) -> StatusError:
    return StatusError(410, message, "Expired")


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> StatusError:
    return StatusError(405, message, "MethodNotAllowed")


def unsupported_media_type(*, custom: bool) -> StatusError:
    """415 for a PATCH whose Content-Type is not a patch type the resource takes: the built-in
    kinds list strategic merge too, custom resources do not.

    Mirrors: apiserver pkg/endpoints/installer.go (PATCH supportedTypes), apiextensions-apiserver
    customresource_handler.go, negotiation errUnsupportedMediaType.Error."""
    if not custom:  # the route's Consumes refuses it in go-restful, with go-restful's text
        return StatusError(415, "415: Unsupported Media Type", "UnsupportedMediaType")
    types = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
    return StatusError(415, "the body of the request was in an unknown format - accepted media types include: "
                       + ", ".join(types), "UnsupportedMediaType")


def status_success(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        st["details"] = details
    st["code"] = code
    return st


def deleted_status(rk: ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
    """The answer to a DELETE that removed ``obj`` (of ``rk``) at once, for a kind whose store
    does not answer the object: Status Success whose details name the object, the resource's
    group (omitted when empty) and its plural (upstream sets details.kind to the resource), and
    the object's uid; no code (0, omitted).

    Mirrors: apiserver pkg/registry/generic/registry/store.go (finalizeDelete)."""
    md = obj.get("metadata") or {}
    details: dict[str, Any] = {"name": md.get("name", "")}
    if rk.group:
        details["group"] = rk.group
    details["kind"] = rk.plural
    if md.get("uid"):
        details["uid"] = md["uid"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def check_name(body_name: Any, url_name: str) -> None:
    """The update handler's checkName: the body's ``metadata.name`` (None: absent) against the
    URL's. An absent or empty name is 400 ``the name of the object (<url name> based on URL) was
    undeterminable: name must be provided``; another name is 400 ``the name of the object (<name>)
    does not match the name on the URL (<url name>)`` (a name that is not a string shown as Go's
    %v would print it).

    Mirrors: apiserver pkg/endpoints/handlers/rest.go checkName, ContextBasedNaming.ObjectName
    (errEmptyName).

    Raises:
        StatusError: 400 BadRequest.
    """
    if body_name is None or body_name == "":
        raise bad_request(f"the name of the object ({url_name} based on URL) was undeterminable: "
                          "name must be provided")
    if body_name != url_name:
        shown = body_name if isinstance(body_name, str) else sprint_v(body_name)
        raise bad_request(f"the name of the object ({shown}) does not match the name on the URL ({url_name})")
