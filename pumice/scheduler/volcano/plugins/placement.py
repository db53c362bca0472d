"""placement: place a job in a queue by rules (namespace or user -> queue).

Pumice's extension after YuniKorn's placement rules (yunikorn user_guide/placement_rules.md:
``provided``, ``user``, ``tag``, ``fixed``; see ../shared/reference/peers.md section 1.2). At
session open, every job whose PodGroup names no queue or the ``default`` queue is put in the
queue the first matching rule yields, if that Queue exists and is Open; the rules are tried in
order and a rule that yields nothing passes to the next. The PodGroup gets the annotation
``scheduling.pumice.io/placed-queue: <queue>`` and the session schedules and accounts the job
there (list this plugin first in the first tier so the queue plugins see the placed queue).

Rules (argument ``placement.rules``, a list; each may carry ``namespaces`` and/or ``users`` that
it is limited to):

* ``{rule: provided}``: keep a queue the PodGroup names explicitly (other than ``default``);
  placement never moves such a job, so this rule only documents the order, as in YuniKorn.
* ``{rule: user}``: the queue named like the job's user;
* ``{rule: namespace}``: the queue named like the job's namespace (YuniKorn's ``tag`` rule on
  the namespace);
* ``{rule: fixed, value: <queue>}``: that queue.

The user is YuniKorn's: the ``user`` of the JSON annotation ``yunikorn.apache.org/user.info`` on
the PodGroup (or, failing that, on its first Pod), e.g. ``{"user": "alice", "groups": ["ml"]}``.
A vcjob's Pods are created only once its PodGroup is Inqueue, so for a vcjob the annotation
must be on the job (the job controller copies it to the PodGroup), not on its Pod template.
Deviates: pumice's API server does not stamp that annotation (YuniKorn's admission controller
does), so it is set by whoever creates the job; no dynamic queue creation (``create: true``), no
``parent`` rules, no groups.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, decode
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "placement"
USER_INFO_ANNOTATION = "yunikorn.apache.org/user.info"
PLACED_QUEUE_ANNOTATION = "scheduling.pumice.io/placed-queue"
DEFAULT_QUEUE = "default"

log = logging.getLogger(__name__)


class Rule(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    rule: Literal["provided", "user", "namespace", "fixed"]
    value: str = ""
    namespaces: tuple[str, ...] = ()
    users: tuple[str, ...] = ()


class PlacementArguments(Arguments, frozen=True):
    rules: tuple[Rule, ...] = msgspec.field(default=(), name="placement.rules")


def job_user(job: JobInfo) -> str:
    """The job's user from ``yunikorn.apache.org/user.info`` (PodGroup, then its first Pod by
    name), or "" when absent.

    Raises:
        ValueError: the annotation is not a JSON object with a string ``user``.
    """
    objs = [job.pod_group or {}] + [t.pod for t in sorted(job.tasks.values(), key=lambda t: t.name)[:1]]
    for o in objs:
        raw = ((o.get("metadata") or {}).get("annotations") or {}).get(USER_INFO_ANNOTATION)
        if raw is None:
            continue
        try:
            info = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValueError(f"{USER_INFO_ANNOTATION}: not JSON: {e}") from e
        if not isinstance(info, dict) or not isinstance(info.get("user", ""), str):
            raise ValueError(f"{USER_INFO_ANNOTATION}: want {{\"user\": ..., \"groups\": [...]}}, got {raw!r}")
        return str(info.get("user", ""))
    return ""


def place(rules: tuple[Rule, ...], namespace: str, user: str, provided: str, usable: set[str]) -> str | None:
    """The queue the first matching rule yields among ``usable`` (existing, Open) queues, or None.

    ``provided`` is the queue the PodGroup names ("" or ``default`` = none).
    """
    for r in rules:
        if r.namespaces and namespace not in r.namespaces:
            continue
        if r.users and user not in r.users:
            continue
        if r.rule == "provided":
            q = provided if provided and provided != DEFAULT_QUEUE else ""
        elif r.rule == "user":
            q = user
        elif r.rule == "namespace":
            q = namespace
        else:
            q = r.value
        if q and q in usable:
            return q
    return None


class PlacementPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: PlacementArguments) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        usable = {n for n, q in ssn.queues.items() if q.is_open()}
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            provided = str(((job.pod_group or {}).get("spec") or {}).get("queue") or "")
            if job.pod_group is None or (provided and provided != DEFAULT_QUEUE):
                continue
            try:
                user = job_user(job)
            except ValueError as e:
                log.error("placement: %s: %s", job.uid, e)
                ssn.record_pod_group_event(job, "Warning", "InvalidUserInfo", str(e))
                continue
            q = place(self.args.rules, job.namespace, user, provided, usable)
            if q is None or q == job.queue:
                continue
            job.queue = q
            ssn.set_pod_group_annotation(job, PLACED_QUEUE_ANNOTATION, q)

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> PlacementArguments:
    """Decode the arguments; raises ArgumentError for an unknown rule, a wrong type, or a
    ``fixed`` rule without ``value``."""
    a = decode(PlacementArguments, arguments)
    for i, r in enumerate(a.rules):
        if r.rule == "fixed" and not r.value:
            raise ArgumentError(f"placement.rules[{i}]: rule fixed needs a value")
    return a


new = PlacementPlugin
