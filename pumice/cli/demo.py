"""``pumice demo``: the main job.

Starts ``pumice up`` (API server, controllers, schedulers, node agent with the process runtime)
as a child process, applies KubeRay's own ``ray-job.sample.yaml`` from the shared samples
(unchanged except for a ``volcano.sh/queue-name`` label, so the Volcano adapter gang-schedules
the cluster), follows the RayJob through its JobDeploymentStatus values on one live status line,
prints the Ray job's output, checks ``jobStatus: SUCCEEDED`` and ``jobDeploymentStatus:
Complete``, shows what happened to the RayCluster under the sample's settings, stops
``pumice up`` with SIGINT and checks that no Pod process or network namespace is left, then
removes its own data dir (saying so, with its size; ``--keep-data`` keeps it).

Exit status: 0 on success; 1 when the RayJob did not succeed or a check failed (one line says
which); 2 on bad arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.markup import escape

from pumice._util.files import remove_tree, scan_tree
from pumice.api import yamlsafe
from pumice.api.scheme import Scheme
from pumice.controllers.ray.status import format_rayjob_status

QUEUE_LABEL = "volcano.sh/queue-name"
TERMINAL = {"Complete", "Failed", "ValidationFailed"}


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def default_sample() -> Path:
    """``../shared/samples/kuberay/ray-job.sample.yaml`` beside the checkout (or /work/shared)."""
    for base in (_repo_root().parent / "shared", Path("/work/shared")):
        p = base / "samples" / "kuberay" / "ray-job.sample.yaml"
        if p.exists():
            return p
    return _repo_root().parent / "shared" / "samples" / "kuberay" / "ray-job.sample.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_sample(path: Path, queue: str | None) -> list[dict[str, Any]]:
    """The sample's objects, with the queue label added to the RayJob when ``queue`` is given.

    Raises:
        click.ClickException: the file is missing or not YAML.
    """
    try:
        docs = [d for d in yamlsafe.safe_load_all(path.read_text()) if d]
    except (OSError, yaml.YAMLError) as e:
        raise click.ClickException(f"cannot read sample {path}: {e}") from e
    for d in docs:
        d.setdefault("metadata", {}).setdefault("namespace", "default")
        if queue and d.get("kind") == "RayJob":
            d["metadata"].setdefault("labels", {})[QUEUE_LABEL] = queue
    return docs


def status_line(rayjob: dict[str, Any], pods: list[dict[str, Any]], elapsed: float) -> str:
    """One line: elapsed seconds, the RayJob summary (the operator's own formatter), Pod phases."""
    phases: dict[str, int] = {}
    for p in pods:
        ph = (p.get("status") or {}).get("phase", "Pending")
        if p["metadata"].get("deletionTimestamp"):
            ph = "Terminating"
        phases[ph] = phases.get(ph, 0) + 1
    pod_txt = ", ".join(f"{n} {ph}" for ph, n in sorted(phases.items())) or "no pods"
    return f"[{elapsed:5.0f}s] {format_rayjob_status(rayjob)} pods: {pod_txt}"


async def _follow(kubeconfig: Path, docs: list[dict[str, Any]], timeout: float) -> int:
    from pumice.client.kubeconfig import connect

    client = connect(str(kubeconfig))
    scheme: Scheme = client.scheme
    try:
        rayjob_kind = await client.resolve("ray.io/v1", "RayJob")
        await client.resolve("ray.io/v1", "RayCluster")
        for d in docs:
            await client.create(d)
            click.echo(f"created {d['kind']}/{d['metadata']['name']}")
        rayjob = next(d for d in docs if d["kind"] == "RayJob")
        name, ns = rayjob["metadata"]["name"], rayjob["metadata"]["namespace"]
        pod_kind = scheme.by_api_version_kind("v1", "Pod")
        assert pod_kind is not None
        start = time.monotonic()
        last = line = ""
        seen_states: list[str] = []
        obj: dict[str, Any] = {}
        console = Console(highlight=False)
        # on a terminal one live status line (rich's spinner), else a line per change
        live = console.status("") if console.is_terminal else contextlib.nullcontext()
        with live as status:
            while time.monotonic() - start < timeout:
                obj = await client.get(rayjob_kind, name, ns)
                pods = (await client.list(pod_kind, ns)).items
                line = status_line(obj, pods, time.monotonic() - start)
                state = (obj.get("status") or {}).get("jobDeploymentStatus", "")
                if state and (not seen_states or seen_states[-1] != state):
                    seen_states.append(state)
                changed = line.split("] ", 1)[1]
                if status is not None:
                    status.update(escape(line))
                elif changed != last:
                    click.echo(line)
                last = changed
                if state in TERMINAL:
                    break
                await asyncio.sleep(1.0)
        if console.is_terminal and line:
            console.print(escape(line))
        st = obj.get("status") or {}
        click.echo("JobDeploymentStatus path: " + " -> ".join(seen_states))
        await _print_job_logs(client, pod_kind, ns, name)
        ok = st.get("jobStatus") == "SUCCEEDED" and st.get("jobDeploymentStatus") == "Complete"
        click.echo(f"jobStatus: {st.get('jobStatus')}  jobDeploymentStatus: {st.get('jobDeploymentStatus')}"
                   f"  reason: {st.get('reason', '')} {st.get('message', '')}".rstrip())
        await _show_cluster(client, scheme, obj)
        return 0 if ok else 1
    finally:
        await client.close()


async def _print_job_logs(client: Any, pod_kind: Any, ns: str, rayjob: str) -> None:
    """Print the submitter Pod's log: ``ray job submit`` tails the driver's output."""
    pods = (await client.list(pod_kind, ns, label_selector=f"job-name={rayjob}")).items
    if not pods:
        click.echo("(no submitter Pod found; the Ray job's output is in the head Pod's Ray logs)")
        return
    pod = sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp", ""))[-1]
    chunks = [c async for c in client.logs(ns, pod["metadata"]["name"])]
    text = b"".join(chunks).decode(errors="replace")
    click.echo(f"----- output of the Ray job (kubectl logs {pod['metadata']['name']}) -----")
    click.echo(text.rstrip())
    click.echo("-----")


async def _show_cluster(client: Any, scheme: Scheme, rayjob: dict[str, Any]) -> None:
    spec = rayjob.get("spec") or {}
    cluster = (rayjob.get("status") or {}).get("rayClusterName")
    rc_kind = scheme.by_api_version_kind("ray.io/v1", "RayCluster")
    if not cluster or rc_kind is None:
        return
    exists = True
    try:
        await client.get(rc_kind, cluster, rayjob["metadata"]["namespace"])
    except Exception:
        exists = False
    if spec.get("shutdownAfterJobFinishes"):
        click.echo(f"shutdownAfterJobFinishes=true: RayCluster {cluster} "
                   + ("is being torn down" if exists else "was deleted"))
    else:
        click.echo(f"shutdownAfterJobFinishes is unset in the sample: RayCluster {cluster} "
                   + ("is kept, as KubeRay does" if exists else "is unexpectedly gone"))


def _pumice_netns() -> list[str]:
    """Names of the machine's pumice Pod network namespaces (compared before and after the run,
    so that other pumice instances on the machine do not count)."""
    try:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split()[0] for line in out.splitlines() if line.startswith("pumice")]


