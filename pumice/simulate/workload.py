"""Workload inputs: traces and the pumice workload YAML -> :class:`Arrival` lists.

An :class:`Arrival` is "these manifests are created at ``time`` seconds after the start". Pods'
run time comes from the simulated runtime's annotation ``pumice.io/sim-duration-seconds``; a gang
of Pods that must all run before any makes progress (distributed training) carries
``pumice.io/sim-gang`` / ``pumice.io/sim-gang-size`` (see :mod:`pumice.node.runtime.simulated`).
Every Pod of an arrival carries the label ``pumice.io/sim-job: <job>`` so results group by job.

Adapters, their mappings and assumptions:

``openb`` (Alibaba GPU v2023 ``openb_pod_list_*.csv``)
    One Pod per row, arriving at ``creation_time``. Duration: ``deletion_time - scheduled_time``
    (``- creation_time`` when the Pod was never scheduled). Requests: ``cpu_milli``,
    ``memory_mib``, and GPU per card as Volcano's GPU sharing asks for it (requests and limits):
    a one-GPU Pod (``num_gpu`` 1) asks for ``volcano.sh/gpu-memory`` = ``gpu_milli`` (1000 for a
    whole card; the Nodes publish 1000 per card), so it must fit on one card, as in FGD's and
    Alibaba's GPU-sharing schedulers: a 0.5-GPU Pod cannot span two half-free cards; a multi-GPU
    Pod asks for ``volcano.sh/gpu-number`` = ``num_gpu`` whole idle cards (every such Pod in the
    pod lists has ``gpu_milli`` 1000). The per-card fit is the ``deviceshare`` plugin's, which
    ``pumice simulate`` enables when no ``--scheduler-conf`` is given; a configuration without
    it fits the pooled Node total only. ``gpu_spec`` (e.g. ``V100M16|V100M32``) becomes a required node affinity on
    ``nvidia.com/gpu.product``. QoS -> PriorityClass: Guaranteed 1000, LS 800, Burstable 500, BE
    100 (``openb-<qos>``). The trace's own ``scheduled_time - creation_time`` is kept as the
    reference queueing delay. All Pods go to the queue given (default ``default``).
``philly`` (Philly via Pollux ``philly.csv``)
    One Volcano Job per row at ``timestamp`` (relative to the earliest row), ``duration``
    seconds. ``num_gpus`` is split into ``ceil(num_gpus / 8)`` workers of at most 8 GPUs each
    (the last worker takes the rest), a gang with ``minAvailable`` = workers, each worker
    requesting ``nvidia.com/gpu`` and 4 cpu / 16 GiB per GPU (assumption: Philly logs no CPU or
    memory). ``cluster`` (the VC) -> Queue ``vc-<cluster>``.
``pollux`` (Pollux ``workloads/workload-N.csv``: name, time, application, num_replicas, batch_size)
    One Volcano Job per row at ``time``: ``num_replicas`` one-GPU workers (as AdaptDL runs one
    replica per GPU) as one gang, 4 cpu / 16 GiB per GPU (assumption: the file gives neither;
    Pollux's testbed nodes have 12 cpu / 48 GiB per GPU). Run time: :data:`POLLUX_RUN_SECONDS`,
    the time the application takes to train at that ``num_replicas`` and ``batch_size``, computed
    from Pollux's own throughput and validation traces the way its workload generator rated each
    configuration it drew. Assumptions: the job keeps the replicas and batch size it was submitted
    with (Pollux's adaptive re-scaling and batch-size tuning are not replayed, so this is its
    fixed-configuration baseline); a combination the table lacks takes the same application's
    entry with the nearest ``num_replicas`` at equal GPU-seconds; an unknown application is
    refused. All Jobs go to the queue given (default ``default``). Pollux's testbed is 16 Nodes
    of 4 GPUs (a Tiresias-style spec ``1,16,4,48,192`` describes it).
``tiresias`` (Tiresias ``60_job.csv``)
    One Volcano Job per row at ``submit_time``, ``duration`` seconds, ``num_gpu`` split into
    workers of at most 4 GPUs (the Tiresias clusters have 4 GPUs per node), one gang.
``dlrm`` (Alibaba GPU v2025 ``disaggregated_DLRM_trace.csv``)
    Long-running serving replicas. One Deployment per ``app_name`` would hide per-instance times,
    so each instance is one bare Pod, a service that runs until deleted: it arrives at
    ``creation_time`` (empty: it was already running when the trace window opened; it arrives at
    0) and is deleted at ``deletion_time`` (empty: it outlived the window; it runs to the end of
    the run and does not keep the run from ending). Its job row finishes at that deletion
    (status ``Deleted``; JCT is then the instance's lifetime in the window, the queueing delay its
    wait for a Node); one deleted before it ever ran says ``Deleted before start``. Requests from
    the ``*_request`` columns: cpu cores, memory GiB, whole GPUs as ``nvidia.com/gpu`` (a fraction
    would ask for ``volcano.sh/gpu-memory`` on one card). ``role`` places the instance: ``CN``
    (CPU-node instances, no GPU) must go to a Node without a GPU model label, ``HN`` (GPU-node
    instances) asks for its GPU. Priority ``openb-ls`` (all are latency-sensitive). Not modelled
    (assumptions): ``max_instance_per_node`` (Kubernetes has no per-Node cap for a group of
    bare Pods short of anti-affinity, which would mean 1), the ``*_limit`` columns, ``rdma_*``
    and ``disk_*``, and ``scheduled_time`` (it is not compared with the simulated bind as openb's
    is). The trace has no node list: the openb node lists (same operator, CPU and GPU Nodes up to
    128 cores / 768 GiB) fit every instance but the 192-core ones.
``yaml`` (our own format, see :func:`load_yaml`)
    RayJob / RayService / Volcano Job / Deployment / Pod manifests arriving at ``at`` with
    ``duration`` (run time of a Pod, vcjob or Ray job once running; lifetime of a RayService or
    Deployment from its arrival). A bare Pod with ``restartPolicy: Always`` (the default) never
    ends on its own: ``duration`` is its lifetime once Running, then the run deletes it (as
    openb's Pods live from their scheduling to their deletion; :attr:`Arrival.delete_after_start`).
"""

from __future__ import annotations

