"""What a real-Ray test prints when it times out: the KubeRay objects' status, the Pods, the
Warning Events, and the lines of Ray's own logs that say why something is not placed or not
started, so that a CI failure can be diagnosed from the CI output alone.

Ray keeps its logs in each container's private ``/tmp`` (``/tmp/ray/session_<ts>/logs``). The
node agent's process runtime keeps that ``/tmp`` at ``<pods_dir>/<pod dir>/<container>/tmp`` on the
host, until the Pod is deleted; ``session_latest`` is an absolute link that only resolves inside
the container, so the newest ``session_*`` directory is read instead. From each one:

- the container log's last lines (``ray start`` output; a failed start ends there);
- ``ray_process_exit.log`` when a Ray subprocess died;
- ``raylet.out``: the last warning/error records (``The lease ... cannot be scheduled right now``
  with the required and available resources, worker start failures, runtime env failures);
- ``debug_state.txt``: the node's Ray resources and the ``Resource usage`` block (which actor holds
  what on that node);
- ``gcs_server.out`` (head): the last warning/error records (infeasible requests, dead nodes);
- ``serve/controller_*.log`` (head): the Serve controller's last warning/error records (replicas
  not scheduled, failed health checks, failed deployments).

Usage::

    try:
        await wait_for_ready()
    except AssertionError as e:
        raise AssertionError(f"{e}\\n{await diagnosis(client, agent.data_dir / 'pods')}") from e
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pumice.api import Obj, scheme

__all__ = ["diagnosis", "objects_digest", "ray_log_digest"]

LINE_CHARS = 400
"""Each log line is cut to this many characters."""
RECORD_LINES = 16
"""A record keeps at most this many lines (its header and continuation lines)."""

_RAY_CORE = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d [\d:,]+) (?P<level>[DIWEFC]) \d+ \d+\]")
"""A glog-style record of raylet.out / gcs_server.out: ``[2026-12-01 22:47:08,040 W 14145 14145]``."""
_PYTHON = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>\d{4}-\d\d-\d\d [\d:,]+) ")
"""A record of Serve's logs: ``WARNING 2026-12-01 22:47:19,161 controller 14141 -- ...``."""
_STATE_DUMP = "[state-dump]"


def _records(text: str, header: re.Pattern[str], levels: str | tuple[str, ...], last: int) -> list[str]:
    """The ``last`` records whose header's level is in ``levels``, each with its continuation lines
    (lines that start no record and are not raylet ``[state-dump]`` lines). A record repeated with
    only its timestamp changed is kept once, as its last occurrence, with ``(xN since <first ts>)``."""
    want = set(levels)
    found: list[tuple[str, str, list[str]]] = []  # (timestamp, header without timestamp, lines)
    current: list[str] | None = None
    for line in text.splitlines():
        m = header.match(line)
        if m:
            current = None
            if m.group("level") in want:
                current = [line[:LINE_CHARS]]
                found.append((m.group("ts"), line.replace(m.group("ts"), "", 1), current))
        elif line.startswith(_STATE_DUMP):
            current = None
        elif current is not None and len(current) < RECORD_LINES:
            current.append(line[:LINE_CHARS])
    out: list[str] = []
    i = 0
    while i < len(found):
        j = i
        while j + 1 < len(found) and found[j + 1][1] == found[i][1] and found[j + 1][2][1:] == found[i][2][1:]:
            j += 1
        rec = "\n".join(found[j][2])
        out.append(rec + (f"\n(x{j - i + 1} since {found[i][0]})" if j > i else ""))
        i = j + 1
    return out[-last:]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _resource_usage(debug_state: str) -> list[str]:
    """``InitialConfigResources`` and the ``Resource usage {...}`` block of a raylet's debug_state.txt."""
    lines = debug_state.splitlines()
    out = [ln.strip() for ln in lines if ln.lstrip().startswith("InitialConfigResources")][:1]
    for i, ln in enumerate(lines):
        if ln.strip() == "Resource usage {":
            block = []
            for x in lines[i + 1:i + 40]:
                if x.strip() == "}":
                    break
                block.append(x.strip())
            out.append("Resource usage: " + ("; ".join(block) if block else "(nothing)"))
            break
    return out


