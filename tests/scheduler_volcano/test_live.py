"""The live scheduler (:func:`pumice.scheduler.volcano.run`) against the in-process API server."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import pytest

from pumice.scheduler.volcano import run
from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano import node, pod, podgroup, queue


def _strip(o: dict) -> dict:
    o = dict(o)
    o.pop("status", None) if o["kind"] in ("PodGroup",) else None
    md = dict(o["metadata"])
    for k in ("uid", "creationTimestamp"):
        md.pop(k, None)
    o["metadata"] = md
    return o


async def _seed(client, objs: list[dict]) -> None:
    for o in objs:
        body = _strip(o)
        st = o.get("status")
        created = await client.create(body)
        if o["kind"] in ("Node",) and st:
            created["status"] = st
            await client.update_status(created)
        if o["kind"] == "Queue" and st:
            pass


async def _wait(pred, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if await pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met")


async def test_live_scheduler_binds_one_whole_gang_of_two_competing_gangs() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        objs = [node("n1", "2,4Gi,pods=10"), node("n2", "2,4Gi,pods=10"), queue("q1")]
        objs += [podgroup("pg1", queue="q1", min_member=3, phase=""), podgroup("pg2", queue="q1", min_member=3, phase="")]
        objs += [pod(f"{g}-p-{i}", group=g, requests="1,1Gi") for g in ("pg1", "pg2") for i in range(3)]
        await _seed(client, objs)
        stop = asyncio.Event()
        task = asyncio.create_task(run(client, schedule_period=0.05, stop_event=stop))
        pods_kind = client.scheme.resolve("pods")

        async def three_bound() -> bool:
            lst = await client.list(pods_kind, "c1")
            return sum(1 for p in lst.items if p["spec"].get("nodeName")) >= 3

        await _wait(three_bound)
        await asyncio.sleep(0.3)
        stop.set()
        await asyncio.wait_for(task, 10)
        lst = await client.list(pods_kind, "c1")
        bound = [p["metadata"]["name"] for p in lst.items if p["spec"].get("nodeName")]
        assert len(bound) == 3
        assert len({b.rsplit("-p-", 1)[0] for b in bound}) == 1
        pg_kind = client.scheme.resolve("podgroups.scheduling.volcano.sh")
        winner = bound[0].rsplit("-p-", 1)[0]
        loser = "pg2" if winner == "pg1" else "pg1"
        lpg = await client.get(pg_kind, loser, "c1")
        conds = {x["type"]: x for x in lpg["status"].get("conditions", [])}
        assert conds["Unschedulable"]["reason"] == "NotEnoughResources"
        assert lpg["status"]["phase"] == "Inqueue"


async def test_failed_bind_returns_the_pod_to_pending_and_a_later_cycle_binds_it() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "4,8Gi,pods=10"), queue("q1"), podgroup("pg1", queue="q1", min_member=2, phase="Inqueue")])
        await _seed(client, [pod(f"p-{i}", group="pg1", requests="1,1Gi") for i in range(2)])
        sched = Scheduler(client, schedule_period=0.05)
        await sched.cache.start(timeout=5)
        real_bind = client.bind
        calls: list[str] = []

        async def flaky_bind(ns: str, name: str, node_name: str, *, pod_uid: str | None = None) -> None:
            calls.append(name)
            if name == "p-1" and calls.count("p-1") == 1:
                raise RuntimeError("injected bind failure")
            await real_bind(ns, name, node_name, pod_uid=pod_uid)

        client.bind = flaky_bind  # type: ignore[method-assign]
        try:
            sched.run_once()
            await sched.cache.flush()
            pods_kind = client.scheme.resolve("pods")
            p1 = await client.get(pods_kind, "p-1", "c1")
            assert not p1["spec"].get("nodeName")
            assert sched.cache.bind_errors == 1

            async def informer_saw_p0() -> bool:
                return any(p["spec"].get("nodeName") for p in sched.cache.informers["Pod"].lister.list() if p["metadata"]["name"] == "p-0")

            await _wait(informer_saw_p0)
            sched.run_once()
            await sched.cache.flush()
            p1 = await client.get(pods_kind, "p-1", "c1")
            assert p1["spec"]["nodeName"] == "n1"
        finally:
            await sched.cache.stop()


async def test_config_file_is_reread_when_it_changes_and_a_bad_file_keeps_the_old_one(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    async with local_cluster() as c:
        sched = Scheduler(c.client, conf_path=str(conf))
        assert sched.conf.actions == ("enqueue", "allocate")
        conf.write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n')
        import os

        os.utime(conf, (1, 1))
        assert sched.reload_conf_if_changed()
        assert sched.conf.actions == ("enqueue", "allocate", "backfill")
        conf.write_text('actions: "enqueue, nope"\n')
        os.utime(conf, (2, 2))
        assert not sched.reload_conf_if_changed()
        assert sched.conf.actions == ("enqueue", "allocate", "backfill")
        for i, bad in enumerate(('actions: ""\n', 'actions: "enqueue,,allocate"\n', "tiers: []\n")):
            conf.write_text(bad)  # trial 5 F-1: a configuration that runs no action is refused
            os.utime(conf, (3 + i, 3 + i))
            assert not sched.reload_conf_if_changed()
            assert sched.conf.actions == ("enqueue", "allocate", "backfill")


def test_unknown_plugin_in_the_initial_config_is_an_error(tmp_path: Path) -> None:
    from pumice.scheduler.volcano.conf import ConfigError, load_conf

    conf = tmp_path / "c.conf"
    conf.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: gangg\n')
    with pytest.raises(ConfigError, match="unknown plugin 'gangg'; known plugins: admission-fair-sharing, binpack, capacity"):
        load_conf(str(conf))


async def test_a_cycle_records_upstream_named_metrics() -> None:
    from prometheus_client import generate_latest

    from pumice.scheduler.volcano.metrics import REGISTRY

    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "4,8Gi,pods=10"), queue("q1"), podgroup("pg1", queue="q1", min_member=1, phase="Inqueue")])
        await _seed(client, [pod("p-0", group="pg1", requests="1,1Gi")])
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        try:
            sched.run_once()
            await sched.cache.flush()
        finally:
            await sched.cache.stop()
    text = generate_latest(REGISTRY).decode()
    for name in (
        "volcano_e2e_scheduling_latency_milliseconds_count",
        'volcano_action_scheduling_latency_milliseconds_count{action="allocate"}',
        'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="gang"}',
        'volcano_schedule_attempts_total{result="scheduled"}',
        'volcano_queue_allocated_milli_cpu{queue_name="q1"} 1000.0',
        'volcano_queue_deserved_milli_cpu{queue_name="q1"}',
    ):
        assert name in text, name


async def test_a_second_cycle_without_changes_writes_nothing() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "4,8Gi,pods=10"), queue("q1"), podgroup("pg1", queue="q1", min_member=2, phase="Inqueue")])
        await _seed(client, [pod(f"p-{i}", group="pg1", requests="1,1Gi") for i in range(2)])
        await _seed(client, [podgroup("big", queue="q1", min_member=1, phase="Inqueue"), pod("huge", group="big", requests="64,1Gi")])
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        writes: list[str] = []
        for name in ("patch", "create", "update", "update_status", "bind", "evict"):
            real = getattr(client, name)

            def wrap(*a, _real=real, _name=name, **kw):  # type: ignore[no-untyped-def]
                writes.append(_name)
                return _real(*a, **kw)

            setattr(client, name, wrap)
        try:
            sched.run_once()
            await sched.cache.flush()
            assert "bind" in writes and "patch" in writes

            async def settled() -> bool:
                pods = sched.cache.informers["Pod"].lister.list()
                pgs = sched.cache.informers["PodGroup"].lister.list()
                return all(p["spec"].get("nodeName") for p in pods if p["metadata"]["name"].startswith("p-")) and all(
                    pg.get("status", {}).get("conditions") for pg in pgs
                )

            await _wait(settled)
            sched.run_once()
            await sched.cache.flush()
            await asyncio.sleep(0.1)
            writes.clear()
            sched.run_once()
            await sched.cache.flush()
            assert writes == []
        finally:
            await sched.cache.stop()


def test_the_allocated_patch_removes_resources_that_went_to_zero_and_is_none_when_equal() -> None:
    from pumice.scheduler.volcano.cache.live import allocated_patch

    assert allocated_patch({"cpu": "1", "pods": "2"}, {}) == {"cpu": None, "pods": None}
    assert allocated_patch({"cpu": "1", "memory": "1Gi"}, {"cpu": "1"}) == {"memory": None, "cpu": "1"}
    assert allocated_patch({"cpu": "1000m"}, {"cpu": "1"}) is None
    assert allocated_patch({}, {}) is None


async def test_a_queue_whose_work_ended_gets_status_allocated_zeroed_with_one_patch() -> None:
    # ConvertRes2ResList always writes cpu and memory: an idle queue is allocated {cpu: 0, memory: 0}
    async with local_cluster() as c:
        client = c.client
        qk = client.scheme.resolve("queues.scheduling.volcano.sh")
        await _seed(client, [node("n1", "4,8Gi,pods=10"), queue("q1")])
        q = await client.get(qk, "q1")
        q["status"] = {**(q.get("status") or {}), "allocated": {"cpu": "2", "memory": "2Gi", "pods": "2"}}
        await client.update_status(q)
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        patches: list[object] = []
        real = client.patch

        def wrap(*a, **kw):  # type: ignore[no-untyped-def]
            if a and a[0] is qk:
                patches.append(a[2])
            return real(*a, **kw)

        client.patch = wrap  # type: ignore[method-assign]
        try:
            sched.run_once()
            await sched.cache.flush()

            async def cleared() -> bool:
                return (await client.get(qk, "q1")).get("status", {}).get("allocated") == IDLE

            await _wait(cleared)
            await _wait(lambda: _synced(sched, qk))
            for _ in range(3):
                sched.run_once()
                await sched.cache.flush()
            assert patches == [{"status": {"allocated": {"pods": None, **IDLE}}}]
        finally:
            await sched.cache.stop()


IDLE = {"cpu": "0", "memory": "0"}


async def _synced(sched: Scheduler, qk: object) -> bool:
    qs = sched.cache.informers["Queue"].lister.list()
    return all((q.get("status") or {}).get("allocated") == IDLE for q in qs)


async def test_a_pending_pod_gets_a_failed_scheduling_event_and_a_placed_gang_no_unschedulable_warning() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "2,4Gi,pods=10"), queue("q1"),
                             podgroup("fits", queue="q1", min_member=2, phase="Inqueue"),
                             podgroup("big", queue="q1", min_member=1, phase="Inqueue")])
        await _seed(client, [pod(f"f-{i}", group="fits", requests="500m,1Gi") for i in range(2)]
                    + [pod("huge", group="big", requests="64,1Gi")])
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        events_kind = client.scheme.resolve("events")
        try:
            sched.run_once()
            await sched.cache.flush()

            async def pod_event() -> bool:
                evs = (await client.list(events_kind, "c1")).items
                return any(e["involvedObject"].get("kind") == "Pod" and e["involvedObject"]["name"] == "huge"
                           and e["reason"] == "FailedScheduling" and e["type"] == "Warning" for e in evs)

            await _wait(pod_event)
            evs = (await client.list(events_kind, "c1")).items
            fits = [e for e in evs if e["involvedObject"]["name"] == "fits"]
            assert not any(e["type"] == "Warning" and "pod group is ready" in e["message"] for e in fits), fits
            huge = next(e for e in evs if e["involvedObject"]["name"] == "huge" and e["reason"] == "FailedScheduling")
            p = await client.get(client.scheme.resolve("pods"), "huge", "c1")
            cond = next(x for x in p["status"]["conditions"] if x["type"] == "PodScheduled")
            assert huge["message"] == cond["message"] and cond["status"] == "False"
            assert huge["source"]["component"] == "volcano"
        finally:
            await sched.cache.stop()


async def test_the_scheduler_publishes_the_configuration_it_runs_with(tmp_path: Path) -> None:
    """Trial 3 finding 2: explain and the UI read the running scheduler's configuration from
    ``volcano-system/volcano-scheduler-configmap``; the scheduler writes it at start and after a reload."""
    from pumice.api import scheme
    from pumice.cli.explain import scheduler_conf

    first = 'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    second = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins: [{name: gang}, {name: cohort}]\n'
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(first)
    async with local_cluster() as c:
        warnings: list[str] = []
        await scheduler_conf(c.client, None, warnings.append)
        assert warnings and warnings[0].startswith("Warning: no ConfigMap volcano-system/volcano-scheduler-configmap")
        sched = Scheduler(c.client, conf_path=str(path), publish_conf=True)
        await sched.sync_conf_map()
        cm = await c.client.get(scheme.CONFIG_MAP, "volcano-scheduler-configmap", "volcano-system")
        assert cm["data"] == {"volcano-scheduler.conf": first}
        path.write_text(second)
        os.utime(path, (1, 1))  # a new mtime, even within the file system's resolution
        assert sched.reload_conf_if_changed()
        await sched.sync_conf_map()
        cm = await c.client.get(scheme.CONFIG_MAP, "volcano-scheduler-configmap", "volcano-system")
        assert cm["data"] == {"volcano-scheduler.conf": second}
        warnings.clear()
        conf = await scheduler_conf(c.client, None, warnings.append)
        assert not warnings
        assert conf.actions == ("enqueue", "allocate", "backfill")
        assert [p.name for p in conf.tiers[0].plugins] == ["gang", "cohort"]
        # `pumice dashboard` without --scheduler-conf reads the same
        from pumice.dashboard.server import _published_conf

        ui = await _published_conf(c.client)()
        assert [p.name for p in ui.tiers[0].plugins] == ["gang", "cohort"]


CM_KIND_NAME_NS = ("volcano-scheduler-configmap", "volcano-system")
ONE_APP = ('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: user-limits\n'
           '    arguments: {userLimits.limits: [{users: ["*"], maxApplications: 1}]}\n')
TWO_APPS = ONE_APP.replace("maxApplications: 1", "maxApplications: 2")
BAD = ONE_APP.replace("maxApplications: 1", "maxApplicatons: 1")


def _max_apps(conf) -> int:
    opt = next(p for t in conf.tiers for p in t.plugins if p.name == "user-limits")
    return opt.parsed.limits[0].max_applications


async def _edit_conf_map(client, text: str) -> None:
    from pumice.api import scheme

    await client.patch(scheme.CONFIG_MAP, *CM_KIND_NAME_NS[:1], {"data": {"volcano-scheduler.conf": text}},
                       CM_KIND_NAME_NS[1])


async def _conf_map_events(client) -> list[tuple[str, str, str]]:
    evs = (await client.list(client.scheme.resolve("events"), "volcano-system")).items
    return [(e["type"], e["reason"], e["message"]) for e in evs
            if e["involvedObject"].get("kind") == "ConfigMap"]


async def test_an_edit_of_the_configmap_changes_a_scheduler_without_a_file(caplog: pytest.LogCaptureFixture) -> None:
    """Trial 4 N1: as upstream's scheduler runs the file the kubelet refreshes from the ConfigMap,
    an edit of volcano-scheduler-configmap is run from the next cycle on (it was ignored, while
    explain replayed it)."""
    from pumice.api import scheme
    from pumice.cli.explain import scheduler_conf

    async with local_cluster() as c:
        sched = Scheduler(c.client, publish_conf=True)
        await sched.sync_conf_map()  # no ConfigMap: it is created with what runs (the built-in default)
        cm = await c.client.get(scheme.CONFIG_MAP, *CM_KIND_NAME_NS)
        assert cm["data"]["volcano-scheduler.conf"] == sched.conf_text
        assert cm["metadata"]["annotations"]["scheduling.pumice.io/conf-in-use"] == sched.conf_text
        await _edit_conf_map(c.client, ONE_APP)
        with caplog.at_level("INFO", logger="pumice.scheduler.volcano"):
            await sched.sync_conf_map()
        assert sched.conf.actions == ("enqueue", "allocate") and _max_apps(sched.conf) == 1
        assert ("scheduler configuration reloaded from ConfigMap volcano-system/volcano-scheduler-configmap"
                in caplog.messages)
        cm = await c.client.get(scheme.CONFIG_MAP, *CM_KIND_NAME_NS)
        assert cm["data"]["volcano-scheduler.conf"] == ONE_APP  # the user's text, untouched
        assert cm["metadata"]["annotations"]["scheduling.pumice.io/conf-in-use"] == ONE_APP
        warnings: list[str] = []
        assert _max_apps(await scheduler_conf(c.client, None, warnings.append)) == 1 and not warnings
        # deleted: written again with what runs
        await c.client.delete(scheme.CONFIG_MAP, *CM_KIND_NAME_NS)
        await sched.sync_conf_map()
        cm = await c.client.get(scheme.CONFIG_MAP, *CM_KIND_NAME_NS)
        assert cm["data"]["volcano-scheduler.conf"] == ONE_APP


async def test_a_bad_edit_of_the_configmap_keeps_the_previous_configuration_and_says_why(
        caplog: pytest.LogCaptureFixture) -> None:
    """Trial 4 N1/N2: the scheduler keeps what it ran, says why once (log line and a Warning Event on
    the ConfigMap), and explain replays what the scheduler runs, warning that the ConfigMap differs."""
    from pumice.cli.explain import scheduler_conf
    from pumice.dashboard.server import _published_conf

    async with local_cluster() as c:
        sched = Scheduler(c.client, publish_conf=True)
        await sched.sync_conf_map()
        await _edit_conf_map(c.client, TWO_APPS)
        await sched.sync_conf_map()
        await _edit_conf_map(c.client, BAD)
        with caplog.at_level("INFO", logger="pumice.scheduler.volcano"):
            await sched.sync_conf_map()
            await sched.sync_conf_map()
        assert _max_apps(sched.conf) == 2
        errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1, errors
        assert errors[0].startswith("keeping the previous scheduler configuration: ConfigMap "
                                    "volcano-system/volcano-scheduler-configmap: tiers[0].plugins[1] (user-limits): "
                                    "arguments:"), errors

        async def event() -> bool:
            return any(r == "InvalidSchedulerConfiguration" for _t, r, _m in await _conf_map_events(c.client))

        await _wait(event)
        (etype, _r, message), = [e for e in await _conf_map_events(c.client) if e[1] == "InvalidSchedulerConfiguration"]
        assert etype == "Warning" and message == errors[0]
        warnings: list[str] = []
        assert _max_apps(await scheduler_conf(c.client, None, warnings.append)) == 2
        assert len(warnings) == 1 and warnings[0].startswith(
            "Warning: the volcano-scheduler.conf of ConfigMap volcano-system/volcano-scheduler-configmap differs from "
            "the configuration the scheduler runs"), warnings
        assert _max_apps(await _published_conf(c.client)()) == 2  # the web UI's
        await _edit_conf_map(c.client, ONE_APP)  # fixed: applied
        await sched.sync_conf_map()
        assert _max_apps(sched.conf) == 1


async def test_a_configmap_edit_without_actions_is_refused_and_scheduling_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    """Trial 5 F-1: ``actions: ""`` was taken as "run nothing" and every vcjob stayed Pending; as
    upstream's loader does, it is refused (one ERROR line, one Warning Event) and the previous
    configuration keeps running."""
    async with local_cluster() as c:
        sched = Scheduler(c.client, publish_conf=True)
        await sched.sync_conf_map()
        await _edit_conf_map(c.client, ONE_APP)
        await sched.sync_conf_map()
        await _edit_conf_map(c.client, 'actions: ""\n')
        with caplog.at_level("INFO", logger="pumice.scheduler.volcano"):
            await sched.sync_conf_map()
        assert sched.conf.actions == ("enqueue", "allocate")
        errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert errors == ["keeping the previous scheduler configuration: ConfigMap "
                          "volcano-system/volcano-scheduler-configmap: actions: no actions; give a comma-separated "
                          "list of: allocate, backfill, enqueue, gangpreempt, gangreclaim, preempt, reclaim, shuffle"]
        assert not [r for r in caplog.records if "reloaded" in r.getMessage()]

        async def event() -> bool:
            return any(r == "InvalidSchedulerConfiguration" for _t, r, _m in await _conf_map_events(c.client))

        await _wait(event)


async def test_a_configmap_edit_with_an_unknown_argument_runs_with_a_warning_line(
        caplog: pytest.LogCaptureFixture) -> None:
    """trial-6 F-12: upstream runs an edit whose plugin argument no plugin reads (``arguments`` is a
    free map), so pumice does too, with one WARNING line naming the ignored key and no Event."""
    async with local_cluster() as c:
        sched = Scheduler(c.client, publish_conf=True)
        await sched.sync_conf_map()
        await _edit_conf_map(c.client, TWO_APPS.replace("  - name: gang\n", "  - name: gang\n    arguments: {gang.bogus: 1}\n"))
        with caplog.at_level("INFO", logger="pumice.scheduler.volcano"):
            await sched.sync_conf_map()
        assert _max_apps(sched.conf) == 2
        where = "ConfigMap volcano-system/volcano-scheduler-configmap"
        assert [r.getMessage() for r in caplog.records if r.levelname in ("WARNING", "ERROR")] == [
            f"{where}: tiers[0].plugins[0] (gang): arguments: unknown argument 'gang.bogus' ignored"]
        assert [r for r in caplog.records if "reloaded" in r.getMessage()]
        assert not [r for _t, r, _m in await _conf_map_events(c.client) if r == "InvalidSchedulerConfiguration"]


async def test_with_a_file_the_configmap_is_its_copy_and_an_edit_is_restored_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Trial 4 N1 with ``pumice up --scheduler-conf FILE``: the file stays authoritative; an edit of
    the ConfigMap is written back from the file, with a WARNING line and a Warning Event saying to
    edit the file (it was left in place, so explain replayed a configuration nothing ran)."""
    from pumice.api import scheme
    from pumice.cli.explain import scheduler_conf

    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(ONE_APP)
    async with local_cluster() as c:
        sched = Scheduler(c.client, conf_path=str(path), publish_conf=True)
        await sched.sync_conf_map()
        await _edit_conf_map(c.client, TWO_APPS)
        with caplog.at_level("INFO", logger="pumice.scheduler.volcano"):
            await sched.sync_conf_map()
        assert _max_apps(sched.conf) == 1
        cm = await c.client.get(scheme.CONFIG_MAP, *CM_KIND_NAME_NS)
        assert cm["data"]["volcano-scheduler.conf"] == ONE_APP
        warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert warned == [f"ConfigMap volcano-system/volcano-scheduler-configmap: this scheduler runs the "
                          f"--scheduler-conf file {path}; volcano-scheduler.conf was edited and is restored from "
                          f"that file (edit the file to change the configuration)"], warned

        async def event() -> bool:
            return any(r == "SchedulerConfigurationOverwritten" for _t, r, _m in await _conf_map_events(c.client))

        await _wait(event)
        assert _max_apps(await scheduler_conf(c.client, None)) == 1
        # a change of the file is published quietly, and a bad one (N2) keeps what runs for explain too
        caplog.clear()
        path.write_text(TWO_APPS)
        os.utime(path, (1, 1))
        with caplog.at_level("INFO", logger="pumice.scheduler.volcano"):
            assert sched.reload_conf_if_changed()
            await sched.sync_conf_map()
            path.write_text(BAD)
            os.utime(path, (2, 2))
            assert not sched.reload_conf_if_changed()
            await sched.sync_conf_map()
        assert not [r for r in caplog.records if r.levelname == "WARNING"]
        assert _max_apps(sched.conf) == 2
        assert _max_apps(await scheduler_conf(c.client, None)) == 2