import copy
import datetime as dt
import gc
import logging
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from pumice.api import Obj
from pumice.api.quantity import QuantityError, parse_quantity
from pumice.api.validation import SYSTEM_PRIORITY_CLASS_VALUES, validate_resource_requirements
from pumice.node.podspec import pod_requests
from pumice.node.runtime.simulated import ANNOTATION_DURATION, ANNOTATION_EXIT_CODE, exit_codes
from pumice.simulate.nodes import (
    GPU,
    GPU_MEMORY,
    GPU_MODEL_LABEL,
    GPU_NUMBER,
    CsvRow,
    InputError,
    gpu_milli,
    read_csv,
    read_text,
    yaml_documents,
)

log = logging.getLogger("pumice.simulate.workload")

JOB_LABEL = "pumice.io/sim-job"
GANG_ANNOTATION = "pumice.io/sim-gang"
GANG_SIZE_ANNOTATION = "pumice.io/sim-gang-size"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
NAMESPACE = "default"
IMAGE = "pumice.io/simulated"

OPENB_PRIORITY = {"Guaranteed": 1000, "LS": 800, "Burstable": 500, "BE": 100}

POLLUX_RUN_SECONDS: dict[tuple[str, int, int], int] = {
    ("bert", 6, 384): 3056, ("bert", 8, 384): 2480, ("bert", 12, 384): 1589, ("bert", 16, 384): 1335,
    ("cifar10", 6, 2048): 854, ("cifar10", 8, 2048): 826, ("cifar10", 12, 4096): 573, ("cifar10", 16, 4096): 449,
    ("deepspeech2", 6, 320): 4153, ("deepspeech2", 8, 320): 3501, ("deepspeech2", 12, 640): 2573,
    ("imagenet", 24, 3200): 31396, ("imagenet", 32, 6400): 26207, ("imagenet", 48, 6400): 18880,
    ("ncf", 1, 32768): 33,
    ("yolov3", 4, 64): 12870,
}
"""``(application, num_replicas, batch_size) -> seconds`` to train, for every combination in the
eight Pollux workloads. Derived (not copied) from petuum/adaptdl ``simulator/traces`` (branch
osdi21-artifact): iterations to the last epoch (``validation-<batch_size>.csv`` at the
application's ``max_epochs``: bert 2, cifar10 100, deepspeech2 80, imagenet 90, ncf 10, yolov3 50)
times the step time at that placement (4 GPUs per node; ``placements.csv``, or ``scalability.csv``
beyond 4 nodes, interpolated linearly in the per-GPU batch, with gradient accumulation past the
largest per-GPU batch, yolov3's being 8), as the generator's ``get_configurations`` rates the
configurations it draws. Each is under 12 hours, as the generator requires."""


MAX_SIMULATED_SECONDS = 10 * 365 * 86400.0
"""The latest simulated time a run may reach (10 years, far beyond every trace here; openb's spans
149 days), and so the longest run time of a job: the runner's virtual loop keeps time exact to
2**30 s (34 years; a timer past it never fires and the run freezes), and an idle stretch still
costs about one wake-up per simulated hour, so a run of centuries would never end in practice."""


MAX_COPIES = 1_000_000
"""The most copies one YAML arrival's ``count`` may make: each copy is an :class:`Arrival` with its
manifests, held for the whole run (about a kilobyte or more each), and a million is far beyond every
trace here (Philly's 82,247 jobs)."""


MAX_PODS = 150_000
"""The most Pods one YAML arrival's manifest may make (a vcjob's task ``replicas`` summed, a Ray
kind's head plus its worker groups' ``replicas`` times ``numOfHosts``, a Deployment's
``replicas``): every Pod is an object in the run's in-memory API server and in each informer's
cache for the whole run (about 20 KB each with its events: a vcjob of 20,000 Pods held 590 MB,
one of 10 million ran the machine out of memory), and 150,000 is Kubernetes' documented limit of
Pods in a whole cluster ("Considerations for large clusters", kubernetes.io), far beyond every
trace here. Upstream accepts any int32 ``replicas``; a simulation of more could not finish."""


def _years(seconds: float) -> str:
    return f"{seconds / 86400 / 365:.3g} years"


def _run_seconds(row: CsvRow, column: str) -> float:
    """The ``column`` of ``row`` as a job's run time: a number of seconds, 0 or more, at most
    :data:`MAX_SIMULATED_SECONDS`.

    Raises:
        InputError: ``<file>: row N (line L), column duration: 5e+09 seconds (158 years) is more than
            the 315360000 s (10 years) a run may last``.
    """
    x = row.number(column)
    if x > MAX_SIMULATED_SECONDS:
        raise InputError(f"{row.where(column)}: {x:g} seconds ({_years(x)}) is more than the "
                         f"{MAX_SIMULATED_SECONDS:.0f} s (10 years) a run may last")
    return x


@dataclass(frozen=True)
class Arrival:
    """Manifests created at ``time``.

    Attributes:
        time: seconds after the simulation start.
        job: the job name (unique in a workload); the ``pumice.io/sim-job`` label of its Pods.
        kind: the kind of the first manifest (``Pod``, ``Job`` for vcjob, ``RayJob``, ``RayService``,
            ``Deployment``).
        objects: manifests to create (namespace ``default`` unless they say otherwise).
        queue: the Volcano Queue the job runs in.
        tasks: how many Pods the job runs (its gang size when ``gang``).
        duration: seconds of run once running (None: runs until deleted or the end).
        delete_after: delete the manifests this many seconds after ``time`` (long-running
            services; None: never).
        delete_after_start: delete the manifests this many seconds after the arrival's Pod first
            went Running (a YAML bare Pod with ``restartPolicy: Always``, which never ends on its
            own; None: not so).
        trace_delay: the queueing delay the trace itself recorded (openb), seconds.
        gpus: GPUs the job asks for in total (for per-job reports).
    """

    time: float
    job: str
    kind: str
    objects: tuple[Obj, ...]
    queue: str = "default"
    tasks: int = 1
    duration: float | None = None
    delete_after: float | None = None
    delete_after_start: float | None = None
    trace_delay: float | None = None
    gpus: float = 0.0


@dataclass
class Workload:
    """Arrivals in time order, plus Queue names the workload needs and PriorityClasses it uses."""

    arrivals: list[Arrival]
    queues: list[str] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    source: str = ""
    format: str = ""
    """The format it was read in (``tiresias``, ``yaml``, ...; :func:`load_workload` sets it)."""

    def sort(self) -> Workload:
        self.arrivals.sort(key=lambda a: (a.time, a.job))
        return self


def _fmt(x: float) -> str:
    return repr(float(x)) if x != int(x) else str(int(x))


