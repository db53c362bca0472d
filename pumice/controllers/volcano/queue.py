"""Queue controller: Queue state (Open / Closing / Closed / Unknown) and PodGroup counts.

Level-based: every reconcile of a Queue takes at most one pending ``bus.volcano.sh`` Command aimed
at it (``target.kind: Queue``; actions OpenQueue / CloseQueue), deletes it, applies the phase
table below to (current state, action, whether PodGroups remain) and writes ``status.state``
only when it changed (merge patch on the status subresource, so the scheduler's
``status.allocated`` is left alone). It recounts the queue's PodGroups by phase into the gauges
``volcano_queue_pod_group_{pending,running,unknown,inqueue,completed}_count{queue_name}``
(:data:`QUEUE_POD_GROUPS`), not into the Queue's status: upstream stopped writing those counts
in v1.11 (volcano-sh/volcano#3751: the controller's and the scheduler's status writes
conflicted, and the counts were only for display), so ``status.pending`` / ``running`` /
``inqueue`` / ``unknown`` / ``completed`` stay unset, as on a Volcano cluster; ``pumice
dashboard`` counts a queue's PodGroups itself (:func:`count_podgroups`).

=============  =================  ====================  =====================================
state          OpenQueue          CloseQueue            sync (no command)
=============  =================  ====================  =====================================
Open / ""      Open               Closed if no PGs,     Open
                                  else Closing
Closing        Open               Closed if no PGs,     Closed if no PGs, else Closing
                                  else Closing
Closed         Open               Closed                Closed
Unknown        Open               Closed/Closing        Unknown
=============  =================  ====================  =====================================

``status.state`` is the only state field (the CRD has no ``spec.state``): users open and close
queues with Commands (``vcctl queue operate``) or by writing ``status.state`` (Open / Closed).
The ``root`` (weight 1, not reclaimable) and ``default`` (weight 1, reclaimable) queues are
created at start when missing (upstream's scheduler does this; here the queue controller does).
Children follow their parent (``spec.parent``): closed with it, reopened with it. Every queue but
``root`` that names no parent gets ``spec.parent: root`` at the start of its reconcile, as upstream's
``updateQueueParent`` (v1.11+) does at the start of ``syncQueue`` (``kubectl get queue`` PARENT
reads ``root``). Deviates: upstream runs it only on the sync path (not when an Open/Close command
takes its own path) and retries the reconcile when the patch fails; pumice patches on every
reconcile and, when the queue webhook refuses the patch (a ``Closing`` queue: every update of one
is refused), logs it and goes on with the state machine, which would otherwise stall.

Mirrors: volcano pkg/controllers/queue/queue_controller.go, queue_controller_action.go and
state/{open,closing,closed,unknown}.go.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import Gauge

from pumice.api import Obj, scheme
from pumice.client.base import ApiError, KubeClient, create_unless_exists, is_not_found
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.keys import Action, PodGroupPhase, QueueState
from pumice.runtime.reconcile import Result

log = logging.getLogger(__name__)

QUEUE_INDEX = "volcano:queue"
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"
StateFn = Callable[[str, bool], str]


QUEUE_POD_GROUPS: dict[str, Gauge] = {
    field: Gauge(f"volcano_queue_pod_group_{field}_count", f"The number of {field.capitalize()} PodGroup in this queue",
                 ["queue_name"])
    for field in ("inqueue", "pending", "running", "unknown", "completed")
}
"""The queue controller's PodGroup counts per phase (prometheus_client default registry, served on
the controller manager's ``/metrics``). Mirrors: volcano pkg/controllers/metrics/queue.go."""

# queue name -> (its QUEUE_POD_GROUPS children by field, the counts last set); every write of the
# gauges goes through _set_counts/_forget_counts, so an unchanged count is not set again
_COUNTED: dict[str, tuple[dict[str, Any], dict[str, int]]] = {}


def _set_counts(queue: str, counts: dict[str, int]) -> None:
    """Set ``queue``'s PodGroup count gauges to ``counts`` (field -> n) unless they hold them."""
    last = _COUNTED.get(queue)
    if last is not None and last[1] == counts:
        return
    children = last[0] if last is not None else {f: g.labels(queue) for f, g in QUEUE_POD_GROUPS.items()}
    for field, n in counts.items():
        children[field].set(n)
    _COUNTED[queue] = (children, dict(counts))


