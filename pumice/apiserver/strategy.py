"""Per-kind behaviour of the API server, as strategy objects registered per kind.

The :class:`~pumice.apiserver.registry.Registry` runs one generic write pipeline for every kind and
asks the kind's :class:`Strategy` at fixed points: prepare for create, prepare for update,
validate, begin a delete (grace period, finalizers that hold the object), and after a write or a
final delete. A kind without its own strategy gets :class:`Strategy` itself (status subresource
handling plus the kind's defaulter); custom resources get :class:`CustomResourceStrategy`.

Register a new built-in kind's behaviour with :func:`register`::

    class LeaseStrategy(Strategy):
        def validate(self, reg, rk, obj, old): ...

    register("coordination.k8s.io", "leases", LeaseStrategy())

Mirrors: k8s.io/apiserver pkg/registry/rest (RESTCreateStrategy, RESTUpdateStrategy,
RESTDeleteStrategy, RESTGracefulDeleteStrategy), kubernetes pkg/registry/core/pod/strategy.go,
pkg/registry/core/namespace/strategy.go, pkg/registry/core/node/strategy.go,
k8s.io/apiextensions-apiserver pkg/registry/customresourcedefinition/strategy.go.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pumice.api import Obj, protobuf
from pumice.api.admission import FieldCause
from pumice.api.scheme import ResourceKind
from pumice.api.selectors import FieldSelector
from pumice.api.validation import SYSTEM_PRIORITY_CLASS_VALUES, validate_container, validate_object
from pumice.apiserver import defaults as kdefaults
from pumice.apiserver import errors, events
from pumice.apiserver.crds import crd_status, validate_crd
from pumice.apiserver.servicealloc import (
    AllocationInternal,
    AllocationInvalid,
    Transaction,
    drop_type_dependent_fields,
)
from pumice.apiserver.store import Stored

if TYPE_CHECKING:
    from pumice.apiserver.registry import DeleteOptions, Registry

__all__ = [
    "RETURNS_DELETED_OBJECT",
    "STRATEGIES",
    "CustomResourceStrategy",
    "Finish",
    "PostHandler",
    "Strategy",
    "register",
    "strategy_for",
]


#: what :meth:`Strategy.begin_create` and :meth:`Strategy.begin_update` return: called with True
#: once the write is stored, False when it failed or was a dry run
Finish = Callable[[bool], None]

#: ``POST <kind>/<name>/<sub>`` handler: ``(registry, namespace, name, body, dry_run) -> None``
PostHandler = Callable[["Registry", str, str, Any, bool], Awaitable[None]]


def zero_status(rk: ResourceKind) -> Obj | None:
    """A new zero ``status`` of the built-in kind ``rk`` as Go's encoding/json writes it; None
    when the kind has no protobuf form (a custom resource: no status until one is written) or
    no status struct."""
    message = protobuf.message_for(rk.api_version, rk.kind)
    field = protobuf.schema().messages[message].by_name.get("status") if message else None
    if field is None or field.type not in protobuf.schema().messages:
        return None
    zero: Obj = protobuf.go_zero(field.type)
    return zero


class Strategy:
    """The default behaviour of a built-in kind; subclass and override what differs.

    Attributes:
        field_labels: field selector paths the kind accepts besides ``metadata.name`` and
            ``metadata.namespace`` (kube-apiserver's GetAttrs / AddFieldLabelConversionFunc).
        defaulter: the kind's scheme defaulter (wire dict changed in place), or None.
        post_subresources: ``POST`` subresource handlers by subresource name (``binding``).
    """

    field_labels: frozenset[str] = frozenset()
    defaulter: Callable[[Obj], None] | None = None
    post_subresources: dict[str, PostHandler] = {}
    #: the store resource when it is not the kind's own ``"<group>/<plural>"``
    storage_resource: str | None = None
    #: True when the stored form differs from the served one (see :meth:`to_storage`)
    converts: bool = False
    #: the kind has ``metadata.generation``: 1 on create, one more on each change of what is
    #: neither metadata nor status (upstream: only the strategies that set Generation in
    #: PrepareForCreate/PrepareForUpdate: workloads, PodDisruptionBudget, NetworkPolicy,
    #: EndpointSlice, Pods (1.33+), CRDs, custom resources; not ConfigMaps, Secrets, Services...)
    generation: bool = False
    #: a PUT without ``metadata.resourceVersion`` overwrites whatever is stored (upstream
    #: AllowUnconditionalUpdate: true for most built-ins; false for CRDs and custom resources,
    #: whose PUT must name the version it read, else 422 "must be specified for an update")
    allow_unconditional_update: bool = True
    #: the strategies of the kind's other served versions, by version (autoscaling/v1 beside the
    #: stored v2 HPAs); empty for single-version kinds
    versions: dict[str, Strategy] = {}

    def to_storage(self, obj: Obj) -> Obj:
        """The stored form of a served object (identity unless :attr:`converts`)."""
        return obj

    def from_storage(self, obj: Obj) -> Obj:
        """The served form of a stored object (identity unless :attr:`converts`)."""
        return obj

    def storage_field_selector(self, fs: FieldSelector) -> FieldSelector:
        """A field selector of the served form, over the stored form."""
        return fs

    def __init__(self, *, field_labels: frozenset[str] | None = None,
                 defaulter: Callable[[Obj], None] | None = None, generation: bool | None = None) -> None:
        if field_labels is not None:
            self.field_labels = field_labels
        if defaulter is not None:
            self.defaulter = defaulter
        if generation is not None:
            self.generation = generation

    def default(self, obj: Obj) -> None:
        if self.defaulter is not None:
            self.defaulter(obj)

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        """PrepareForCreate: called after system metadata is set, on an object the defaulter
        (:meth:`default`, the decoder's defaulting) and then the field manager saw already. A
        kind with a status subresource starts with the zero status, as Go writes it (``{}`` for
        a Deployment, Job or CronJob, ``{"replicas": 0}`` for a ReplicaSet:
        :func:`pumice.api.protobuf.go_zero`)."""
        if "status" in rk.subresources:
            zero = zero_status(rk)
            if zero is None:
                obj.pop("status", None)
            else:
                obj["status"] = zero

    def prepare_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj) -> None:
        """PrepareForUpdate of the main resource: a kind with a status subresource keeps the
        stored status; then the defaulter runs."""
        if "status" in rk.subresources:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        self.default(new)

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        """Validate (``old`` None) or ValidateUpdate: the field causes that make ``obj`` invalid."""
        return validate_object(rk, obj, old)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        """WarningsOnCreate: the warnings a valid create of ``obj`` answers with (``Warning``
        headers), e.g. a deprecated annotation. None by default."""
        return []

    def validate_status(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj) -> list[FieldCause]:
        """ValidateUpdate of the status subresource of a built-in kind: the field causes that make
        the write of ``obj`` over the stored ``old`` invalid. By default none (pumice checks the
        status writes of only the kinds that override this)."""
        return []

    def prepare_status_update(self, new: Obj, old: Obj) -> None:
        """PrepareForUpdate of the status subresource of a built-in kind, after the registry
        took the status from the body and everything else from ``old`` (the stored object):
        drop or fill what the kind's status strategy does, in ``new``. Nothing by default."""

    def prepare_subresource_update(self, reg: Registry, rk: ResourceKind, sub: str, obj: Obj, old: Obj) -> Obj:
        """The object a PUT (or PATCH) of the writable subresource ``sub`` stores, from the body
        ``obj`` and a copy of the stored object ``old`` (status and finalize are the registry's).

        Raises:
            StatusError: 405 for a subresource the kind does not write; 422 for an invalid change.
        """
        raise errors.method_not_allowed()

    def deletion_grace(self, obj: Obj, opts: DeleteOptions) -> int | None:
        """The grace period (seconds) of a delete, or None for kinds without graceful deletion."""
        return None

    #: a deleting object gets ``metadata.deletionGracePeriodSeconds`` (rest.BeforeDelete, or the
    #: store's markAsDeleting: 0); False where the kind's REST has a Delete of its own (Namespaces)
    deletion_grace_period: bool = True

    #: the kind's delete stores the deleting object (deletionTimestamp set) before it removes it,
    #: so a delete that removes it at once leaves it, and answers it, in that form: upstream's
    #: graceful deletion (rest.BeforeDelete and the store's updateForGracefulDeletionAndFinalizers,
    #: Pods only) and the Namespace REST's Delete (phase Terminating first)
    marks_before_delete: bool = False

    def begin_delete(self, obj: Obj) -> None:
        """Changes made to the object when its deletion starts. ``obj`` is the new object, with
        a ``metadata`` of its own and every other top-level value shared with the stored one:
        replace a value to change it, never change one in place."""

    def holds_deletion(self, obj: Obj) -> bool:
        """True while something besides metadata.finalizers keeps a deleting object."""
        return False

    def check_delete(self, rk: ResourceKind, name: str) -> None:
        """The kind's REST Delete of one object by name, before the object is read (so it answers
        whether or not the object exists, dry run or not). A delete of the collection does not
        call it: kube-apiserver's DeleteCollection deletes through the store, not the kind's REST.
        Nothing by default.

        Raises:
            StatusError: the delete is refused."""

    def before_final_delete(self, reg: Registry, obj: Obj) -> None:
        """Called by DELETE just before the object leaves the store."""

    def after_write(self, reg: Registry, rk: ResourceKind, stored: Stored) -> None:
        """Called after every stored create or update."""

    def after_delete(self, reg: Registry, rk: ResourceKind, gone: Stored) -> None:
        """Called after the object left the store."""

    def begin_create(self, reg: Registry, rk: ResourceKind, obj: Obj, dry_run: bool) -> Finish | None:
        """BeginCreate: called after mutating admission, before validation; may change ``obj``.
        Returns None, or a function the registry calls once with True when the object is stored
        and False when the create fails after this point (or is a dry run).

        Raises:
            StatusError: the create is refused here."""
        return None

    def begin_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj, dry_run: bool) -> Finish | None:
        """BeginUpdate of the main resource, as :meth:`begin_create` (``old`` is the stored object)."""
        return None


class PriorityClassStrategy(Strategy):
    """PriorityClasses: the system ones (``system-node-critical``, ``system-cluster-critical``)
    cannot be deleted one by one (403 ``this is a system priority class and cannot be deleted``).

    Mirrors: kubernetes pkg/registry/scheduling/priorityclass/storage/storage.go REST.Delete
    (a DELETE of the collection still removes them, as upstream's store does)."""

    def check_delete(self, rk: ResourceKind, name: str) -> None:
        if name in SYSTEM_PRIORITY_CLASS_VALUES:
            raise errors.forbidden(rk, name, "this is a system priority class and cannot be deleted")


class PodStrategy(Strategy):
    """Pods: Pending status with the QoS class on create, graceful deletion, binding and eviction.

    Mirrors: kubernetes pkg/registry/core/pod/strategy.go (PrepareForCreate, CheckGracefulDelete).
    """

    #: kube-apiserver's pod strategy sets Generation since 1.33 (KEP-5067; observedGeneration
    #: in the status stays behind its feature gate)
    generation = True
    marks_before_delete = True

    field_labels = frozenset({
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName",
    })
    defaulter = staticmethod(kdefaults.pod)

    def __init__(self) -> None:
        super().__init__()
        self.post_subresources = {"binding": _bind, "eviction": _evict}

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        given = obj.get("status")
        status: Obj = given if isinstance(given, dict) else {}
        obj["status"] = {"phase": "Pending", "qosClass": kdefaults.pod_qos_class(obj)}
        if status.get("conditions") and obj["spec"].get("nodeName"):
            obj["status"]["conditions"] = status["conditions"]

    def prepare_subresource_update(self, reg: Registry, rk: ResourceKind, sub: str, obj: Obj, old: Obj) -> Obj:
        """``ephemeralcontainers``: only ``spec.ephemeralContainers`` of the body is taken (defaulted,
        then checked by :func:`ephemeral_containers_causes`); everything else stays as stored.

        Mirrors: kubernetes pkg/registry/core/pod/strategy.go (podEphemeralContainersStrategy,
        dropNonEphemeralContainerUpdates)."""
        if sub != "ephemeralcontainers":
            return super().prepare_subresource_update(reg, rk, sub, obj, old)
        given = (obj.get("spec") or {}).get("ephemeralContainers") if isinstance(obj.get("spec"), dict) else None
        new = old
        spec = new.setdefault("spec", {})
        before = list(spec.get("ephemeralContainers") or [])
        if isinstance(given, list) and given:
            ecs = copy.deepcopy(given)
            kdefaults.pod_spec({"ephemeralContainers": ecs})
            spec["ephemeralContainers"] = ecs
        else:
            spec.pop("ephemeralContainers", None)
        causes = ephemeral_containers_causes(spec, before)
        if causes:
            raise errors.invalid(rk, str(new["metadata"].get("name", "")), causes)
        return new

    def deletion_grace(self, obj: Obj, opts: DeleteOptions) -> int | None:
        spec = obj.get("spec") or {}
        if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        if opts.grace_period_seconds is not None:
            return opts.grace_period_seconds
        return int(spec.get("terminationGracePeriodSeconds", 30) or 0)


#: the container fields an ephemeral container may set (validation.go allowedEphemeralContainerFields)
EPHEMERAL_ALLOWED = frozenset({
    "name", "image", "command", "args", "workingDir", "envFrom", "env", "volumeMounts", "volumeDevices",
    "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin",
    "stdinOnce", "tty", "targetContainerName"})


def ephemeral_containers_causes(spec: Obj, before: list[Obj]) -> list[FieldCause]:
    """Why ``spec.ephemeralContainers`` may not replace ``before``: an existing ephemeral container
    removed or changed; then for each ephemeral container, in upstream's order: the container
    checks every container gets (:func:`pumice.api.validation.validate_container`: name a DNS-1123
    label, image required...), a name another container has, a target that is not a container or
    init container, a field an ephemeral container cannot set (ports, resources, probes,
    lifecycle, restartPolicy...).

    Mirrors: kubernetes pkg/apis/core/validation/validation.go (ValidatePodEphemeralContainersUpdate,
    validateEphemeralContainers)."""
    path = "spec.ephemeralContainers"
    ecs = [c for c in spec.get("ephemeralContainers") or [] if isinstance(c, dict)]
    causes: list[FieldCause] = []
    by_name = {c.get("name"): c for c in ecs}
    for old in before:
        new = by_name.get(old.get("name"))
        if new is None:
            causes.append(FieldCause(path, f'Forbidden: existing ephemeral containers "{old.get("name")}" may not be '
                                           "removed\n", "FieldValueForbidden"))
        elif new != old:
            causes.append(FieldCause(path, f'Forbidden: existing ephemeral containers "{old.get("name")}" may not be '
                                           "changed\n", "FieldValueForbidden"))
    others = {c.get("name") for key in ("containers", "initContainers") for c in spec.get(key) or []
              if isinstance(c, dict)}
    seen = set(others)
    for i, c in enumerate(ecs):
        at = f"{path}[{i}]"
        causes += validate_container(c, at)
        name = c.get("name")
        if name in seen:
            causes.append(FieldCause(f"{at}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
        seen.add(name)
        target = c.get("targetContainerName")
        if target and target not in others:
            causes.append(FieldCause(f"{at}.targetContainerName", f'Not found: "{target}"', "FieldValueNotFound"))
        for key in sorted(set(c) - EPHEMERAL_ALLOWED):
            if c[key] not in (None, [], {}, ""):
                causes.append(FieldCause(f"{at}.{key}", "Forbidden: cannot be set for an Ephemeral Container",
                                         "FieldValueForbidden"))
    return causes


async def _bind(reg: Registry, namespace: str, name: str, body: Any, dry_run: bool) -> None:
    await reg.bind(namespace, name, body, dry_run=dry_run)


async def _evict(reg: Registry, namespace: str, name: str, body: Any, dry_run: bool) -> None:
    if not dry_run:
        await reg.evict(namespace, name, body)


class NamespaceStrategy(Strategy):
    """Namespaces: the ``kubernetes`` finalizer and phase Active on create, spec kept on update,
    Terminating while spec.finalizers hold it.

    Mirrors: kubernetes pkg/registry/core/namespace/strategy.go.
    """

    field_labels = frozenset({"status.phase"})
    defaulter = staticmethod(kdefaults.namespace)

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        finalizers = list(spec.get("finalizers") or [])
        if "kubernetes" not in finalizers:  # required on create; others given are kept
            finalizers.append("kubernetes")
        spec["finalizers"] = finalizers
        obj["status"] = {"phase": "Active"}

    def prepare_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj) -> None:
        super().prepare_update(reg, rk, new, old)
        new["spec"] = copy.deepcopy(old.get("spec", {}))

    deletion_grace_period = False  # the Namespace REST's Delete sets deletionTimestamp and phase only
    marks_before_delete = True

    def begin_delete(self, obj: Obj) -> None:
        obj["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}

    def holds_deletion(self, obj: Obj) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))


class ServiceStrategy(Strategy):
    """Services: created with an empty load-balancer status, as Go serializes ServiceStatus;
    cluster IPs and node ports allocated on create and update and freed on delete
    (:mod:`pumice.apiserver.servicealloc`, one allocator per registry).

    Mirrors: kubernetes pkg/registry/core/service/strategy.go (PrepareForCreate,
    PrepareForUpdate's dropTypeDependentFields), pkg/registry/core/service/storage/storage.go
    (beginCreate, beginUpdate, afterDelete).
    """

    field_labels = frozenset({"spec.clusterIP", "spec.type"})
    defaulter = staticmethod(kdefaults.service)

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        super().prepare_create(reg, rk, obj)
        obj["status"] = {"loadBalancer": {}}

    def prepare_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj) -> None:
        super().prepare_update(reg, rk, new, old)
        drop_type_dependent_fields(new, old)

    def begin_create(self, reg: Registry, rk: ResourceKind, obj: Obj, dry_run: bool) -> Finish | None:
        alloc = reg.service_allocators()
        return self._finish(rk, obj, lambda: alloc.allocate_create(obj, dry_run))

    def begin_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj, dry_run: bool) -> Finish | None:
        alloc = reg.service_allocators()
        return self._finish(rk, new, lambda: alloc.allocate_update(new, old, dry_run))

    @staticmethod
    def _finish(rk: ResourceKind, obj: Obj, allocate: Callable[[], Transaction]) -> Finish:
        """Run ``allocate``; its failures as the API errors upstream gives (422 Invalid with the
        field causes, 500 InternalError for a full range)."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        try:
            txn = allocate()
        except AllocationInvalid as e:
            raise errors.invalid(rk, name, e.causes) from None
        except AllocationInternal as e:
            raise errors.internal(str(e)) from None

        def finish(stored: bool) -> None:
            if stored:
                txn.commit()
            else:
                txn.revert()
        return finish

    def after_delete(self, reg: Registry, rk: ResourceKind, gone: Stored) -> None:
        reg.service_allocators().release(gone.obj)


class JobStrategy(Strategy):
    """Jobs: the selector and template labels generated from the uid on create, after the field
    manager (:func:`pumice.apiserver.defaults.job_generate_selector`).

    Mirrors: kubernetes pkg/registry/batch/job/strategy.go (PrepareForCreate)."""

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        super().prepare_create(reg, rk, obj)
        kdefaults.job_generate_selector(obj)


class KeepStatusOnCreate(Strategy):
    """Kinds whose creator may set status (Nodes: the kubelet registers itself with status)."""

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        """Nothing: the status given is kept (defaulted before, as every kind's body)."""


class EventStrategy(KeepStatusOnCreate):
    """Events expire ``event_ttl`` after their last write (kube-apiserver --event-ttl). The
    stored form has the fields Go always writes for a core/v1 Event (``eventTime``,
    ``firstTimestamp``, ``lastTimestamp`` null, ``reportingComponent``, ``reportingInstance`` "")."""

    storage_resource = events.CORE_RESOURCE

    def begin_create(self, reg: Registry, rk: ResourceKind, obj: Obj, dry_run: bool) -> Finish | None:
        # after the field manager ran: Go's zero values are no one's fields (its update compares
        # with the kind's zero object)
        protobuf.fill_go_zero(obj, events.CORE_MESSAGE)
        return None

    def begin_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj, dry_run: bool) -> Finish | None:
        protobuf.fill_go_zero(new, events.CORE_MESSAGE)
        return None

    def after_write(self, reg: Registry, rk: ResourceKind, stored: Stored) -> None:
        reg.track_event(reg.storage_resource(rk), stored)


