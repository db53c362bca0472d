"""kubectl-ray's cluster-config file: ``pumice ray create cluster NAME --file F``.

The file is the plugin's own YAML (not a RayCluster manifest): top-level ``namespace``, ``name``,
``labels``, ``annotations``, ``ray-version``, ``image``, ``service-account``, ``head`` (``cpu``,
``gpu``, ``memory``, ``ephemeral-storage``, ``ray-start-params``, ``node-selectors``),
``worker-groups`` (each: ``name``, ``replicas``, ``num-of-hosts``, ``cpu``, ``gpu``, ``tpu``,
``memory``, ``ephemeral-storage``, ``ray-start-params``, ``node-selectors``), ``autoscaler``
(``version``) and ``gke.gcsfuse`` (``bucket-name``, ``mount-path``, ``mount-options``,
``resources`` {``cpu``, ``memory``, ``ephemeral-storage``}, ``disable-metrics``,
``gcsfuse-metadata-prefetch-on-mount``, ``skip-csi-bucket-access-check``).

Read strictly, as the plugin's ``yaml.UnmarshalStrict`` does: an unknown or repeated field, or a
value of the wrong shape, is refused with go-yaml's text (``line N: field foo not found in type
generation.RayClusterConfig``, ``line N: cannot unmarshal !!str `abc` into int32``). Defaults
first (``ray-version`` and ``image`` the plugin's, head 2 CPU / 4Gi, one worker group
``default-group`` of 1 x 2 CPU / 4Gi); the file's ``head`` is merged into the default head, while
its ``worker-groups`` replace the default list (a listed group has no default CPU or memory), as
go-yaml decodes into a struct pointer and a slice. Scalars read into a string field keep their text
(``cpu: 3`` is ``"3"``).

Mirrors: kuberay kubectl-plugin/pkg/util/generation/generation.go (RayClusterConfig,
ParseConfigFile, ValidateConfig, generateRayClusterSpec, setGCSFuseOptions) and
pkg/cmd/create/create_cluster.go (resolveClusterName, resolveNamespace,
flagsIncompatibleWithConfigFilePresent).

Deviates: a ``null`` value leaves the default in place (the plugin then dereferences a nil head
and crashes); a YAML syntax error is PyYAML's problem text behind go-yaml's ``yaml: line N:``
prefix.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import yaml

from pumice._util.gostrings import quote
from pumice.api import Obj


class ConfigError(Exception):
    """A config file the plugin would refuse; the message is the plugin's text."""


_STR, _MAP, _INT32, _BOOL = "string", "map[string]string", "int32", "bool"
_TYPES: dict[str, dict[str, str]] = {
    "RayClusterConfig": {"namespace": _STR, "name": _STR, "labels": _MAP, "annotations": _MAP, "ray-version": _STR,
                         "image": _STR, "service-account": _STR, "head": "Head", "gke": "GKE",
                         "autoscaler": "Autoscaler", "worker-groups": "[]WorkerGroup"},
    "Head": {"cpu": _STR, "gpu": _STR, "memory": _STR, "ephemeral-storage": _STR, "ray-start-params": _MAP,
             "node-selectors": _MAP},
    "WorkerGroup": {"name": _STR, "cpu": _STR, "gpu": _STR, "tpu": _STR, "num-of-hosts": _INT32, "memory": _STR,
                    "ephemeral-storage": _STR, "ray-start-params": _MAP, "node-selectors": _MAP,
                    "replicas": _INT32},
    "Autoscaler": {"version": "AutoscalerVersion"},
    "GKE": {"gcsfuse": "GCSFuse"},
    "GCSFuse": {"mount-options": _STR, "disable-metrics": _BOOL, "gcsfuse-metadata-prefetch-on-mount": _BOOL,
                "skip-csi-bucket-access-check": _BOOL, "resources": "GCSFuseResources", "bucket-name": _STR,
                "mount-path": _STR},
    "GCSFuseResources": {"cpu": _STR, "memory": _STR, "ephemeral-storage": _STR},
}
_STRINGS = (_STR, "AutoscalerVersion")
_INT32_RANGE = (-(2**31), 2**31 - 1)
_YAML_TAG = "tag:yaml.org,2002:"


def defaults(ray_version: str) -> Obj:
    """The plugin's newRayClusterConfigWithDefaults."""
    return {"ray-version": ray_version, "image": f"rayproject/ray:{ray_version}",
            "head": {"cpu": "2", "memory": "4Gi"},
            "worker-groups": [{"name": "default-group", "replicas": 1, "cpu": "2", "memory": "4Gi"}]}


