"""robfig/cron's descriptors and ``@every <duration>`` in CronJob schedules, as kube-apiserver's
batch/v1 validation and Volcano's validatecronjob (both cron.ParseStandard) take them (trial-7 F-3)."""

from __future__ import annotations

import pytest

from pumice.api.cron import Every, parse_schedule
from pumice.testing.cluster import local_cluster

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC, a Tuesday


@pytest.mark.parametrize(("text", "same_as"), [
    ("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@monthly", "0 0 1 * *"), ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"), ("@hourly", "0 * * * *"),
])
def test_each_descriptor_is_its_five_field_schedule(text: str, same_as: str) -> None:
    assert parse_schedule(text).next_after(T0) == parse_schedule(same_as).next_after(T0)


def test_every_counts_from_the_current_second_in_whole_seconds_at_least_one() -> None:
    s = parse_schedule("@every 5m")
    assert s == Every(300)
    assert s.next_after(T0 + 0.7) == T0 + 300
    assert parse_schedule("@every 1h30m").next_after(T0) == T0 + 5400
    assert parse_schedule("@every 2.9s") == Every(2)
    assert parse_schedule("@every 10ms") == Every(1)


@pytest.mark.parametrize(("text", "message"), [
    ("@often", "unrecognized descriptor: @often"),
    ("@every 5x", "failed to parse duration @every 5x"),
    ("@every", "unrecognized descriptor: @every"),
    ("@Hourly", "unrecognized descriptor: @Hourly"),
])
def test_unknown_descriptors_and_bad_durations_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_schedule(text)


async def test_the_api_stores_a_batch_cronjob_with_a_descriptor_or_every() -> None:
    async with local_cluster() as c:
        for name, schedule in (("hourly", "@hourly"), ("every", "@every 5m")):
            made = await c.client.create({
                "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
                "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
            assert made["spec"]["schedule"] == schedule
