"""The numpy path and the plain per-node loop decide the same on random clusters (seeded), and
every session is deterministic."""

from __future__ import annotations

import random

import pytest

from pumice.scheduler.volcano.cache.snapshot import build_snapshot, run_session
from pumice.scheduler.volcano.conf import parse_conf
from pumice.testing.paths import shared_dir
from pumice.testing.volcano import node, pod, podgroup, priority_class, queue, taint, toleration

CI_CONF = shared_dir() / "samples/volcano/installer/helm/chart/volcano/config/volcano-scheduler-ci.conf"


def random_cluster(seed: int) -> list[dict]:
    rng = random.Random(seed)
    objs: list[dict] = [priority_class("low", 10), priority_class("high", 1000)]
    objs += [queue(f"q{i}", weight=rng.randint(1, 3)) for i in range(3)]
    for i in range(rng.randint(10, 14)):
        taints = [taint("dedicated", "gpu")] if rng.random() < 0.15 else None
        objs.append(node(f"n{i:02d}", f"{rng.choice([4, 8, 16])},{rng.choice([8, 16, 32])}Gi,pods={rng.choice([4, 8, 110])}",
                         labels={"zone": rng.choice("ab")}, taints=taints))
    for j in range(rng.randint(10, 25)):
        size = rng.choice([1, 2, 4, 8])
        running = rng.random() < 0.5
        objs.append(podgroup(f"pg{j}", queue=f"q{rng.randint(0, 2)}", min_member=rng.randint(0, size),
                             phase="Running" if running else rng.choice(["Pending", "Inqueue"]),
                             priority_class=rng.choice([None, "low", "high"])))
        for k in range(size):
            kw: dict = {}
            if rng.random() < 0.2:
                kw["node_selector"] = {"zone": rng.choice("ab")}
            if rng.random() < 0.2:
                kw["tolerations"] = [toleration("dedicated", "gpu", "NoSchedule")]
            req = f"{rng.choice(['500m', '1', '2', '3'])},{rng.choice(['512Mi', '1Gi', '2G', '4Gi'])}"
            if running:
                objs.append(pod(f"pg{j}-p-{k}", group=f"pg{j}", requests=req, node=f"n{rng.randint(0, 9):02d}", phase="Running", **kw))
            else:
                objs.append(pod(f"pg{j}-p-{k}", group=f"pg{j}", requests=req, **kw))
    return objs


@pytest.mark.parametrize("seed", range(10))
def test_numpy_and_plain_loop_paths_agree_and_repeat(seed: int) -> None:
    conf = parse_conf(CI_CONF.read_text())
    objs = random_cluster(seed)
    a = run_session(build_snapshot(objs), conf).to_json()
    b = run_session(build_snapshot(objs), conf, vectorize=False).to_json()
    c = run_session(build_snapshot(objs), conf).to_json()
    assert a["binds"] == b["binds"] and a["evictions"] == b["evictions"] and a["pipelined"] == b["pipelined"]
    strip = [{k: {"phase": v["phase"], "c": [(x["type"], x["reason"], x["message"]) for x in v["conditions"]]}
              for k, v in r["podGroups"].items()} for r in (a, b, c)]
    assert strip[0] == strip[1] == strip[2]
    assert a == c