def parse_config_file(path: str, ray_version: str) -> Obj:
    """The config in ``path`` over :func:`defaults` (keys as in the file).

    Raises:
        ConfigError: ``config file <path> does not exist``, ``failed to read config file: ...``,
            ``failed to parse YAML: yaml: unmarshal errors: line N: ...`` (every error of the file).
    """
    if not os.path.exists(path):
        raise ConfigError(f"config file {path} does not exist")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"failed to read config file: {e}") from None
    config = defaults(ray_version)
    try:
        node = next(iter(yaml.compose_all(text, Loader=yaml.SafeLoader)), None)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(f"failed to parse YAML: yaml: {where}{getattr(e, 'problem', None) or e}") from None
    errors: list[str] = []
    if node is not None and not _is_null(node):
        _decode_struct(node, "RayClusterConfig", config, errors)
    if errors:
        raise ConfigError("failed to parse YAML: yaml: unmarshal errors:\n  " + "\n  ".join(errors))
    return config


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _YAML_TAG + "null"


def _short(node: yaml.Node) -> str:
    return "!!" + node.tag[len(_YAML_TAG):] if node.tag.startswith(_YAML_TAG) else node.tag


def _type_error(node: yaml.Node, into: str, errors: list[str]) -> None:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        value = node.value if len(node.value) <= 10 else node.value[:7] + "..."
        errors.append(f"line {line}: cannot unmarshal {_short(node)} `{value}` into {into}")
    else:
        errors.append(f"line {line}: cannot unmarshal {_short(node)} into {into}")


def _decode_struct(node: yaml.Node, type_name: str, into: Obj, errors: list[str]) -> None:
    if not isinstance(node, yaml.MappingNode):
        _type_error(node, f"generation.{type_name}", errors)
        return
    fields, seen = _TYPES[type_name], set()
    for key_node, value_node in node.value:
        key = str(key_node.value)
        line = key_node.start_mark.line + 1
        if key not in fields:
            errors.append(f"line {line}: field {key} not found in type generation.{type_name}")
            continue
        if key in seen:
            errors.append(f"line {line}: field {key} already set in type generation.{type_name}")
            continue
        seen.add(key)
        if _is_null(value_node):
            continue  # see the module docstring: the default stays
        kind = fields[key]
        if kind in _STRINGS:
            if isinstance(value_node, yaml.ScalarNode):
                into[key] = value_node.value
            else:
                _type_error(value_node, "generation." + kind if kind != _STR else _STR, errors)
        elif kind == _MAP:
            m = _decode_map(value_node, errors)
            if m is not None:
                into[key] = m
        elif kind == _INT32:
            n = _decode_int32(value_node, errors)
            if n is not None:
                into[key] = n
        elif kind == _BOOL:
            if isinstance(value_node, yaml.ScalarNode) and value_node.tag == _YAML_TAG + "bool":
                into[key] = value_node.value.lower() in ("yes", "true", "on")
            else:
                _type_error(value_node, _BOOL, errors)
        elif kind.startswith("[]"):
            if not isinstance(value_node, yaml.SequenceNode):
                _type_error(value_node, f"[]generation.{kind[2:]}", errors)
                continue
            items: list[Obj] = []
            for item in value_node.value:
                obj: Obj = {}
                if not _is_null(item):
                    _decode_struct(item, kind[2:], obj, errors)
                items.append(obj)
            into[key] = items
        else:  # a nested struct: merged into what is there (a pointer go-yaml decodes into)
            sub = into.get(key)
            sub = sub if isinstance(sub, dict) else {}
            _decode_struct(value_node, kind, sub, errors)
            into[key] = sub


def _decode_map(node: yaml.Node, errors: list[str]) -> dict[str, str] | None:
    if not isinstance(node, yaml.MappingNode):
        _type_error(node, _MAP, errors)
        return None
    out: dict[str, str] = {}
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            _type_error(k, _STR, errors)
        elif not isinstance(v, yaml.ScalarNode):
            _type_error(v, _STR, errors)
        elif str(k.value) in out:
            errors.append(f"line {k.start_mark.line + 1}: key {quote(str(k.value))} already set in map")
        else:
            out[str(k.value)] = "" if _is_null(v) else v.value
    return out


def _decode_int32(node: yaml.Node, errors: list[str]) -> int | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == _YAML_TAG + "int":
        n = yaml.SafeLoader.construct_yaml_int(yaml.SafeLoader(""), node)
        if _INT32_RANGE[0] <= n <= _INT32_RANGE[1]:
            return int(n)
    _type_error(node, _INT32, errors)
    return None


