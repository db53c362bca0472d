"""``pumice up``'s API latency while the Volcano scheduler runs big sessions (trial 13 F-2).

Starts ``pumice up --runtime simulated`` (3 Nodes of 8 cpu, 110 Pods each) in a child process,
creates one Volcano Job of ``--replicas`` (default 6,000) Pods of cpu 10m with minAvailable 1 (330
fit; every session walks the thousands that do not), and while the vcjob controller creates the
Pods and the scheduler's sessions run, sends one ``GET /api/v1/namespaces`` over HTTPS every
``--interval`` seconds (what ``kubectl get ns`` sends; a 30 s client timeout counts as a failure).
Prints p50 / p99 / max of those GETs while the Pods are created ("filling") and for ``--duration``
seconds once they all exist and those that fit run ("steady": every session walks the thousands
left Pending), the failures, the Pods bound at the end and the seconds the child took to exit
after SIGINT, for each wiring in the same run:

- ``loop``: the Volcano scheduler on the API server's event loop (the wiring before session 13;
  the baseline);
- ``thread``: the Volcano scheduler on its own thread and loop, CPython's default collector
  thresholds;
- ``up``: as ``pumice up`` runs: ``thread`` and ``pumice.cli.up.UP_GC_THRESHOLD``.

and the ratio of each to ``loop`` of the p50, p99 and max. Not a test; wall times on a shared
machine.

``--gc-log`` has the child print its garbage-collector passes over 50 ms (the spikes the thread
does not remove), ``--gc-threshold`` sets its ``gc.set_threshold``; ``--scheduler-name
default-scheduler`` has the default scheduler place the Pods instead (the wiring is then moot:
it schedules one Pod per step of its loop).

Usage: python bench/up_responsive.py [--replicas 6000] [--duration 60] [--wiring loop,thread]
       [--slow SECONDS] [--log FILE] [--gc-log] [--gc-threshold A,B,C] [--scheduler-name NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

VCJOB: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "wide", "namespace": "default"},
    "spec": {
        "minAvailable": 1,
        "schedulerName": "volcano",
        "queue": "default",
        "tasks": [{
            "name": "w",
            "replicas": 0,  # set from --replicas
            "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]}},
        }],
    },
}


FIT = 330
"""Pods of cpu 10m that fit on 3 Nodes of 8 cpu and 110 Pods."""
FILL_LIMIT = 600.0
"""Seconds the Job's Pods have to exist and bind."""
SLOW: float | None = None
"""--slow: print each GET slower than this many seconds."""
LOG: Path | None = None
"""--log: where the child's output goes (default: a temporary file removed with its data dir)."""
GC_LOG = False
"""--gc-log: the child prints its slow garbage-collector passes."""
SCHEDULER_NAME = "volcano"
"""--scheduler-name: the Job's ``schedulerName`` (``default-scheduler``: the default scheduler's
Pod-at-a-time cycle instead of Volcano's sessions)."""
GC_THRESHOLD: str | None = None
"""--gc-threshold: the child's ``gc.set_threshold`` (three integers, comma-separated)."""


