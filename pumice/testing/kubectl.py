"""The real kubectl for tests: the binary, a synchronous runner bound to a kubeconfig, and an
async one-shot call. (``Up.kubectl`` and ``KubeControlPlane.kubectl`` are the same for a running
``pumice up`` and a real control plane.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from pumice.testing.paths import kubectl_path

__all__ = ["Kubectl", "kubectl_binary", "run_kubectl"]

def kubectl_binary() -> str:
    """The path of the real kubectl; fails the calling test when there is none (``make test``
    installs it with ``python tools/install_kubectl.py .venv/bin``)."""
    found = kubectl_path()
    if found is None:
        import pytest

        pytest.fail("kubectl is missing: run `python tools/install_kubectl.py .venv/bin` (make test does)")
    return str(found)


class Kubectl:
    """A synchronous kubectl bound to ``kubeconfig`` (``KUBECONFIG``), with ``HOME=home`` and,
    when given, ``--cache-dir cache_dir``. ``env`` and ``cmd`` (binary and fixed flags) are there
    for tests that start kubectl themselves (``Popen`` for port-forward, attach...)."""

    def __init__(self, kubeconfig: Path, home: Path, *, cache_dir: Path | None = None) -> None:
        binary = kubectl_binary()
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home)}
        self.cmd = [binary] if cache_dir is None else [binary, "--cache-dir", str(cache_dir)]

    def __call__(self, *args: str, check: bool = True, stdin: str | None = None,
                 timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run kubectl with ``args``; ``timeout`` in seconds.

        Returns:
            the finished process (text stdout and stderr).
        Raises:
            AssertionError: with ``check`` (the default), a non-zero exit, naming the arguments
                and stderr.
        """
        p = subprocess.run([*self.cmd, *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                           input=stdin)
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({p.returncode}): {p.stderr}")
        return p


async def run_kubectl(kubeconfig: Path, *args: str, timeout: float = 60,
                      merge_stderr: bool = False) -> tuple[int, str, str]:
    """Run ``kubectl --kubeconfig kubeconfig args...`` without blocking the loop.

    Returns:
        ``(exit code, stdout, stderr)``; with ``merge_stderr`` stderr is interleaved into stdout
        and the third item is empty.
    Raises:
        TimeoutError: kubectl did not finish within ``timeout`` seconds.
    """
    proc = await asyncio.create_subprocess_exec(
        kubectl_binary(), "--kubeconfig", str(kubeconfig), *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode(), (err or b"").decode()
