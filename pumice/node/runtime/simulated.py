"""Simulated runtime: no processes; a Pod's lifecycle plays out on the project clock.

- Sandbox creation takes ``start_latency`` seconds (plus a seeded jitter of up to
  ``start_jitter`` seconds), standing in for sandbox setup and image pull. With neither
  (``starts_at_once``) the Pod's first status written is Running: the Pending one would last
  zero seconds.
- A regular container runs for the Pod annotation ``pumice.io/sim-duration-seconds`` (or the
  first matching per-image rule, or forever when neither is given), then exits with
  ``pumice.io/sim-exit-code`` (default 0). Init containers exit 0 at once. A comma-separated list
  of codes (``"1,0"``) gives the code of each run in turn: the n-th time this runtime starts that
  container of a Pod of that namespace/name (a kubelet restart, or a Pod re-created under its
  name, as a Volcano Job's restart policies do) exits with the n-th code, the last one repeating:
  a task that fails once and then succeeds.
- Rendezvous gangs: Pods annotated ``pumice.io/sim-gang: <key>`` and ``pumice.io/sim-gang-size: N``
  (distributed training workers) make no progress until N containers of that key (per namespace)
  have started; then all their durations start together. Late joiners (restarts) run at once.
- Resource usage (what metrics.k8s.io serves, ``kubectl top`` and the HPA read): each regular
  container of a running Pod uses what the Pod annotations ``pumice.io/sim-cpu-usage`` and
  ``pumice.io/sim-memory-usage`` say (quantities, per container: ``"200m"``, ``"100Mi"``); a Pod
  with neither reports no usage (nothing runs). The node agent reports it
  (:meth:`pumice.node.agent.NodeAgent.simulated_usage`).
- SIGTERM ends a container at once with 143, SIGKILL with 137; probes and exec hooks succeed.
- Nothing is kept across an agent restart but the Pods' statuses: :meth:`SimulatedRuntime.resume`
  takes up a container that was running (since its ``startedAt``) and ends it when its first run
  would have ended, ``startedAt + duration`` (a gang's members at the rendezvous + theirs).
- :meth:`SimulatedRuntime.finish_pod` ends a Pod's containers, or one of them, from outside (the
  simulated Ray dashboard ends a RayJob's submitter when the Ray job ends: the submitter Pod in
  K8sJobMode, the head Pod's ``ray-job-submitter`` container in SidecarMode).

Deterministic: the jitter comes from ``random.Random(f"{seed}:{uid}")``, so a Pod's timings do not
depend on the order in which Pods arrive.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pumice._util.clock import Clock
from pumice.api import Obj
from pumice.node.network import IPAM
from pumice.node.runtime.base import Container, RuntimeError_, Sandbox, StartRequest

ANNOTATION_DURATION = "pumice.io/sim-duration-seconds"
ANNOTATION_EXIT_CODE = "pumice.io/sim-exit-code"
ANNOTATION_GANG = "pumice.io/sim-gang"
ANNOTATION_GANG_SIZE = "pumice.io/sim-gang-size"
ANNOTATION_CPU_USAGE = "pumice.io/sim-cpu-usage"
ANNOTATION_MEMORY_USAGE = "pumice.io/sim-memory-usage"


class _Gang:
    """Containers waiting at one rendezvous: (future, duration, exit code, handle holder, start
    time in epoch seconds). The rendezvous is at the last start of the ``size`` first ones."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.waiting: list[tuple[asyncio.Future[int], float, int, list[Any], float]] = []
        self.started = False