class EventsV1Strategy(EventStrategy):
    """events.k8s.io/v1 Events: stored as core/v1 Events (one store behind both APIs).

    Mirrors: kubernetes pkg/apis/events/v1/conversion.go.
    """

    converts = True

    def begin_create(self, reg: Registry, rk: ResourceKind, obj: Obj, dry_run: bool) -> Finish | None:
        return None  # the core/v1 fields come with to_storage, the events/v1 ones with from_storage

    def begin_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj, dry_run: bool) -> Finish | None:
        return None

    def to_storage(self, obj: Obj) -> Obj:
        return events.to_core(obj)

    def from_storage(self, obj: Obj) -> Obj:
        return events.to_events_v1(obj)

    def storage_field_selector(self, fs: FieldSelector) -> FieldSelector:
        return events.core_field_selector(fs)


class CRDStrategy(Strategy):
    """CustomResourceDefinitions: computed status, CRD validation, serving on write, instances
    dropped with the CRD.

    Mirrors: k8s.io/apiextensions-apiserver pkg/registry/customresourcedefinition/strategy.go.
    """

    allow_unconditional_update = False

    generation = True

    defaulter = staticmethod(kdefaults.custom_resource_definition)

    def prepare_create(self, reg: Registry, rk: ResourceKind, obj: Obj) -> None:
        obj["status"] = crd_status(obj, reg.now())

    def prepare_update(self, reg: Registry, rk: ResourceKind, new: Obj, old: Obj) -> None:
        super().prepare_update(reg, rk, new, old)
        new["status"] = crd_status(new, reg.now())

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        return super().validate(reg, rk, obj, old) + validate_crd(obj, old)

    def before_final_delete(self, reg: Registry, obj: Obj) -> None:
        reg.drop_instances(obj)

    def after_write(self, reg: Registry, rk: ResourceKind, stored: Stored) -> None:
        reg.install_crd(stored.obj)

    def after_delete(self, reg: Registry, rk: ResourceKind, gone: Stored) -> None:
        reg.uninstall_crd(gone.obj)