def _forget_counts(queue: str) -> None:
    """Remove ``queue``'s PodGroup count gauges (the Queue is gone)."""
    _COUNTED.pop(queue, None)
    for gauge in QUEUE_POD_GROUPS.values():
        with contextlib.suppress(KeyError):  # never counted (no PodGroup event seen)
            gauge.remove(queue)


def pg_queue_indexer(pg: Obj) -> list[str]:
    return [str((pg.get("spec") or {}).get("queue") or keys.DEFAULT_QUEUE)]


def _open_sync(cur: str, has_pgs: bool) -> str:
    if cur in ("", QueueState.OPEN):
        return QueueState.OPEN
    if cur == QueueState.CLOSED:
        return QueueState.CLOSING if has_pgs else QueueState.CLOSED
    return QueueState.UNKNOWN


def _close(cur: str, has_pgs: bool) -> str:
    return QueueState.CLOSING if has_pgs else QueueState.CLOSED


def _closing_sync(cur: str, has_pgs: bool) -> str:
    return QueueState.CLOSING if has_pgs else QueueState.CLOSED


def _closed_sync(cur: str, has_pgs: bool) -> str:
    return QueueState.CLOSED


def _unknown_sync(cur: str, has_pgs: bool) -> str:
    return QueueState.UNKNOWN


def _open(cur: str, has_pgs: bool) -> str:
    return QueueState.OPEN


#: state -> action -> next-state function ``(current state, has PodGroups) -> state``.
QUEUE_STEPS: dict[str, dict[Action, StateFn]] = {
    QueueState.OPEN: {Action.OPEN_QUEUE: _open, Action.CLOSE_QUEUE: _close, Action.SYNC_QUEUE: _open_sync},
    QueueState.CLOSING: {Action.OPEN_QUEUE: _open, Action.CLOSE_QUEUE: _close, Action.SYNC_QUEUE: _closing_sync},
    QueueState.CLOSED: {Action.OPEN_QUEUE: _open, Action.CLOSE_QUEUE: _closed_sync,
                        Action.SYNC_QUEUE: _closed_sync},
    QueueState.UNKNOWN: {Action.OPEN_QUEUE: _open, Action.CLOSE_QUEUE: _close, Action.SYNC_QUEUE: _unknown_sync},
}


def next_state(current: str, action: Action, has_podgroups: bool) -> str:
    """The queue state after ``action`` (an empty or unrecognised state behaves as Open)."""
    table = QUEUE_STEPS.get(current or QueueState.OPEN, QUEUE_STEPS[QueueState.OPEN])
    return table.get(action, table[Action.SYNC_QUEUE])(current, has_podgroups)


_COUNT_FIELD: dict[str, str] = {PodGroupPhase.PENDING.value: "pending", PodGroupPhase.RUNNING.value: "running",
                                PodGroupPhase.UNKNOWN.value: "unknown", PodGroupPhase.INQUEUE.value: "inqueue",
                                PodGroupPhase.COMPLETED.value: "completed"}


def count_podgroups(pgs: Iterable[Obj]) -> dict[str, int]:
    """``pending/running/unknown/inqueue/completed`` counts of PodGroups by ``status.phase``."""
    counts = dict.fromkeys(_COUNT_FIELD.values(), 0)
    for pg in pgs:
        st = pg.get("status")
        field = _COUNT_FIELD.get(st.get("phase") or "") if st else None
        if field is not None:
            counts[field] += 1
    return counts


