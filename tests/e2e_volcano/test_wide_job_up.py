"""``pumice up --runtime simulated`` with one wide Volcano Job (trial 13 F-2): thousands of Pods of
cpu 10m, minAvailable 1, on 3 Nodes of 110 Pods. Every scheduling session walks the thousands that
do not fit; the Volcano scheduler runs those sessions on its own thread and loop, so the API
server keeps answering kubectl while they run, and the scheduler still binds every Pod that fits."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
from collections import Counter
from functools import partial
from pathlib import Path

import pytest

from pumice.api import scheme
from pumice.cli.up import UpOptions, run_up
from pumice.client.base import ApiError
from pumice.client.kubeconfig import connect
from pumice.testing.kube_control_plane import free_port
from pumice.testing.node import wait_for
from pumice.testing.up import InProcessUp

REPLICAS = 2000
FIT = 330  # 3 Nodes x 110 Pods (cpu 10m: the Pod count is the limit, not the 8 cpu)


def _wide_job(replicas: int) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "wide", "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "w", "replicas": replicas, "template": {"spec": {
                         "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "10m"}}}]}}}]}}


def _scheduler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "volcano-scheduler"]


@pytest.mark.kubectl
@pytest.mark.timeout(900)
async def test_kubectl_is_answered_while_a_wide_jobs_sessions_run_and_the_pods_that_fit_bind(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=3, node_cpu="8",
                     node_memory="32Gi", network="host", pod_egress="none")
    up = await InProcessUp.start(partial(run_up, opts))
    try:
        kubeconfig = up.kubeconfig
        client = connect(kubeconfig)
        try:
            async def default_queue() -> bool:  # open: the vcjob admission refuses a Job for a queue not Open yet
                try:
                    return any(q["metadata"]["name"] == "default" and (q.get("status") or {}).get("state") == "Open"
                               for q in (await client.list(scheme.QUEUE)).items)
                except ApiError as e:  # the Queue kind may not be served yet; anything else fails the test
                    if e.code != 404:
                        raise
                    return False

            await wait_for(default_queue, timeout=120)
            assert len(_scheduler_threads()) == 1  # the Volcano scheduler runs on its own thread
            await client.create(_wide_job(REPLICAS))

            def get_ns() -> subprocess.CompletedProcess[str]:
                # kubectl's own client timeout (its default is none; trial 13 saw TLS handshake timeouts)
                return subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "--request-timeout=30s",
                                       "get", "ns", "-o", "name"], capture_output=True, text=True, timeout=60)

            async def bound() -> list[dict]:
                return [p for p in (await client.list(scheme.POD, "default")).items if p["spec"].get("nodeName")]

            answers = []
            while True:  # until the Job's Pods exist and those that fit are bound: sessions run all along
                answers.append(await asyncio.to_thread(get_ns))
                pods = (await client.list(scheme.POD, "default")).items
                if len(pods) == REPLICAS and sum(1 for p in pods if p["spec"].get("nodeName")) >= FIT \
                        and len(answers) >= 20:
                    break
                assert len(answers) < 2000, "the Job's Pods did not all exist and bind"
            for _ in range(10):  # and once they have, while every session walks the 1,670 that do not fit
                answers.append(await asyncio.to_thread(get_ns))
            failed = [(a.returncode, a.stderr) for a in answers if a.returncode != 0 or "namespace/default" not in a.stdout]
            assert failed == [], failed
            on = Counter(p["spec"]["nodeName"] for p in await bound())
            assert sorted(on.values()) == [110, 110, 110], on
        finally:
            await client.close()
    finally:
        await up.stop()
    assert _scheduler_threads() == []  # stopped with the rest


@pytest.mark.kubectl
@pytest.mark.timeout(300)
async def test_kubectl_is_answered_while_a_volcano_session_is_held(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that does not return (held here on purpose, in its synchronous run_once) holds
    only the scheduler's thread: kubectl, run while it is held, is answered. With the scheduler on
    the API server's loop (``volcano_thread=False``) the same kubectl gets no answer until the
    session returns, so this fails there; the wide-job test above does not tell the two apart."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    from pumice.scheduler.volcano.scheduler import Scheduler

    held, release = threading.Event(), threading.Event()
    original = Scheduler.run_once

    def run_once(self: Scheduler) -> object:
        if not release.is_set():
            held.set()
            release.wait(120)  # the kubectl thread below releases it once it has its answer (or not)
        return original(self)

    monkeypatch.setattr(Scheduler, "run_once", run_once)
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=1, node_cpu="2",
                     node_memory="4Gi", network="host", pod_egress="none")
    answers: list[subprocess.CompletedProcess[str] | BaseException] = []

    def kubectl_while_held(kubeconfig: Path) -> None:
        try:
            held.wait(120)
            answers.append(subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "--request-timeout=60s",
                                           "get", "ns", "default", "-o", "name"],
                                          capture_output=True, text=True, timeout=90))
        except BaseException as e:  # recorded for the assertion below, with its reason
            answers.append(e)
        finally:
            release.set()

    up = await InProcessUp.start(partial(run_up, opts))
    try:
        kubeconfig = up.kubeconfig
        # a plain thread, not the loop's executor: on the one-loop wiring the loop itself is held
        side = threading.Thread(target=kubectl_while_held, args=(kubeconfig,), name="kubectl-while-held")
        side.start()
        await asyncio.to_thread(side.join, 200)
    finally:
        release.set()
        await up.stop()
    assert held.is_set()
    assert len(answers) == 1 and isinstance(answers[0], subprocess.CompletedProcess), answers
    assert (answers[0].returncode, answers[0].stdout.strip()) == (0, "namespace/default"), answers[0].stderr


def _vcjob(name: str, replicas: int, requests: dict[str, str], min_available: int, queue: str) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": min_available, "schedulerName": "volcano", "queue": queue,
                     "tasks": [{"name": "t", "replicas": replicas, "template": {
                         "metadata": {"annotations": {"pumice.io/sim-duration-seconds": "3600"}},
                         "spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}]}}}]}}


@pytest.mark.timeout(600)
async def test_a_stop_while_a_wide_gang_waits_for_room_drops_the_queued_writes_and_ends_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Trial 14 F-5: Ctrl-C while a wide gang waits for room (every Node's cpu taken by a Job of
    another Queue, so each Pod the vcjob controller creates changes the gang's Pending count in
    every Pending Pod's PodScheduled message) took 25-88 s, logged "Task was destroyed but it is
    pending!" and left the Volcano scheduler's thread running. Now the writes still queued are
    dropped (and said so), the thread ends and is joined, and no pending task is left behind."""
    import gc
    import logging

    from pumice.scheduler.volcano import scheduler as volcano_scheduler
    from pumice.scheduler.volcano.cache.live import SchedulerCache

    caches: list[SchedulerCache] = []

    class RecordedCache(SchedulerCache):  # the real cache, kept where the test can read it
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            caches.append(self)

    monkeypatch.setattr(volcano_scheduler, "SchedulerCache", RecordedCache)
    caplog.set_level(logging.INFO)
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=3, node_cpu="2",
                     node_memory="4Gi", network="host", pod_egress="none")
    up = await InProcessUp.start(partial(run_up, opts))
    try:
        client = connect(up.kubeconfig)
        try:
            async def queue_open(name: str) -> bool:
                try:
                    return any(q["metadata"]["name"] == name and (q.get("status") or {}).get("state") == "Open"
                               for q in (await client.list(scheme.QUEUE)).items)
                except ApiError as e:  # the Queue kind may not be served yet; anything else fails the test
                    if e.code != 404:
                        raise
                    return False

            await wait_for(lambda: queue_open("default"), timeout=120)
            await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                 "metadata": {"name": "fill"}, "spec": {"weight": 1, "reclaimable": False}})
            await wait_for(lambda: queue_open("fill"), timeout=60)
            await client.create(_vcjob("filler", 3, {"cpu": "2", "memory": "1Gi"}, 3, "fill"))

            async def filled() -> bool:
                return sum(1 for p in (await client.list(scheme.POD, "default")).items
                           if (p.get("status") or {}).get("phase") == "Running") == 3

            await wait_for(filled, timeout=120)
            await client.create(_vcjob("wide", 2000, {"cpu": "10m", "memory": "1Mi"}, 50, "default"))

            async def churning() -> bool:  # condition writes queued behind the workers
                return len(caches) == 1 and len(caches[0]._queued_conditions) >= 50

            await wait_for(churning, timeout=300)
        finally:
            await client.close()
    finally:
        await up.stop()
    gc.collect()  # a task left pending is reported when it is collected
    cache = caches[0]
    assert cache.dropped_writes > 0 and not cache._queued_conditions and not cache.pending_writes
    assert any(r.getMessage().startswith("stopping: dropped ") for r in caplog.records
               if r.name == "pumice.scheduler.volcano")
    assert [r.getMessage() for r in caplog.records if "Task was destroyed" in r.getMessage()] == []
    assert [r.getMessage() for r in caplog.records if r.name == "pumice.runtime.thread"] == []  # joined, not left
    assert _scheduler_threads() == []