class SimulatedRuntime:
    """See the module docstring.

    Args:
        clock: the project clock (virtual under looptime).
        seed: seed of the per-Pod jitter.
        start_latency: seconds from admission to containers starting.
        start_jitter: extra uniform [0, start_jitter) seconds per Pod.
        image_durations: image prefix -> run seconds, used when the Pod has no duration annotation.
        pod_cidr: where simulated Pod IPs come from.
    """

    name = "simulated"

    def __init__(self, clock: Clock, *, seed: int = 0, start_latency: float = 1.0, start_jitter: float = 0.0,
                 image_durations: Mapping[str, float] | None = None, pod_cidr: str = "10.244.0.0/16") -> None:
        self.clock = clock
        self.seed = seed
        self.start_latency = start_latency
        self.start_jitter = start_jitter
        self.image_durations = dict(image_durations or {})
        self.ipam = IPAM(pod_cidr, reserved=[str(IPAM(pod_cidr).net.network_address + 1)])
        self._gangs: dict[str, _Gang] = {}
        self._by_pod: dict[str, list[Container]] = {}
        self._runs: dict[str, int] = {}  # "<ns>/<pod>/<container>" -> runs so far (exit-code lists only)
        self.timers = 0
        """Containers whose end is scheduled, has not come yet and can end their Pod (a simulation
        is stalled when nothing is pending and this is 0). Not counted: a container of a Pod with
        ``restartPolicy: Always``, or ``OnFailure`` with a non-zero exit code, which the kubelet
        restarts when it ends, over and over: its end is no progress."""

    @property
    def starts_at_once(self) -> bool:
        """No start latency and no jitter: a Pod's sandbox and containers start at the instant the
        Pod is admitted (its worker then skips the admission status, Pending for zero seconds)."""
        return self.start_latency <= 0 and self.start_jitter <= 0

    async def create_sandbox(self, pod: Obj, pod_dir: Path) -> Sandbox:
        md = pod["metadata"]
        delay = self.start_latency
        if self.start_jitter > 0:
            delay += random.Random(f"{self.seed}:{md['uid']}").uniform(0.0, self.start_jitter)
        if delay > 0:
            await self.clock.sleep(delay)
        return Sandbox(md["uid"], md.get("namespace", ""), md["name"], pod_dir, self.ipam.allocate(md["uid"]))

    async def remove_sandbox(self, sandbox: Sandbox) -> None:
        self.ipam.release(sandbox.uid)
        self._by_pod.pop(sandbox.uid, None)

    def _duration(self, pod: Obj, container: Obj) -> float | None:
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        if ANNOTATION_DURATION in ann:
            try:
                return max(0.0, float(ann[ANNOTATION_DURATION]))
            except ValueError:
                raise ValueError(f"{ANNOTATION_DURATION}: expected a number of seconds, "
                                 f"got {ann[ANNOTATION_DURATION]!r}") from None
        image = container.get("image", "")
        for prefix, seconds in self.image_durations.items():
            if image.startswith(prefix):
                return seconds
        return None

    async def start(self, sandbox: Sandbox, pod: Obj, req: StartRequest) -> Container:
        return self._launch(sandbox, pod, req.container, req.restart_count, req.init, None)

    def resume_sandbox(self, pod: Obj, pod_dir: Path, ip: str) -> Sandbox:
        """The sandbox of a Pod that had one before the agent restarted, at once and with its IP
        (``status.podIP``)."""
        md = pod["metadata"]
        self.ipam.restore(md["uid"], ip)
        return Sandbox(md["uid"], md.get("namespace", ""), md["name"], pod_dir, self.ipam.allocate(md["uid"]))

    def resume(self, sandbox: Sandbox, pod: Obj, container: Obj, restart_count: int, started_at: float,
               *, init: bool = False) -> Container:
        """Take up a container that was running before the agent restarted, since ``started_at``
        (epoch seconds, its status' ``startedAt``): it ends ``started_at + duration`` (at once when
        that has passed), with the exit code of run ``restart_count + 1``; a gang member ends at
        the rendezvous (the last start among the gang's first ``size`` members) + its duration.

        Raises:
            RuntimeError_: ``RunContainerError``, a bad simulator annotation (changed since).
        """
        return self._launch(sandbox, pod, container, restart_count, init, started_at)

    def _launch(self, sandbox: Sandbox, pod: Obj, container: Obj, restart_count: int, init: bool,
                started_at: float | None) -> Container:
        """Start (``started_at`` None: now) or take up a container; see :meth:`resume`."""
        loop = asyncio.get_running_loop()
        now = self.clock.now()
        # seconds it has run already: 0 for a start, so that its timer is its duration exactly
        ran = 0.0 if started_at is None else max(0.0, now - started_at)
        if started_at is None:
            started_at = now
        fut: asyncio.Future[int] = loop.create_future()
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        try:
            # a bad annotation is this runtime's start error (the kubelet's waiting reason, a
            # Warning Event and back-off, as for any container that cannot start)
            duration = 0.0 if init else self._duration(pod, container)
            codes = [0] if init else exit_codes(ann.get(ANNOTATION_EXIT_CODE, "0"))
            gang_size = max(1, _whole(ann, ANNOTATION_GANG_SIZE, 1))
        except ValueError as e:
            raise RuntimeError_("RunContainerError", str(e)) from None
        if len(codes) > 1:
            run_key = f"{sandbox.namespace}/{sandbox.name}/{container['name']}"
            # the run count is not kept across an agent restart: at least this Pod's restarts + 1
            n = self._runs[run_key] = max(self._runs.get(run_key, 0) + 1, restart_count + 1)
            codes = codes[min(n, len(codes)) - 1:]
        code = codes[0]
        gang_key = ann.get(ANNOTATION_GANG) if not init else None
        key = f"{sandbox.namespace}/{gang_key}" if gang_key else None
        # [timer handle, gang key, whether its end can end the Pod (counted in self.timers): this
        # run's, or a later run's the kubelet restarts it into]
        holder: list[Any] = [None, key, any(_ends_pod(pod, c) for c in codes)]
        if duration is not None and key:
            gang = self._gangs.get(key)
            if gang is None:
                gang = self._gangs[key] = _Gang(gang_size)
            if gang.started:
                self._arm(loop, fut, duration - ran, code, holder)
            else:
                self._join(loop, gang, (fut, duration, code, holder, started_at), now)
        elif duration is not None:
            self._arm(loop, fut, duration - ran, code, holder)
        c = Container(container["name"], restart_count, started_at, state=(fut, holder))
        if not init:
            self._by_pod.setdefault(sandbox.uid, []).append(c)
        return c

    def _join(self, loop: asyncio.AbstractEventLoop, gang: _Gang,
              member: tuple[asyncio.Future[int], float, int, list[Any], float], now: float) -> None:
        """Add ``member`` to ``gang``'s rendezvous; the ``size``-th one starts every waiting
        member's timer, counted from the rendezvous (the last start among them: ``now`` when this
        one is new). A member already ended (:meth:`resume_ended`) is counted, not timed."""
        gang.waiting.append(member)
        if len(gang.waiting) >= gang.size:
            gang.started = True
            since = max(0.0, now - max(w[4] for w in gang.waiting))
            for f, d, rc, h, _ in gang.waiting:
                if not f.done():
                    self._arm(loop, f, d - since, rc, h)
            gang.waiting.clear()

    def resume_ended(self, pod: Obj, container: Obj, started_at: float) -> None:
        """Count at its rendezvous a gang member's container that had ended before the agent
        restarted (it started at ``started_at``, epoch seconds, its status' ``startedAt``), so
        that the members taken up running (:meth:`resume`) do not wait for it for ever. Nothing
        for a container of no gang, one without a duration, or a gang that has met already.

        Raises:
            RuntimeError_: ``RunContainerError``, a bad simulator annotation (changed since).
        """
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        gang_key = ann.get(ANNOTATION_GANG)
        if not gang_key:
            return
        try:
            duration = self._duration(pod, container)
            size = max(1, _whole(ann, ANNOTATION_GANG_SIZE, 1))
        except ValueError as e:
            raise RuntimeError_("RunContainerError", str(e)) from None
        if duration is None:
            return
        key = f"{(pod.get('metadata') or {}).get('namespace', '')}/{gang_key}"
        gang = self._gangs.get(key)
        if gang is None:
            gang = self._gangs[key] = _Gang(size)
        if gang.started:
            return
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[int] = loop.create_future()
        ended.set_result(0)
        self._join(loop, gang, (ended, 0.0, 0, [None, key, False], started_at), self.clock.now())

    def _arm(self, loop: asyncio.AbstractEventLoop, fut: asyncio.Future[int], delay: float, code: int,
             holder: list[Any]) -> None:
        """End ``fut`` with ``code`` in ``delay`` seconds (at once when not positive)."""
        if holder[2]:
            self.timers += 1
        holder[0] = loop.call_later(max(0.0, delay), self._fire, fut, code, holder)

    def _fire(self, fut: asyncio.Future[int], code: int, holder: list[Any]) -> None:
        # the fired handle keeps its arguments, this holder among them: dropped, so that the
        # two are not a reference cycle left to the garbage collector
        holder[0] = None
        if holder[2]:
            self.timers -= 1
        _resolve(fut, code)

    def finish_pod(self, uid: str, code: int, container: str | None = None) -> bool:
        """End every running regular container of the Pod ``uid`` (only the one named
        ``container`` when given) with ``code``, as if its process exited. Returns whether the Pod
        had one."""
        ended = False
        for c in self._by_pod.get(uid, []):
            fut, _ = c.state
            if not fut.done() and (container is None or c.name == container):
                self._end(c, code)
                ended = True
        return ended

    async def wait(self, sandbox: Sandbox, pod: Obj, c: Container) -> int:
        fut, _ = c.state
        return int(await asyncio.shield(fut))

    def _end(self, c: Container, code: int) -> None:
        fut, holder = c.state
        if holder[0] is not None:
            holder[0].cancel()
            holder[0] = None
            if not fut.done() and holder[2]:
                self.timers -= 1
        gang = self._gangs.get(holder[1]) if holder[1] else None
        if gang is not None and not gang.started:
            gang.waiting = [w for w in gang.waiting if w[0] is not fut]
        if not fut.done():
            fut.set_result(code)

    async def signal(self, c: Container, sig: int) -> None:
        if sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            self._end(c, 128 + int(sig))

    async def kill(self, sandbox: Sandbox, c: Container) -> None:
        self._end(c, 137)

    async def exec(self, sandbox: Sandbox, pod: Obj, c: Container, argv: Sequence[str], env: Mapping[str, str],
                   timeout: float) -> tuple[int, str]:
        return 0, ""

    async def probe_http(self, sandbox: Sandbox, pod: Obj, container: Obj, action: Obj, timeout: float) -> tuple[bool, str]:
        return True, ""

    async def probe_tcp(self, sandbox: Sandbox, pod: Obj, container: Obj, action: Obj, timeout: float) -> tuple[bool, str]:
        return True, ""

    def is_alive(self, c: Container) -> bool:
        return False

    def update_hosts(self, sandbox: Sandbox, content: str) -> None:
        return None


def exit_codes(value: Any) -> list[int]:
    """The ``pumice.io/sim-exit-code`` annotation's codes: one whole number, or several separated
    by commas (one per run, see the module docstring). Raises ValueError naming the value when a
    part is not a whole number."""
    parts = [p.strip() for p in str(value).split(",")]
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"{ANNOTATION_EXIT_CODE}: expected a whole number or a comma-separated list of them, "
                         f"got {value!r}") from None


def _whole(ann: Mapping[str, str], key: str, default: int) -> int:
    """The annotation ``key`` as a whole number (``default`` when absent). Raises ValueError naming
    the annotation and its value otherwise."""
    if key not in ann:
        return default
    try:
        return int(ann[key])
    except ValueError:
        raise ValueError(f"{key}: expected a whole number, got {ann[key]!r}") from None


def _ends_pod(pod: Obj, code: int) -> bool:
    """Whether a regular container exiting with ``code`` can end its Pod: the kubelet restarts it
    under ``restartPolicy`` ``Always`` (the default) and, with a non-zero code, ``OnFailure``."""
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    return policy == "Never" or (policy == "OnFailure" and code == 0)


def _resolve(fut: asyncio.Future[int], code: int) -> None:
    if not fut.done():
        fut.set_result(code)