def pod_manifest(name: str, *, requests: dict[str, str], job: str, queue: str, duration: float | None,
                 priority_class: str | None = None, gang: tuple[str, int] | None = None,
                 affinity: Obj | None = None) -> Obj:
    """A bare Pod for the Volcano scheduler (the PodGroup controller gives it a one-member PodGroup)."""
    ann = {QUEUE_ANNOTATION: queue}
    if duration is not None:
        ann[ANNOTATION_DURATION] = _fmt(duration)
    if gang is not None:
        ann[GANG_ANNOTATION], ann[GANG_SIZE_ANNOTATION] = gang[0], str(gang[1])
    limits = {k: v for k, v in requests.items() if k not in ("cpu", "memory")}
    spec: Obj = {"schedulerName": "volcano", "restartPolicy": "Never",
                 "containers": [{"name": "main", "image": IMAGE,
                                 "resources": {"requests": dict(requests), **({"limits": limits} if limits else {})}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {JOB_LABEL: job}, "annotations": ann},
            "spec": spec}


_SHAPES: dict[tuple[tuple[str, str], ...], tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = {}
"""A worker's request items as given -> (its requests in key order, its limits: the requests but cpu
and memory); a trace has a handful of worker shapes, so :func:`vcjob_manifest` sorts each once."""


def _shape(worker: dict[str, str]) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    given = tuple(worker.items())
    shape = _SHAPES.get(given)
    if shape is None:
        req = tuple(sorted(given))
        shape = _SHAPES[given] = (req, tuple((k, v) for k, v in req if k not in ("cpu", "memory")))
    return shape


def vcjob_manifest(name: str, *, workers: list[dict[str, str]], queue: str, duration: float,
                   gang: bool = True) -> Obj:
    """A Volcano Job, one task per distinct request shape, ``minAvailable`` = all workers."""
    shapes: dict[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]], int] = {}
    for w in workers:
        shape = _shape(w)
        shapes[shape] = shapes.get(shape, 0) + 1
    size, run = len(workers), _fmt(duration)
    tasks: list[Obj] = []
    for i, ((req, limits), replicas) in enumerate(shapes.items()):
        ann = {ANNOTATION_DURATION: run}
        if gang and size > 1:
            ann[GANG_ANNOTATION], ann[GANG_SIZE_ANNOTATION] = name, str(size)
        resources = {"requests": dict(req), "limits": dict(limits)} if limits else {"requests": dict(req)}
        tasks.append({"name": f"worker{i}" if len(shapes) > 1 else "worker", "replicas": replicas,
                      "template": {"metadata": {"labels": {JOB_LABEL: name}, "annotations": ann},
                                   "spec": {"restartPolicy": "Never", "containers": [{
                                       "name": "main", "image": IMAGE, "resources": resources}]}}})
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {JOB_LABEL: name}},
            "spec": {"schedulerName": "volcano", "queue": queue, "minAvailable": size, "tasks": tasks}}


def split_gpus(total: int, per_worker: int) -> list[int]:
    """``total`` GPUs as workers of at most ``per_worker`` (the last takes the rest)."""
    if total <= 0:
        return [0]
    n = math.ceil(total / per_worker)
    return [per_worker] * (n - 1) + [total - per_worker * (n - 1)]


def _gpu_job(name: str, t: float, gpus: int, per_worker: int, duration: float, queue: str,
             cpu_per_gpu: int = 4, mem_gib_per_gpu: int = 16) -> Arrival:
    shares = split_gpus(gpus, per_worker)
    workers = [{"cpu": str(max(1, g) * cpu_per_gpu), "memory": f"{max(1, g) * mem_gib_per_gpu}Gi",
                **({GPU: str(g)} if g else {})} for g in shares]
    return Arrival(t, name, "Job", (vcjob_manifest(name, workers=workers, queue=queue, duration=duration),),
                   queue=queue, tasks=len(workers), duration=duration, gpus=float(gpus))


# -- adapters ----------------------------------------------------------------------------------

def load_openb(path: Path, *, queue: str = "default", text: str | None = None) -> Workload:
    arrivals = []
    if text is None:
        text = read_text(path)
    header = text.split("\n", 1)[0]
    if "creation_time" not in header.split(",") and {"name", "num_gpu", "gpu_milli"} <= set(header.strip().split(",")):
        raise InputError(f"{path}: no creation_time column (the multigpu variants carry no times)")
    for row in read_csv(path, "openb", ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time"),
                        text):
        created = row.number("creation_time")
        sched = row.number("scheduled_time") if row.text("scheduled_time") else None
        deleted = row.number("deletion_time") if row.text("deletion_time") else None
        num_gpu = int(row.number("num_gpu", whole=True, optional=True))
        gpu_milli = int(row.number("gpu_milli", whole=True, optional=True))
        req = {"cpu": f"{int(row.number('cpu_milli', whole=True))}m",
               "memory": f"{int(row.number('memory_mib', whole=True))}Mi"}
        if num_gpu == 1:
            milli = gpu_milli if 0 < gpu_milli <= 1000 else 1000
            req[GPU_MEMORY] = str(milli)
        else:
            milli = num_gpu * 1000
            if num_gpu > 1:
                req[GPU_NUMBER] = str(num_gpu)
        start = sched if sched is not None else created
        duration = max(0.0, deleted - start) if deleted is not None else None
        qos = row.text("qos") or "BE"
        pc = f"openb-{qos.lower()}"
        affinity = None
        if row.text("gpu_spec"):
            models = [m for m in row.text("gpu_spec").split("|") if m]
            affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}]}}}
        name = row.text("name")
        pod = pod_manifest(name, requests=req, job=name, queue=queue, duration=duration, priority_class=pc,
                           affinity=affinity)
        arrivals.append(Arrival(created, name, "Pod", (pod,), queue=queue, duration=duration,
                                trace_delay=(sched - created) if sched is not None else None,
                                gpus=milli / 1000))
    pcs = {f"openb-{q.lower()}": v for q, v in OPENB_PRIORITY.items()}
    return Workload(arrivals, [queue], pcs, str(path)).sort()


def _philly_time(text: str) -> float:
    """A Philly ``timestamp`` (``2017-10-03 12:00:00``, UTC) as epoch seconds.

    Raises:
        ValueError: not ``%Y-%m-%d %H:%M:%S``.
    """
    if len(text) == 19 and text[4] == text[7] == "-" and text[10] == " " and text[13] == text[16] == ":" \
            and text.isascii():
        # the trace's own form: fromisoformat reads it as strptime does, ten times faster
        try:
            return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()
        except ValueError:
            pass  # strptime below says what is wrong, in its words
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC).timestamp()


