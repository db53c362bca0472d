"""Volumes of the process runtime: each Pod volume becomes a directory on the host that the
container's mount namespace binds at ``volumeMounts[].mountPath``.

Layout: ``<pod_dir>/volumes/<volume name>/`` for emptyDir, configMap, secret, downwardAPI and
projected; hostPath volumes use the host path itself; a persistentVolumeClaim volume uses the
directory of the PersistentVolume bound to the claim (hostPath or local).

Mirrors: kubernetes pkg/volume/{emptydir,configmap,secret,downwardapi,projected,hostpath}
(the files they write; no atomic-writer ``..data`` symlink dance and no periodic refresh).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pumice.api import Obj
from pumice.node.podspec import EnvError, downward_value

Lookup = Callable[[str, str], Obj | None]

SUPPORTED = ("emptyDir", "configMap", "secret", "hostPath", "downwardAPI", "projected", "persistentVolumeClaim")


class VolumeError(Exception):
    """A volume cannot be set up: unsupported type, missing non-optional ConfigMap/Secret or key,
    a hostPath of the wrong type. The kubelet reports these as a ``FailedMount`` event and keeps
    the Pod in ContainerCreating; pumice does the same."""


@dataclass(frozen=True)
class Mount:
    """One bind mount for a container: host ``source`` at ``target`` inside the container."""

    source: str
    target: str
    read_only: bool = False


def _bytes_data(kind: str, obj: Obj) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if kind == "secrets":
        for k, v in (obj.get("data") or {}).items():
            out[k] = base64.b64decode(v)
        for k, v in (obj.get("stringData") or {}).items():
            out[k] = str(v).encode()
        return out
    for k, v in (obj.get("data") or {}).items():
        out[k] = str(v).encode()
    for k, v in (obj.get("binaryData") or {}).items():
        out[k] = base64.b64decode(v)
    return out


def _write(root: Path, rel: str, data: bytes, mode: int) -> None:
    if rel.startswith("/") or ".." in Path(rel).parts:
        raise VolumeError(f"invalid item path {rel!r}")
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    os.chmod(p, mode)


def _project_keyed(root: Path, kind: str, src: Obj, name_field: str, lookup: Lookup, default_mode: int) -> None:
    name = src.get(name_field, "")
    obj = lookup(kind, name)
    if obj is None:
        if src.get("optional"):
            return
        raise VolumeError(f'{kind[:-1]} "{name}" not found')
    data = _bytes_data(kind, obj)
    items = src.get("items")
    if not items:
        for k, v in data.items():
            _write(root, k, v, default_mode)
        return
    for item in items:
        key = item.get("key", "")
        if key not in data:
            if src.get("optional"):
                continue
            raise VolumeError(f'{kind[:-1]} "{name}" has no key "{key}"')
        _write(root, item.get("path", key), data[key], int(item.get("mode", default_mode)))


def token_key(src: Obj) -> str:
    """The lookup name of a serviceAccountToken projection: ``<audience>|<expirationSeconds>``."""
    return f"{src.get('audience') or ''}|{int(src.get('expirationSeconds') or 3600)}"


def _project_token(root: Path, src: Obj, lookup: Lookup, default_mode: int) -> None:
    obj = lookup("serviceaccounttokens", token_key(src))
    if obj is None:
        raise VolumeError("no ServiceAccount token could be requested for this Pod")
    # the kubelet writes projected tokens 0600 unless a mode is asked for
    _write(root, src.get("path") or "token", str(obj["token"]).encode(), 0o600 if default_mode == 0o644 else default_mode)


def _project_downward(root: Path, pod: Obj, src: Obj, allocatable: Mapping[str, str], default_mode: int) -> None:
    for item in src.get("items") or []:
        try:
            value = downward_value(pod, None, item, allocatable)
        except EnvError as e:
            raise VolumeError(str(e)) from e
        _write(root, item.get("path", ""), value.encode(), int(item.get("mode", default_mode)))


def _host_path(vol: Obj) -> str:
    hp = vol["hostPath"]
    path = hp.get("path", "")
    typ = hp.get("type", "") or ""
    p = Path(path)
    if typ == "DirectoryOrCreate":
        p.mkdir(parents=True, exist_ok=True)
    elif typ == "FileOrCreate":
        p.parent.mkdir(parents=True, exist_ok=True)
        p.touch(exist_ok=True)
    elif typ == "Directory" and not p.is_dir():
        raise VolumeError(f"hostPath type check failed: {path} is not a directory")
    elif typ == "File" and not p.is_file():
        raise VolumeError(f"hostPath type check failed: {path} is not a file")
    elif typ == "Socket" and not p.is_socket():
        raise VolumeError(f"hostPath type check failed: {path} is not a socket file")
    return path


def claim_path(src: Obj, lookup: Lookup) -> str:
    """The host directory behind a ``persistentVolumeClaim`` volume source.

    Raises:
        VolumeError: the claim is missing or not bound, or its volume is not a directory volume.
    """
    claim = src.get("claimName", "")
    pvc = lookup("persistentvolumeclaims", claim)
    if pvc is None:
        raise VolumeError(f'persistentvolumeclaim "{claim}" not found')
    pv_name = (pvc.get("spec") or {}).get("volumeName")
    if not pv_name or (pvc.get("status") or {}).get("phase") != "Bound":
        raise VolumeError(f'error processing PVC {(pvc.get("metadata") or {}).get("namespace")}/{claim}: '
                          "PVC is not bound")
    pv = lookup("persistentvolumes", pv_name)
    if pv is None:
        raise VolumeError(f'persistentvolume "{pv_name}" not found')
    spec = pv.get("spec") or {}
    path = (spec.get("hostPath") or {}).get("path") or (spec.get("local") or {}).get("path")
    if not path:
        raise VolumeError(f'volume "{pv_name}": only hostPath and local PersistentVolumes can be mounted '
                          "by the process runtime")
    Path(path).mkdir(parents=True, exist_ok=True)
    return str(path)


def setup_volumes(pod: Obj, pod_dir: Path, lookup: Lookup, allocatable: Mapping[str, str]) -> dict[str, str]:
    """Materialize every volume of ``pod`` under ``pod_dir/volumes``.

    Returns:
        volume name -> host path.

    Raises:
        VolumeError: unsupported volume type or a missing non-optional source.
    """
    out: dict[str, str] = {}
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        name = vol.get("name", "")
        kinds = [k for k in vol if k != "name"]
        if not kinds or kinds[0] not in SUPPORTED:
            raise VolumeError(
                f'volume "{name}": unsupported volume type {kinds[0] if kinds else "(none)"!r} '
                f"(the process runtime supports {', '.join(SUPPORTED)})"
            )
        kind = kinds[0]
        if kind == "hostPath":
            out[name] = _host_path(vol)
            continue
        if kind == "persistentVolumeClaim":
            out[name] = claim_path(vol["persistentVolumeClaim"] or {}, lookup)
            continue
        root = pod_dir / "volumes" / name
        root.mkdir(parents=True, exist_ok=True)
        src = vol[kind] or {}
        mode = int(src.get("defaultMode", 0o644))
        if kind == "configMap":
            _project_keyed(root, "configmaps", src, "name", lookup, mode)
        elif kind == "secret":
            _project_keyed(root, "secrets", src, "secretName", lookup, mode)
        elif kind == "downwardAPI":
            _project_downward(root, pod, src, allocatable, mode)
        elif kind == "projected":
            for s in src.get("sources") or []:
                if "configMap" in s:
                    _project_keyed(root, "configmaps", s["configMap"], "name", lookup, mode)
                elif "secret" in s:
                    _project_keyed(root, "secrets", s["secret"], "name", lookup, mode)
                elif "downwardAPI" in s:
                    _project_downward(root, pod, s["downwardAPI"], allocatable, mode)
                elif "serviceAccountToken" in s:
                    _project_token(root, s["serviceAccountToken"], lookup, mode)
                elif "clusterTrustBundle" in s:
                    raise VolumeError(f'volume "{name}": clusterTrustBundle projections are not supported')
                else:
                    raise VolumeError(f'volume "{name}": unsupported projected source {sorted(s)}')
        out[name] = str(root)
    return out


def container_mounts(container: Obj, volume_paths: Mapping[str, str]) -> list[Mount]:
    """Bind mounts for ``container.volumeMounts`` (with ``subPath``).

    Raises:
        VolumeError: a mount names an unknown volume.
    """
    mounts: list[Mount] = []
    for vm in container.get("volumeMounts") or []:
        vname = vm.get("name", "")
        if vname not in volume_paths:
            raise VolumeError(f'volumeMount "{vname}": no such volume in the Pod')
        source = volume_paths[vname]
        sub = vm.get("subPath") or ""
        if sub:
            if sub.startswith("/") or ".." in Path(sub).parts:
                raise VolumeError(f"invalid subPath {sub!r}")
            source = os.path.join(source, sub)
            if not os.path.exists(source):
                os.makedirs(source, exist_ok=True)
        mounts.append(Mount(source, vm.get("mountPath", ""), bool(vm.get("readOnly"))))
    return mounts
