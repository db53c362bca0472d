"""Built-in validation per Pod create: the cost of ``validate_object`` on the Pods pumice's
controllers make, beside the metadata rules every kind pays (the baseline, in the same run).

Timed (CPU time, per call, the valid-spec memo bypassed: every call sees a new image, as every
Pod of a run differs by name, hostname or image): the KubeRay head Pod built from the upstream
sample ``ray-cluster.complete.yaml`` (probes, env with fieldRefs, ports, volumes, resources), the
worker Pod of the same cluster, a ``pumice simulate`` job Pod (one container, GPU request and
limit); the baseline is ``validate_object_meta`` of the head Pod. Last, an update of the head
Pod that changes only a label, with the memo kept (the stored spec was validated when it was
written; upstream validates the whole new Pod on update). Each case runs the rounds given and
keeps the fastest.

Usage: python bench/validation.py [--calls 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

import yaml

from pumice.api import Obj
from pumice.api import validation as v
from pumice.api.scheme import POD
from pumice.apiserver import defaults
from pumice.controllers.ray.common.pod import build_head_pod, build_worker_pod
from pumice.simulate.workload import pod_manifest
from pumice.testing.paths import samples_dir


def _variants(pod: Obj, n: int) -> list[Obj]:
    out = []
    for i in range(n):
        p = copy.deepcopy(pod)
        p["spec"]["containers"][0]["image"] = f"img:{i}"
        out.append(p)
    return out


def _cpu_us(fn: Any, objs: list[Obj], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        v._VALID.clear()
        t0 = time.process_time()
        for o in objs:
            fn(o)
        best = min(best, (time.process_time() - t0) / len(objs) * 1e6)
    return best


def main(calls: int, rounds: int) -> None:
    docs = yaml.safe_load_all((samples_dir() / "kuberay" / "ray-cluster.complete.yaml").read_text())
    cluster = next(d for d in docs if d and d.get("kind") == "RayCluster")
    cluster["metadata"].update(namespace="default", uid="u1")
    head = build_head_pod(cluster)
    group = cluster["spec"]["workerGroupSpecs"][0]
    worker = build_worker_pod(cluster, group)
    job = pod_manifest("job-1", requests={"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}, job="job-1",
                       queue="default", duration=60.0)
    cases = {"kuberay head Pod": head, "kuberay worker Pod": worker, "simulate job Pod": job}
    for pod in cases.values():
        pod.setdefault("metadata", {}).setdefault("name", "p")
        pod["metadata"]["namespace"] = "default"
        defaults.pod(pod)
        causes = v.validate_object(POD, pod, None)
        assert not causes, causes
    base = _cpu_us(lambda o: v.validate_object_meta(POD, o, None), _variants(head, calls), rounds)
    print(f"baseline: validate_object_meta of the head Pod {base:.1f} us per call")
    for name, pod in cases.items():
        cost = _cpu_us(lambda o: v.validate_object(POD, o, None), _variants(pod, calls), rounds)
        print(f"{name}: validate_object {cost:.1f} us per call ({cost / base:.1f}x the baseline)")
    relabelled = copy.deepcopy(head)
    relabelled["metadata"].setdefault("labels", {})["pumice.dev/bench"] = "x"
    best = float("inf")
    for _ in range(rounds):  # the memo kept: the stored spec was validated when it was written
        t0 = time.process_time()
        for _ in range(calls):
            v.validate_object(POD, relabelled, head)
        best = min(best, (time.process_time() - t0) / calls * 1e6)
    print(f"kuberay head Pod, metadata-only update: validate_object {best:.1f} us per call "
          f"({best / base:.1f}x the baseline)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    main(args.calls, args.rounds)