async def test_the_queue_allocated_check_is_kept_per_queue_object_and_list() -> None:
    from pumice.scheduler.volcano.framework.session import CloseResult

    async with local_cluster() as c:
        client = c.client
        await _seed(client, [queue("q1")])
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        patches: list[object] = []
        real = client.patch

        def wrap(*a, **kw):  # type: ignore[no-untyped-def]
            patches.append(a[2])
            return real(*a, **kw)

        client.patch = wrap  # type: ignore[method-assign]
        cache = sched.cache
        try:
            q = cache.informers["Queue"].lister.get_by_key("q1")
            cache.write_close(CloseResult(queue_allocated={"q1": {}}))
            assert patches == [] and cache._allocated_same["q1"] == (q, {})
            # the same object, another list: looked at again (and written)
            cache.write_close(CloseResult(queue_allocated={"q1": {"cpu": "1"}}))
            await cache.flush()
            assert patches == [{"status": {"allocated": {"cpu": "1"}}}] and "q1" not in cache._allocated_same

            async def updated() -> bool:
                got = cache.informers["Queue"].lister.get_by_key("q1")
                return ((got or {}).get("status") or {}).get("allocated") == {"cpu": "1"}

            await _wait(updated)
            # the stale case: the list that was equal to the old object's is not to the new one's
            cache._allocated_same["q1"] = (q, {})
            cache.write_close(CloseResult(queue_allocated={"q1": {}}))
            await cache.flush()
            assert patches[-1] == {"status": {"allocated": {"cpu": None}}}
        finally:
            await cache.stop()


async def test_the_next_cycle_starts_a_full_period_after_a_long_cycle_ended() -> None:
    """Upstream runs runOnce with wait.Until (sliding): the period is counted from the end of a
    cycle, so a cycle longer than the period is still followed by a full period of quiet."""
    from pumice._util.clock import FakeClock

    async with local_cluster() as c:
        clock = FakeClock()
        sched = Scheduler(c.client, schedule_period=1.0, clock=clock)
        starts: list[float] = []
        stop = asyncio.Event()

        def long_cycle() -> None:
            starts.append(clock.monotonic())
            clock.advance(1.5)  # the cycle (and its close writes) took 1.5 s
            if len(starts) == 3:
                stop.set()

        sched.run_once = long_cycle  # type: ignore[method-assign]
        await asyncio.wait_for(sched.run(stop), 10)
        assert [b - a for a, b in itertools.pairwise(starts)] == [2.5, 2.5]
