"""Bad flags are refused with one line before anything starts (final new-user trial)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pumice.cli.main import main


@pytest.mark.parametrize(("args", "message"), [
    (["up", "--nodes", "0"], "0 is not in the range x>=1"),
    (["up", "--port", "70000"], "70000 is not in the range 0<=x<=65535"),
    (["up", "--dashboard-port", "-1"], "-1 is not in the range 0<=x<=65535"),
    (["up", "--no-dashboard", "--dashboard-port", "5"], "--no-dashboard and --dashboard-port contradict each other"),
    (["apiserver", "--port", "70000"], "70000 is not in the range 0<=x<=65535"),
    (["install", "--print", "--namespace", "Bad_NS!"], "a lowercase RFC 1123 label"),
    (["install", "--print", "--image", ""], "an image name is required"),
])
def test_bad_flags_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, [*args, *(["--data-dir", str(tmp_path / "d")] if args[0] == "up" else [])])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "d").exists()


def test_webhook_names_the_certificate_files_it_cannot_use(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                          "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "current-context: x\n")
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    result = CliRunner().invoke(main, ["webhook", "--kubeconfig", str(kubeconfig), "--tls-cert-file", str(bad),
                                       "--tls-private-key-file", str(bad)])
    assert result.exit_code == 1
    assert f"cannot use --tls-cert-file {bad}" in result.output