def _container_log_tail(container_dir: Path, lines: int) -> list[str]:
    logs = sorted(container_dir.glob("*.log"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1)
    return _read(logs[-1]).splitlines()[-lines:] if logs else []


def _section(title: str, lines: list[str]) -> list[str]:
    return [f"  {title}:", *(f"    {x}" for ln in lines for x in ln.splitlines())] if lines else []


def ray_log_digest(pods_dir: Path, *, records: int = 6, log_lines: int = 6) -> str:
    """The telling lines of every Ray session under ``pods_dir`` (a node agent's ``<data>/pods``).

    Args:
        pods_dir: the node agent's Pod directories (``NodeAgent.data_dir / "pods"``; for ``pumice
            up --data-dir D`` that is ``D/node/pods``).
        records: warning/error records kept per log file (the last ones).
        log_lines: container log lines kept per container (the last ones).

    Returns:
        Text, one block per container that ran Ray (Pod directory and container name first);
        ``(no Ray logs under <dir>)`` when there is none.
    """
    blocks: list[str] = []
    for container_dir in sorted(p for p in pods_dir.glob("*/*") if (p / "tmp" / "ray").is_dir()):
        sessions = sorted((container_dir / "tmp" / "ray").glob("session_2*"))
        if not sessions:
            continue
        logs = sessions[-1] / "logs"
        lines = [f"--- {container_dir.parent.name}/{container_dir.name} ({sessions[-1].name})"]
        lines += _section("container log (last lines)", _container_log_tail(container_dir, log_lines))
        lines += _section("ray_process_exit.log", _read(logs / "ray_process_exit.log").splitlines()[-records:])
        lines += _section("raylet resources", _resource_usage(_read(logs / "debug_state.txt")))
        lines += _section("raylet.out warnings/errors",
                          _records(_read(logs / "raylet.out"), _RAY_CORE, "WEFC", records))
        lines += _section("gcs_server.out warnings/errors",
                          _records(_read(logs / "gcs_server.out"), _RAY_CORE, "WEFC", records))
        for ctl in sorted((logs / "serve").glob("controller_[0-9]*.log")):
            lines += _section(f"serve/{ctl.name} warnings/errors",
                              _records(_read(ctl), _PYTHON, ("WARNING", "ERROR", "CRITICAL"), records))
        blocks.append("\n".join(lines))
    return "\n".join(blocks) if blocks else f"(no Ray logs under {pods_dir})"


def _brief_status(obj: Obj) -> str:
    st = dict(obj.get("status") or {})
    return json.dumps(st, sort_keys=True, default=str)[:3000]


def _pod_line(pod: Obj) -> str:
    st = pod.get("status") or {}
    conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
    parts = [f"{pod['metadata']['name']}: {st.get('phase')} ready={conds.get('Ready')} ip={st.get('podIP')}"]
    for cs in [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])]:
        state = cs.get("state") or {}
        kind = next(iter(state), "?")
        detail = state.get(kind) or {}
        why = " ".join(str(detail[k]) for k in ("reason", "exitCode", "message") if detail.get(k) not in (None, ""))
        parts.append(f"{cs['name']}={kind}{'(' + why + ')' if why else ''} restarts={cs.get('restartCount', 0)}")
    return " ".join(parts)


async def objects_digest(client: Any, namespace: str = "default", events: int = 15) -> str:
    """The status of every RayService, RayCluster and RayJob in ``namespace``, one line per Pod
    (phase, readiness, each container's state and restarts) and the last ``events`` Warning Events.
    A failing list is reported in its line, not raised."""
    lines: list[str] = []
    for kind in (scheme.RAY_SERVICE, scheme.RAY_CLUSTER, scheme.RAY_JOB):
        try:
            for o in (await client.list(kind, namespace)).items:
                lines.append(f"{kind.kind} {o['metadata']['name']} status: {_brief_status(o)}")
        except Exception as e:
            lines.append(f"{kind.kind}: cannot list: {e!r}")
    try:
        lines += [f"Pod {_pod_line(p)}" for p in (await client.list(scheme.POD, namespace)).items]
    except Exception as e:
        lines.append(f"Pods: cannot list: {e!r}")
    try:
        warnings = [ev for ev in (await client.list(scheme.EVENT, namespace)).items if ev.get("type") == "Warning"]
        for ev in warnings[-events:]:
            inv = ev.get("involvedObject") or {}
            lines.append(f"Warning {inv.get('kind')}/{inv.get('name')} {ev.get('reason')}: {ev.get('message')}")
    except Exception as err:
        lines.append(f"Events: cannot list: {err!r}")
    return "\n".join(lines)


async def diagnosis(client: Any, pods_dir: Path | None, namespace: str = "default") -> str:
    """:func:`objects_digest` then :func:`ray_log_digest` of ``pods_dir`` (skipped when None)."""
    text = "=== objects\n" + await objects_digest(client, namespace)
    if pods_dir is not None:
        text += "\n=== Ray logs\n" + ray_log_digest(pods_dir)
    return text
