"""A real Kubernetes control plane on this machine, for the real-cluster tests.

:class:`KubeControlPlane` runs etcd, kube-apiserver, kube-controller-manager and (optionally)
kube-scheduler, built from the Go module proxy by ``tools/build_kube.py`` into
``~/.cache/pumice`` (nothing of theirs is in the repository), on loopback ports of their own:

- kube-apiserver serves HTTPS with its own self-signed certificate, authenticates an admin token
  from a static token file (group ``system:masters``) and ServiceAccount tokens signed by a key
  made here, and authorizes with RBAC;
- kube-controller-manager runs its default controllers (ServiceAccounts, Jobs, garbage
  collection ...) with the admin token;
- the kubelets are not here: the tests run pumice's simulated node agent against this API.

:meth:`KubeControlPlane.kubeconfig` writes a kubeconfig for the admin token or for any token
(``kubectl create token`` gives a ServiceAccount's), so that each pumice component runs with
exactly the RBAC its install manifests grant.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

import yaml

__all__ = ["KubeControlPlane", "build_binaries"]

REPO = Path(__file__).resolve().parents[2]


def build_binaries(only: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """``(etcd bin dir, kubernetes bin dir)``, built once by tools/build_kube.py; ``only`` names the
    Kubernetes binaries needed (``("kube-apiserver",)``), default all three.

    Raises:
        RuntimeError: Go is missing or the build failed (the message says which).
    """
    if shutil.which("go") is None:
        raise RuntimeError("go is not on PATH: the real control plane is built from the Go module proxy")
    argv = [sys.executable, str(REPO / "tools" / "build_kube.py"), *(f"--only={b}" for b in only)]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building the control plane failed: {done.stderr.strip()[-2000:]}")
    etcd, kube = done.stdout.strip().splitlines()[-2:]
    return Path(etcd), Path(kube)


def _service_account_keys(private: Path, public: Path) -> None:
    """The RSA key pair kube-apiserver signs and verifies ServiceAccount tokens with."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class KubeControlPlane:
    """etcd + kube-apiserver + kube-controller-manager (+ kube-scheduler) in ``workdir``.

    Use as a context manager; ``.url``, ``.admin_token`` and :meth:`kubeconfig` once started.
    ``controller_manager=False`` runs etcd and kube-apiserver only (no kube-scheduler either):
    nothing but the API server's own answers, for comparing them with pumice's.
    """

    def __init__(self, workdir: Path, *, scheduler: bool = True, controller_manager: bool = True) -> None:
        self.workdir = Path(workdir)
        self.controller_manager = controller_manager
        self.scheduler = scheduler and controller_manager
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, IO[bytes]] = {}
        self.admin_token = secrets.token_urlsafe(24)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------- processes

    def _start(self, name: str, argv: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed in stop()
        self.logs[name] = log
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.workdir / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def start(self) -> KubeControlPlane:
        etcd_bin, kube_bin = build_binaries(() if self.controller_manager else ("kube-apiserver",))
        w = self.workdir
        w.mkdir(parents=True, exist_ok=True)
        etcd_port, peer_port = free_port(), free_port()
        self._start("etcd", [str(etcd_bin / "etcd"), "--data-dir", str(w / "etcd"),
                             "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                             "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
                             "--unsafe-no-fsync"])
        _service_account_keys(w / "sa.key", w / "sa.pub")
        (w / "tokens.csv").write_text(f'{self.admin_token},admin,admin,"system:masters"\n')
        certs = w / "certs"
        self._start("kube-apiserver", [
            str(kube_bin / "kube-apiserver"), "--etcd-servers", f"http://127.0.0.1:{etcd_port}",
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
            "--cert-dir", str(certs), "--token-auth-file", str(w / "tokens.csv"),
            "--authorization-mode", "RBAC", "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", str(w / "sa.pub"), "--service-account-signing-key-file", str(w / "sa.key"),
            "--service-cluster-ip-range", "10.96.0.0/16", "--allow-privileged=true", "--v=1"])
        self._wait_ready()
        admin = self.kubeconfig(self.admin_token, w / "admin.kubeconfig")
        self._kube_bin = kube_bin
        if not self.controller_manager:
            return self
        self._start("kube-controller-manager", [
            str(kube_bin / "kube-controller-manager"), "--kubeconfig", str(admin), "--leader-elect=false",
            "--service-account-private-key-file", str(w / "sa.key"), "--root-ca-file", str(self.ca_file()),
            "--bind-address", "127.0.0.1", "--secure-port", str(free_port()), "--v=1"])
        if self.scheduler:
            self.start_kube_scheduler()
        return self

    def start_kube_scheduler(self) -> None:
        """Start kube-scheduler (when the plane was made with ``scheduler=False``, or again)."""
        self._start("kube-scheduler", [str(self._kube_bin / "kube-scheduler"), "--kubeconfig",
                                       str(self.workdir / "admin.kubeconfig"), "--leader-elect=false",
                                       "--bind-address", "127.0.0.1", "--secure-port", str(free_port()), "--v=1"])

    def ca_file(self) -> Path:
        """The certificate kube-apiserver generated for itself (self-signed: its own CA)."""
        return self.workdir / "certs" / "apiserver.crt"

    def _wait_ready(self, timeout: float = 180.0) -> None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}):\n{self.log_tail(name)}")
            try:
                req = urllib.request.Request(f"{self.url}/readyz",
                                             headers={"Authorization": f"Bearer {self.admin_token}"})
                with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"kube-apiserver not ready in {timeout:g} s:\n{self.log_tail('kube-apiserver')}")

    def kubeconfig(self, token: str, path: Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig for ``token`` at ``path`` (the server's certificate pinned)."""
        import base64

        cfg = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "real", "cluster": {
                   "server": self.url,
                   "certificate-authority-data": base64.b64encode(self.ca_file().read_bytes()).decode()}}],
               "users": [{"name": "u", "user": {"token": token}}],
               "contexts": [{"name": "real", "context": {"cluster": "real", "user": "u", "namespace": namespace}}],
               "current-context": "real"}
        path.write_text(yaml.safe_dump(cfg))
        os.chmod(path, 0o600)
        return path

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl with the admin kubeconfig."""
        return subprocess.run(["kubectl", "--kubeconfig", str(self.workdir / "admin.kubeconfig"), *args],
                              input=input, capture_output=True, text=True, check=check)

    def stop(self) -> None:
        for p in reversed(list(self.procs.values())):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        for f in self.logs.values():
            f.close()

    def __enter__(self) -> KubeControlPlane:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
