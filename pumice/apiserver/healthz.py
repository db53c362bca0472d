"""kube-apiserver's health endpoints: ``/healthz``, ``/livez``, ``/readyz`` and their named checks.

A root path runs its checks in order and answers ``ok`` (200) when all pass; with ``?verbose``
(any value) one line per check, ``[+]<check> ok``, then ``<root> check passed``. A failing
check makes the answer 500 whatever ``verbose`` says, listing every check, the failed one as
``[-]<check> failed: reason withheld`` (the reason only goes to the log: the roots are public),
then ``<root> check failed``. ``?exclude=<check>`` (repeatable) skips a check (``[+]<check>
excluded: ok``); a name that matches none adds ``warn: some health checks cannot be excluded:
no matches for "<name>"``. A named check (``/readyz/etcd``) answers ``ok``, or 500 with
``internal server error: <reason>``.

The checks (kube-apiserver's, less its post-start hooks, which pumice has not): ``/healthz`` and
``/livez`` ping, log, etcd; ``/readyz`` also etcd-readiness, informer-sync and shutdown. ``etcd``
and ``etcd-readiness`` fail once the storage has failed (a commit or fsync error: the server
then refuses writes until restarted); ``shutdown`` fails once the server stops being ready; the
others always pass.

Mirrors: k8s.io/apiserver pkg/server/healthz/healthz.go (handleRootHealth, adaptCheckToHandler,
getExcludedChecks, formatQuoted), pkg/server/config.go (the checks of each path).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.responses import Response

__all__ = ["CHECKS", "Check", "answer"]

log = logging.getLogger(__name__)

#: the checks of each health path, in the order they run and are listed
CHECKS: dict[str, tuple[str, ...]] = {
    "healthz": ("ping", "log", "etcd"),
    "livez": ("ping", "log", "etcd"),
    "readyz": ("ping", "log", "etcd", "etcd-readiness", "informer-sync", "shutdown"),
}

#: one check: None when it passes, else why it failed
Check = Callable[[], Awaitable[str | None]]

_HEADERS = {"X-Content-Type-Options": "nosniff"}
_TEXT = "text/plain; charset=utf-8"


def _quoted(names: list[str]) -> str:
    return ",".join(json.dumps(n) for n in names)  # Go's %q of plain names


async def answer(root: str, check: str | None, query: Mapping[str, str], excluded: list[str],
                 checks: Mapping[str, Check]) -> Response:
    """The answer to ``/<root>`` (``check`` None) or ``/<root>/<check>``.

    Args:
        root: ``healthz``, ``livez`` or ``readyz`` (see :data:`CHECKS`).
        check: a name among ``CHECKS[root]``, or None for the root.
        query: the query parameters (``verbose`` is looked up).
        excluded: every ``exclude`` value, in order.
        checks: the check of each name in ``CHECKS[root]`` (a name missing passes).
    """
    if check is not None:
        fn = checks.get(check)
        reason = None if fn is None else await fn()
        if reason is None:
            return Response(b"ok", media_type=_TEXT, headers=_HEADERS)
        return Response(f"internal server error: {reason}\n".encode(), 500, media_type=_TEXT, headers=_HEADERS)
    skip = set(excluded)
    unknown = set(skip)
    lines: list[str] = []
    failed: list[tuple[str, str]] = []
    for name in CHECKS[root]:
        if name in skip:
            unknown.discard(name)
            lines.append(f"[+]{name} excluded: ok")
            continue
        fn = checks.get(name)
        reason = None if fn is None else await fn()
        if reason is None:
            lines.append(f"[+]{name} ok")
        else:
            lines.append(f"[-]{name} failed: reason withheld")
            failed.append((name, reason))
    if unknown:
        lines.append(f"warn: some health checks cannot be excluded: no matches for {_quoted(sorted(unknown))}")
    if failed:
        log.info("%s check failed: %s: %s", ",".join(n for n, _ in failed), root,
                 "; ".join(f"[-]{n} failed: {r}" for n, r in failed))
        return Response(("\n".join(lines) + f"\n{root} check failed\n").encode(), 500, media_type=_TEXT,
                        headers=_HEADERS)
    if "verbose" not in query:
        return Response(b"ok", media_type=_TEXT, headers=_HEADERS)
    return Response(("\n".join(lines) + f"\n{root} check passed\n").encode(), media_type=_TEXT, headers=_HEADERS)
