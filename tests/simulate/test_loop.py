"""The run's event loop (``runner._virtual_loop``): looptime's virtual time, with the zero-timeout
I/O polls skipped while nothing can be ready. Same virtual times as looptime's own loop; a
wake-up from another thread, an executor job, a registered socket and a signal handler are
still seen."""

from __future__ import annotations

import asyncio
import gc
import signal
import socket
import threading
import weakref
from pathlib import Path
from typing import Any

import looptime
import pytest

from pumice.simulate import runner
from pumice.simulate.runner import SimConfig, _PendingFutures, _virtual_loop, _WakeSelector, simulate
from pumice.simulate.workload import load_workload

from .conftest import two_nodes_two_slots


async def _script(log: list[tuple[str, float]]) -> None:
    loop = asyncio.get_running_loop()

    async def worker(name: str, delays: list[float]) -> None:
        for d in delays:
            await asyncio.sleep(d)
            log.append((name, loop.time()))

    q: asyncio.Queue[int] = asyncio.Queue()

    async def consumer() -> None:
        for _ in range(3):
            await q.get()
            log.append(("got", loop.time()))

    async def producer() -> None:
        for d in (0.5, 0.0, 7.25):
            await asyncio.sleep(d)
            q.put_nowait(1)

    try:
        async with asyncio.timeout(100):
            await asyncio.Event().wait()
    except TimeoutError:
        log.append(("timeout", loop.time()))
    # c: timers within the loop's clock resolution (due without the time moving) and under
    # looptime's 1-us tick (it moves by one tick at least)
    await asyncio.gather(worker("a", [1, 2, 3.5]), worker("b", [0, 0, 2.999999]), worker("c", [5e-8, 4e-7, 7e-7, 1.5e-6]),
                         consumer(), producer(),
                         asyncio.sleep(2**25))  # past 194 days: the 100-ns resolution keeps timers due
    log.append(("end", loop.time()))


def test_the_run_loop_keeps_looptimes_virtual_times() -> None:
    ours: list[tuple[str, float]] = []
    theirs: list[tuple[str, float]] = []
    loop = _virtual_loop()
    try:
        loop.run_until_complete(_script(ours))
    finally:
        loop.close()
    plain = looptime.new_event_loop(start=0, noop_cycles=1)
    plain._clock_resolution = 1e-7  # type: ignore[attr-defined]  # as _virtual_loop sets it
    try:
        plain.run_until_complete(_script(theirs))
    finally:
        plain.close()
    assert ours == theirs and ours[-1] == ("end", 100 + 2**25)
    assert [t for n, t in ours if n == "c"] == [100.0, 100.000001, 100.000003, 100.000005]


def _iterations(loop: asyncio.AbstractEventLoop) -> list[int]:
    """Count ``loop``'s iterations (its ``_run_once`` calls) into the returned one-item list."""
    count = [0]
    run_once = loop._run_once  # type: ignore[attr-defined]

    def counted() -> None:
        count[0] += 1
        run_once()

    loop._run_once = counted  # type: ignore[attr-defined]
    return count


def test_the_run_loop_moves_time_without_looptimes_no_op_cycles() -> None:
    """Each move of the time to the next timer takes one iteration, not looptime's three (two
    that run nothing, then the move): the same times with fewer iterations."""
    async def sleeps(log: list[float]) -> None:
        for _ in range(10):
            await asyncio.sleep(1.5)
            log.append(asyncio.get_running_loop().time())

    runs: dict[str, tuple[list[float], int]] = {}
    for name, make in (("ours", _virtual_loop), ("theirs", lambda: looptime.new_event_loop(start=0, noop_cycles=1))):
        loop = make()
        log: list[float] = []
        count = _iterations(loop)
        try:
            loop.run_until_complete(sleeps(log))
        finally:
            loop.close()
        runs[name] = (log, count[0])
    assert runs["ours"][0] == runs["theirs"][0] == [1.5 * k for k in range(1, 11)]
    assert runs["theirs"][1] - runs["ours"][1] == 2 * 10


def test_a_thread_an_executor_and_a_socket_still_wake_the_run_loop() -> None:
    loop = _virtual_loop()

    async def main() -> list[str]:
        seen: list[str] = []
        done = asyncio.Event()
        timer = threading.Timer(0.05, lambda: loop.call_soon_threadsafe(done.set))
        timer.start()
        await done.wait()  # nothing else to run: a real wait, woken through the self-pipe
        timer.join()
        seen.append("thread")
        assert await loop.run_in_executor(None, lambda: 6 * 7) == 42
        seen.append("executor")
        a, b = socket.socketpair()
        try:
            got = asyncio.Event()
            loop.add_reader(a.fileno(), got.set)
            b.send(b"x")
            while not got.is_set():  # busy with ready work: only zero-timeout polls, which must be real
                await asyncio.sleep(0)
            loop.remove_reader(a.fileno())
            seen.append("socket")
        finally:
            a.close()
            b.close()
        return seen

    try:
        assert loop.run_until_complete(main()) == ["thread", "executor", "socket"]
    finally:
        loop.close()


