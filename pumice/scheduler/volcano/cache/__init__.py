"""Scheduler cache: snapshots from wire objects and the live informer-fed cache.

Mirrors: volcano pkg/scheduler/cache.
"""

from pumice.scheduler.volcano.cache.snapshot import SessionResult, SnapshotError, build_snapshot, run_session

__all__ = ["SessionResult", "SnapshotError", "build_snapshot", "run_session"]