def load_philly(path: Path, *, gpus_per_worker: int = 8, text: str | None = None) -> Workload:
    rows = read_csv(path, "philly", ("timestamp", "num_gpus", "cluster", "duration"), text)
    stamps = []
    for row in rows:
        try:
            stamps.append(_philly_time(row.text("timestamp")))
        except ValueError:
            raise InputError(f"{row.where('timestamp')}: expected a time like 2017-10-03 12:00:00, "
                             f"got {row.text('timestamp')!r}") from None
    t0 = min(stamps) if stamps else 0.0
    arrivals, queues = [], set()
    for i, (row, ts) in enumerate(zip(rows, stamps, strict=True)):
        q = f"vc-{row.text('cluster')}"
        queues.add(q)
        arrivals.append(_gpu_job(f"philly-{i:05d}", ts - t0, int(row.number("num_gpus", whole=True)), gpus_per_worker,
                                 _run_seconds(row, "duration"), q))
    return Workload(arrivals, sorted(queues), {}, str(path)).sort()


def pollux_run_seconds(application: str, replicas: int, batch_size: int) -> float:
    """Seconds a Pollux job trains with ``replicas`` GPUs at ``batch_size``: the
    :data:`POLLUX_RUN_SECONDS` entry, else the same application's entry with the nearest replica
    count (the smaller on a tie) at equal GPU-seconds.

    Raises:
        InputError: an application the table does not know.
    """
    key = (application, replicas, batch_size)
    if key in POLLUX_RUN_SECONDS:
        return float(POLLUX_RUN_SECONDS[key])
    known = [(n, s) for (app, n, _b), s in sorted(POLLUX_RUN_SECONDS.items()) if app == application]
    if not known:
        apps = sorted({app for app, _n, _b in POLLUX_RUN_SECONDS})
        raise InputError(f"Pollux application {application!r} has no run time; known: {', '.join(apps)}")
    n_ref, seconds = min(known, key=lambda k: (abs(k[0] - replicas), k[0]))
    return seconds * n_ref / max(1, replicas)


def load_pollux(path: Path, *, queue: str = "default", text: str | None = None) -> Workload:
    arrivals = []
    for row in read_csv(path, "pollux", ("name", "time", "application", "num_replicas"), text):
        n = int(row.number("num_replicas", whole=True, positive=True))
        try:
            duration = pollux_run_seconds(row.text("application"), n,
                                          int(row.number("batch_size", whole=True, optional=True)))
        except InputError as e:
            raise InputError(f"{row.where('application')}: {e}") from None
        arrivals.append(_gpu_job(row.text("name"), row.number("time"), n, 1, duration, queue))
    return Workload(arrivals, [queue], {}, str(path)).sort()


def load_tiresias(path: Path, *, queue: str = "default", text: str | None = None) -> Workload:
    arrivals = []
    seen: dict[int, CsvRow] = {}
    for row in read_csv(path, "tiresias", ("job_id", "num_gpu", "submit_time", "duration"), text):
        job_id = int(row.number("job_id", whole=True))
        if job_id in seen:
            raise InputError(f"{row.where('job_id')}: job_id {job_id} repeats row {seen[job_id].row} "
                             f"(line {seen[job_id].line}); each job needs its own id")
        seen[job_id] = row
        arrivals.append(_gpu_job(f"tiresias-{job_id:03d}", row.number("submit_time"),
                                 int(row.number("num_gpu", whole=True)), 4, _run_seconds(row, "duration"), queue))
    return Workload(arrivals, [queue], {}, str(path)).sort()


DLRM_CPU_NODE_AFFINITY: Obj = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "DoesNotExist"}]}]}}}
"""Where a DLRM ``CN`` (CPU-node) instance may run: a Node without a GPU model."""


def load_dlrm(path: Path, *, queue: str = "default", text: str | None = None) -> Workload:
    arrivals = []
    for row in read_csv(path, "dlrm", ("instance_sn", "cpu_request", "memory_request", "gpu_request"), text):
        created = row.number("creation_time", optional=True)
        deleted = row.number("deletion_time") if row.text("deletion_time") else None
        if deleted is not None and deleted < created:
            raise InputError(f"{row.where('deletion_time')}: {deleted:g} is before creation_time {created:g}")
        req = {"cpu": _fmt(row.number("cpu_request", optional=True)),
               "memory": f"{_fmt(row.number('memory_request', optional=True))}Gi"}
        g = row.number("gpu_request", optional=True)
        if g and g == int(g):
            req[GPU] = str(int(g))
        elif g:
            req[GPU_MEMORY] = str(round(g * 1000))
        name = row.text("instance_sn").replace("_", "-")
        affinity = DLRM_CPU_NODE_AFFINITY if row.text("role") == "CN" and not g else None
        pod = pod_manifest(name, requests=req, job=name, queue=queue, duration=None, priority_class="openb-ls",
                           affinity=affinity)
        arrivals.append(Arrival(created, name, "Pod", (pod,), queue=queue,
                                delete_after=(deleted - created) if deleted is not None else None, gpus=g))
    return Workload(arrivals, [queue], {"openb-ls": OPENB_PRIORITY["LS"]}, str(path)).sort()


def load_workload(path: str | Path, fmt: str = "auto", *, freeze: bool = False, **kw: Any) -> Workload:
    """Read a workload in ``fmt`` (``auto`` detects from the file name and header).

    ``freeze``: leave what the collector tracks (the workload read, and whatever else exists)
    in its permanent generation (``gc.freeze``), for a caller about to simulate it: a run
    freezes what exists before it anyway (``runner._quiet_gc``), and the workload read (Philly:
    about a million objects, all new, no reference cycles) then costs no collections between
    reading and the run, where the first one after reading walked all of it and later full ones
    again. ``gc.unfreeze`` (the run does at its end) makes them ordinary again.

    The file is read once, and its text handed from format detection to the loader (a pipe,
    ``--workload <(...)``, can be read only once). The workload's :attr:`Workload.format` is
    the format it was read in.

    Raises:
        InputError: unknown format or a bad row.
    """
    p = Path(path)
    loaders = {"openb": load_openb, "philly": load_philly, "pollux": load_pollux, "tiresias": load_tiresias,
               "dlrm": load_dlrm, "yaml": load_yaml}
    if fmt != "auto" and fmt not in loaders:
        raise InputError(f"unknown workload format {fmt!r}; known: {', '.join(sorted(loaders))}")
    text = read_text(p)
    if fmt == "auto":
        fmt = detect_format(p, text)
    # reading builds no reference cycles: with the collector paused, the hundreds of thousands
    # of manifest dicts a large trace makes cost no repeated collections over everything read
    # so far (Philly: 82,247 jobs read in 40% less time)
    paused = gc.isenabled()
    gc.disable()
    try:
        w: Workload = loaders[fmt](p, text=text, **kw)  # type: ignore[operator]
        w.format = fmt
        if freeze:
            gc.freeze()
    except (KeyError, ValueError, TypeError) as e:
        raise InputError(f"{p}: not a valid {fmt} workload: {e}") from None
    finally:
        if paused:
            gc.enable()
    check_unique_jobs(p, w)
    return w


