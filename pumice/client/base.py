"""The client seam every pumice component talks through.

Objects are plain JSON dicts in wire form (camelCase keys, ``apiVersion``/``kind``/``metadata``).
Kinds are named by :class:`pumice.api.scheme.ResourceKind` (resolve with the client's ``scheme``).

Implementations:
- :class:`pumice.client.kube.Client` over lightkube's ``AsyncClient`` (HTTP to any API server named
  by a kubeconfig, or the in-process streaming ASGI transport);
- counting/recording wrappers in :mod:`pumice.testing` for idempotence tests.

Errors: every non-2xx answer raises :class:`ApiError` carrying the server's ``Status`` object.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pumice.api import Obj
from pumice.api.scheme import ResourceKind, Scheme

PatchType = Literal["merge", "json", "strategic", "apply"]
WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


@dataclass
class ApiError(Exception):
    """A failed API call.

    Attributes:
        code: HTTP status (404, 409, 410, 422 ...).
        reason: the Status ``reason`` (``NotFound``, ``AlreadyExists``, ``Conflict``, ``Invalid``,
            ``Expired``, ``Gone``, ``BadRequest`` ...).
        message: the Status ``message``.
        status: the whole Status object as received.
    """

    code: int
    reason: str = ""
    message: str = ""
    status: Obj = field(default_factory=dict)

    def __str__(self) -> str:
        """The Status message alone, as client-go's ``StatusError.Error()`` prints it (Event texts
        and logs that format the error read as upstream's); the code only when there is none."""
        return self.message or f"{self.code} {self.reason}".strip()


@dataclass
class ExecError(Exception):
    """A command run through ``pods/<name>/exec`` failed: the error channel's Status.

    Attributes:
        message: the Status message (``command terminated with non-zero exit code: ...``).
        exit_code: the ``ExitCode`` cause for a ``NonZeroExitCode`` failure, else None.
    """

    message: str
    exit_code: int | None = None

    def __str__(self) -> str:
        return self.message


class ContextCanceled(Exception):
    """A request refused before it was sent because its caller was told to stop (see
    :func:`cancel_scope`): a controller stopping ends an in-flight reconcile at its next API call.
    The message is Go's ``context.Canceled`` text, ``context canceled``.

    Mirrors: controller-runtime, whose reconciles get a context that the manager cancels at
    shutdown, so that their client calls fail at once (client-go checks the request's context).
    """

    def __init__(self) -> None:
        super().__init__("context canceled")


_CANCELED: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar("pumice_canceled", default=None)


def cancel_scope(canceled: Callable[[], bool]) -> None:
    """From now on in this task (and in the tasks it starts, which copy its context), an API call
    raises :class:`ContextCanceled` before it is sent once ``canceled()`` answers True. Set by a
    controller's worker task for the reconciles it runs."""
    _CANCELED.set(canceled)


def check_canceled() -> None:
    """Raise :class:`ContextCanceled` when the calling task's :func:`cancel_scope` says stop
    (every :class:`pumice.client.kube.Client` request calls this first)."""
    canceled = _CANCELED.get()
    if canceled is not None and canceled():
        raise ContextCanceled()


def detached_context() -> contextvars.Context:
    """A copy of the current context without its :func:`cancel_scope`: for a long-lived task
    started from within a reconcile that is no part of it (a shared informer, an Event writer),
    whose API calls must outlive that reconcile's stop. Pass it as ``create_task(context=...)``."""
    ctx = contextvars.copy_context()
    ctx.run(_CANCELED.set, None)
    return ctx


def is_not_found(e: BaseException) -> bool:
    return isinstance(e, ApiError) and e.code == 404


def is_conflict(e: BaseException) -> bool:
    """409 Conflict (stale resourceVersion), not AlreadyExists."""
    return isinstance(e, ApiError) and e.code == 409 and e.reason == "Conflict"


def is_already_exists(e: BaseException) -> bool:
    return isinstance(e, ApiError) and e.code == 409 and e.reason == "AlreadyExists"


def is_gone(e: BaseException) -> bool:
    """410: the requested resourceVersion was compacted; relist."""
    return isinstance(e, ApiError) and e.code == 410