class PodGroupCounts:
    """Per queue, the :func:`count_podgroups` counts of its PodGroups not being deleted and how
    many those are, kept up to date by the PodGroup informer's events (register :meth:`on_add`,
    :meth:`on_update`, :meth:`on_delete`), so a Queue reconcile does not go over the queue's
    PodGroups. The informer calls its handlers right after each change of its cache, so between
    events the counts are those of the cached PodGroups (``spec.queue``, or ``default``).
    """

    def __init__(self) -> None:
        self._of: dict[str, tuple[str, str | None]] = {}  # PodGroup key -> (queue, counted field)
        self._counts: dict[str, dict[str, int]] = {}  # queue -> field -> n
        self._live: dict[str, int] = {}  # queue -> PodGroups not being deleted

    @staticmethod
    def _entry(pg: Obj) -> tuple[str, str | None] | None:
        """(queue, field or None) of a PodGroup not being deleted; None for one being deleted."""
        md = pg.get("metadata") or {}
        if md.get("deletionTimestamp"):
            return None
        st = pg.get("status")
        return (str((pg.get("spec") or {}).get("queue") or keys.DEFAULT_QUEUE),
                _COUNT_FIELD.get(st.get("phase") or "") if st else None)

    def _put(self, pg: Obj) -> None:
        md = pg.get("metadata") or {}
        key = f"{md.get('namespace') or ''}/{md.get('name', '')}"
        entry = self._entry(pg)
        old = self._of.get(key)
        if old == entry:
            return
        if old is not None:
            self._take(old)
        if entry is None:
            self._of.pop(key, None)
            return
        self._of[key] = entry
        queue, field = entry
        self._live[queue] = self._live.get(queue, 0) + 1
        counts = self._counts.get(queue)
        if counts is None:
            counts = self._counts[queue] = dict.fromkeys(_COUNT_FIELD.values(), 0)
        if field is not None:
            counts[field] += 1

    def _take(self, entry: tuple[str, str | None]) -> None:
        queue, field = entry
        self._live[queue] -= 1
        if field is not None:
            self._counts[queue][field] -= 1

    def on_add(self, pg: Obj) -> None:
        self._put(pg)

    def on_update(self, _old: Obj, new: Obj) -> None:
        self._put(new)

    def on_delete(self, pg: Obj) -> None:
        md = pg.get("metadata") or {}
        old = self._of.pop(f"{md.get('namespace') or ''}/{md.get('name', '')}", None)
        if old is not None:
            self._take(old)

    def counts(self, queue: str) -> dict[str, int]:
        """``count_podgroups`` of the queue's PodGroups not being deleted (a fresh dict)."""
        counts = self._counts.get(queue)
        return dict(counts) if counts is not None else dict.fromkeys(_COUNT_FIELD.values(), 0)

    def has_podgroups(self, queue: str) -> bool:
        """Whether the queue has a PodGroup not being deleted."""
        return self._live.get(queue, 0) > 0


def command_target(cmd: Obj) -> tuple[str, str]:
    t = cmd.get("target") or {}
    return str(t.get("kind") or ""), str(t.get("name") or "")


def new_queue(name: str, *, reclaimable: bool = True) -> Obj:
    """A Queue as Volcano's queue webhook defaults one given only its name: weight 1,
    reclaimable unless said otherwise (the root Queue is not).

    Mirrors: volcano pkg/webhooks/admission/queues/mutate (weight 1, reclaimable true)."""
    return {"apiVersion": keys.SCHEDULING_API_VERSION, "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": reclaimable}}


def default_queue() -> Obj:
    """Volcano's ``default`` Queue (what the controller manager creates at start)."""
    return new_queue(keys.DEFAULT_QUEUE)


def root_queue() -> Obj:
    """Volcano's ``root`` Queue of the hierarchy (not reclaimable)."""
    return new_queue(keys.ROOT_QUEUE, reclaimable=False)


