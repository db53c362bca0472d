"""Action and Plugin protocols, event handlers, and the side-effect seam a session writes through.

Mirrors: volcano pkg/scheduler/framework/interface.go, event.go, pkg/scheduler/cache/interface.go
(Binder, Evictor).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pumice.scheduler.volcano.api.task_info import TaskInfo

if TYPE_CHECKING:
    from pumice.scheduler.volcano.framework.session import Session


@dataclass(frozen=True)
class Event:
    task: TaskInfo


@dataclass(frozen=True)
class EventHandler:
    """Called on every status change into (allocate) or out of (deallocate) an allocated or
    pipelined state."""

    allocate_func: Callable[[Event], None] | None = None
    deallocate_func: Callable[[Event], None] | None = None


class Plugin(Protocol):
    """A policy: registers callbacks on session open, may write status on close."""

    name: ClassVar[str]

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class Action(Protocol):
    """An algorithm run once per session in configured order."""

    def execute(self, ssn: Session) -> None: ...


class ActionClass(Protocol):
    """An action's class: parses its arguments (once, at configuration load) and builds the action.

    ``parse_arguments`` raises ``ArgumentError`` on a wrong type it refuses (unknown keys are ignored;
    see :mod:`pumice.scheduler.volcano.framework.arguments`).
    """

    def __call__(self, args: Any) -> Action: ...

    def parse_arguments(self, arguments: Mapping[str, Any]) -> Any: ...


class SessionCache(Protocol):
    """Where committed work goes: the binder and evictor (dry run: a recorder).

    Both raise on failure; the statement then undoes the operation in the session.
    """

    def bind(self, task: TaskInfo, node_name: str) -> None: ...

    def evict(self, task: TaskInfo, reason: str) -> None: ...


class RecordingCache:
    """A :class:`SessionCache` that records binds and evictions in order (dry run, tests)."""

    def __init__(self) -> None:
        self.binds: dict[str, str] = {}
        self.evictions: list[str] = []
        self.fail_binds: set[str] = set()
        self.fail_evictions: set[str] = set()

    def bind(self, task: TaskInfo, node_name: str) -> None:
        if task.key in self.fail_binds:
            raise RuntimeError(f"failed to bind {task.key} to {node_name}")
        self.binds[task.key] = node_name

    def evict(self, task: TaskInfo, reason: str) -> None:
        if task.key in self.fail_evictions:
            raise RuntimeError(f"failed to evict {task.key}")
        self.evictions.append(task.key)
