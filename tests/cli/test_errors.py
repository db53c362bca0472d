"""Every CLI error is one line, never a traceback (issue 14 items 11 and 14)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pumice.cli import main as cli_main


@pytest.mark.parametrize(("text", "detail"), [
    ("hello: [1, 2\n", "not YAML"),
    # trial-7 F-13: these said "('list' object has no attribute 'get')"
    ("- a\n- b\n", "(the file holds a list, not a mapping of clusters, users and contexts)"),
    ("clusters: 5\ncurrent-context: x\ncontexts: [{name: x, context: 7}]\n", "(clusters is a number, not a list)"),
    ("current-context: x\ncontexts: [{name: x, context: 7}]\n", "(contexts[0].context is a number, not a mapping)"),
])
def test_a_bad_kubeconfig_is_one_line(tmp_path: Path, text: str, detail: str) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_text(text)
    res = CliRunner().invoke(cli_main.main, ["explain", "pod/x", "--kubeconfig", str(kc)])
    assert res.exit_code == 1
    out = res.output.strip()
    assert "\n" not in out and "Traceback" not in out
    assert f"kubeconfig {kc} is not a valid kubeconfig" in out
    assert detail in out


@pytest.mark.parametrize("tail", ["---\n", "---\nkind: Other\n", "---\n[unclosed\n"])
def test_a_kubeconfig_of_more_than_one_document_is_read_from_its_first(tmp_path: Path, tail: str) -> None:
    """Review 20 V-11: a second document was refused ("expected a single document in the
    stream"); client-go's loader (go-yaml's Unmarshal) decodes the first and reads no further."""
    from pumice.client.kubeconfig import load

    kc = tmp_path / "kubeconfig"
    kc.write_text("---\napiVersion: v1\nkind: Config\ncurrent-context: c\n"
                  "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
                  "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
                  + tail)
    assert load(kc).context_name == "c"


def test_an_unexpected_exception_in_a_command_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    @click.command(name="boom")
    def boom() -> None:
        raise RuntimeError("first line\nsecond line")

    monkeypatch.setattr(cli_main.LazyGroup, "get_command", lambda self, ctx, name: boom)
    res = CliRunner().invoke(cli_main.main, ["boom"])
    assert res.exit_code == 1
    assert res.output.strip() == ("Error: internal error (RuntimeError: first line second line); "
                                  "run again with PUMICE_DEBUG=1 for the traceback")


def test_pumice_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    @click.command(name="boom")
    def boom() -> None:
        raise RuntimeError("x")

    monkeypatch.setattr(cli_main.LazyGroup, "get_command", lambda self, ctx, name: boom)
    monkeypatch.setenv("PUMICE_DEBUG", "1")
    res = CliRunner().invoke(cli_main.main, ["boom"])
    assert isinstance(res.exception, RuntimeError)


def test_an_os_error_reads_as_its_reason_and_path_without_errno() -> None:
    res = CliRunner().invoke(cli_main.main, ["up", "--runtime", "simulated", "--data-dir", "/proc/pumice-nope",
                                             "--port", "0", "--no-dashboard"])
    assert res.exit_code == 1
    assert res.output.strip() == "Error: No such file or directory: /proc/pumice-nope"


@pytest.mark.parametrize("argv", [
    ["apiserver", "--port", "0"],
    ["node-agent", "--runtime", "simulated"],
])
def test_a_data_dir_held_by_another_pumice_is_refused_in_one_line(tmp_path: Path, argv: list[str]) -> None:
    # trial-8 F-19: `pumice apiserver` on a running `pumice up`'s data dir opened its pumice.db,
    # handed out the same resourceVersions and rewrote its kubeconfig.
    import os

    from pumice.cli._datadir import lock_data_dir

    held = lock_data_dir(tmp_path)  # another open file description: flock refuses it like another process
    try:
        res = CliRunner().invoke(cli_main.main, [*argv, "--data-dir", str(tmp_path)])
    finally:
        held.close()
    assert res.exit_code == 1
    assert res.output == f"Error: data dir {tmp_path} is in use by another pumice process (pid {os.getpid()})\n"
    assert not (tmp_path / "pumice.db").exists() and not (tmp_path / "kubeconfig").exists()


@pytest.mark.parametrize("argv", [["up", "--runtime", "simulated", "--port", "0"], ["apiserver", "--port", "0"]])
def test_a_data_dir_that_is_a_file_is_refused_as_not_a_directory(tmp_path: Path, argv: list[str]) -> None:
    # trial 11 F-11 h: it said "File exists: /etc/passwd"
    f = tmp_path / "afile"
    f.write_text("x")
    res = CliRunner().invoke(cli_main.main, [*argv, "--data-dir", str(f)])
    assert res.exit_code == 1
    assert res.output == f"Error: data dir {f} is not a directory\n"


def test_a_kubeconfig_nested_too_deep_or_a_device_is_one_line(tmp_path: Path) -> None:
    # review 19 R-4: yaml.safe_load without yamlsafe's limits (RecursionError); Path.read_text of
    # a device (/dev/zero never ends)
    kc = tmp_path / "kubeconfig"
    kc.write_text("clusters: " + "[" * 600 + "]" * 600 + "\n")
    for path, detail in ((kc, f"(not YAML: {kc}: yaml: exceeded max depth of 100)"),
                         (Path("/dev/zero"), "/dev/zero: not a regular file (a character device)")):
        res = CliRunner().invoke(cli_main.main, ["explain", "pod/x", "--kubeconfig", str(path)])
        out = res.output.strip()
        assert (res.exit_code, "\n" in out, "Traceback" in out) == (1, False, False), out
        assert detail in out


def test_a_rayjob_file_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    from pumice.cli.ray import RayCliError, load_rayjob_file

    job = tmp_path / "job.yaml"
    job.write_text("kind: RayJob\nspec: " + "[" * 600 + "]" * 600 + "\n")
    with pytest.raises(RayCliError, match=r"^Failed to decode RayJob Yaml: .*job.yaml: yaml: exceeded max depth of 100$"):
        load_rayjob_file(str(job))
