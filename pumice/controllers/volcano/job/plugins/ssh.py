"""``ssh`` job plugin: a Secret ``<job>-ssh`` with an RSA key pair, ``authorized_keys`` and an ssh
``config`` (StrictHostKeyChecking off, one Host entry per Pod), mounted at ``/root/.ssh`` (or
``--ssh-key-file-path``) in every container.

Arguments: ``--ssh-key-file-path`` (``/root/.ssh``), ``--ssh-private-key``, ``--ssh-public-key``,
``--ssh-port`` (22).

Mirrors: volcano pkg/controllers/job/plugins/ssh/ssh.go.
"""

from __future__ import annotations

import base64

from pumice.api import Obj
from pumice.controllers.volcano.job.builders import pod_name
from pumice.controllers.volcano.job.plugins._base import (
    PluginClient,
    controlled,
    owned,
    parse_flags,
    set_controlled,
)

SSH_PRIVATE_KEY = "id_rsa"
SSH_PUBLIC_KEY = "id_rsa.pub"
SSH_AUTHORIZED_KEYS = "authorized_keys"
SSH_CONFIG = "config"
SSH_ABSOLUTE_PATH = "/root/.ssh"
SSH_RELATIVE_PATH = ".ssh"


def ssh_config(job: Obj, port: int) -> str:
    out = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    jname = job["metadata"]["name"]
    for ts in (job.get("spec") or {}).get("tasks") or []:
        pspec = (ts.get("template") or {}).get("spec") or {}
        for i in range(int(ts.get("replicas") or 0)):
            host = pspec.get("hostname") or pod_name(jname, ts.get("name", ""), i)
            sub = pspec.get("subdomain") or jname
            out += f"Host {host}\n  HostName {host}.{sub}\n  Port {port}\n"
            if pspec.get("hostname"):
                break
    return out


def generate_rsa_key() -> tuple[bytes, bytes]:
    """A fresh 2048-bit RSA key: (PEM PKCS#1 private key, OpenSSH authorized-key line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    priv = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return priv, pub + b"\n"


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


class SSHPlugin:
    name = "ssh"

    def __init__(self, arguments: list[str] | None = None) -> None:
        f = parse_flags(list(arguments or []), {"ssh-key-file-path": SSH_ABSOLUTE_PATH, "ssh-private-key": "",
                                                "ssh-public-key": "", "ssh-port": 22})
        self.key_path = str(f["ssh-key-file-path"])
        self.private_key = str(f["ssh-private-key"])
        self.public_key = str(f["ssh-public-key"])
        port = int(f["ssh-port"])
        self.port = port if 0 < port <= 65535 else 22

    @staticmethod
    def secret_name(job: Obj) -> str:
        return f"{job['metadata']['name']}-ssh"

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        name = self.secret_name(job)
        spec = pod.setdefault("spec", {})
        items = [{"key": k, "path": f"{SSH_RELATIVE_PATH}/{k}"}
                 for k in (SSH_PRIVATE_KEY, SSH_PUBLIC_KEY, SSH_AUTHORIZED_KEYS, SSH_CONFIG)]
        mode = 0o600 if self.key_path == SSH_ABSOLUTE_PATH else 0o644
        spec.setdefault("volumes", []).append({"name": name, "secret": {
            "secretName": name, "items": items, "defaultMode": mode}})
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            c.setdefault("volumeMounts", []).append({"mountPath": self.key_path, "subPath": SSH_RELATIVE_PATH,
                                                     "name": name})

    def secret_data(self, job: Obj) -> dict[str, str]:
        if self.private_key:
            priv, pub = self.private_key.encode(), self.public_key.encode()
        else:
            priv, pub = generate_rsa_key()
        return {SSH_PRIVATE_KEY: _b64(priv), SSH_PUBLIC_KEY: _b64(pub), SSH_AUTHORIZED_KEYS: _b64(pub),
                SSH_CONFIG: _b64(ssh_config(job, self.port).encode())}

    async def on_job_add(self, job: Obj, client: PluginClient) -> None:
        if controlled(job, self.name):
            return
        await client.create_if_missing(owned(job, "v1", "Secret", self.secret_name(job),
                                             type="Opaque", data=self.secret_data(job)))
        set_controlled(job, self.name, True)

    async def on_job_delete(self, job: Obj, client: PluginClient) -> None:
        if not controlled(job, self.name):
            return
        await client.delete_if_present("v1", "Secret", self.secret_name(job), job["metadata"].get("namespace", "default"))
        set_controlled(job, self.name, False)

    async def on_job_update(self, job: Obj, client: PluginClient) -> None:
        return None
