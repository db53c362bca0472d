"""Failures are logged and counted, never swallowed; seams are typed and arguments parse once."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import msgspec
import pytest

from pumice.scheduler.volcano import metrics
from pumice.scheduler.volcano import scheduler as scheduler_mod
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import ConfigError, build_conf, parse_conf
from pumice.scheduler.volcano.framework import POINTS, RecordingCache, open_session, run_actions
from pumice.scheduler.volcano.framework.arguments import ArgumentError
from pumice.scheduler.volcano.framework.callbacks import Callbacks
from pumice.scheduler.volcano.plugins import PLUGINS
from pumice.scheduler.volcano.plugins.binpack import BinpackArgs
from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano import node, pod, podgroup, queue


def _counter(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_bind_that_fails_at_commit_is_logged_with_the_pod_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    objs = [node("n1", "2,4Gi,pods=10"), queue("q1"), podgroup("pg1", queue="q1", min_member=1), pod("p1", group="pg1", requests="1,1Gi")]
    cache = RecordingCache()
    cache.fail_binds.add("c1/p1")
    ssn = open_session(build_snapshot(objs), build_conf(["allocate"], [["gang", "predicates", "proportion"]]), cache)
    before = _counter("volcano_schedule_attempts_total", result="error")
    with caplog.at_level(logging.ERROR, logger="pumice.scheduler.volcano"):
        run_actions(ssn, ["allocate"])
    assert cache.binds == {}
    assert _counter("volcano_schedule_attempts_total", result="error") == before + 1
    assert any("allocate: bind of c1/p1 (n1) failed: failed to bind c1/p1 to n1" in r.getMessage() for r in caplog.records)
    assert ssn.errors == [("allocate", "bind", "c1/p1", "n1: failed to bind c1/p1 to n1")]
    assert ssn.jobs["c1/pg1"].tasks[next(iter(ssn.jobs["c1/pg1"].tasks))].status.name == "Pending"


def test_an_eviction_that_fails_at_commit_is_logged_counted_and_the_victim_keeps_running(caplog: pytest.LogCaptureFixture) -> None:
    objs = [
        node("n1", "2,4Gi,pods=10"),
        queue("q1", weight=1, reclaimable=True),
        queue("q2", weight=1),
        podgroup("low", queue="q1", min_member=1, phase="Running"),
        pod("low-0", group="low", requests="1,1Gi", node="n1", phase="Running"),
        pod("low-1", group="low", requests="1,1Gi", node="n1", phase="Running"),
        podgroup("high", queue="q2", min_member=1, phase="Inqueue"),
        pod("high-0", group="high", requests="1,1Gi"),
    ]
    cache = RecordingCache()
    cache.fail_evictions.update({"c1/low-0", "c1/low-1"})
    ssn = open_session(build_snapshot(objs), build_conf(["reclaim"], [["gang"], ["proportion", "predicates"]]), cache)
    before = _counter("volcano_eviction_errors_total", action="reclaim")
    with caplog.at_level(logging.ERROR, logger="pumice.scheduler.volcano"):
        run_actions(ssn, ["reclaim"])
    assert cache.evictions == []
    assert _counter("volcano_eviction_errors_total", action="reclaim") == before + 1
    assert any("reclaim: evict of c1/low-" in r.getMessage() for r in caplog.records)
    assert {t.status.name for t in ssn.jobs["c1/low"].tasks.values()} == {"Running"}


async def test_run_once_closes_the_session_and_writes_status_when_an_action_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    async with local_cluster() as c:
        sched = Scheduler(c.client)
        closed: list[object] = []
        monkeypatch.setattr(sched.cache, "write_close", closed.append)

        def boom(ssn: object, name: str) -> None:
            raise RuntimeError(f"{name} exploded")

        monkeypatch.setattr(scheduler_mod, "run_action", boom)
        with pytest.raises(RuntimeError, match="enqueue exploded"):
            sched.run_once()
        assert len(closed) == 1


def test_every_extension_point_has_one_typed_table() -> None:
    cb = Callbacks.for_tiers(())
    # (each table is made when first asked for)
    assert {getattr(cb, f.name).point.name for f in dataclasses.fields(cb)} == set(POINTS)
    with pytest.raises(KeyError, match="unknown extension point 'jobOdrer'"):
        cb.by_point("jobOdrer")


def test_plugin_arguments_are_parsed_once_at_load_into_frozen_structs_with_upstream_keys() -> None:
    conf = parse_conf(
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.weight: "5", binpack.cpu: 2}\n'
    )
    args = conf.tiers[0].plugins[0].parsed
    assert isinstance(args, BinpackArgs)
    assert (args.weight, args.cpu, args.memory) == (5, 2, 1)
    assert conf.tiers[0].plugins[0].parsed is args
    with pytest.raises(AttributeError):
        args.weight = 3  # type: ignore[misc]
    assert msgspec.to_builtins(args)["binpack.weight"] == 5


def test_bad_types_raise_at_load_and_unknown_keys_are_ignored_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    """trial-6 F-12: upstream's ``arguments`` is a free map each plugin reads its own keys from,
    so an unknown key (a newer Volcano's, a typo) loads; pumice names it in ``conf.warnings``."""
    with pytest.raises(ArgumentError, match=r"waitForPodsReady.timeout: expected a number, got 'soon'"):
        PLUGINS["wait-for-pods-ready"].parse({"waitForPodsReady.timeout": "soon"})  # pumice's own plugin
    with caplog.at_level("WARNING", logger="pumice.scheduler.volcano.framework.arguments"):
        args = PLUGINS["predicates"].parse({"predicate.NodeAfinityEnable": True, "predicate.CacheEnable": False})
    assert args == PLUGINS["predicates"].parse({"predicate.CacheEnable": False})
    assert "unknown argument 'predicate.NodeAfinityEnable' ignored" in caplog.text
    conf = parse_conf('actions: "enqueue, preempt"\ntiers:\n- plugins:\n  - name: gang\n    arguments: {gang.bogus: 1}\n'
                      '  - name: binpack\n    arguments: {binpack.weight: 3, binpack.resources.nvidia.com/gpu: 2, '
                      'binpack.wieght: 1}\n  - name: predicates\n    arguments: {predicate.CacheEnable: sometimes}\n'
                      'configurations:\n- name: preempt\n  arguments: {enableTopologyAware: true}\n',
                      source="x.conf")
    assert conf.warnings == (
        "x.conf: tiers[0].plugins[0] (gang): arguments: unknown argument 'gang.bogus' ignored",
        "x.conf: tiers[0].plugins[1] (binpack): arguments: unknown argument 'binpack.wieght' ignored",
        "x.conf: tiers[0].plugins[2] (predicates): arguments: predicate.CacheEnable: expected a boolean, got "
        "'sometimes'; the default is used",
        "x.conf: configurations[0] (preempt): arguments: unknown argument 'enableTopologyAware' ignored",
    )
    assert conf.tiers[0].plugins[2].parsed.cache is False
    binpack = conf.tiers[0].plugins[1].parsed
    assert (binpack.weight, binpack.extra) == (3, {"binpack.resources.nvidia.com/gpu": 2})
    assert conf.parsed_action_arguments["preempt"] == parse_conf(
        'actions: "preempt"\ntiers: []\n').parsed_action_arguments["preempt"]
    assert parse_conf('actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n').warnings == ()
    with pytest.raises(ConfigError, match=r"tiers\[0\].plugins\[0\] \(wait-for-pods-ready\): arguments: "
                                          r"waitForPodsReady.timeout: expected a number, got 'soon'"):
        parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: wait-for-pods-ready\n'
                   '    arguments: {waitForPodsReady.timeout: soon}\n')


def test_action_arguments_are_parsed_once_per_configuration(tmp_path: Path) -> None:
    conf = parse_conf('actions: "allocate, preempt"\ntiers: []\nconfigurations:\n- name: preempt\n  arguments: {enableTopologyAwarePreemption: "true"}\n')
    parsed = conf.parsed_action_arguments
    assert parsed["preempt"].topology_aware is True
    assert conf.parsed_action_arguments is parsed



def test_set_gauge_leaves_out_only_a_set_to_the_very_same_float(monkeypatch: pytest.MonkeyPatch) -> None:
    import math

    from prometheus_client import CollectorRegistry, Gauge

    g = Gauge("g", "test gauge", registry=CollectorRegistry())
    sets: list[float] = []
    real = g.set
    monkeypatch.setattr(g, "set", lambda v: sets.append(v) or real(v))
    for v in (1.0, 1, 1.0, 2.5, 0.0, -0.0, -0.0, 0, math.nan, math.nan, 2.5):
        metrics.set_gauge(g, v)
    assert [str(v) for v in sets] == ["1.0", "2.5", "0.0", "-0.0", "0.0", "nan", "nan", "2.5"]
    assert g._value.get() == 2.5
