"""The click parameter type of Go duration flags (``--timeout 5m``, ``--schedule-period 1s``), as
pflag's ``DurationVar`` takes them: Go's ``time.ParseDuration`` (:mod:`pumice._util.duration`),
its error text as the usage error."""

from __future__ import annotations

from typing import Any

import click

from pumice._util.duration import parse_go_duration


class GoDuration(click.ParamType):
    """A Go duration flag (``5m``, ``60s``, ``1h30m``) in seconds. A bare number other than 0, a
    unit Go does not know and a value beyond int64 nanoseconds (~292 years) are usage errors
    (exit 2) with Go's text, e.g. ``time: missing unit in duration "10"``."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_go_duration(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)