async def create_unless_exists(client: KubeClient, obj: Obj) -> bool:
    """``client.create(obj)``, tolerating an object of that name that already exists (409
    AlreadyExists, e.g. a cache behind the server).

    Returns:
        True when created, False when it already existed.
    Raises:
        ApiError: any other failed answer.
    """
    try:
        await client.create(obj)
    except ApiError as e:
        if is_already_exists(e):
            return False
        raise
    return True


async def get_or_none(client: KubeClient, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj | None:
    """``client.get``, with None for an object that does not exist (404).

    Raises:
        ApiError: any other failed answer.
    """
    try:
        return await client.get(kind, name, namespace)
    except ApiError as e:
        if is_not_found(e):
            return None
        raise


async def patch_status_conditions(client: KubeClient, kind: ResourceKind, obj: Obj, conditions: list[Obj]) -> bool:
    """Merge-patch ``status.conditions`` of ``obj`` (its name and namespace) to ``conditions``
    through the status subresource.

    Returns:
        False when the object is gone (404), True when written.
    Raises:
        ApiError: any other failed answer.
    """
    md = obj["metadata"]
    try:
        await client.patch(kind, md["name"], {"status": {"conditions": conditions}}, md.get("namespace"),
                           subresource="status")
    except ApiError as e:
        if is_not_found(e):
            return False
        raise
    return True


@dataclass(slots=True)
class WatchEvent:
    """One watch event: ``type`` and the object (a Status dict for ERROR). Not changed once made
    (not a frozen dataclass: a watch makes one per event and informer, and a frozen one costs an
    ``object.__setattr__`` call per field)."""

    type: WatchEventType
    object: Obj


@dataclass(frozen=True)
class ObjectList:
    """A list answer: items, the list's resourceVersion, and the continue token (``""`` at end)."""

    items: list[Obj]
    resource_version: str
    continue_: str = ""


class KubeClient(Protocol):
    """Async access to a Kubernetes API. All methods raise :class:`ApiError` on non-2xx answers.

    ``kind`` arguments accept a :class:`ResourceKind`; ``namespace`` is ignored for cluster-scoped
    kinds and means "all namespaces" when None on list/watch.
    """

    scheme: Scheme

    async def resolve(self, api_version: str, kind: str) -> ResourceKind:
        """The kind as the server serves it, asking discovery when :attr:`scheme` does not know it
        (so that what a component does depends on the server it talks to, not on pumice's list).

        Raises:
            ApiError: 404 when the server does not serve it.
        """
        ...

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj: ...

    async def list(
        self,
        kind: ResourceKind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList: ...

    async def create(self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None) -> Obj:
        """POST ``obj`` (its apiVersion/kind/metadata.namespace select the collection), owning its
        fields as ``field_manager`` (None: the client's own)."""
        ...

    async def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        """PUT the whole object (status ignored by the server); 409 on stale resourceVersion;
        ``field_manager`` overrides the client's for this write."""
        ...

    async def update_status(self, obj: Obj) -> Obj:
        """PUT ``.../status`` (only status is taken); 409 on stale resourceVersion."""
        ...

    async def patch(
        self,
        kind: ResourceKind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> Obj: ...

    async def delete(
        self,
        kind: ResourceKind,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj | None:
        """DELETE; returns the object (with deletionTimestamp) while finalizers or grace hold it,
        or the Status/final object when gone. 404 raises."""
        ...

    def watch(
        self,
        kind: ResourceKind,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        read_only: bool = False,
    ) -> AsyncIterator[WatchEvent]:
        """Stream events after ``resource_version``. Raises ApiError(410) when it is compacted
        (either as an HTTP 410 or as an ERROR event carrying a 410 Status).

        ``read_only``: the caller never changes an event's object (nor anything in it). A client
        may then hand over objects it shares with others: an in-process client gets the API
        server's own stored objects, with no JSON encoding or decoding per watcher (informers
        ask for this; changing such an object would change the server's copy). Other clients
        ignore it."""
        ...

    async def bind(self, namespace: str, pod_name: str, node_name: str, *, pod_uid: str | None = None,
                   annotations: Mapping[str, str] | None = None) -> None:
        """POST ``pods/<name>/binding`` (a v1 Binding); ``annotations`` go on the Binding, and the
        API server copies them onto the Pod (a scheduler's device choice)."""
        ...

    async def evict(self, namespace: str, pod_name: str, *, grace_period_seconds: int | None = None) -> None:
        """POST ``pods/<name>/eviction`` (a policy/v1 Eviction)."""
        ...

    async def close(self) -> None: ...
