"""Scheduler actions, one module each, registered by upstream name.

Each module exports ``ACTION_NAME`` and one class named for the action (``AllocateAction``...)
with ``parse_arguments(mapping)`` (run once at configuration load) and ``execute(ssn)``.

Mirrors: volcano pkg/scheduler/actions/factory.go.
"""

from __future__ import annotations

from pumice.scheduler.volcano.actions import (
    allocate,
    backfill,
    enqueue,
    gangpreempt,
    gangreclaim,
    preempt,
    reclaim,
    shuffle,
)
from pumice.scheduler.volcano.actions.allocate import AllocateAction
from pumice.scheduler.volcano.actions.backfill import BackfillAction
from pumice.scheduler.volcano.actions.enqueue import EnqueueAction
from pumice.scheduler.volcano.actions.gangpreempt import GangPreemptAction
from pumice.scheduler.volcano.actions.gangreclaim import GangReclaimAction
from pumice.scheduler.volcano.actions.preempt import PreemptAction
from pumice.scheduler.volcano.actions.reclaim import ReclaimAction
from pumice.scheduler.volcano.actions.shuffle import ShuffleAction
from pumice.scheduler.volcano.framework.interface import ActionClass
from pumice.scheduler.volcano.framework.registry import Registry

ACTIONS: Registry[ActionClass] = Registry("action")

ACTIONS.register(enqueue.ACTION_NAME, EnqueueAction)
ACTIONS.register(allocate.ACTION_NAME, AllocateAction)
ACTIONS.register(backfill.ACTION_NAME, BackfillAction)
ACTIONS.register(preempt.ACTION_NAME, PreemptAction)
ACTIONS.register(reclaim.ACTION_NAME, ReclaimAction)
ACTIONS.register(shuffle.ACTION_NAME, ShuffleAction)
ACTIONS.register(gangpreempt.ACTION_NAME, GangPreemptAction)
ACTIONS.register(gangreclaim.ACTION_NAME, GangReclaimAction)

__all__ = [
    "ACTIONS",
    "AllocateAction",
    "BackfillAction",
    "EnqueueAction",
    "GangPreemptAction",
    "GangReclaimAction",
    "PreemptAction",
    "ReclaimAction",
    "ShuffleAction",
]
