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


@pytest.mark.parametrize(("text", "message"), [
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("5-3,7 * * * *", "beginning of range (5) beyond end of range (3): 5-3"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("", "empty spec string"),
])
def test_field_errors_are_robfig_cron_v3_s_texts(text: str, message: str) -> None:
    # trial 11 F-13: kube-apiserver's spec.schedule error is robfig/cron/v3 ParseStandard's err.Error()
    with pytest.raises(ValueError) as e:
        parse_schedule(text)
    assert str(e.value) == message


def test_a_stepped_star_restricts_the_day_as_robfig_s_star_bit_says() -> None:
    # "*/2" in day of month has no star bit: the day matches when day of month OR day of week does
    t0 = 1_700_000_000.0  # Tuesday 2023-11-14 22:13:20 UTC
    assert parse_schedule("0 0 */2 * 4").next_after(t0) == 1_700_006_400.0  # Wednesday 15th: an odd day of month
    assert parse_schedule("0 0 */1 * 4").next_after(t0) == 1_700_092_800.0  # */1 keeps the star: Thursday 16th


async def test_the_api_stores_a_batch_cronjob_with_a_descriptor_or_every() -> None:
    async with local_cluster() as c:
        for name, schedule in (("hourly", "@hourly"), ("every", "@every 5m")):
            made = await c.client.create({
                "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
                "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
            assert made["spec"]["schedule"] == schedule