def _log_slow_gc() -> None:
    """Print every pass of the cyclic garbage collector that takes over 50 ms (to the child's log)."""
    import gc

    started: list[float] = [0.0]

    def cb(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        elif (d := time.perf_counter() - started[0]) > 0.05:
            print(f"gc: generation {info['generation']} pass {d * 1000:.0f} ms, {info['collected']} collected",
                  flush=True)

    gc.callbacks.append(cb)


def serve(wiring: str, data_dir: Path, port: int, gc_log: bool = False, gc_threshold: str | None = None) -> None:
    """The child: ``run_up`` with the given wiring until SIGINT/SIGTERM."""
    import gc

    from pumice.cli.up import UP_GC_THRESHOLD

    if gc_threshold:
        gc.set_threshold(*(int(x) for x in gc_threshold.split(",")))
    elif wiring == "up":
        gc.set_threshold(*UP_GC_THRESHOLD)
    from pumice.cli._signals import stop_on_signals
    from pumice.cli.up import UpOptions, run_up

    opts = UpOptions(data_dir=data_dir, port=port, runtime="simulated", nodes=3, node_cpu="8", node_memory="32Gi",
                     network="host", pod_egress="none", volcano_thread=wiring != "loop")

    if gc_log:
        _log_slow_gc()

    async def main() -> None:
        await run_up(opts, stop_event=stop_on_signals(grace=60.0))

    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000


def measure(wiring: str, replicas: int, duration: float, interval: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="pumice-bench-up-") as tmp:
        data_dir, port = Path(tmp) / "data", free_port()
        log = open(LOG or Path(tmp) / "up.log", "w")  # noqa: SIM115 - closed below
        child = subprocess.Popen([sys.executable, __file__, "--serve", wiring, "--data-dir", str(data_dir),
                                  "--port", str(port), *(["--gc-log"] if GC_LOG else []),
                                  *(["--gc-threshold", GC_THRESHOLD] if GC_THRESHOLD else [])],
                                 stdout=log, stderr=subprocess.STDOUT)
        try:
            token_file, ca = data_dir / "token", data_dir / "tls.crt"
            deadline = time.monotonic() + 60
            while not (data_dir / "kubeconfig").exists():
                if child.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"pumice up did not start; see {log.name}")
                time.sleep(0.2)
            headers = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
            base = f"https://127.0.0.1:{port}"
            with httpx2.Client(base_url=base, verify=str(ca), headers=headers, timeout=30.0) as http:
                while True:  # the default Queue is Open once the controllers run
                    try:
                        q = http.get("/apis/scheduling.volcano.sh/v1beta1/queues/default")
                        if q.status_code == 200 and (q.json().get("status") or {}).get("state") == "Open":
                            break
                    except httpx2.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError("no default Queue within 60 s")
                    time.sleep(0.2)
                job = dict(VCJOB)
                job["spec"] = {**VCJOB["spec"], "schedulerName": SCHEDULER_NAME,
                               "tasks": [{**VCJOB["spec"]["tasks"][0], "replicas": replicas}]}
                r = http.post("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", json=job)
                assert r.status_code == 201, r.text
                lat: dict[str, list[float]] = {"filling": [], "steady": []}
                failures = {"filling": 0, "steady": 0}
                created = time.monotonic()
                phase, end, n, filled = "filling", created + FILL_LIMIT, 0, 0.0
                while time.monotonic() < end:
                    n += 1
                    if phase == "filling" and n % 8 == 0 and _settled(http, replicas):
                        phase, end, filled = "steady", time.monotonic() + duration, time.monotonic() - created
                    t0 = time.perf_counter()
                    try:
                        r = http.get("/api/v1/namespaces")
                        ok = r.status_code == 200
                    except httpx2.HTTPError:
                        ok = False
                    dt = time.perf_counter() - t0
                    if SLOW is not None and dt > SLOW:
                        print(f"  {wiring}: {phase} GET at {time.monotonic() - dt - created:.1f} s took "
                              f"{dt * 1000:.0f} ms", flush=True)
                    if ok:
                        lat[phase].append(dt)
                    else:
                        failures[phase] += 1
                    time.sleep(max(0.0, interval - dt))
                if phase == "filling":
                    raise RuntimeError(f"the Job's Pods did not all exist and bind within {FILL_LIMIT:g} s")
                pods = http.get("/api/v1/namespaces/default/pods", timeout=120.0).json()["items"]
                bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
            rss = _rss_mib(child.pid)
            t0 = time.monotonic()
            child.send_signal(signal.SIGINT)
            child.wait(120)
            exit_s = time.monotonic() - t0
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            log.close()
    out: dict[str, float] = {"pods": len(pods), "bound": bound, "exit_s": exit_s, "filled_s": filled, "rss": rss}
    for ph, xs in lat.items():
        out |= {f"{ph}_gets": len(xs), f"{ph}_failures": failures[ph], f"{ph}_p50": pct(xs, 0.5),
                f"{ph}_p99": pct(xs, 0.99), f"{ph}_max": max(xs) * 1000, f"{ph}_mean": statistics.fmean(xs) * 1000}
    return out


