"""Scheduler actions, one module each, registered by upstream name.

Mirrors: volcano pkg/scheduler/actions/factory.go.
"""

from __future__ import annotations

from typing import Any

from pumice.scheduler.volcano.framework.registry import Registry

ACTIONS: Registry[Any] = Registry("action")

from pumice.scheduler.volcano.actions import allocate, backfill, enqueue, preempt, reclaim, shuffle  # noqa: E402

for _m in (enqueue, allocate, backfill, preempt, reclaim, shuffle):
    ACTIONS.register(_m.ACTION_NAME, _m.Action)

__all__ = ["ACTIONS"]
