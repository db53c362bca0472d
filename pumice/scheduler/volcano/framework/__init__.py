"""The scheduling framework: Session, Statement, extension points, arguments.

Mirrors: volcano pkg/scheduler/framework.
"""

from pumice.scheduler.volcano.framework.arguments import ArgumentError, arg, decode
from pumice.scheduler.volcano.framework.extension_points import POINTS, Combine, ExtensionPoint
from pumice.scheduler.volcano.framework.interface import Event, EventHandler, RecordingCache, SessionCache
from pumice.scheduler.volcano.framework.session import (
    CloseResult,
    Session,
    open_session,
    run_action,
    run_actions,
)
from pumice.scheduler.volcano.framework.statement import Statement

__all__ = [
    "POINTS",
    "ArgumentError",
    "CloseResult",
    "Combine",
    "Event",
    "EventHandler",
    "ExtensionPoint",
    "RecordingCache",
    "Session",
    "SessionCache",
    "Statement",
    "arg",
    "decode",
    "open_session",
    "run_action",
    "run_actions",
]