def validate_config(config: Obj, check_quantity: Any, validate_tpu: Any) -> None:
    """The plugin's ValidateConfig: every resource quantity given (head, each worker group, the
    GCS FUSE sidecar's), each worker group's TPU settings, GCS FUSE's required fields; and, as the
    flag form checks them (pumice's addition), each group's ``replicas`` and ``num-of-hosts`` at
    least 0 and its name unique among the groups (KubeRay's rule for a RayCluster's groups). Fields in a
    fixed order (the plugin walks a Go map: its first error of several is not fixed).

    ``check_quantity(value, name)`` and ``validate_tpu(tpu, num_of_hosts, node_selectors)`` raise
    the CLI's error with the plugin's text.

    Raises:
        ConfigError or what the two checks raise.
    """
    head = config.get("head") or {}
    for name in ("cpu", "gpu", "memory", "ephemeral-storage"):
        if name in head:
            check_quantity(head[name], name)
    seen: dict[str, int] = {}
    for i, g in enumerate(config.get("worker-groups") or []):
        for name in ("cpu", "gpu", "tpu", "memory", "ephemeral-storage"):
            if name in g:
                check_quantity(g[name], f"{name} (worker group {i})")
        # the flag form's bounds (--worker-replicas, --num-of-hosts: x>=0), which the plugin does
        # not check in the file: KubeRay then refuses or misreads the cluster (trial 12 F-6 d)
        for name in ("replicas", "num-of-hosts"):
            if g.get(name) is not None and g[name] < 0:
                raise ConfigError(f"{name} (worker group {i}): {g[name]} is not in the range x>=0")
        group_name = g.get("name") or ""
        if group_name in seen:
            raise ConfigError(f"worker group names must be unique: worker groups {seen[group_name]} and {i} "
                              f"are both named {quote(group_name)}")
        seen[group_name] = i
        validate_tpu(g.get("tpu", ""), g.get("num-of-hosts", 1), g.get("node-selectors") or {})
    fuse = (config.get("gke") or {}).get("gcsfuse")
    if fuse is not None:
        if not fuse.get("bucket-name"):
            raise ConfigError(".gcsfuse.bucket-name is required")
        if not fuse.get("mount-path"):
            raise ConfigError(".gcsfuse.mount-path is required")
        for name in ("cpu", "memory", "ephemeral-storage"):
            if name in (fuse.get("resources") or {}):
                check_quantity(fuse["resources"][name], f"gcsfuse.resources.{name}")


def resolve_name(config: Obj, cli_name: str) -> str:
    """The cluster's name: the CLI's NAME, which a ``name`` in the file must equal.

    Raises:
        ConfigError: the plugin's text for a mismatch."""
    in_file = config.get("name") or ""
    if in_file and cli_name and in_file != cli_name:
        raise ConfigError(f"the cluster name in the config file {quote(in_file)} does not match the cluster name "
                          f"{quote(cli_name)}. You must use the same name to perform this operation")
    if not (cli_name or in_file):
        raise ConfigError("the cluster name is required")
    return cli_name or in_file


def resolve_namespace(config: Obj, namespace: str, explicit: bool) -> str:
    """The cluster's namespace: the file's ``namespace`` when given (an explicit ``-n`` must equal
    it), else ``namespace``.

    Raises:
        ConfigError: the plugin's text for a mismatch."""
    in_file = config.get("namespace") or ""
    if explicit and in_file and namespace != in_file:
        raise ConfigError(f"the namespace in the config file {quote(in_file)} does not match the namespace "
                          f"{quote(namespace)}. You must pass --namespace={in_file} to perform this operation")
    return in_file or namespace


def _quantity_nonzero(value: str | None) -> bool:
    from pumice.api.quantity import parse_quantity

    return value is not None and value != "" and parse_quantity(value) != 0