def check_unique_jobs(path: Path, w: Workload) -> None:
    """Refuse a workload in which two arrivals make the same job: results are kept per job name
    (and the second one's objects would collide with the first's in the API).

    Raises:
        InputError: ``<file>: two arrivals make the job 'a' (at 0 s and at 5 s); job names must be
            unique in a workload (YAML: give each arrival its own `name`)``.
    """
    seen: dict[str, float] = {}
    for a in w.arrivals:
        if a.job in seen:
            raise InputError(f"{path}: two arrivals make the job {a.job!r} (at {_fmt(seen[a.job])} s and at "
                             f"{_fmt(a.time)} s); job names must be unique in a workload "
                             "(YAML: give each arrival its own `name`)")
        seen[a.job] = a.time


def detect_format(p: Path, text: str | None = None) -> str:
    """The workload format of ``p``: ``yaml`` by its suffix, else by the CSV header of ``text``
    (the file's text when the caller read it already; ``None`` reads ``p``).

    Raises:
        InputError: ``<file>: empty file``, ``<file>: cannot tell the workload format from its
            header; pass --format``, or the file cannot be read.
    """
    if p.suffix in (".yaml", ".yml"):
        return "yaml"
    if text is None:
        text = read_text(p)
    if not text.strip():
        raise InputError(f"{p}: empty file")
    header = {h.strip() for h in text.split("\n", 1)[0].strip().split(",")}
    if {"creation_time", "num_gpu", "gpu_milli"} <= header:
        return "openb"
    if {"timestamp", "num_gpus", "cluster"} <= header:
        return "philly"
    if {"name", "time", "application", "num_replicas"} <= header:
        return "pollux"
    if {"job_id", "num_gpu", "submit_time", "duration"} <= header:
        return "tiresias"
    if {"instance_sn", "app_name", "gpu_request"} <= header:
        return "dlrm"
    raise InputError(f"{p}: cannot tell the workload format from its header; pass --format")


# -- transformations ---------------------------------------------------------------------------

def sample(w: Workload, n: int, seed: int) -> Workload:
    """``n`` arrivals drawn with ``random.Random(seed)``, in time order (all when ``n`` >= size)."""
    if n >= len(w.arrivals):
        return w
    picked = random.Random(seed).sample(range(len(w.arrivals)), n)
    return replace(w, arrivals=[w.arrivals[i] for i in sorted(picked)])


def scale(w: Workload, factor: float) -> Workload:
    """Inflate arrivals: arrival times divided by ``factor`` (2.0 = twice the arrival rate),
    durations unchanged. Not the FGD study's inflation, which ignores time: it submits Pods drawn
    (with repeats) from the pod list until their GPU requests reach a multiple of the cluster's
    GPUs (1.3x in the paper), and none ever ends."""
    if factor <= 0:
        raise InputError("--scale must be positive")
    return replace(w, arrivals=[replace(a, time=a.time / factor) for a in w.arrivals])


def until(w: Workload, t: float | None) -> Workload:
    if t is None:
        return w
    return replace(w, arrivals=[a for a in w.arrivals if a.time <= t])


# -- the YAML format ---------------------------------------------------------------------------

def load_yaml(path: Path, *, text: str | None = None) -> Workload:
    """The pumice workload YAML::

        kind: Workload              # optional
        queues: [team-a, team-b]    # optional: Queue names the arrivals use (created when absent)
        priorityClasses:            # optional: PriorityClasses to create, name: value
          low: 10
          high: 1000
        arrivals:
          - at: 0                   # seconds after the start
            duration: 600           # seconds of run once running (services: deleted after)
            count: 2                # optional: this many copies, ``every`` seconds apart
            every: 30
            name: train             # optional: default the manifest's name; copies get -<i>
            manifest: {...}         # a RayJob, RayService, Volcano Job, Deployment or Pod

    Durations go where each kind needs them: Pods and vcjob Pod templates get the simulated
    runtime's duration annotation (a bare Pod with ``restartPolicy: Always``, the default, gets
    none: the run deletes it ``duration`` seconds after it went Running); a RayJob gets it on itself (the simulated Ray dashboard runs
    the Ray job that long once its cluster is ready); a RayService or a Deployment is a service: it
    is deleted ``duration`` seconds after it arrives, and without ``duration`` it runs until the
    end of the run (and does not keep the run from ending). A RayService's Serve applications
    become RUNNING ``pumice.io/sim-serve-start-seconds`` (an annotation of the RayService, default
    5) after the RayService controller first puts them (see
    :mod:`pumice.simulate.ray_dashboard`). Ray kinds take their Queue from the label
    ``volcano.sh/queue-name``, as KubeRay's Volcano batch scheduler does. A vcjob whose
    ``minAvailable`` > 1 also marks its Pods as one rendezvous gang (no worker makes progress
    until ``minAvailable`` of them run). A multi-document file adds up the arrivals, queues and
    PriorityClasses of its documents. A ``priorityClassName`` anywhere in a manifest must name a
    declared PriorityClass or a system one (``system-cluster-critical``, ``system-node-critical``):
    the API server's Priority admission refuses the Pods of any other, and the run would stall.

    Raises:
        InputError: one line naming the file and the arrival, e.g. ``<file>: arrivals[0].manifest.
            spec.priorityClassName: no PriorityClass 'low' (declare it under `priorityClasses:`)``.
    """
    docs = yaml_documents(path, text)
    arrivals: list[Arrival] = []
    queues: list[str] = []
    classes: dict[str, int] = {}
    for d in docs:
        if not isinstance(d, dict):
            raise InputError(f"{path}: a workload document is a mapping with `arrivals:`, not {type(d).__name__}")
        check_workload_document(path, d)
        queues += [str(q) for q in d.get("queues") or []]
        classes.update({str(k): int(v) for k, v in (d.get("priorityClasses") or {}).items()})
    known = set(classes) | SYSTEM_PRIORITY_CLASSES
    for d in docs:
        for i, a in enumerate(d.get("arrivals") or []):
            for where, value in _priority_class_names(a["manifest"], f"arrivals[{i}].manifest"):
                if value not in known:
                    raise InputError(f"{path}: {where}: no PriorityClass {value!r} (declare it under "
                                     "`priorityClasses:`, e.g. `priorityClasses: {" + str(value) + ": 100}`)")
    for d in docs:
        for a in d.get("arrivals") or []:
            # null, as leaving the field out (checked above: numbers, maybe quoted: YAML 1.1 reads 1e3 as a string)
            count = 1 if a.get("count") is None else int(float(a["count"]))
            every = float(a.get("every") or 0)
            for k in range(count):
                arrivals.append(_yaml_arrival(path, a, k, count, float(a.get("at") or 0) + k * every))
    if not arrivals:
        kinds = sorted({str(d.get("kind")) for d in docs if d.get("kind") and d.get("kind") != "Workload"})
        found = f"; it holds {', '.join(kinds)} manifest(s): put each under arrivals[].manifest" if kinds else ""
        raise InputError(f"{path}: no arrivals (a workload lists `arrivals:`, each with `at`, `duration` and a "
                         f"`manifest`){found}")
    for a in arrivals:
        if a.queue not in queues:
            queues.append(a.queue)
    return Workload(arrivals, queues, classes, str(path)).sort()