@click.command(name="demo")
@click.option("--sample", type=click.Path(path_type=Path), default=None,
              help="RayJob manifest (default: the upstream ray-job.sample.yaml from ../shared/samples).")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Data directory for pumice up (default: a fresh one under ~/.local/share/pumice, "
                   "removed afterwards).")
@click.option("--keep-data", is_flag=True, help="Keep the data directory (database, logs, Pod files).")
@click.option("--queue", default="default", show_default=True,
              help="Volcano queue label added to the RayJob ('' to leave the sample unchanged).")
@click.option("--timeout", type=float, default=900, show_default=True, help="Seconds to wait for the RayJob.")
def command(sample: Path | None, data_dir: Path | None, keep_data: bool, queue: str, timeout: float) -> None:
    """Run the upstream sample RayJob to completion on real Ray, in the embedded control plane."""
    sample = sample or default_sample()
    if not sample.exists():
        raise click.ClickException(f"sample not found: {sample} (the shared folder must sit beside the checkout)")
    docs = load_sample(sample, queue or None)
    own_dir = data_dir is None
    if data_dir is None:
        # Not under /tmp: every Pod gets a private /tmp, so the agent's files must live elsewhere.
        base = Path.home() / ".local" / "share" / "pumice"
        base.mkdir(parents=True, exist_ok=True)
        data_dir = Path(tempfile.mkdtemp(prefix="demo-", dir=base))
    data_dir.mkdir(parents=True, exist_ok=True)
    netns_before = set(_pumice_netns())
    port = _free_port()
    log_path = data_dir / "up.log"
    click.echo(f"starting pumice up (data dir {data_dir}, log {log_path})")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    with open(log_path, "ab") as logf:
        up = subprocess.Popen(
            [sys.executable, "-m", "pumice.cli.main", "up", "--data-dir", str(data_dir), "--port", str(port)],
            stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    kubeconfig = data_dir / "kubeconfig"
    rc = 1
    try:
        _wait_up(up, kubeconfig, port, log_path)
        click.echo(f"pumice is up; try: KUBECONFIG={kubeconfig} kubectl get rayjobs,rayclusters,pods")
        rc = asyncio.run(_follow(kubeconfig, docs, timeout))
    finally:
        click.echo("stopping pumice up (SIGINT) ...")
        stopping = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=90)
        except subprocess.TimeoutExpired:
            click.echo("pumice up did not stop within 90 s; killing it", err=True)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(up.pid, signal.SIGKILL)
            up.wait()
            rc = 1
    left = sorted(set(_pumice_netns()) - netns_before)
    if left:
        click.echo(f"left behind: network namespaces {left}", err=True)
        rc = 1
    else:
        click.echo(f"pumice up stopped in {time.monotonic() - stopping:.0f} s; no Pod network namespace left behind")
    if own_dir and not keep_data and rc == 0:
        _remove_data_dir(data_dir)
    if rc == 0:
        click.echo("demo: SUCCESS")
    else:
        click.echo(f"demo: FAILED (see {log_path})", err=True)
    sys.exit(rc)


