"""``pumice up`` in a subprocess for tests and benches: free ports, a temp data dir, the
dashboard on, stopped with SIGINT (as a user's Ctrl-C). Or in the test's own loop
(:class:`InProcessUp`), where a test reaches into it (log records, monkeypatched parts).

Usage::

    proc, up = start_up(tmp_dir, "--runtime", "simulated")
    try:
        up.kubectl("apply", "-f", "x.yaml")
    finally:
        stop_up(proc)

    up = await InProcessUp.start(partial(run_up, UpOptions(...)))  # pumice.cli.up
    try:
        client = connect(up.kubeconfig)
    finally:
        await up.stop()
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
"""Debian's Chromium: the browser the UI tests and bench/ui.py drive (never a downloaded one)."""
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


_SLEEPING_VCJOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %(name)s, namespace: default}
spec:
  minAvailable: %(n)d
  schedulerName: volcano
  queue: %(queue)s
  tasks:
  - name: worker
    replicas: %(n)d
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox
          command: ["sleep", "3600"]
          resources: {requests: {cpu: "%(cpu)s", memory: 1Gi}}
"""


def sleeping_vcjob(name: str, *, replicas: int, queue: str, cpu: str) -> str:
    """A Volcano Job manifest (YAML text for ``kubectl apply -f -``) in namespace default: a gang
    of ``replicas`` (minAvailable = replicas) busybox Pods that sleep an hour, each requesting
    ``cpu`` (a quantity string) and 1Gi, in Volcano queue ``queue``."""
    return _SLEEPING_VCJOB % {"name": name, "n": replicas, "queue": queue, "cpu": cpu}


def simulated_rayjob(name: str, *, duration_seconds: float, workers: int = 0, shutdown_after_finishes: bool = False,
                     submission_mode: str | None = None) -> str:
    """A RayJob manifest (YAML text for ``kubectl apply -f``) for ``pumice up --runtime simulated``:
    its Ray job runs ``duration_seconds`` (the ``pumice.io/sim-duration-seconds`` annotation) on a
    head of 1 cpu and 1Gi and, with ``workers`` > 0, one worker group ``small`` of that many such
    workers. Every container sets its own readiness probe (period 1 s): KubeRay injects one only
    where a container has none, and its 10-s initial delay would be most of a test's wall time.
    ``submission_mode``: ``spec.submissionMode`` when given (default K8sJobMode)."""
    import yaml

    def group(container: str) -> dict[str, Any]:
        return {"rayStartParams": {}, "template": {"spec": {"containers": [{
            "name": container, "image": "rayproject/ray:2.46.0",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}]}}}

    cluster: dict[str, Any] = {"headGroupSpec": group("ray-head")}
    if workers:
        cluster["workerGroupSpecs"] = [{"groupName": "small", "replicas": workers, **group("ray-worker")}]
    spec: dict[str, Any] = {"entrypoint": 'python -c "print(1)"'}
    if submission_mode is not None:
        spec["submissionMode"] = submission_mode
    if shutdown_after_finishes:
        spec["shutdownAfterJobFinishes"] = True
    spec["rayClusterSpec"] = cluster
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob",
           "metadata": {"name": name, "annotations": {"pumice.io/sim-duration-seconds": f"{duration_seconds:g}"}},
           "spec": spec}
    return str(yaml.safe_dump(job, sort_keys=False))


@dataclass
class Up:
    """A running ``pumice up``: dashboard URL, kubeconfig, bearer token, data dir."""

    url: str
    kubeconfig: Path
    token: str
    data_dir: Path

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        """Run the real kubectl against this stack; returns stdout.

        Raises:
            AssertionError: kubectl is missing or (with ``check``) exits non-zero; the message has
                its stderr.
        """
        kubectl = shutil.which("kubectl")
        if not kubectl:
            raise AssertionError("kubectl is not on PATH (make venv installs it into .venv/bin)")
        res = subprocess.run([kubectl, *args], input=input, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "KUBECONFIG": str(self.kubeconfig)})
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {res.stderr}")
        return res.stdout


def start_up(data_dir: Path, *args: str, timeout: float = 90.0) -> tuple[subprocess.Popen[str], Up]:
    """Start ``pumice up --port 0 --dashboard-port 0 --data-dir data_dir ARGS``; return once the
    dashboard URL is printed. Output goes to ``data_dir/up.log``.

    Raises:
        RuntimeError: it exited or did not print the URL within ``timeout`` s (with its log tail).
    """
    log_path = data_dir / "up.log"
    log = open(log_path, "w")  # noqa: SIM115 - the child keeps writing to it
    proc = subprocess.Popen(
        [sys.executable, "-m", "pumice.cli.main", "up", "--data-dir", str(data_dir), "--port", "0",
         "--dashboard-port", "0", *args],
        stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text()
        m = re.search(r"dashboard: (http://\S+)", text)
        if m:
            return proc, Up(url=m.group(1), kubeconfig=data_dir / "kubeconfig",
                            token=(data_dir / "token").read_text().strip(), data_dir=data_dir)
        if proc.poll() is not None:
            raise RuntimeError(f"pumice up exited with {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.2)
    stop_up(proc)
    raise RuntimeError(f"pumice up did not print the dashboard URL within {timeout:.0f} s")


def stop_up(proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """SIGINT, wait ``timeout`` s, then SIGKILL its process group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@dataclass
class InProcessUp:
    """``pumice up`` (:func:`pumice.cli.up.run_up`) running as a task of the caller's loop."""

    kubeconfig: Path
    """The kubeconfig ``run_up`` wrote, once the API server answered."""
    task: asyncio.Task[None]
    stop_event: asyncio.Event

    @classmethod
    async def start(cls, run_up: Callable[..., Coroutine[Any, Any, None]], *, timeout: float = 60.0) -> InProcessUp:
        """Start ``run_up(stop_event=..., on_ready=...)`` (:func:`pumice.cli.up.run_up` with its
        options bound, ``functools.partial(run_up, opts)``: the CLI layer is above this one) and
        return once the API server answers.

        Raises:
            TimeoutError: it did not answer within ``timeout`` seconds (it is stopped first).
            RuntimeError: it ended, without an error, before it answered.
            whatever ``run_up`` raised before it answered.
        """
        stop = asyncio.Event()
        ready: asyncio.Future[Path] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(run_up(stop_event=stop, on_ready=ready.set_result))
        try:
            waits: list[asyncio.Future[Any]] = [ready, task]
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if ready not in done:
                if task in done:
                    task.result()  # its error
                    raise RuntimeError("pumice up ended before its API server answered")
                raise TimeoutError(f"pumice up did not answer within {timeout:g} s")
        except BaseException as e:
            stop.set()
            await asyncio.wait([task], timeout=120)
            # what became of it is told with the error, never left to a task warning at exit
            if not task.done():
                e.add_note("pumice up did not stop within 120 s of its stop; its task is left running")
            elif not task.cancelled() and task.exception() not in (None, e):
                e.add_note(f"pumice up then ended with: {task.exception()!r}")
            raise
        return cls(ready.result(), task, stop)

    async def stop(self, timeout: float = 120.0) -> None:
        """Set the stop Event and wait up to ``timeout`` seconds for everything to stop.

        Raises:
            TimeoutError: not stopped within ``timeout`` seconds.
            whatever ``run_up`` raised.
        """
        self.stop_event.set()
        await asyncio.wait_for(self.task, timeout)