#: the field error types that stop the x-kubernetes-validations rules from running
_BLOCKING_CEL = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany",
                           "FieldValueTypeInvalid"})


def blocking_cause() -> FieldCause:
    """The cause apiextensions adds when schema errors kept the ``x-kubernetes-validations``
    rules from running (hasBlockingErr)."""
    return FieldCause("<nil>", "Invalid value: null: some validation rules were not checked because the object was "
                               "invalid; correct the existing errors to complete validation")


def blocks_rules(causes: list[FieldCause]) -> bool:
    """Whether ``causes`` hold an error that keeps the rules from running."""
    return any(c.reason in _BLOCKING_CEL for c in causes)


class CustomResourceStrategy(Strategy):
    """Custom resources: validation against the served version's structural schema, then its
    ``x-kubernetes-validations`` rules (:mod:`pumice.apiserver.celrules`; versions without rules
    skip this). Pruning and defaulting happen earlier, in the
    registry's decode step.

    Mirrors: k8s.io/apiextensions-apiserver pkg/registry/customresource/strategy.go.
    """

    allow_unconditional_update = False

    generation = True

    def validate(self, reg: Registry, rk: ResourceKind, obj: Obj, old: Obj | None) -> list[FieldCause]:
        causes = super().validate(reg, rk, obj, old)
        cr = reg.custom(rk)
        version = cr.versions.get(rk.version) if cr is not None else None
        if version is not None and version.compiled is not None:
            body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
            causes.extend(reg.schema_causes(version.compiled, body))
        if version is not None and version.rules is not None:
            if blocks_rules(causes):
                causes.append(blocking_cause())
            else:
                causes.extend(version.rules.validate(obj, old))
        return causes


