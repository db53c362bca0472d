"""``pumice volcano``: Volcano tools. ``pumice volcano session -f DIR [--config FILE]`` runs
exactly one scheduling session over manifests and prints what it decided as JSON.

Output: ``{"binds": {"<ns>/<pod>": "<node>"}, "evictions": ["<ns>/<pod>"], "pipelined":
{"<ns>/<pod>": "<node>"}, "podGroups": {"<ns>/<name>": {"phase": ..., "conditions": [...]}}}``.
Bad manifests or configuration: one line naming the file, object and field on stderr, exit 2.
Each object is checked as the API server checks it (schema, validation and the Volcano admission
webhooks, see :func:`validate_manifests`): an object a cluster would refuse is an error, not a
plausible-looking answer.
What was read and what was ignored (kinds the session does not take, such as a vcjob or a
RayCluster, whose controllers make the Pods and PodGroups) is said in one line on stderr; when
nothing a session can use was read, that line is an error (exit 2).
Objects without ``metadata.uid`` get ``<ns>-<name>``; without ``creationTimestamp`` they are
ordered by their position across the files (sorted by path).
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from pumice._util.files import InputFileError, read_text_file
from pumice.api import yamlsafe
from pumice.api.scheme import HYPER_NODE, NAMESPACE, NODE, POD, POD_GROUP, PRIORITY_CLASS, QUEUE
from pumice.cli._files import FileOptionsCommand

_SESSION_KINDS = {rk.kind: rk for rk in (NAMESPACE, PRIORITY_CLASS, QUEUE, HYPER_NODE, NODE, POD_GROUP, POD)}
"""The kinds a session reads (by kind; a manifest without ``apiVersion`` is read as the one here),
in the order a cluster needs them: a PodGroup's Queue, a Pod's PriorityClass first."""
_KINDS = set(_SESSION_KINDS)
_NAMESPACED = {kind for kind, rk in _SESSION_KINDS.items() if rk.namespaced}


def _fail(msg: str) -> None:
    click.echo(f"Error: {msg}", err=True)
    sys.exit(2)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())


def load_manifests(path: Path, skipped: list[tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
    """Every supported object in ``path`` (file or directory), in file then document order.

    Lists (``kind: List`` / ``*List``) are flattened. Unsupported kinds are skipped; with
    ``skipped``, each one is appended as ``(file, apiVersion, kind)``.

    Raises:
        ValueError: a message naming file, object and field.
    """
    out: list[dict[str, Any]] = []
    files = _files(path)
    if not files:
        raise ValueError(f"{path}: no .yaml/.yml/.json files")
    for f in files:
        try:
            docs = yamlsafe.safe_load_all(read_text_file(f))
        except InputFileError as e:
            raise ValueError(str(e)) from e
        except (yaml.YAMLError, OSError) as e:
            raise ValueError(f"{f}: cannot parse: {str(e).splitlines()[0]}") from e
        stack = [d for d in docs if d is not None]
        flat: list[Any] = []
        for d in stack:
            if isinstance(d, dict) and isinstance(d.get("items"), list) and str(d.get("kind", "")).endswith("List"):
                flat.extend(d["items"])
            else:
                flat.append(d)
        for i, d in enumerate(flat):
            if not isinstance(d, dict) or "kind" not in d:
                raise ValueError(f"{f}: document {i}: field 'kind': missing")
            kind = d["kind"]
            if kind not in _KINDS:
                if skipped is not None:
                    skipped.append((str(f), str(d.get("apiVersion", "")), str(kind)))
                continue
            md = d.get("metadata")
            if not isinstance(md, dict) or not md.get("name"):
                raise ValueError(f"{f}: {kind} (document {i}): field 'metadata.name': missing")
            if kind in _NAMESPACED:
                md.setdefault("namespace", "default")
                md.setdefault("uid", f"{md['namespace']}-{md['name']}")
            else:
                md.setdefault("uid", md["name"])
            d.setdefault("_source", str(f))
            out.append(d)
    return out


@click.group(name="volcano")
def command() -> None:
    """Volcano scheduler tools."""


@command.command(name="session", cls=FileOptionsCommand)
@click.option("-f", "--filename", "path", required=True, type=click.Path(exists=True, path_type=Path), help="Manifest file or directory.")
@click.option("--config", "config", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None, help="volcano-scheduler.conf (or its ConfigMap); default: the compiled-in configuration.")
@click.option("--explain", is_flag=True, help="Also print per-job fit errors and per-Pod reasons.")
def session(path: Path, config: Path | None, explain: bool) -> None:
    """Run one scheduling session over the manifests and print binds, evictions, pipelined Pods
    and PodGroup status as JSON."""
    from pumice.scheduler.volcano import (
        ConfigError,
        SnapshotError,
        build_snapshot,
        default_conf,
        load_conf,
        run_session,
    )

    try:
        conf = load_conf(config) if config is not None else default_conf()
    except ConfigError as e:
        _fail(str(e))
        return
    for w in conf.warnings:
        click.echo(f"Warning: {w}", err=True)
    skipped: list[tuple[str, str, str]] = []
    try:
        objs = load_manifests(path, skipped)
    except ValueError as e:
        _fail(str(e))
        return
    summary = read_summary(objs, skipped)
    if not any(o["kind"] in ("Pod", "PodGroup") for o in objs):
        _fail(f"{path}: nothing to schedule (a session schedules Pods and PodGroups; the controllers of `pumice up` "
              f"make them from Volcano Jobs and Ray resources): {summary}")
        return
    click.echo(summary, err=True)
    added = _cluster_default_queue(objs)
    if added:
        click.echo(added, err=True)
    try:
        validate_manifests(objs)
    except ValueError as e:
        _fail(str(e))
        return
    sources = {id(o): o.pop("_source") for o in objs}
    try:
        snap = build_snapshot(objs)
    except SnapshotError as e:
        src = next((s for o, s in ((o, sources[id(o)]) for o in objs) if _names(o) in str(e)), str(path))
        _fail(f"{src}: {e}")
        return
    res = run_session(snap, conf)
    out = res.to_json()
    if explain:
        out["fitErrors"] = dict(sorted(res.fit_errors.items()))
        out["pods"] = {k: {"reason": r, "message": m} for k, (r, m) in sorted(res.unschedulable.items())}
    click.echo(json.dumps(out, indent=2))


_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink",
               "deletionTimestamp", "deletionGracePeriodSeconds")
"""Metadata the API server sets itself (a dump of a live cluster carries it)."""


def validate_manifests(objs: list[dict[str, Any]]) -> None:
    """Check every object as the API server checks it on create: each is created, in
    :data:`_SESSION_KINDS`' order, in a throwaway in-memory API server (pumice's own, with the CRDs and the
    Volcano admission plugins of ``pumice up``: type checks, CRD schemas, validation, admission;
    no second validator). ``objs`` is not changed.

    The manifests describe a cluster's state, not a sequence of requests, so what the API
    server itself fills in or what may have changed since an object was created is not held
    against it: server-set metadata and a Pod's ``spec.priority`` (the Priority admission's
    output) are dropped, a missing ``apiVersion`` is read from the kind, the Namespaces the
    objects name exist, every Queue is Open (as the queue controller makes it; a Queue's state
    is checked by its schema), and a Queue, parent Queue or PriorityClass the objects name but
    the files lack exists (an Open Queue; a PriorityClass of the Pod's ``spec.priority``), as
    it did when they were created.

    Raises:
        ValueError: ``<file>: <Kind> <ns>/<name>: <the API server's message>`` for the first
            object it refuses.
    """
    asyncio.run(_validate(objs))


def _placeholders(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces, Queues and PriorityClasses the objects name and the files lack."""
    from pumice.controllers.volcano import keys
    from pumice.controllers.volcano.queue import new_queue, root_queue

    have = {(o["kind"], (o.get("metadata") or {}).get("name")) for o in objs}
    out: dict[tuple[str, str], dict[str, Any]] = {}

    def add(kind: str, name: str, obj: dict[str, Any]) -> None:
        if name and (kind, name) not in have and (kind, name) not in out:
            out[(kind, name)] = obj

    for o in objs:
        md, spec = o.get("metadata") or {}, o.get("spec") or {}
        if o["kind"] in _NAMESPACED and md.get("namespace") != "default":
            ns = str(md.get("namespace"))
            add("Namespace", ns, {"apiVersion": NAMESPACE.api_version, "kind": NAMESPACE.kind, "metadata": {"name": ns}})
        queue = str(spec.get("queue") or "") if o["kind"] == "PodGroup" else \
            str(spec.get("parent") or "") if o["kind"] == "Queue" else ""
        if queue == keys.ROOT_QUEUE:
            add("Queue", queue, root_queue())
        elif queue:
            add("Queue", queue, new_queue(queue))
        if o["kind"] == "Pod" and spec.get("priorityClassName"):
            name = str(spec["priorityClassName"])
            add("PriorityClass", name, {"apiVersion": PRIORITY_CLASS.api_version, "kind": PRIORITY_CLASS.kind,
                                        "metadata": {"name": name}, "value": int(spec.get("priority") or 0)})
    return list(out.values())


async def _validate(objs: list[dict[str, Any]]) -> None:
    from pumice.api.crds import builtin_crds
    from pumice.apiserver.server import APIServer
    from pumice.client.base import ApiError
    from pumice.client.kubeconfig import in_process
    from pumice.controllers.volcano import admission_plugins

    mutating, validating = admission_plugins()
    server = APIServer(None, admission_plugins=[*mutating, *validating], seed=0, bookmark_interval=None,
                       install_crds=False)
    await server.start()
    # only the CRDs of the kinds a session reads (the others cost the most of a start)
    groups = {rk.group for rk in _SESSION_KINDS.values() if rk.group}
    await server.apply_crds([c for c in builtin_crds() if c["spec"]["group"] in groups], builtin=True)
    client = in_process(server.app, scheme=server.scheme)
    todo = [*_placeholders(objs), *objs]
    try:
        for kind, rk in _SESSION_KINDS.items():
            for o in todo:
                if o["kind"] != kind:
                    continue
                body = {k: copy.deepcopy(v) for k, v in o.items() if k != "_source"}
                body.setdefault("apiVersion", rk.api_version)
                md = body["metadata"]
                for key in _SERVER_SET:
                    md.pop(key, None)
                if kind == "Pod":
                    (body.get("spec") or {}).pop("priority", None)
                if kind == "Namespace" and md.get("name") == "default":
                    continue
                try:
                    made = await client.create(body)
                    if kind == "Queue":
                        made["status"] = {**(made.get("status") or {}), "state": "Open"}
                        await client.update_status(made)
                except ApiError as e:
                    raise ValueError(f"{o.get('_source', '(a placeholder)')}: {_names(o)}: {e.message or e}") from None
    finally:
        await client.close()
        server.close()


def _cluster_default_queue(objs: list[dict[str, Any]]) -> str | None:
    """Add Volcano's ``default`` Queue (weight 1, reclaimable; what every Volcano cluster and
    ``pumice up`` have) to ``objs`` when a PodGroup uses it and the manifests define no such Queue;
    the scheduler skips the jobs of a missing queue (trial-8 F-14: the dry run said nothing). Returns
    the line saying so, or None when nothing was added."""
    from pumice.controllers.volcano import keys
    from pumice.controllers.volcano.queue import default_queue

    names = {(o.get("metadata") or {}).get("name") for o in objs if o["kind"] == "Queue"}
    if keys.DEFAULT_QUEUE in names:
        return None
    users = [o for o in objs if o["kind"] == "PodGroup"
             and ((o.get("spec") or {}).get("queue") or keys.DEFAULT_QUEUE) == keys.DEFAULT_QUEUE]
    if not users:
        return None
    queue = default_queue()
    queue["_source"] = "(built in)"
    objs.append(queue)
    return (f"no Queue {keys.DEFAULT_QUEUE!r} in the manifests: using Volcano's default Queue (weight 1, reclaimable), "
            f"as a cluster has it, for {len(users)} PodGroup(s)")


def read_summary(objs: list[dict[str, Any]], skipped: list[tuple[str, str, str]]) -> str:
    """One line: ``read 3 Node, 1 Queue, 2 Pod; ignored 1 Job (batch.volcano.sh/v1alpha1) in
    f.yaml (...)``, with a hint when workload kinds were ignored."""
    def counts(kinds: list[str]) -> str:
        seen: dict[str, int] = {}
        for k in kinds:
            seen[k] = seen.get(k, 0) + 1
        return ", ".join(f"{n} {k}" for k, n in seen.items())

    line = f"read {counts([o['kind'] for o in objs]) or 'no objects'}"
    if skipped:
        ignored: dict[tuple[str, str, str], int] = {}
        for f, av, kind in skipped:
            ignored[(kind, av, f)] = ignored.get((kind, av, f), 0) + 1
        line += "; ignored " + ", ".join(f"{n} {kind}{f' ({av})' if av else ''} in {f}"
                                         for (kind, av, f), n in ignored.items())
        line += (f" (a session reads only {', '.join(sorted(_KINDS))}; a workload such as a vcjob or a "
                 "RayCluster makes its PodGroup and Pods through its controller: apply it to `pumice up` and "
                 "use `pumice explain`, or give the session the PodGroup and Pods)")
    return line


def _names(o: dict[str, Any]) -> str:
    md = o.get("metadata") or {}
    ns = md.get("namespace")
    return f"{o.get('kind')} {ns + '/' if ns else ''}{md.get('name')}"