def test_zero_timeout_polls_are_real_after_a_wake_a_new_file_or_a_signal_handler() -> None:
    loop = _virtual_loop()
    try:
        sel = loop._selector  # type: ignore[attr-defined]
        assert isinstance(sel, _WakeSelector)
        sel.select(0)
        assert sel.select(0) == [] and not sel.woken
        loop.call_soon_threadsafe(lambda: None)  # writes a byte to the self-pipe
        assert sel.woken
        assert len(sel.select(0)) == 1  # the real poll sees the pipe (the test took the wake-up)
        a, b = socket.socketpair()
        try:
            sel.register(a, 1)
            b.send(b"x")
            assert a in [k.fileobj for k, _ in sel.select(0)]  # not woken, but another file is registered
            sel.unregister(a)
        finally:
            a.close()
            b.close()
        loop.add_signal_handler(signal.SIGUSR1, lambda: None)
        try:
            assert sel.always
        finally:
            loop.remove_signal_handler(signal.SIGUSR1)
    finally:
        loop.close()


def test_pending_futures_walk_as_a_weak_set() -> None:
    class F:
        pass

    s: weakref.WeakSet[F] = _PendingFutures()
    assert list(s) == [] and not any(True for _ in s)
    f, g = F(), F()
    s.add(f)
    s.add(g)
    assert set(s) == {f, g}
    del f
    assert list(s) == [g]


def _run_counting_collections(two_gangs: Path) -> tuple[list[bool], list[int]]:
    """One small run: whether the collector was on at each progress call, and the generation of
    every collection made while it was off (the run's own)."""
    on: list[bool] = []
    generations: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and not gc.isenabled():
            generations.append(info["generation"])

    gc.callbacks.append(counted)
    try:
        simulate(SimConfig(two_nodes_two_slots(), load_workload(two_gangs), seed=7),
                 progress=lambda *_a: on.append(gc.isenabled()))
    finally:
        gc.callbacks.remove(counted)
    return on, generations


def test_the_collector_is_off_during_a_run_collects_on_growth_and_is_back_on_after(
        two_gangs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert gc.isenabled()
    on, generations = _run_counting_collections(two_gangs)
    assert on and not any(on) and gc.isenabled()
    assert generations == []  # the run stays under SIM_GC_GROWTH new objects
    monkeypatch.setattr(runner, "SIM_GC_GROWTH", 0)  # any growth at all: collect at every check
    on, generations = _run_counting_collections(two_gangs)
    assert not any(on) and gc.isenabled()
    assert generations.count(2) > 1 and set(generations) == {2}


ONE_POD = """
arrivals:
- at: 0
  duration: 1000
  name: p
  manifest: {apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}}
"""


@pytest.mark.parametrize("until", [1e-9, 0.01, 0.1, 1.1, 10.01, 100.3])
def test_a_fractional_until_ends_the_run_at_the_first_instant_at_or_after_it(tmp_path: Path, until: float) -> None:
    """Trial 18 F-11: the simulated time is epoch + loop time less the start (2**-22 s apart near
    2023), so at the loop instant of ``--until 1.1`` it reads 1.0999999; the watcher then waited
    the 9.5e-8 s left, under asyncio's clock resolution, which is due at once and never moved the
    time: the run spun at that instant for ever. The watcher wakes once per event or wait, so a
    few thousand wake-ups are far more than this run needs; the stop flag only turns a spin into
    a failure."""
    w = tmp_path / "w.yaml"
    w.write_text(ONE_POD)
    stop = runner.StopFlag()
    wakeups = 0

    def progress(now: float, finished: int, total: int, writes: int) -> None:
        nonlocal wakeups
        wakeups += 1
        if wakeups > 5000:
            stop.set("spinning")

    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(w), until=until), progress=progress, stop=stop)
    assert r.ended_by == "until"
    assert until <= r.end_time < until + 1e-5


MANY_SHORT_JOBS = """
kind: Workload
queues: [default]
arrivals:
  - at: 0
    every: 3
    duration: 5
    count: 50
    name: short
    manifest:
      apiVersion: batch.volcano.sh/v1alpha1
      kind: Job
      spec:
        minAvailable: 1
        schedulerName: volcano
        queue: default
        tasks:
          - name: worker
            replicas: 1
            template:
              spec:
                restartPolicy: Never
                containers:
                  - name: main
                    image: pumice.io/simulated
                    resources: {requests: {cpu: "1", memory: 1Gi}}
"""


def test_the_run_keeps_a_short_watch_history_and_no_informer_lists_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's API server keeps SIM_WATCH_HISTORY watch events per resource (old object
    versions are not kept alive for thousands of writes), and that is enough: no watch of the
    run needs an older revision, so every informer of the scheduler's cache listed once."""
    from pumice.simulate.workload import load_workload

    from .conftest import two_nodes_two_slots

    stacks: list[Any] = []
    start = runner._start_api_server

    async def keep(cfg: SimConfig, clock: Any) -> Any:
        stack = await start(cfg, clock)
        stacks.append(stack)
        return stack

    monkeypatch.setattr(runner, "_start_api_server", keep)
    (tmp_path / "w.yaml").write_text(MANY_SHORT_JOBS)
    r = simulate(SimConfig(two_nodes_two_slots(), load_workload(tmp_path / "w.yaml")))
    assert r.ended_by == "done" and r.recorder.finished == 50
    histories = {res: len(st.history) for res, st in stacks[0].server.store._resources.items()}
    assert max(histories.values()) == runner.SIM_WATCH_HISTORY  # the Pods' writes went past it
    informers = stacks[0].scheduler.cache.informers
    assert informers and all(inf.relists == 1 for inf in informers.values())