def _rss_mib(pid: int) -> float:
    """The resident set of process ``pid`` in MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _settled(http: httpx2.Client, replicas: int) -> bool:
    """Whether every Pod of the Job exists and the ones that fit run (the Job's status counts)."""
    r = http.get("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/wide")
    st = (r.json().get("status") or {}) if r.status_code == 200 else {}
    running = int(st.get("running") or 0)
    return running >= FIT and running + int(st.get("pending") or 0) >= replicas


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=int, default=6000)
    ap.add_argument("--duration", type=float, default=60.0,
                    help="seconds of GETs once every Pod exists and those that fit run")
    ap.add_argument("--interval", type=float, default=0.25, help="seconds between GET starts")
    ap.add_argument("--wiring", default="loop,thread,up")
    ap.add_argument("--slow", type=float, default=None, help="print each GET slower than this many seconds")
    ap.add_argument("--log", type=Path, default=None, help="write pumice up's output here")
    ap.add_argument("--gc-log", action="store_true", help="pumice up prints its garbage-collector passes over 50 ms")
    ap.add_argument("--scheduler-name", default="volcano", help="the Job's schedulerName (default-scheduler: the "
                    "default scheduler places the Pods)")
    ap.add_argument("--gc-threshold", default=None, help="pumice up's gc.set_threshold, e.g. 100000,10,10")
    ap.add_argument("--serve", choices=["loop", "thread", "up"], help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    global SLOW, LOG, GC_LOG, GC_THRESHOLD, SCHEDULER_NAME
    SLOW, LOG, GC_LOG, GC_THRESHOLD = args.slow, args.log, args.gc_log, args.gc_threshold
    SCHEDULER_NAME = args.scheduler_name
    if args.serve:
        serve(args.serve, args.data_dir, args.port, args.gc_log, args.gc_threshold)
        return
    print(f"load average {os.getloadavg()[0]:.1f}; {args.replicas} replicas (schedulerName {SCHEDULER_NAME}), {args.duration:g} s of GETs every "
          f"{args.interval:g} s", flush=True)
    results = {}
    for wiring in args.wiring.split(","):
        res = measure(wiring, args.replicas, args.duration, args.interval)
        results[wiring] = res
        print(f"{wiring}: all Pods exist and {FIT} run after {res['filled_s']:.0f} s; Pods {res['pods']:.0f}, "
              f"bound {res['bound']:.0f}; RSS {res['rss']:.0f} MiB; exit after SIGINT {res['exit_s']:.1f} s", flush=True)
        for ph in ("filling", "steady"):
            print(f"  {ph:7s} GET /api/v1/namespaces: {res[ph + '_gets']:.0f} ok, {res[ph + '_failures']:.0f} failed; "
                  f"p50 {res[ph + '_p50']:.1f} ms, p99 {res[ph + '_p99']:.1f} ms, max {res[ph + '_max']:.1f} ms, "
                  f"mean {res[ph + '_mean']:.1f} ms", flush=True)
    lo = results.get("loop")
    for wiring, res in results.items():
        if lo is None or wiring == "loop":
            continue
        for ph in ("filling", "steady"):
            print(f"ratio {wiring}/loop, {ph}: p50 {res[ph + '_p50'] / lo[ph + '_p50']:.2f}, "
                  f"p99 {res[ph + '_p99'] / lo[ph + '_p99']:.2f}, max {res[ph + '_max'] / lo[ph + '_max']:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
