"""Real kubectl against the API server and a process-runtime node agent: ``exec`` (exit codes,
stdin, the Pod's namespaces), ``exec -it`` through a pseudo-terminal, ``attach``, and ``cp`` both
ways, all over the WebSocket channel protocol the API server relays to the node agent, and
``port-forward`` (a SPDY session tunnelled through a WebSocket) with curl through it."""

from __future__ import annotations

import asyncio
import functools
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pumice.api.scheme import POD
from pumice.node.agent import NodeAgent
from pumice.testing import kubectl as kubectl_tool
from pumice.testing.cluster import HttpServer, serve_http
from pumice.testing.kubectl import kubectl_binary
from pumice.testing.node import phase_is, pod, wait_for

pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root")]

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
async def stack(data_dir: Path) -> AsyncIterator[tuple[HttpServer, NodeAgent, Kubectl, dict[str, str]]]:
    async with serve_http(data_dir / "api") as srv:
        agent = NodeAgent(srv.client(), runtime="process", data_dir=data_dir / "node", node_names=["node-0"],
                          node_cpu="4", node_memory="8Gi", lease_renew_interval=None, stop_grace=2.0,
                          usage_period=1.0)
        await agent.start()
        kubectl = kubectl_tool.Kubectl(srv.kubeconfig, data_dir)
        try:
            yield srv, agent, functools.partial(kubectl, check=False), kubectl.env
        finally:
            await agent.stop()