SYSTEM_PRIORITY_CLASSES = frozenset(SYSTEM_PRIORITY_CLASS_VALUES)
"""The PriorityClasses kube-apiserver creates itself (pkg/apis/scheduling SystemPriorityClasses)."""


def _priority_class_names(v: Any, where: str) -> Iterable[tuple[str, Any]]:
    """Every ``priorityClassName`` in a manifest, with where it is (depth first, in order)."""
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "priorityClassName" and x:
                yield f"{where}.{k}", x
            else:
                yield from _priority_class_names(x, f"{where}.{k}")
    elif isinstance(v, list):
        for j, x in enumerate(v):
            yield from _priority_class_names(x, f"{where}[{j}]")


def _type_name(v: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), type(v).__name__)


def check_workload_document(path: Path, d: Obj) -> None:
    """Check the shape of one workload YAML document (:func:`load_yaml`) before it is read: the
    types of ``queues``, ``arrivals`` and each arrival's fields, and of the manifest parts the
    loader fills in (``metadata``, its ``labels``/``annotations``, ``spec``, a vcjob's ``tasks``,
    a Ray kind's cluster spec and groups, a Deployment's ``template``; null refused where the loader
    writes into the mapping: ``expected a mapping, got null``, and for ``kind``/``apiVersion``),
    and the quantities of each Pod template's containers, init containers (``resources.requests``/``limits``) and
    ``overhead`` (as the run reads them before the API server sees them). Numbers: ``at``,
    ``every`` and ``duration`` finite and not negative (null: as left out), ``count`` whole and
    not negative; a manifest's ``replicas``, ``minAvailable`` and ``numOfHosts`` whole, not
    negative, neither null nor quoted (``expected a whole number, got null``); ``count`` at most :data:`MAX_COPIES` and the Pods one arrival makes at most
    :data:`MAX_PODS`. A RayJob's or RayService's containers also get the API server's Pod checks of
    their resources (:func:`~pumice.api.validation.validate_resource_requirements`: not negative,
    extended resources whole and requested as limited), which the Ray kinds' schemas do not make:
    KubeRay's Pod creates would be refused at every reconcile and the run would never end. The API
    server validates the rest of each manifest when it arrives.

    Raises:
        InputError: ``<file>: <where>: expected <what>, got <type>`` (``where`` like
            ``arrivals[0].manifest.spec``; a quantity: ``<file>: arrivals[1].manifest.spec.
            containers[0].resources.requests[cpu] (arrival 'c'): quantities must match ...: 'abc'``;
            the arrival's name when it has one; too many Pods: ``<file>: arrivals[0].manifest.spec.
            tasks[0].replicas (arrival 'j'): the arrival would make 10000000 Pods, more than the 150000
            one arrival may make (...)``), one line.
    """

    def fail(where: str, what: str, v: Any, value: bool = False) -> NoReturn:
        raise InputError(f"{path}: {where}: expected {what}, got {repr(v) if value else _type_name(v)}")

    def mapping(v: Any, where: str, optional: bool = True) -> Obj:
        if v is None and optional:
            return {}
        if not isinstance(v, dict):
            fail(where, "a mapping", v)
        return v

    def filled(m: Obj, key: str, where: str) -> Obj:
        """``m[key]``, a mapping the loader writes into (``metadata``, its ``labels`` and
        ``annotations``, ``spec``, a Ray cluster spec, its head group, each Pod template and its
        metadata): absent is an empty mapping, null is refused (``expected a mapping, got null``)."""
        if key in m and m[key] is None:
            fail(where, "a mapping", None)
        return mapping(m.get(key), where)

    def seq(v: Any, where: str) -> list[Any]:
        if v is None:
            return []
        if not isinstance(v, list):
            fail(where, "a list", v)
        return v

    def number(v: Any, where: str, whole: bool = False) -> None:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            fail(where, "a whole number" if whole else "a number of seconds", v)
        try:
            x = float(v)
        except ValueError:
            fail(where, "a whole number" if whole else "a number of seconds", v, value=True)
        if not math.isfinite(x) or x < 0 or (whole and x != int(x)):
            fail(where, "a whole number, 0 or more" if whole else "a finite number of seconds, 0 or more", v,
                 value=True)

    def whole(m: Obj, key: str, where: str) -> None:
        """A manifest's integer field (an int32 of the API: ``replicas``, ``minAvailable``, ...),
        when given: a YAML whole number, 0 or more. Null and a quoted number are refused here, as
        the run reads the number before the API server sees the manifest (which would refuse a
        string: ``must be of type integer``)."""
        if key not in m:
            return
        v = m[key]
        if v is None:
            fail(where, "a whole number", v)
        if isinstance(v, str):
            fail(where, "a whole number (unquoted)", v, value=True)
        number(v, where, whole=True)

    def quantities(resources: Obj, where: str) -> None:
        for name, q in resources.items():
            try:
                parse_quantity(q)
            except QuantityError as e:
                raise InputError(f"{path}: {where}[{name}]{arrival_name}: {e}") from None

    def add_pods(pods: int, n: Any, field: str) -> int:
        """``pods`` plus ``n`` (a checked whole number, or None for the default 1) Pods of one arrival."""
        pods += int(float(1 if n is None else n))
        if pods > MAX_PODS:
            raise InputError(f"{path}: {field}{arrival_name}: the arrival would make {pods} Pods, more than the "
                             f"{MAX_PODS} one arrival may make (each is held in memory for the whole run)")
        return pods

    def run_time(x: float, where: str) -> None:
        if x > MAX_SIMULATED_SECONDS:
            raise InputError(f"{path}: {where}: {x:g} seconds ({_years(x)}) is more than the "
                             f"{MAX_SIMULATED_SECONDS:.0f} s (10 years) a run may last")

    def annotations(md: Obj, where: str) -> None:
        ann = filled(md, "annotations", f"{where}.annotations")
        if ann.get(ANNOTATION_DURATION) is not None:
            aw = f"{where}.annotations[{ANNOTATION_DURATION}]"
            number(ann[ANNOTATION_DURATION], aw)
            run_time(float(ann[ANNOTATION_DURATION]), aw)
        if ann.get(ANNOTATION_EXIT_CODE) is not None:
            try:
                exit_codes(ann[ANNOTATION_EXIT_CODE])
            except ValueError:
                fail(f"{where}.annotations[{ANNOTATION_EXIT_CODE}]",
                     "a whole number or a comma-separated list of them", ann[ANNOTATION_EXIT_CODE], value=True)

    for i, q in enumerate(seq(d.get("queues"), "queues")):
        if not isinstance(q, str):
            fail(f"queues[{i}]", "a Queue name", q)
    for k, v in mapping(d.get("priorityClasses"), "priorityClasses").items():
        where = f"priorityClasses[{k}]"
        if not isinstance(k, str) or not k:
            fail("priorityClasses", "PriorityClass names", k)
        if isinstance(v, bool) or not isinstance(v, int) or not -2147483648 <= v <= 1000000000:
            # the value itself for a number or a string (YAML 1.1 reads 1e20, which has no dot, as a string)
            fail(where, "a whole number from -2147483648 to 1000000000 (the highest user-definable priority)", v,
                 value=isinstance(v, int | float | str) and not isinstance(v, bool))
    for i, a in enumerate(seq(d.get("arrivals"), "arrivals")):
        at = f"arrivals[{i}]"
        mapping(a, at, optional=False)
        for key in ("at", "every", "duration"):
            if a.get(key) is not None:
                number(a[key], f"{at}.{key}")
        if a.get("duration") is not None:
            run_time(float(a["duration"]), f"{at}.duration")
        if a.get("count") is not None:
            number(a["count"], f"{at}.count", whole=True)
            count = int(float(a["count"]))
            if count > MAX_COPIES:
                raise InputError(f"{path}: {at}.count: {count} copies is more than the {MAX_COPIES} one arrival may "
                                 "make (each is held in memory for the whole run)")
            last = float(a.get("at") or 0) + max(0, count - 1) * float(a.get("every") or 0)
            if last > MAX_SIMULATED_SECONDS:
                raise InputError(f"{path}: {at}: the last of its {count} copies arrives at {last:g} simulated seconds "
                                 f"({_years(last)}), past the {MAX_SIMULATED_SECONDS:.0f} s (10 years) a run may last")
        if a.get("name") is not None and not isinstance(a["name"], str | int):
            fail(f"{at}.name", "a name", a["name"])
        if "manifest" not in a:
            raise InputError(f"{path}: {at} has no manifest")
        m = mapping(a["manifest"], f"{at}.manifest", optional=False)
        where = f"{at}.manifest"
        for key in ("kind", "apiVersion"):
            if key in m and not isinstance(m[key], str):
                fail(f"{where}.{key}", "a string", m[key])
        md = filled(m, "metadata", f"{where}.metadata")
        named = a.get("name") or md.get("name")
        arrival_name = f" (arrival {str(named)!r})" if named else ""
        filled(md, "labels", f"{where}.metadata.labels")
        annotations(md, f"{where}.metadata")
        spec = filled(m, "spec", f"{where}.spec")
        templates: list[tuple[Obj, str]] = []
        kind = m.get("kind")
        pods = 1 if kind in ("RayJob", "RayService") else 0  # a Ray cluster's head
        if kind == "Job":
            for j, task in enumerate(seq(spec.get("tasks"), f"{where}.spec.tasks")):
                mapping(task, f"{where}.spec.tasks[{j}]", optional=False)
                templates.append((filled(task, "template", f"{where}.spec.tasks[{j}].template"),
                                  f"{where}.spec.tasks[{j}].template"))
                whole(task, "replicas", f"{where}.spec.tasks[{j}].replicas")
                pods = add_pods(pods, task.get("replicas"), f"{where}.spec.tasks[{j}].replicas")
            whole(spec, "minAvailable", f"{where}.spec.minAvailable")
        elif kind in ("RayJob", "RayService"):
            key = "rayClusterSpec" if kind == "RayJob" else "rayClusterConfig"
            rcs = filled(spec, key, f"{where}.spec.{key}")
            head = filled(rcs, "headGroupSpec", f"{where}.spec.{key}.headGroupSpec")
            templates.append((filled(head, "template", f"{where}.spec.{key}.headGroupSpec.template"),
                              f"{where}.spec.{key}.headGroupSpec.template"))
            for j, g in enumerate(seq(rcs.get("workerGroupSpecs"), f"{where}.spec.{key}.workerGroupSpecs")):
                gw = f"{where}.spec.{key}.workerGroupSpecs[{j}]"
                mapping(g, gw, optional=False)
                templates.append((filled(g, "template", f"{gw}.template"), f"{gw}.template"))
                for n in ("replicas", "numOfHosts"):
                    whole(g, n, f"{gw}.{n}")
                hosts = int(float(1 if g.get("numOfHosts") is None else g["numOfHosts"]))
                pods = add_pods(pods, int(float(1 if g.get("replicas") is None else g["replicas"])) * hosts,
                                f"{gw}.replicas")
        elif kind == "Deployment":
            templates.append((filled(spec, "template", f"{where}.spec.template"), f"{where}.spec.template"))
            whole(spec, "replicas", f"{where}.spec.replicas")
            pods = add_pods(pods, spec.get("replicas"), f"{where}.spec.replicas")
        elif kind == "Pod":
            templates.append((m, where))
        for t, tw in templates:
            tmd = filled(t, "metadata", f"{tw}.metadata")
            filled(tmd, "labels", f"{tw}.metadata.labels")
            annotations(tmd, f"{tw}.metadata")
            tspec = mapping(t.get("spec"), f"{tw}.spec")
            for key in ("containers", "initContainers"):
                for j, c in enumerate(seq(tspec.get(key), f"{tw}.spec.{key}")):
                    cw = f"{tw}.spec.{key}[{j}]"
                    c = mapping(c, cw, optional=False)
                    res = mapping(c.get("resources"), f"{cw}.resources")
                    for part in ("requests", "limits"):
                        quantities(mapping(res.get(part), f"{cw}.resources.{part}"), f"{cw}.resources.{part}")
                    if kind in ("RayJob", "RayService"):
                        # the custom resource's schema takes these; KubeRay's Pod create would be refused
                        # at every reconcile and the run would never end
                        causes = validate_resource_requirements(res, f"{cw}.resources")
                        if causes:
                            raise InputError(f"{path}: {causes[0].field}{arrival_name}: {causes[0].message} (the "
                                             "API server refuses the Pods KubeRay makes of this template)")
            quantities(mapping(tspec.get("overhead"), f"{tw}.spec.overhead"), f"{tw}.spec.overhead")