#: the strategy of each built-in kind, by ``(group, plural)``
STRATEGIES: dict[tuple[str, str], Strategy] = {}

#: the built-in kinds (group, plural) whose DELETE, when it removes the object at once, answers the
#: object as removed (their store's ReturnDeletedObject); every other kind, custom resources
#: included, then answers a Status Success naming it (the store's finalizeDelete). CRDs: pumice
#: removes a CRD at once, where kube-apiserver's customresourcecleanup finalizer holds it and
#: answers the held object; pumice answers the object too.
#: Mirrors: kubernetes pkg/registry/*/*/storage/storage.go (ReturnDeletedObject: true), 1.34-1.36.
RETURNS_DELETED_OBJECT = frozenset({
    ("", "pods"), ("", "namespaces"), ("", "services"), ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"), ("", "serviceaccounts"), ("", "resourcequotas"), ("", "podtemplates"),
    ("storage.k8s.io", "storageclasses"), ("storage.k8s.io", "csidrivers"), ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "volumeattachments"), ("storage.k8s.io", "volumeattributesclasses"),
    ("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "resourceclaimtemplates"),
    ("resource.k8s.io", "resourceslices"), ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "devicetaintrules"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
})

_DEFAULT = Strategy()
class APIServiceStrategy(Strategy):
    """APIServices: a PUT must carry the resourceVersion it read.

    Mirrors: k8s.io/kube-aggregator pkg/registry/apiservice/strategy.go (AllowUnconditionalUpdate false).
    """

    allow_unconditional_update = False


