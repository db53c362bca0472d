"""The container-runtime seam of the node agent (what CRI is to the kubelet).

Two implementations: :mod:`pumice.node.runtime.process` (real processes, optional per-Pod network
namespace) and :mod:`pumice.node.runtime.simulated` (no processes; lifecycles on the project
clock). The Pod worker drives both through this Protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pumice.api import Obj
from pumice.node.volumes import Mount


class RuntimeError_(Exception):
    """A container could not be created or started; ``reason`` is the kubelet's waiting reason
    (``RunContainerError``, ``CreateContainerError``, ``ContainerCannotRun``...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class Sandbox:
    """One Pod's sandbox (network namespace, IP, directory).

    Attributes:
        uid: the Pod's metadata.uid.
        namespace, name: the Pod's namespace and name.
        pod_dir: ``<data_dir>/pods/<ns>_<name>_<uid>``.
        ip: the Pod IP.
        netns: network namespace name (netns mode) or ``""``.
        extra: runtime-specific data persisted in the agent's state file.
    """

    uid: str
    namespace: str
    name: str
    pod_dir: Path
    ip: str
    netns: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Container:
    """A started container instance.

    Attributes:
        name: container name.
        restart_count: which instance of the container this is (0 for the first).
        started_at: epoch seconds when it started (project clock).
        pid: the shim's process id (0 in the simulated runtime).
        log_path: its CRI-format log file ("" in the simulated runtime).
        exit_path: the file where the shim writes the exit code.
        proc_start: the shim's start time in clock ticks since boot (/proc/<pid>/stat field 22),
            so an adopted pid is not confused with a reused one.
    """

    name: str
    restart_count: int
    started_at: float
    pid: int = 0
    log_path: str = ""
    exit_path: str = ""
    proc_start: int = 0
    state: Any = None  # runtime-private handle (Popen, timer ...)


@dataclass(frozen=True)
class StartRequest:
    """What the worker asks the runtime to start: argv already ``$(VAR)``-expanded, the final
    environment, working dir, bind mounts, and the Pod's restartCount for this instance."""

    container: Obj
    argv: Sequence[str]
    env: Mapping[str, str]
    mounts: Sequence[Mount]
    restart_count: int
    init: bool = False


class ContainerRuntime(Protocol):
    """Runtime operations; all raise :class:`RuntimeError_` with a kubelet reason on failure."""

    name: str

    async def create_sandbox(self, pod: Obj, pod_dir: Path) -> Sandbox: ...

    async def remove_sandbox(self, sandbox: Sandbox) -> None:
        """Kill whatever still runs in the sandbox and remove its network and mounts."""
        ...

    async def start(self, sandbox: Sandbox, pod: Obj, req: StartRequest) -> Container: ...

    async def wait(self, sandbox: Sandbox, pod: Obj, c: Container) -> int:
        """Wait for the container to exit; returns its exit code (128+signal when killed)."""
        ...

    async def signal(self, c: Container, sig: int) -> None:
        """Send ``sig`` to the container's main process (the shim forwards it)."""
        ...

    async def kill(self, sandbox: Sandbox, c: Container) -> None:
        """SIGKILL the container's process group."""
        ...

    async def exec(
        self, sandbox: Sandbox, pod: Obj, c: Container, argv: Sequence[str], env: Mapping[str, str], timeout: float
    ) -> tuple[int, str]:
        """Run ``argv`` in the container's namespaces (exec probes, preStop hooks).
        Returns (exit code, combined output); exit code -1 on timeout."""
        ...

    async def probe_http(self, sandbox: Sandbox, pod: Obj, container: Obj, action: Obj, timeout: float) -> tuple[bool, str]: ...

    async def probe_tcp(self, sandbox: Sandbox, pod: Obj, container: Obj, action: Obj, timeout: float) -> tuple[bool, str]: ...

    def is_alive(self, c: Container) -> bool:
        """True when an adopted container is still running."""
        ...

    def update_hosts(self, sandbox: Sandbox, content: str) -> None:
        """Rewrite the Pod's hosts file in place (no-op without one)."""
        ...
