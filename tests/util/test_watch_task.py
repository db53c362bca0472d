"""pumice._util.errors.watch_task: the one rule for the end of a task nobody awaits (review 19
R-12): FATAL_TYPES fail the owner, anything else is logged with the task and a traceback."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pumice._util.errors import watch_task

log = logging.getLogger("test.watch_task")


async def _ended_with(error: BaseException | None, *, cancel: bool = False) -> asyncio.Task[None]:
    async def body() -> None:
        if cancel:
            await asyncio.sleep(10)
        if error is not None:
            raise error

    return asyncio.create_task(body(), name="the write")


async def _settle(t: asyncio.Task[None]) -> None:
    await asyncio.gather(t, return_exceptions=True)
    await asyncio.sleep(0)  # done callbacks run on the next loop pass


async def test_a_fatal_error_goes_to_the_owner_and_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    fatal: list[BaseException] = []
    t = await _ended_with(MemoryError("injected"))
    watch_task(t, owner="cache", logger=log, on_fatal=fatal.append)
    await _settle(t)
    assert [str(e) for e in fatal] == ["injected"] and not caplog.records


async def test_any_other_error_is_logged_with_owner_task_and_traceback(caplog: pytest.LogCaptureFixture) -> None:
    fatal: list[BaseException] = []
    t = await _ended_with(ValueError("bad"))
    watch_task(t, owner="cache", logger=log, on_fatal=fatal.append)
    await _settle(t)
    assert not fatal
    [rec] = caplog.records
    assert (rec.levelname, rec.getMessage()) == ("ERROR", "cache: the write failed: ValueError: bad")
    assert rec.exc_info is not None


async def test_what_names_the_task_in_the_line(caplog: pytest.LogCaptureFixture) -> None:
    t = await _ended_with(ValueError("bad"))
    watch_task(t, owner="job j1", what="deletion", logger=log, on_fatal=lambda e: None)
    await _settle(t)
    assert caplog.records[0].getMessage() == "job j1: deletion failed: ValueError: bad"


async def test_a_normal_end_or_a_cancel_is_nothing(caplog: pytest.LogCaptureFixture) -> None:
    fatal: list[BaseException] = []
    done, cancelled = await _ended_with(None), await _ended_with(None, cancel=True)
    for t in (done, cancelled):
        watch_task(t, owner="cache", logger=log, on_fatal=fatal.append)
    cancelled.cancel()
    await _settle(done)
    await _settle(cancelled)
    assert not fatal and not caplog.records