def _yaml_arrival(path: Path, a: Obj, k: int, count: int, t: float) -> Arrival:
    m = copy.deepcopy(a["manifest"])
    kind = m.get("kind", "")
    md = m.setdefault("metadata", {})
    base = str(a.get("name") or md.get("name") or kind.lower())
    name = base if count == 1 else f"{base}-{k}"
    md["name"] = name
    md.setdefault("namespace", NAMESPACE)
    md.setdefault("labels", {})[JOB_LABEL] = name
    duration = float(a["duration"]) if a.get("duration") is not None else None
    queue = "default"
    tasks = 1
    delete_after = delete_after_start = None
    # A bare Pod that never ends on its own (restartPolicy Always, the default) lives `duration`
    # seconds once Running, then the run deletes it, as openb's trace Pods live from their
    # scheduling to their deletion; Never and OnFailure Pods exit 0 after `duration` instead.
    forever = kind == "Pod" and ((m.get("spec") or {}).get("restartPolicy") or "Always") == "Always"
    if forever:
        delete_after_start = duration

    def stamp(template: Obj, gang: tuple[str, int] | None = None) -> None:
        tmd = template.setdefault("metadata", {})
        tmd.setdefault("labels", {})[JOB_LABEL] = name
        ann = tmd.setdefault("annotations", {})
        if duration is not None and kind in ("Pod", "Job") and not forever:
            ann[ANNOTATION_DURATION] = _fmt(duration)
        if gang is not None:
            ann[GANG_ANNOTATION], ann[GANG_SIZE_ANNOTATION] = gang[0], str(gang[1])

    if kind == "Pod":
        stamp(m)
        queue = md.get("annotations", {}).get(QUEUE_ANNOTATION, "default")
    elif kind == "Job" and m.get("apiVersion", "").startswith("batch.volcano.sh"):
        spec = m.setdefault("spec", {})
        queue = spec.get("queue", "default")
        tasks = sum(int(t.get("replicas", 1)) for t in spec.get("tasks") or [])
        min_av = int(spec.get("minAvailable", tasks))
        for task in spec.get("tasks") or []:
            stamp(task.setdefault("template", {}), (name, min_av) if min_av > 1 else None)
            policy = (task["template"].get("spec") or {}).get("restartPolicy") or "Always"
            if duration is not None and policy == "Always":
                log.warning("%s: arrival %s: task %s has restartPolicy Always (Kubernetes' default): its Pods "
                            "restart after their duration and the job never completes (the run ends stalled); "
                            "give the template restartPolicy: Never or OnFailure", path, name, task.get("name", ""))
    elif kind in ("RayJob", "RayService"):
        if duration is not None and kind == "RayJob":
            md.setdefault("annotations", {})[ANNOTATION_DURATION] = _fmt(duration)
        elif kind == "RayService":
            delete_after, duration = duration, None
        queue = md.get("labels", {}).get("volcano.sh/queue-name", "default")
        spec = m.setdefault("spec", {})
        if kind == "RayJob" and spec.get("clusterSelector") and "rayClusterSpec" not in spec:
            tasks = 0  # runs on an existing RayCluster, as KubeRay does: no cluster of its own to stamp
        else:
            rcs = spec.setdefault("rayClusterSpec" if kind == "RayJob" else "rayClusterConfig", {})
            stamp(rcs.setdefault("headGroupSpec", {}).setdefault("template", {}))
            tasks = 1
            for g in rcs.get("workerGroupSpecs") or []:
                stamp(g.setdefault("template", {}))
                tasks += int(g.get("replicas", 1)) * int(g.get("numOfHosts", 1))
    elif kind == "Deployment":
        stamp(m.setdefault("spec", {}).setdefault("template", {}))
        tasks = int(m["spec"].get("replicas", 1))
        delete_after = duration
        queue = m["spec"]["template"]["metadata"].get("annotations", {}).get(QUEUE_ANNOTATION, "default")
        duration = None
    else:
        raise InputError(f"{path}: arrival {name!r}: kind {kind!r} is not one of Pod, Job "
                         "(batch.volcano.sh), RayJob, RayService, Deployment")
    return Arrival(t, name, kind, (m,), queue=queue, tasks=tasks, duration=duration, delete_after=delete_after,
                   delete_after_start=delete_after_start, gpus=_manifest_gpus(m))


