"""pumice.runtime: the controller runtime every pumice controller is built on.

What a controller author uses (all importable from ``pumice.runtime``):

- the contract: :class:`Request` (namespace, name), :class:`Result` (``requeue_after`` seconds),
  :class:`TerminalError`, the :class:`Reconciler` protocol (``async reconcile(req) -> Result``);
- wiring: :class:`Manager` and its builder ``mgr.controller(name).for_(kind).owns(kind)
  .watches(kind, map_fn).with_options(max_concurrent_reconciles=N).complete(reconciler)``;
- predicates: :class:`GenerationChangedPredicate`, :class:`LabelChangedPredicate`,
  :class:`AnnotationChangedPredicate`, or any ``(old, new) -> bool`` callable;
- helpers: :func:`set_controller_reference`, :func:`create_or_update`, :func:`add_finalizer`,
  :func:`remove_finalizer`, :func:`has_finalizer`, :class:`EventRecorder` (``mgr.event_recorder``),
  :class:`Expectations`.

Reads go through the manager's shared informers (``mgr.informers.informer(kind).lister``: dicts,
read-only, deepcopy before mutating); writes through ``mgr.client``.

A minimal controller::

    class ConfigMapCounter:
        def __init__(self, mgr: Manager) -> None:
            self.client = mgr.client
            self.configmaps = mgr.informers.informer(CONFIGMAP).lister

        async def reconcile(self, req: Request) -> Result:
            cm = self.configmaps.get(req.namespace, req.name)
            if cm is None:
                return Result()          # deleted: nothing to do
            ...                          # converge; raise on failure
            return Result()

    mgr = Manager(client)
    mgr.controller("configmap-counter").for_(CONFIGMAP).complete(ConfigMapCounter(mgr))
    await mgr.start()

Mirrors: controller-runtime pkg/ (reconcile, builder, controller, manager, predicate, handler,
controllerutil, leaderelection) and client-go tools/record, tools/leaderelection.
"""

from pumice.runtime.builder import Builder
from pumice.runtime.controller import Controller, Watch, enqueue_for_object, enqueue_for_owner
from pumice.runtime.events import EventRecorder
from pumice.runtime.expectations import Expectations
from pumice.runtime.helpers import (
    AlreadyOwnedError,
    add_finalizer,
    create_or_update,
    has_finalizer,
    remove_finalizer,
    set_controller_reference,
    set_owner_reference,
)
from pumice.runtime.leaderelection import LeaderElectionConfig, LeaderElector
from pumice.runtime.manager import CacheSyncTimeout, LeaderElectionLost, Manager
from pumice.runtime.predicates import (
    AnnotationChangedPredicate,
    FuncPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    Predicate,
    ResourceVersionChangedPredicate,
    and_,
    not_,
    or_,
)
from pumice.runtime.reconcile import Reconciler, Request, Result, TerminalError

__all__ = [
    "AlreadyOwnedError",
    "AnnotationChangedPredicate",
    "Builder",
    "CacheSyncTimeout",
    "Controller",
    "EventRecorder",
    "Expectations",
    "FuncPredicate",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "LeaderElectionConfig",
    "LeaderElectionLost",
    "LeaderElector",
    "Manager",
    "Predicate",
    "Reconciler",
    "Request",
    "ResourceVersionChangedPredicate",
    "Result",
    "TerminalError",
    "Watch",
    "add_finalizer",
    "and_",
    "create_or_update",
    "enqueue_for_object",
    "enqueue_for_owner",
    "has_finalizer",
    "not_",
    "or_",
    "remove_finalizer",
    "set_controller_reference",
    "set_owner_reference",
]
