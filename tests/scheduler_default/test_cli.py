"""``pumice scheduler`` argument handling."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pumice.cli.scheduler import command


@pytest.mark.parametrize(("text", "error"), [
    ("soon", 'time: invalid duration "soon"'),
    ("1.5", 'time: missing unit in duration "1.5"'),  # vc-scheduler's flag is a Go duration
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("-1s", "must be positive"),
])
def test_bad_schedule_period_is_one_clear_error(text: str, error: str) -> None:
    res = CliRunner().invoke(command, ["--schedule-period", text])
    assert res.exit_code == 2
    assert error in res.output


def test_scheduler_conf_needs_volcano() -> None:
    res = CliRunner().invoke(command, ["--scheduler-conf", __file__])
    assert res.exit_code == 2
    assert "--scheduler-conf applies to --name volcano only" in res.output


def test_missing_kubeconfig_is_one_clear_error(tmp_path: object) -> None:
    res = CliRunner().invoke(command, ["--kubeconfig", "/nonexistent/kubeconfig"])
    assert res.exit_code == 1
    assert "cannot load kubeconfig" in res.output


def test_worker_count_needs_the_agent_scheduler() -> None:
    res = CliRunner().invoke(command, ["--name", "volcano", "--scheduler-worker-count", "2"])
    assert res.exit_code == 2 and "--scheduler-worker-count applies to --name agent-scheduler only" in res.output


def test_agent_scheduler_with_a_missing_kubeconfig_is_one_clear_error() -> None:
    res = CliRunner().invoke(command, ["--name", "agent-scheduler", "--kubeconfig", "/nonexistent/kubeconfig"])
    assert res.exit_code == 1 and "cannot load kubeconfig" in res.output


def test_soft_sharding_is_accepted_by_the_volcano_scheduler_and_refused_for_the_default_one() -> None:
    res = CliRunner().invoke(command, ["--name", "volcano", "--scheduler-sharding-mode", "soft",
                                       "--kubeconfig", "/nonexistent/kubeconfig"])
    assert res.exit_code == 1 and "cannot load kubeconfig" in res.output  # past the flag checks
    res = CliRunner().invoke(command, ["--name", "default-scheduler", "--scheduler-sharding-mode", "soft"])
    assert res.exit_code == 2 and "--scheduler-sharding-mode applies to --name volcano or agent-scheduler only" in res.output


def test_up_agent_scheduler_needs_the_volcano_group(tmp_path: object) -> None:
    from pumice.cli.up import command as up

    res = CliRunner().invoke(up, ["--data-dir", str(tmp_path), "--controllers", "kube,ray", "--agent-scheduler"])
    assert res.exit_code == 2 and "--agent-scheduler needs the volcano controller group" in res.output