def _manifest_gpus(m: Obj) -> float:
    """GPUs a YAML arrival's Pods ask for in total: each Pod template's GPU requests (whole cards
    and shares, :func:`~pumice.simulate.nodes.gpu_milli`) times how many Pods it makes."""
    spec = m.get("spec") or {}
    kind = m.get("kind")
    templates: list[tuple[Obj, int]] = []
    if kind == "Pod":
        templates = [(m, 1)]
    elif kind == "Deployment":
        templates = [(spec.get("template") or {}, int(spec.get("replicas", 1)))]
    elif kind == "Job":
        templates = [(t.get("template") or {}, int(t.get("replicas", 1))) for t in spec.get("tasks") or []]
    elif kind in ("RayJob", "RayService"):
        rcs = spec.get("rayClusterSpec" if kind == "RayJob" else "rayClusterConfig") or {}
        templates = [((rcs.get("headGroupSpec") or {}).get("template") or {}, 1)]
        templates += [(g.get("template") or {}, int(g.get("replicas", 1)) * int(g.get("numOfHosts", 1)))
                      for g in rcs.get("workerGroupSpecs") or []]
    return sum(gpu_milli(pod_requests(t)) * n for t, n in templates) / 1000


def concat(parts: Iterable[Workload]) -> Workload:
    out = Workload([])
    for w in parts:
        out.arrivals += w.arrivals
        out.queues += [q for q in w.queues if q not in out.queues]
        out.priority_classes.update(w.priority_classes)
    return out.sort()