async def _run(kubectl: Kubectl, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(kubectl, *args, stdin=stdin)


async def _running_pod(srv: HttpServer, name: str, command: str = "sleep 3600") -> None:
    client = srv.client()
    try:
        await client.create(pod(name, command, node="node-0"))
        await wait_for(lambda: phase_is(client, name, "Running"), timeout=60)
    finally:
        await client.close()


async def test_exec_runs_in_the_pod_and_returns_output_and_exit_code(stack: Any) -> None:
    srv, _agent, kubectl, _env = stack
    await _running_pod(srv, "box")
    p = await _run(kubectl, "exec", "box", "--", "sh", "-c", "echo out-$HOSTNAME; echo err >&2; exit 3")
    assert p.returncode == 3, p.stderr
    assert p.stdout == "out-box\n"
    assert "err" in p.stderr
    # a command killed by a signal ends with 128 + N, as runc reports it (kubectl refuses "-9")
    p = await _run(kubectl, "exec", "box", "--", "sh", "-c", "kill -9 $$")
    assert p.returncode == 137, p.stderr
    assert "command terminated with exit code 137" in p.stderr
    p = await _run(kubectl, "exec", "-i", "box", "--", "cat", stdin="through stdin\n")
    assert (p.returncode, p.stdout) == (0, "through stdin\n"), p.stderr
    # the Pod's own /tmp and hostname, not the host's
    p = await _run(kubectl, "exec", "box", "--", "sh", "-c", "touch /tmp/inside && hostname")
    assert (p.returncode, p.stdout) == (0, "box\n"), p.stderr
    assert not Path("/tmp/inside").exists()


def on_terminal(argv: list[str], env: dict[str, str], script: list[tuple[bytes, bytes]],
                timeout: float = 60) -> str:
    """Run ``argv`` on a pseudo-terminal; each time the output holds a ``script`` step's cue, type
    its text. Returns the output and ``[exit N]`` (the process is killed when the script does not
    finish within ``timeout`` s)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    out = b""
    deadline = time.monotonic() + timeout
    steps = list(script)
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if steps and steps[0][0] in out:
            os.write(fd, steps.pop(0)[1])
    else:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return out.decode(errors="replace") + f"\n[exit {os.waitstatus_to_exitcode(status)}]"


async def test_exec_tty_through_a_pseudo_terminal(stack: Any) -> None:
    srv, _agent, _kubectl, env = stack
    await _running_pod(srv, "term")
    text = await asyncio.to_thread(on_terminal, [kubectl_binary(), "exec", "-it", "term", "--", "sh"], env,
                                   [(b"#", b"tty; echo rows=$(stty size); exit 7\n")], 30)
    assert "/dev/pts/" in text, text
    assert "rows=" in text, text
    assert "[exit 7]" in text, text


async def test_attach_streams_what_the_container_writes(stack: Any) -> None:
    srv, _agent, _kubectl, env = stack
    await _running_pod(srv, "talker", "i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.2; done")

    def attach_for(seconds: float) -> str:
        proc = subprocess.Popen([kubectl_binary(), "attach", "talker"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(seconds)
        proc.terminate()
        out, err = proc.communicate(timeout=10)
        return out + err

    out = await asyncio.to_thread(attach_for, 4.0)
    assert "tick-" in out, out


async def test_kubectl_debug_runs_an_ephemeral_container_in_the_pods_sandbox(stack: Any) -> None:
    """``kubectl debug`` (no ``-i``) adds an ephemeral container through pods/ephemeralcontainers; the
    node agent runs it once in the Pod's namespaces, reports it in ephemeralContainerStatuses, and
    ``kubectl logs -c`` reads it; the Pod's own container runs on."""
    srv, _agent, kubectl, _env = stack
    await _running_pod(srv, "dbg")
    p = await _run(kubectl, "debug", "dbg", "--image=busybox", "--target=c0", "-c", "debugger", "--",
                   "sh", "-c", "echo debug-in-$HOSTNAME")
    assert p.returncode == 0, p.stderr
    client = srv.client()

    async def ended() -> Any:
        got = await client.get(POD, "dbg", "default")
        statuses = (got.get("status") or {}).get("ephemeralContainerStatuses") or []
        return statuses and "terminated" in statuses[0]["state"] and got

    try:
        got = await wait_for(ended, timeout=60)
    finally:
        await client.close()
    [st] = got["status"]["ephemeralContainerStatuses"]
    assert (st["name"], st["state"]["terminated"]["exitCode"]) == ("debugger", 0)
    assert got["status"]["phase"] == "Running" and got["status"]["containerStatuses"][0]["state"].get("running")
    p = await _run(kubectl, "logs", "dbg", "-c", "debugger")
    assert (p.returncode, p.stdout) == (0, "debug-in-dbg\n"), p.stderr


async def test_kubectl_debug_it_gives_a_shell_on_a_terminal_in_the_pod(stack: Any) -> None:
    """``kubectl debug -it``: the ephemeral container (stdin and tty) runs ``sh`` on a
    pseudo-terminal; attach feeds it what is typed and streams back what it writes."""
    srv, _agent, _kubectl, env = stack
    await _running_pod(srv, "dbgt")
    argv = [kubectl_binary(), "debug", "-it", "dbgt", "--image=busybox", "--target=c0", "-c", "shell", "--", "sh"]
    text = await asyncio.to_thread(on_terminal, argv, env, [
        (b"command prompt", b"echo answer-$((6*7))-$(hostname); tty\r"), (b"answer-42-dbgt", b"exit\r")])
    assert "answer-42-dbgt" in text, text
    assert "/dev/pts/" in text, text


async def test_kubectl_debug_i_feeds_stdin_to_the_ephemeral_container(stack: Any) -> None:
    srv, _agent, kubectl, _env = stack
    await _running_pod(srv, "dbgi")
    p = await _run(kubectl, "debug", "-i", "dbgi", "--image=busybox", "-c", "piped", "--", "sh",
                   stdin="echo piped-$HOSTNAME\nexit 3\n")
    assert "piped-dbgi" in p.stdout, (p.stdout, p.stderr)


async def test_cp_copies_a_file_into_the_pod_and_back(stack: Any, data_dir: Path) -> None:
    srv, _agent, kubectl, _env = stack
    await _running_pod(srv, "files")
    src = data_dir / "hello.txt"
    src.write_text("hello through tar\n")
    p = await _run(kubectl, "cp", str(src), "files:/tmp/hello.txt")
    assert p.returncode == 0, p.stderr
    p = await _run(kubectl, "exec", "files", "--", "cat", "/tmp/hello.txt")
    assert p.stdout == "hello through tar\n", p.stderr
    back = data_dir / "back.txt"
    p = await _run(kubectl, "cp", "files:/tmp/hello.txt", str(back))
    assert p.returncode == 0, p.stderr
    assert back.read_text() == "hello through tar\n"


async def test_port_forward_reaches_a_server_bound_to_the_pods_loopback(stack: Any, data_dir: Path) -> None:
    srv, _agent, _kubectl, env = stack
    (data_dir / "www").mkdir()
    (data_dir / "www" / "index.html").write_text("served from inside the pod\n")
    await _running_pod(srv, "web", f"cd {data_dir / 'www'} && exec {sys.executable} -m http.server 8080 "
                                   "--bind 127.0.0.1")

    def forward_and_curl() -> tuple[str, str]:
        proc = subprocess.Popen([kubectl_binary(), "port-forward", "pod/web", ":8080"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # Forwarding from 127.0.0.1:PORT -> 8080
            port = line.split("127.0.0.1:")[1].split(" ")[0] if "127.0.0.1:" in line else ""
            c = subprocess.run(["curl", "-sS", "--max-time", "10", f"http://127.0.0.1:{port}/index.html"],
                               capture_output=True, text=True, timeout=30)
            return line, c.stdout + c.stderr
        finally:
            proc.terminate()
            proc.communicate(timeout=10)

    # The server in the Pod may still be starting when the Pod is Running; kubectl (1.31+) ends
    # the whole port-forward at the first refused connection ("lost connection to pod"), so each
    # try is a new kubectl.
    for _ in range(10):
        line, out = await asyncio.to_thread(forward_and_curl)
        if out == "served from inside the pod\n":
            break
        await asyncio.sleep(1)
    assert "-> 8080" in line, line
    assert out == "served from inside the pod\n", out


async def test_top_reports_node_and_pod_usage_from_the_node_agent(stack: Any) -> None:
    srv, _agent, kubectl, _env = stack
    await _running_pod(srv, "busy", f"exec {sys.executable} -c 'while True: pass'")

    async def top_pod() -> subprocess.CompletedProcess[str]:
        return await _run(kubectl, "top", "pod", "busy", "--no-headers")

    cpu, p = 0, await top_pod()
    for _ in range(60):  # usage is a rate over two samples (usage_period apart) that both saw the Pod
        if p.returncode == 0:
            name, cpu_text, mem = p.stdout.split()
            cpu = int(cpu_text.rstrip("m"))
            if cpu > 100:
                break
        await asyncio.sleep(1)
        p = await top_pod()
    assert p.returncode == 0, p.stderr
    assert name == "busy" and cpu > 100 and mem.endswith("Mi"), p.stdout
    p = await _run(kubectl, "top", "node", "--no-headers")
    assert p.returncode == 0 and p.stdout.startswith("node-0 "), p.stdout + p.stderr