_CUSTOM = CustomResourceStrategy()


def register(group: str, plural: str, strategy: Strategy) -> None:
    """Give the built-in kind ``group``/``plural`` its strategy (replacing an earlier one)."""
    STRATEGIES[(group, plural)] = strategy


def strategy_for(rk: ResourceKind, *, custom: bool = False) -> Strategy:
    """The strategy serving ``rk`` (``custom``: the kind comes from a CRD)."""
    if custom:
        return _CUSTOM
    strategy = STRATEGIES.get((rk.group, rk.plural), _DEFAULT)
    return strategy.versions.get(rk.version, strategy) if strategy.versions else strategy


register("", "pods", PodStrategy())
register("", "namespaces", NamespaceStrategy())
register("", "nodes", KeepStatusOnCreate(field_labels=frozenset({"spec.unschedulable"})))
register("", "events", EventStrategy(field_labels=frozenset({
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
    "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
    "reason", "reportingComponent", "source", "type",
})))
register("events.k8s.io", "events", EventsV1Strategy(field_labels=frozenset({
    "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid", "regarding.apiVersion",
    "regarding.resourceVersion", "regarding.fieldPath", "reason", "reportingController", "type",
    "deprecatedSource",
})))
register("", "secrets", Strategy(field_labels=frozenset({"type"}), defaulter=kdefaults.secret))
register("", "services", ServiceStrategy())
register("", "limitranges", Strategy(defaulter=kdefaults.limit_range))
register("apps", "deployments", Strategy(defaulter=kdefaults.deployment, generation=True))
register("apps", "replicasets", Strategy(field_labels=frozenset({"status.replicas"}),
                                         defaulter=kdefaults.replicaset, generation=True))
register("batch", "jobs", JobStrategy(field_labels=frozenset({"status.successful"}), defaulter=kdefaults.job,
                                      generation=True))
register("discovery.k8s.io", "endpointslices", Strategy(generation=True))
register("scheduling.k8s.io", "priorityclasses", PriorityClassStrategy(defaulter=kdefaults.priority_class))
register("apiextensions.k8s.io", "customresourcedefinitions", CRDStrategy())
register("apiregistration.k8s.io", "apiservices", APIServiceStrategy())
