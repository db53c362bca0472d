"""sla: jobs waiting longer than their SLA are ordered first and forced through enqueue and
pipelining.

Mirrors: volcano pkg/scheduler/plugins/sla/sla.go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice._util.duration import parse_go_duration
from pumice.api.volcano import constants as _c
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.types import SLA_WAITING_TIME_KEY, Vote
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, arg, decode
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "sla"

__all__ = ["PLUGIN_NAME", "SlaArgs", "SlaPlugin", "parse_go_duration"]


class SlaArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    waiting_time: str = arg(SLA_WAITING_TIME_KEY, "")


class SlaPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: SlaArgs) -> None:
        self.default: float | None = None
        if args.waiting_time:
            try:
                d = parse_go_duration(args.waiting_time)
            except ValueError as e:
                raise ArgumentError(f"{SLA_WAITING_TIME_KEY}: {e}") from e
            self.default = d if d > 0 else None

    def waiting(self, job: JobInfo) -> float | None:
        ann = ((job.pod_group or {}).get("metadata") or {}).get("annotations") or {}
        for key in (_c.SLA_WAITING_TIME_KEY, SLA_WAITING_TIME_KEY):
            if key in ann:
                try:
                    d = parse_go_duration(str(ann[key]))
                except ValueError:
                    continue
                if d > 0:
                    return d
        return self.default

    def on_session_open(self, ssn: Session) -> None:
        def job_order(l: JobInfo, r: JobInfo) -> int:  # noqa: E741
            lw, rw = self.waiting(l), self.waiting(r)
            if lw is None:
                return 0 if rw is None else 1
            if rw is None:
                return -1
            ld, rd = l.creation + lw, r.creation + rw
            if ld < rd:
                return -1
            if ld > rd:
                return 1
            return 0

        ssn.add_job_order_fn(PLUGIN_NAME, job_order)

        def permit(job: JobInfo) -> int:
            w = self.waiting(job)
            if w is None:
                return Vote.ABSTAIN
            return Vote.PERMIT if ssn.now - job.creation >= w else Vote.ABSTAIN

        ssn.add_job_enqueueable_fn(PLUGIN_NAME, permit)
        ssn.add_job_pipelined_fn(PLUGIN_NAME, permit)

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> SlaArgs:
    """Parse (once, at configuration load) the arguments under their upstream keys.

    Raises:
        ArgumentError: a duration that does not parse (unknown keys and wrong types are ignored
            with a warning, as upstream).
    """
    args = decode(SlaArgs, arguments)
    SlaPlugin(args)
    return args


new = SlaPlugin
