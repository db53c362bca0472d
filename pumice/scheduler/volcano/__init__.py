"""pumice.scheduler.volcano: the Volcano batch scheduler.

Public entry points:

- :func:`build_snapshot` (wire dicts -> ClusterInfo), :func:`run_session` (one session ->
  SessionResult), :func:`load_conf` / :func:`default_conf` (volcano-scheduler.conf);
- :func:`run` (the live scheduler against a KubeClient).

Mirrors: volcano pkg/scheduler.
"""

from __future__ import annotations

from typing import Any

from pumice.scheduler.volcano.cache.snapshot import SessionResult, SnapshotError, build_snapshot, run_session
from pumice.scheduler.volcano.conf import ConfigError, SchedulerConfiguration, default_conf, load_conf


async def run(
    client: Any,
    *,
    conf_path: str | None = None,
    schedule_period: float = 1.0,
    scheduler_name: str = "volcano",
    clock: Any = None,
    stop_event: Any = None,
    sharding_mode: str = "none",
    shard_name: str | None = None,
    publish_conf: bool = False,
) -> None:
    """Run the live scheduler until ``stop_event`` is set (see :mod:`.scheduler`; with
    ``publish_conf`` it and ``volcano-system/volcano-scheduler-configmap`` hold one configuration)."""
    from pumice.scheduler.volcano.scheduler import Scheduler

    sched = Scheduler(
        client, conf_path=conf_path, schedule_period=schedule_period, scheduler_name=scheduler_name, clock=clock,
        sharding_mode=sharding_mode, shard_name=shard_name, publish_conf=publish_conf,
    )
    await sched.run(stop_event)


__all__ = [
    "ConfigError",
    "SchedulerConfiguration",
    "SessionResult",
    "SnapshotError",
    "build_snapshot",
    "default_conf",
    "load_conf",
    "run",
    "run_session",
]