def _resources(group: Obj, tpu: bool) -> Obj:
    """generateRequestResources / generateLimitResources: non-empty, non-zero quantities; CPU is a
    request only."""
    requests: Obj = {}
    limits: Obj = {}
    keys = [("cpu", "cpu"), ("memory", "memory"), ("ephemeral-storage", "ephemeral-storage"),
            ("gpu", "nvidia.com/gpu")] + ([("tpu", "google.com/tpu")] if tpu else [])
    for field, resource in keys:
        if _quantity_nonzero(group.get(field)):
            requests[resource] = group[field]
            if field != "cpu":
                limits[resource] = group[field]
    out: Obj = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def build_cluster_from_config(config: Obj, name: str, namespace: str) -> Obj:
    """The RayCluster the plugin generates from a (validated) config (``rayStartParams`` only when
    given, as the plugin's apply configuration leaves an empty map out): the head's container
    ``ray-head`` with ports 6379 ``gcs-server``, 8265 ``dashboard``, 10001 ``client``; a
    ``ray-worker`` container per worker group (an unnamed group is ``default-group``, the i-th
    ``default-group-<i>``); the service account on every Pod; ``autoscaler.version`` turns on
    in-tree autoscaling; ``gke.gcsfuse`` adds the ``cluster-storage`` CSI volume
    (``gcsfuse.csi.storage.gke.io``) mounted at ``mount-path`` in every Pod and its sidecar
    resources as ``gke-gcsfuse/*`` Pod annotations."""
    image = config["image"]
    head = config.get("head") or {}
    account = config.get("service-account") or ""

    def pod_spec(container: Obj, selectors: dict[str, str] | None) -> Obj:
        spec: Obj = {}
        if selectors:
            spec["nodeSelector"] = dict(selectors)
        spec["containers"] = [container]
        if account:
            spec["serviceAccountName"] = account
        return spec

    head_container: Obj = {"name": "ray-head", "image": image}
    res = _resources(head, tpu=False)
    if res:
        head_container["resources"] = res
    head_container["ports"] = [{"name": "gcs-server", "containerPort": 6379},
                               {"name": "dashboard", "containerPort": 8265},
                               {"name": "client", "containerPort": 10001}]
    groups: list[Obj] = []
    for i, g in enumerate(config.get("worker-groups") or []):
        container: Obj = {"name": "ray-worker", "image": image}
        res = _resources(g, tpu=True)
        if res:
            container["resources"] = res
        spec: Obj = {"groupName": g.get("name") or ("default-group" if i == 0 else f"default-group-{i}"),
                     "replicas": int(g.get("replicas", 0))}
        if "num-of-hosts" in g:
            spec["numOfHosts"] = int(g["num-of-hosts"])
        if g.get("ray-start-params"):
            spec["rayStartParams"] = dict(g["ray-start-params"])
        spec["template"] = {"spec": pod_spec(container, g.get("node-selectors"))}
        groups.append(spec)
    head_group: Obj = {"template": {"spec": pod_spec(head_container, head.get("node-selectors"))}}
    if head.get("ray-start-params"):
        head_group["rayStartParams"] = dict(head["ray-start-params"])
    cluster_spec: Obj = {"rayVersion": config["ray-version"], "headGroupSpec": head_group, "workerGroupSpecs": groups}
    version = (config.get("autoscaler") or {}).get("version")
    if version:
        cluster_spec["enableInTreeAutoscaling"] = True
        cluster_spec["autoscalerOptions"] = {"version": version}
    fuse = (config.get("gke") or {}).get("gcsfuse")
    if fuse is not None:
        _gcsfuse(cluster_spec, fuse)
    meta: Obj = {"name": name, "namespace": namespace}
    if config.get("labels"):
        meta["labels"] = dict(config["labels"])
    if config.get("annotations"):
        meta["annotations"] = dict(config["annotations"])
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta, "spec": cluster_spec}


def _gcsfuse(cluster_spec: Obj, fuse: Obj) -> None:
    attrs = {"bucketName": fuse.get("bucket-name", "")}
    if fuse.get("mount-options"):
        attrs["mountOptions"] = fuse["mount-options"]
    for field, attr in (("disable-metrics", "disableMetrics"),
                        ("gcsfuse-metadata-prefetch-on-mount", "gcsfuseMetadataPrefetchOnMount"),
                        ("skip-csi-bucket-access-check", "skipCSIBucketAccessCheck")):
        if field in fuse:
            attrs[attr] = "true" if fuse[field] else "false"
    res = fuse.get("resources") or {}
    annotations: dict[str, str] = {}
    if res.get("cpu"):
        annotations["gke-gcsfuse/cpu-request"] = res["cpu"]
    if res.get("memory"):
        annotations["gke-gcsfuse/memory-limit"] = annotations["gke-gcsfuse/memory-request"] = res["memory"]
    if res.get("ephemeral-storage"):
        annotations["gke-gcsfuse/ephemeral-storage-limit"] = res["ephemeral-storage"]
        annotations["gke-gcsfuse/ephemeral-storage-request"] = res["ephemeral-storage"]
    templates = [cluster_spec["headGroupSpec"]["template"]] + [g["template"] for g in cluster_spec["workerGroupSpecs"]]
    for template in templates:
        spec = template["spec"]
        spec.setdefault("volumes", []).append(
            {"name": "cluster-storage", "csi": {"driver": "gcsfuse.csi.storage.gke.io",
                                                "volumeAttributes": copy.deepcopy(attrs)}})
        spec["containers"][0].setdefault("volumeMounts", []).append(
            {"name": "cluster-storage", "mountPath": fuse.get("mount-path", "")})
        if annotations:
            template.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
