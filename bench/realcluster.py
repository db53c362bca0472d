"""Bind throughput on a real control plane (issue 13): pumice's Volcano scheduler over its HTTP
client and kube-scheduler, on the same kube-apiserver + etcd in one run.

1,000 Pods: for Volcano in 125 gangs of 8 (PodGroup minMember 8, schedulerName volcano); for
kube-scheduler the same Pods without gangs. Every Pod is created while its scheduler is stopped,
then the scheduler starts and the clock runs until the last Pod has a nodeName (watched with the
real kubectl). 50 Nodes of 32 CPUs from pumice's simulated node agent; each Pod asks 1 CPU.
The ratio printed is Volcano's Pods/s over kube-scheduler's.

Needs Go (the control plane is built by tools/build_kube.py; 10-30 minutes the first time).
Usage: python bench/realcluster.py [--pods N]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from pumice.testing.kube_control_plane import KubeControlPlane

PODS = int(sys.argv[sys.argv.index("--pods") + 1]) if "--pods" in sys.argv else 1000
GANG = 8


def pod(name: str, scheduler: str, group: str | None) -> dict:
    md: dict = {"name": name, "namespace": "default", "labels": {"bench": scheduler}}
    if group:
        md["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox",
                                                                 "command": ["sleep", "3600"],
                                                                 "resources": {"requests": {"cpu": "1"}}}]}}


def apply(cp: KubeControlPlane, objs: list[dict]) -> None:
    for i in range(0, len(objs), 200):
        cp.kubectl("create", "-f", "-", input=yaml.safe_dump_all(objs[i:i + 200]))


def time_until_bound(cp: KubeControlPlane, label: str, n: int, start: float, limit: float = 600.0) -> float:
    """Seconds from ``start`` until ``n`` Pods labelled ``bench=<label>`` have a Node.

    Raises:
        RuntimeError: not within ``limit`` seconds (the message says how many were bound).
    """
    bound = 0
    while time.monotonic() - start < limit:
        out = cp.kubectl("get", "pods", "-n", "default", "-l", f"bench={label}", "-o",
                         "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}").stdout
        bound = sum(1 for line in out.splitlines() if line.strip())
        if bound >= n:
            return time.monotonic() - start
        time.sleep(0.5)
    raise RuntimeError(f"only {bound} of {n} {label} Pods bound after {limit:g} s")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, KubeControlPlane(Path(tmp) / "kube", scheduler=False) as cp:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        admin = str(cp.workdir / "admin.kubeconfig")
        install = subprocess.run([sys.executable, "-m", "pumice.cli.main", "install", "--print"], capture_output=True,
                                 text=True, check=True).stdout
        crds = [o for o in yaml.load_all(install, Loader=yaml.CSafeLoader) if o["kind"] == "CustomResourceDefinition"]
        cp.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(crds))
        cp.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=120s")
        agent = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "node-agent", "--kubeconfig", admin,
                                  "--runtime", "simulated", "--nodes", "50", "--node-cpu", "32", "--node-memory", "128Gi",
                                  "--data-dir", str(Path(tmp) / "node")], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        cm = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "controller-manager", "--kubeconfig", admin,
                               "--controllers", "volcano", "--no-leader-elect"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        procs = [agent, cm]
        try:
            while len(json.loads(cp.kubectl("get", "nodes", "-o", "json").stdout)["items"]) < 50:
                time.sleep(0.5)
            groups = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": f"g{i}", "namespace": "default"},
                       "spec": {"minMember": GANG, "queue": "default"}} for i in range(PODS // GANG)]
            apply(cp, groups)
            apply(cp, [pod(f"v{i}", "volcano", f"g{i // GANG}") for i in range(PODS)])
            start = time.monotonic()
            sched = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "scheduler", "--kubeconfig", admin,
                                      "--name", "volcano"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            procs.append(sched)
            volcano = time_until_bound(cp, "volcano", PODS, start)
            print(f"  pumice Volcano scheduler, gangs of {GANG}, HTTPS client: {PODS / volcano:7.1f} Pods/s "
                  f"({volcano:.1f} s from start to the last bind, scheduler start-up included)", flush=True)
            sched.terminate()
            sched.wait(30)
            apply(cp, [pod(f"k{i}", "default-scheduler", None) for i in range(PODS)])
            start = time.monotonic()
            cp.start_kube_scheduler()
            kube = time_until_bound(cp, "default-scheduler", PODS, start)
        finally:
            for p in procs:
                p.terminate()
                p.wait(30)
        print(f"real control plane (kube-apiserver + etcd), {PODS} Pods, 50 Nodes x 32 CPU, load average "
              f"{os.getloadavg()[0]:.1f}")
        print(f"  kube-scheduler v1.34, no gangs:                 {PODS / kube:7.1f} Pods/s ({kube:.1f} s)")
        print(f"  ratio Volcano / kube-scheduler: {kube / volcano:.2f}")


if __name__ == "__main__":
    main()
