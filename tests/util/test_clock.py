"""The project clock: wall time on a real loop, virtual time under looptime (issue 14 item 13)."""

from __future__ import annotations

import asyncio
import time

import looptime
import pytest

from pumice._util.clock import LoopClock, parse_rfc3339


async def test_now_is_the_wall_clock_on_a_real_loop_however_late_first_used() -> None:
    clock = LoopClock()
    time.sleep(0.2)  # the old clock captured the wall time here and lagged by this much forever
    assert abs(clock.now() - time.time()) < 0.05
    await asyncio.sleep(0.1)
    assert abs(clock.now() - time.time()) < 0.05


def test_now_is_the_wall_clock_without_a_running_loop() -> None:
    clock = LoopClock()
    time.sleep(0.1)
    assert abs(clock.now() - time.time()) < 0.05


@pytest.mark.looptime
async def test_now_is_virtual_under_looptime() -> None:
    clock = LoopClock()
    before_wall = time.time()
    start = clock.now()
    assert abs(start - before_wall) < 0.05  # anchored at the wall time of first sight
    await asyncio.sleep(3600)
    assert clock.now() - start == pytest.approx(3600.0)
    assert time.time() - before_wall < 60  # no hour of wall time passed


def test_an_explicit_epoch_is_loop_time_zero_under_looptime() -> None:
    clock = LoopClock(epoch=1_600_000_000.0)

    async def main() -> tuple[float, float]:
        first = clock.now()
        await clock.sleep(86_400)
        return first, clock.now()

    with asyncio.Runner(loop_factory=lambda: looptime.new_event_loop(start=0)) as runner:
        first, after = runner.run(main())
    assert first == 1_600_000_000.0
    assert after == pytest.approx(1_600_000_000.0 + 86_400)


def test_monotonic_follows_the_loop() -> None:
    clock = LoopClock()

    async def main() -> float:
        t0 = clock.monotonic()
        await asyncio.sleep(42)
        return clock.monotonic() - t0

    with asyncio.Runner(loop_factory=lambda: looptime.new_event_loop(start=0)) as runner:
        assert runner.run(main()) == pytest.approx(42.0)


def test_rfc3339_is_whole_seconds_utc_and_its_memory_never_answers_another_second() -> None:
    import datetime as dt

    from pumice._util import clock

    def fresh(ts: float) -> str:
        return dt.datetime.fromtimestamp(int(ts), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    assert clock.rfc3339(1_700_000_000.9) == "2023-11-14T22:13:20Z"
    assert clock.rfc3339(1_700_000_001.0) == "2023-11-14T22:13:21Z"  # the next second, not the one remembered
    # more seconds than the memory holds: it is emptied and filled again, every answer still right
    for ts in range(1_600_000_000, 1_600_000_000 + 3 * 4096, 3):
        assert clock.rfc3339(ts + 0.5) == fresh(ts)
    assert len(clock._RFC3339) <= 4096
    assert clock.rfc3339(1_700_000_000.2) == "2023-11-14T22:13:20Z"


def test_rfc3339_gives_datetimes_text_across_its_whole_range() -> None:
    """The C library's format (the fast path) against datetime's, from 1970 to the last second
    datetime knows; out of its range rfc3339 still raises as datetime does."""
    import datetime as dt
    import random

    from pumice._util import clock

    rng = random.Random(7)
    stamps = [0, 59, 86_399, 86_400, 951_782_400, 1_700_000_000, 253_402_300_799,
              *(rng.randrange(0, 253_402_300_800) for _ in range(5000))]
    for ts in stamps:
        clock._RFC3339.pop(ts, None)
        assert clock.rfc3339(ts + 0.25) == dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with pytest.raises(ValueError):
        clock.rfc3339(253_402_300_800)


def test_a_pinned_loop_reads_epoch_plus_loop_time_and_unpinning_restores_the_checks() -> None:
    clock = LoopClock(epoch=1_600_000_000.0)
    seen: list[float] = []

    async def main() -> None:
        clock.pin(asyncio.get_running_loop())
        await clock.sleep(1.5)
        seen.extend((clock.now(), clock.monotonic()))
        clock.pin(None)
        await clock.sleep(0.25)
        seen.append(clock.now())

    with asyncio.Runner(loop_factory=lambda: looptime.new_event_loop(start=0)) as runner:
        runner.run(main())
    assert seen == [1_600_000_001.5, 1.5, 1_600_000_001.75]
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="epoch"):
            LoopClock().pin(loop)
    finally:
        loop.close()


@pytest.mark.parametrize(("text", "seconds"), [
    ("2024-01-02T03:04:05Z", 1704164645.0),
    ("2024-01-02T03:04:05.5+01:00", 1704161045.5),
    ("2024-01-02T03:04:05,25Z", 1704164645.25),          # Go takes ',' before the fraction
    ("2024-01-02T03:04:05+24:00", 1704078245.0),         # and an offset of 24 hours (fromisoformat did not)
    ("2024-01-02T3:04:05Z", 1704164645.0),               # and a one-digit hour
    ("0000-01-01T00:00:00Z", -62167219200.0),            # and year 0
    ("2024-01-02T03:04:05.123456789Z", 1704164645.123456789),
])
def test_parse_rfc3339_reads_what_go_reads(text: str, seconds: float) -> None:
    # review10 F2: the one time reader takes every time the API server let be stored
    assert parse_rfc3339(text) == pytest.approx(seconds, abs=1e-9)
    assert parse_rfc3339(text) == parse_rfc3339(text)  # the remembered answer is the same


@pytest.mark.parametrize(("text", "error"), [
    ("2024-01-02", 'parsing time "2024-01-02" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"'),
    ("20240102T030405Z", 'parsing time "20240102T030405Z" as "2006-01-02T15:04:05Z07:00": cannot parse '
                         '"0102T030405Z" as "-"'),
    (" 2024-01-02T03:04:05Z", 'parsing time " 2024-01-02T03:04:05Z" as "2006-01-02T15:04:05Z07:00": cannot parse '
                              '" 2024-01-02T03:04:05Z" as "2006"'),
    ("2024-02-30T00:00:00Z", 'parsing time "2024-02-30T00:00:00Z": day out of range'),
])
def test_parse_rfc3339_refuses_what_go_refuses_with_gos_text(text: str, error: str) -> None:
    # review10 F2: fromisoformat took a bare date, the basic format and surrounding spaces
    with pytest.raises(ValueError) as e:
        parse_rfc3339(text)
    assert str(e.value) == error
