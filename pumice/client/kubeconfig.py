"""Building a :class:`~pumice.client.kube.Client` from a kubeconfig file or an in-process app.

- :func:`connect` reads a kubeconfig (the path given, else ``$KUBECONFIG``, else ``~/.kube/config``)
  with lightkube's loader, so token, token-file, exec and client-certificate users all work.
- :func:`in_process` talks to an ASGI app (``APIServer.app``) through the streaming in-process
  transport: no sockets, works under looptime.
- :func:`load` returns lightkube's ``SingleConfig`` for a context.

Errors: :class:`FileNotFoundError` for a missing file; lightkube's ``ConfigError`` for a bad one.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from lightkube.config.kubeconfig import KubeConfig, SingleConfig

from pumice._util.files import InputFileError
from pumice._util.gostrings import quote
from pumice.api.scheme import Scheme
from pumice.api.yamlsafe import NotYAMLError, read_yaml_document
from pumice.client.kube import Client
from pumice.client.transport import StreamingASGITransport

__all__ = ["connect", "default_kubeconfig_path", "in_process", "in_process_config", "load"]


def default_kubeconfig_path() -> Path:
    """``$KUBECONFIG`` (its first entry) or ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG")
    if env:
        return Path(env.split(os.pathsep)[0]).expanduser()
    return Path("~/.kube/config").expanduser()


SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def in_cluster() -> bool:
    """True inside a Pod: ``KUBERNETES_SERVICE_HOST`` is set and the ServiceAccount token is mounted."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SERVICE_ACCOUNT_DIR / "token").exists()


def _service_account_config() -> SingleConfig:
    """The in-cluster config (token file re-read as the kubelet rotates it, the cluster CA, the Pod's
    namespace), as client-go's rest.InClusterConfig."""
    single = KubeConfig.from_service_account(SERVICE_ACCOUNT_DIR).get()
    if single is None:
        raise ValueError(f"no in-cluster configuration in {SERVICE_ACCOUNT_DIR}")
    return single


def _shape_problem(p: Path) -> str:
    """What is wrong with the shape of kubeconfig file ``p`` in the user's terms (a top level or a
    clusters/users/contexts entry that is not a mapping), or "" when the shape is right or the
    file cannot be read as YAML."""
    try:
        doc = read_yaml_document(p)
    except (OSError, InputFileError):
        return ""
    if not isinstance(doc, dict):
        return f"the file holds {_yaml_kind(doc)}, not a mapping of clusters, users and contexts"
    for key in ("clusters", "users", "contexts"):
        items = doc.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            return f"{key} is {_yaml_kind(items)}, not a list"
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                return f"{key}[{i}] is {_yaml_kind(item)}, not a mapping"
            inner = item.get(key[:-1])
            if inner is not None and not isinstance(inner, dict):
                return f"{key}[{i}].{key[:-1]} is {_yaml_kind(inner)}, not a mapping"
    return ""


def _yaml_kind(v: object) -> str:
    if v is None:
        return "nothing"
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean",
            dict: "a mapping"}.get(type(v), type(v).__name__)


def load(path: Path | str | None = None, *, context: str | None = None) -> SingleConfig:
    """The chosen context of a kubeconfig file; with no ``path``, ``$KUBECONFIG`` or
    ``~/.kube/config``, else the in-cluster ServiceAccount config inside a Pod.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the context does not exist, or the file is not a kubeconfig (YAML that is not
            a mapping, clusters/users/contexts of the wrong shape).
    """
    p = Path(path).expanduser() if path is not None else default_kubeconfig_path()
    if path is None and not p.exists() and in_cluster():
        return _service_account_config()
    if not p.exists():
        raise FileNotFoundError(f"kubeconfig {p} does not exist")
    try:
        # read here, not by KubeConfig.from_file: yamlsafe's limits, and no device read for ever
        config = KubeConfig.from_dict(read_yaml_document(p), fname=p)
        if context and context not in (config.contexts or {}):
            # client-go DirectClientConfig.getContext, for a context named on the command line
            raise ValueError(f"context {quote(context)} does not exist")
        single = config.get(context_name=context)
    except NotYAMLError as e:
        raise ValueError(f"kubeconfig {p} is not a valid kubeconfig (not YAML: {e})") from None
    except (ValueError, OSError):
        raise
    except Exception as e:  # lightkube fails with AttributeError/KeyError/TypeError on malformed files
        detail = _shape_problem(p) or " ".join(str(e).split())
        if isinstance(e, KeyError) and not _shape_problem(p):
            detail = f"no {detail} in it"
        raise ValueError(f"kubeconfig {p} is not a valid kubeconfig ({detail})") from None
    if single is None:
        raise ValueError(f"kubeconfig {p} has no context {context or '(current)'}")
    return single


def connect(kubeconfig_path: Path | str | None = None, *, context: str | None = None,
            scheme: Scheme | None = None, field_manager: str = "pumice", timeout: float = 30.0,
            user_agent: str | None = None) -> Client:
    """A Client for the cluster a kubeconfig names (HTTP/HTTPS); ``user_agent`` as
    :func:`pumice.client.kube.component_user_agent` of the component."""
    return Client(load(kubeconfig_path, context=context), scheme=scheme, field_manager=field_manager,
                  timeout=timeout, user_agent=user_agent)


def in_process_config(namespace: str = "default") -> SingleConfig:
    """A lightkube config for the in-process transport (server ``http://pumice.local``)."""
    single = KubeConfig.from_dict({
        "clusters": [{"name": "pumice", "cluster": {"server": "http://pumice.local"}}],
        "users": [{"name": "in-process", "user": {}}],
        "contexts": [{"name": "pumice", "context": {"cluster": "pumice", "user": "in-process",
                                                     "namespace": namespace}}],
        "current-context": "pumice",
    }).get()
    assert single is not None
    return single


def in_process(app: Any, *, scheme: Scheme | None = None, field_manager: str = "pumice",
               namespace: str = "default", user_agent: str | None = None,
               loop: asyncio.AbstractEventLoop | None = None) -> Client:
    """A Client that sends every request straight into ``app`` (no sockets).

    ``scheme``: pass the server's own Scheme to share CRD kinds without discovery. ``loop``: the
    event loop ``app`` runs on, for a client used on another thread's loop (each exchange then
    runs on ``loop``; see :mod:`pumice.client.transport`); None: the caller's.
    """
    return Client(in_process_config(namespace), transport=StreamingASGITransport(app, loop=loop), scheme=scheme,
                  field_manager=field_manager, timeout=3600.0, user_agent=user_agent)