class QueueReconciler:
    """Reconciles one Queue (Request name = queue name)."""

    def __init__(self, client: KubeClient, queues: Any, podgroups: Any, commands: Any, recorder: Any = None,
                 counts: PodGroupCounts | None = None) -> None:
        """``counts``: kept by the PodGroup informer's events (see :class:`PodGroupCounts`);
        without it each reconcile counts the queue's PodGroups in ``podgroups`` (indexed by
        :data:`QUEUE_INDEX`)."""
        self.client = client
        self.queues = queues
        self.podgroups = podgroups
        self.commands = commands
        self.recorder = recorder
        self.counts = counts

    def _pending_command(self, name: str) -> Obj | None:
        if not len(self.commands):  # no Command anywhere (the usual case): nothing to list
            return None
        mine = [c for c in self.commands.list() if command_target(c) == ("Queue", name)]
        mine.sort(key=lambda c: (c["metadata"].get("creationTimestamp", ""), c["metadata"].get("name", "")))
        return mine[0] if mine else None

    async def reconcile(self, req: Any) -> Any:
        queue = self.queues.get(None, req.name)
        if queue is None:
            _forget_counts(req.name)
            return Result()
        queue = await self._default_parent(queue)
        action = Action.SYNC_QUEUE
        cmd = self._pending_command(req.name)
        requeue = False
        if cmd is not None:
            try:
                await self.client.delete(scheme.COMMAND, cmd["metadata"]["name"], cmd["metadata"].get("namespace"))
            except Exception as e:
                if not is_not_found(e):
                    raise
                cmd = None
            if cmd is not None:
                try:
                    action = Action(cmd.get("action") or "")
                except ValueError:
                    log.warning("queue %s: ignoring command %s with unknown action %r", req.name,
                                cmd["metadata"]["name"], cmd.get("action"))
                requeue = self._pending_command(req.name) is not None
        action = await self._hierarchy(queue, action)
        if self.counts is not None:
            has_pgs, counts = self.counts.has_podgroups(req.name), self.counts.counts(req.name)
        else:
            pgs = [pg for pg in self.podgroups.by_index(QUEUE_INDEX, req.name)
                   if not (pg.get("metadata") or {}).get("deletionTimestamp")]
            has_pgs, counts = bool(pgs), count_podgroups(pgs)
        status = queue.get("status") or {}
        cur = str(status.get("state") or "")
        new_state = next_state(cur, action, has_pgs)
        _set_counts(req.name, counts)
        if new_state != cur:
            await self.client.patch(scheme.QUEUE, req.name, {"status": {"state": new_state}}, subresource="status")
            if self.recorder is not None and action == Action.CLOSE_QUEUE:
                self.recorder.event(queue, "Normal", str(Action.CLOSE_QUEUE), "Close queue succeed")
        return Result(requeue_after=0.001) if requeue else Result()


    async def _default_parent(self, queue: Obj) -> Obj:
        """``queue`` with ``spec.parent: root`` written when it names no parent (not ``root`` itself).

        Mirrors: volcano pkg/controllers/queue/queue_controller_action.go updateQueueParent.
        Raises: the API's error, but for a 422 (the queue webhook refuses every update of a queue
        that is not Open or Closed), which is logged with the queue's name and reason."""
        name = queue["metadata"]["name"]
        if name == keys.ROOT_QUEUE or (queue.get("spec") or {}).get("parent"):
            return queue
        try:
            return await self.client.patch(scheme.QUEUE, name, {"spec": {"parent": keys.ROOT_QUEUE}})
        except ApiError as e:
            if e.code != 422:
                raise
            log.warning("queue %s: could not set spec.parent to %s: %s", name, keys.ROOT_QUEUE, e)
            return queue

    async def _hierarchy(self, queue: Obj, action: Action) -> Action:
        """A child follows its parent: closed with it (annotated ``volcano.sh/closed-by-parent``),
        reopened with it when that is why it was closed; a child of a closed parent cannot be
        opened."""
        parent_name = str((queue.get("spec") or {}).get("parent") or "")
        if parent_name in ("", keys.ROOT_QUEUE):
            return action
        parent = self.queues.get(None, parent_name)
        if parent is None:
            return action
        pstate = str((parent.get("status") or {}).get("state") or QueueState.OPEN)
        cur = str((queue.get("status") or {}).get("state") or "")
        closed = (QueueState.CLOSED, QueueState.CLOSING)
        by_parent = (queue["metadata"].get("annotations") or {}).get(CLOSED_BY_PARENT) == "true"
        name = queue["metadata"]["name"]
        if pstate in closed:
            if action == Action.OPEN_QUEUE:
                log.warning("queue %s: cannot open it while its parent queue %s is %s", name, parent_name, pstate)
                if self.recorder is not None:
                    self.recorder.event(queue, "Warning", str(Action.OPEN_QUEUE),
                                        f"Failed to open queue {name} because its parent queue {parent_name} is "
                                        "closing or closed. Open the parent queue first.")
                return Action.SYNC_QUEUE
            if cur not in closed:
                await self._annotate(name, "true")
                return Action.CLOSE_QUEUE
        elif pstate == QueueState.OPEN and cur in closed and by_parent and action == Action.SYNC_QUEUE:
            await self._annotate(name, "false")
            return Action.OPEN_QUEUE
        return action

    async def _annotate(self, name: str, value: str) -> None:
        await self.client.patch(scheme.QUEUE, name, {"metadata": {"annotations": {CLOSED_BY_PARENT: value}}})


def children_of(queues: Any) -> Callable[[Obj], list[Any]]:
    """Map a Queue event to Requests for its child queues (``spec.parent``)."""
    from pumice.runtime.reconcile import Request

    def fn(q: Obj) -> list[Any]:
        name = (q.get("metadata") or {}).get("name")
        return [Request("", c["metadata"]["name"]) for c in queues.list()
                if (c.get("spec") or {}).get("parent") == name]

    return fn


async def ensure_default_queues(client: KubeClient) -> None:
    """Create the ``root`` (not reclaimable) and ``default`` (reclaimable) queues when missing,
    as upstream's scheduler does at start."""
    for q in (root_queue(), default_queue()):
        try:
            await client.get(scheme.QUEUE, q["metadata"]["name"])
            continue
        except Exception as e:
            if not is_not_found(e):
                raise
        await create_unless_exists(client, q)
