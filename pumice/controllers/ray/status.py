"""One-line summaries of KubeRay objects for progress displays (``make demo``, the CLI).

Pure functions over wire dicts; times are read from the object, never from a clock.
"""

from __future__ import annotations

from pumice._util.clock import parse_rfc3339
from pumice.api import Obj


def _seconds_between(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    try:
        return parse_rfc3339(b) - parse_rfc3339(a)
    except ValueError:
        return None


def format_rayjob_status(rayjob: Obj) -> str:
    """``<ns>/<name>: deployment=<jobDeploymentStatus> job=<jobStatus> cluster=<name> (<state>)
    [reason=<reason>] [ray run <s>s] [total <s>s] [failed=<n>]``.

    ``""`` states print as ``New`` / ``-``; durations come from the status timestamps.
    """
    md = rayjob.get("metadata") or {}
    st = rayjob.get("status") or {}
    parts = [f"{md.get('namespace', 'default')}/{md.get('name', '?')}:",
             f"deployment={st.get('jobDeploymentStatus') or 'New'}",
             f"job={st.get('jobStatus') or '-'}"]
    cluster = st.get("rayClusterName") or "-"
    cstate = (st.get("rayClusterStatus") or {}).get("state")
    parts.append(f"cluster={cluster}" + (f" ({cstate})" if cstate else ""))
    if st.get("reason"):
        parts.append(f"reason={st['reason']}")
    info = st.get("rayJobInfo") or {}
    run = _seconds_between(info.get("startTime"), info.get("endTime"))
    if run is not None:
        parts.append(f"ray run {run:.0f}s")
    total = _seconds_between(st.get("startTime"), st.get("endTime"))
    if total is not None:
        parts.append(f"total {total:.0f}s")
    if st.get("failed"):
        parts.append(f"failed={st['failed']}")
    if st.get("succeeded"):
        parts.append(f"succeeded={st['succeeded']}")
    return " ".join(parts)
