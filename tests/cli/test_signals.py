"""Components stop on SIGTERM whatever they wait on (issue 13 item 3): a scheduler whose informers
sit in their retry backoff against a server that refuses its token is cancelled once its grace
period runs out after the first signal, and at once on a second signal; either way it prints one
line, no traceback."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apiserver.test_crash import start_server


@pytest.fixture
def refused_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig for a live API server, with a token it refuses (every request: 401)."""
    proc, _ = start_server(tmp_path / "server")
    good = (tmp_path / "server" / "kubeconfig").read_text()
    token = (tmp_path / "server" / "token").read_text().strip()
    bad = tmp_path / "refused.kubeconfig"
    bad.write_text(good.replace(token, "not-the-token"))
    try:
        yield bad
    finally:
        proc.terminate()
        proc.wait(15)


def start_scheduler(kubeconfig: Path, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "scheduler", "--kubeconfig", str(kubeconfig),
                             "--name", name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until an informer is in its retry backoff
        if "retrying in" in line:
            return proc
    raise AssertionError(f"scheduler exited ({proc.wait()}) before any informer retried")


@pytest.mark.parametrize("name", ["volcano", "default-scheduler"])
def test_sigterm_stops_a_scheduler_whose_informers_are_in_retry_backoff(refused_kubeconfig: Path, name: str) -> None:
    proc = start_scheduler(refused_kubeconfig, name)
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(30)
    finally:
        proc.kill()
    assert proc.stdout is not None
    rest = proc.stdout.read()
    assert rc == 1
    assert "Error: stopped by signal before the shutdown finished" in rest
    assert "Traceback" not in rest


def test_a_second_sigterm_stops_at_once(refused_kubeconfig: Path) -> None:
    proc = start_scheduler(refused_kubeconfig, "volcano")
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(30)
    finally:
        proc.kill()
    assert proc.stdout is not None
    out = proc.stdout.read()
    assert rc == 1
    assert "second SIGTERM: cancelling" in out


def test_one_sigint_stops_pumice_up_gracefully_not_as_a_second_signal(tmp_path: Path) -> None:
    """uvicorn re-raised the signal it had caught when it stopped, which read as a second SIGINT:
    the graceful shutdown was skipped and tracebacks printed. One signal is one signal."""
    proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "up", "--runtime", "simulated", "--port", "0",
                             "--no-dashboard", "--data-dir", str(tmp_path / "up")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("kubeconfig:"):
            break
    else:
        raise AssertionError(f"pumice up exited ({proc.wait()}) before it was up")
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(90)
    finally:
        proc.kill()
    rest = proc.stderr.read()
    assert rc == 0, rest[-2000:]
    assert "second SIGINT" not in rest and "Traceback" not in rest


def test_sigterm_stops_pumice_apiserver_with_status_zero(tmp_path: Path) -> None:
    proc, _ = start_server(tmp_path / "api")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()



def test_one_sigterm_stops_pumice_dashboard_gracefully_not_as_a_second_signal(tmp_path: Path) -> None:
    """Trial 9 F-10: the dashboard's uvicorn server caught SIGTERM beside the CLI's handler and
    re-raised it when it stopped, which the CLI took for a second SIGTERM and cancelled the
    graceful stop (``second SIGTERM: cancelling``)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "apiserver", "--data-dir",
                               str(tmp_path / "api"), "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert server.stdout is not None and "listening on" in server.stdout.readline()
        proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "dashboard", "--kubeconfig",
                                 str(tmp_path / "api" / "kubeconfig"), "--port", "0"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stderr is not None
            url = proc.stderr.readline().split()[1] if proc.stderr else ""
            assert url.startswith("http://"), f"pumice dashboard exited ({proc.wait()}) before it served"
            for _ in range(300):  # the web server runs (its signal handlers, if it has any, are installed)
                with contextlib.suppress(OSError), urllib.request.urlopen(url + "healthz", timeout=5):
                    break
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(30)
        finally:
            proc.kill()
        rest = proc.stderr.read()
    finally:
        server.terminate()
        server.wait(15)
    assert rc == 0, rest[-2000:]
    assert "second SIGTERM" not in rest and "cancelling" not in rest and "Traceback" not in rest, rest[-2000:]


def test_pumice_dashboard_without_an_api_server_says_so_in_one_line(tmp_path: Path) -> None:
    """trial 12 F-6 g: with an unreachable API server the dashboard logged an informer retry
    every few seconds for each of its kinds and never printed its URL nor why."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                          "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "current-context: x\n")
    r = subprocess.run([sys.executable, "-m", "pumice.cli.main", "dashboard", "--kubeconfig", str(kubeconfig),
                        "--port", "0"], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr.splitlines()) == (1, [
        'Error: cannot reach the API server: Get "https://127.0.0.1:1/version": dial tcp 127.0.0.1:1: '
        "connect: connection refused"])


def test_sigterm_stops_pumice_dashboard_while_its_cache_waits_for_the_first_lists(refused_kubeconfig: Path) -> None:
    """trial 12 F-6 g: a SIGTERM while the cache waited (up to 30 s) for its first lists was only
    seen after that wait: the grace period ran out first (``still running 5 s after SIGTERM:
    cancelling``, exit 1)."""
    proc = subprocess.Popen([sys.executable, "-m", "pumice.cli.main", "dashboard", "--kubeconfig",
                             str(refused_kubeconfig), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:  # the server answers (401), the informers are in their retry backoff
        if "retrying" in line:
            break
    else:
        raise AssertionError(f"pumice dashboard exited ({proc.wait()}) before any informer retried")
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(30)
    finally:
        proc.kill()
    rest = proc.stdout.read()
    assert rc == 0, rest[-2000:]
    assert "cancelling" not in rest and "Traceback" not in rest, rest[-2000:]


_INTERRUPT_AT_IMPORT = """
import sys

TARGET = sys.argv[1]


class InterruptAt:  # Ctrl-C arriving while Python imports the module named in argv
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == TARGET:
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, InterruptAt)
from pumice.cli.main import main
sys.argv = ["pumice", "simulate", "--help"]
main()
"""


@pytest.mark.parametrize("module", ["click", "pumice.cli.simulate"])
def test_ctrl_c_while_the_command_is_imported_is_one_line_and_130(module: str) -> None:
    # trial 11 F-11 i: in the first ~0.5 s (imports) Ctrl-C printed a KeyboardInterrupt traceback
    r = subprocess.run([sys.executable, "-c", _INTERRUPT_AT_IMPORT, module], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert (r.returncode, r.stdout, r.stderr) == (130, "", "interrupted (SIGINT) before the command started\n")