def _remove_data_dir(data_dir: Path) -> None:
    """Remove the demo's own data dir, saying what and how much first: most of it is the Ray
    runtime_env virtualenv of each Ray Pod (tens of thousands of files), which takes minutes to
    remove one file at a time on a disk where each unlink waits (:mod:`pumice._util.files`). What
    cannot be removed is named in one line on stderr; the demo's result stands."""
    tree = scan_tree(data_dir)
    click.echo(f"removing the data dir {data_dir} ({len(tree.files):,} files, {tree.bytes / 1e6:,.0f} MB; "
               "--keep-data keeps it) ...")
    start = time.monotonic()
    errors = remove_tree(tree)
    if errors:
        click.echo(f"could not remove {len(errors)} entries of the data dir {data_dir}, e.g. {errors[0]}", err=True)
    else:
        click.echo(f"removed in {time.monotonic() - start:.0f} s")


def _wait_up(up: subprocess.Popen[bytes], kubeconfig: Path, port: int, log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if up.poll() is not None:
            lines = log_path.read_text(errors="replace").splitlines()
            why = next((ln for ln in reversed(lines) if ln.startswith("Error: ")), lines[-1] if lines else "")
            raise click.ClickException(f"pumice up exited with {up.returncode}: {why.removeprefix('Error: ')} "
                                       f"(log: {log_path})")
        if kubeconfig.exists():
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        time.sleep(0.2)
    raise click.ClickException("pumice up did not start within 60 s")
