"""Admission for CronJobs (``batch.volcano.sh/v1alpha1`` ``cronjobs``, CREATE and UPDATE):
``validatecronjob.volcano.sh``.

The schedule is required, carries no ``TZ``/``CRON_TZ``, and parses as a 5-field cron
expression; ``timeZone`` is nil or a loadable IANA name other than ``Local``; the name is a
qualified name of at most 52 characters (room for the ``-<minutes>`` Job-name suffix).

Mirrors: volcano pkg/webhooks/admission/cronjobs/validate/admit_cronjob.go (messages verbatim).
"""

from __future__ import annotations

import re
from typing import Any

from pumice.api.admission import AdmissionRequest, ObjectReader
from pumice.api.validation import is_qualified_name
from pumice.controllers.volcano.admission._common import deny, is_kind
from pumice.controllers.volcano.cronjob import ScheduleError, load_zone, parse_schedule

VALIDATE_WEBHOOK = "validatecronjob.volcano.sh"
MAX_BASE_NAME = 63 - 11
_TZ_PART = re.compile(r"^[A-Za-z\.\-_0-9+]{1,14}$")


def validate_cronjob(cj: dict[str, Any]) -> str:
    """Upstream's message ("" when valid)."""
    spec = cj.get("spec") or {}
    msg = ""
    schedule = str(spec.get("schedule") or "")
    if not schedule:
        msg += " schedule is required, but got empty"
    elif "TZ" in schedule:
        msg += " schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field"
    else:
        try:
            parse_schedule(schedule, None)
        except ScheduleError:
            msg += "schedule is not a valid cron expression"
    tz = spec.get("timeZone")
    if tz is not None:
        if tz == "":
            msg += " timeZone must be nil or non-empty string, got empty string"
        else:
            for part in str(tz).split("/"):
                if part in (".", "..") or part.startswith("-") or not _TZ_PART.match(part):
                    msg += " unknown timeZone"
            if str(tz).lower() == "local":
                msg += " timeZone can't be Local, and must be defined in https://www.iana.org/time-zones"
            else:
                try:
                    load_zone(str(tz))
                except ScheduleError:
                    msg += " invalid timeZone"
    errs = [m for m in (msg.strip(),) if m]
    name = str((cj.get("metadata") or {}).get("name") or "")
    if len(name) > MAX_BASE_NAME:
        errs.append(f"cronJob name must be no more than {MAX_BASE_NAME} characters to accommodate job name suffix (max 63 total)")
    else:
        problems = is_qualified_name(name)
        if problems:
            errs.append(f'invalid cronJob name "{name}": {"; ".join(problems)}')
    return "; ".join(errs)


class CronJobValidator:
    name = VALIDATE_WEBHOOK

    def handles(self, req: AdmissionRequest) -> bool:
        return is_kind(req, "batch.volcano.sh", "cronjobs") and req.operation in ("CREATE", "UPDATE")

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        msg = validate_cronjob(req.obj or {})
        if msg:
            raise deny(self.name, msg)
