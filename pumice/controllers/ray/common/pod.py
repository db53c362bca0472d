"""Head and worker Pods of a RayCluster, and the ``ray start`` command inside them.

Shapes: ``cluster`` is a RayCluster in wire form (dict); the builders return a v1 Pod dict with
``metadata.generateName`` (or ``name`` for a deterministic head), labels, owner reference to the
cluster, and the Ray container (index 0) rewritten to run the generated ``ray start``.
The batch scheduler's metadata is added by the controller afterwards.

Mirrors: kuberay ray-operator/controllers/ray/common/pod.go (DefaultHeadPodTemplate,
DefaultWorkerPodTemplate, BuildPod, generateRayStartCommand, setMissingRayStartParams,
initLivenessAndReadinessProbe, setContainerEnvVars, labelPod).

The ``wait-gcs-ready`` init container carries upstream's script text (the Pod is an interface).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

from pumice.api import Obj, scheme
from pumice.api.meta import owner_reference
from pumice.api.quantity import parse_quantity, value
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common.resources import is_autoscaling_enabled, is_gpu_resource_key

_CUSTOM_ACCELERATORS = {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
_KEEP_FALSE_FLAGS = ("log-color", "include-dashboard", "include-log-monitor")


@dataclass(frozen=True)
class PodOptions:
    """Operator-wide switches that shape Pods (upstream reads them from env vars).

    Attributes:
        cluster_domain: ``CLUSTER_DOMAIN`` (default ``cluster.local``).
        deterministic_head_pod_name: ``ENABLE_DETERMINISTIC_HEAD_POD_NAME``.
        enable_init_container_injection: ``ENABLE_INIT_CONTAINER_INJECTION``.
        enable_probes_injection: ``ENABLE_PROBES_INJECTION``.
        enable_login_shell: ``ENABLE_LOGIN_SHELL`` (``bash -lc``).
        multi_host_indexing: feature gate ``RayMultiHostIndexing``.
        head_sidecar_containers / worker_sidecar_containers: the operator configuration's
            ``headSidecarContainers`` / ``workerSidecarContainers`` (Container wire dicts),
            appended to every head / worker Pod after the template's own containers (and the
            autoscaler's), before the Pod is built.
        default_container_envs: the operator configuration's ``defaultContainerEnvs`` (EnvVar wire
            dicts), added first to every Ray container that does not set the name itself.
    """

    cluster_domain: str = c.DEFAULT_CLUSTER_DOMAIN
    deterministic_head_pod_name: bool = False
    enable_init_container_injection: bool = True
    enable_probes_injection: bool = True
    enable_login_shell: bool = False
    multi_host_indexing: bool = True
    head_sidecar_containers: tuple[Obj, ...] = ()
    worker_sidecar_containers: tuple[Obj, ...] = ()
    default_container_envs: tuple[Obj, ...] = ()


DEFAULT_POD_OPTIONS = PodOptions()


def container_command(options: PodOptions, extra: str = "") -> list[str]:
    """``["/bin/bash", "-c<extra>[l]", "--"]`` (upstream ``GetContainerCommand``)."""
    flags = "c" + extra + ("l" if options.enable_login_shell else "")
    return ["/bin/bash", f"-{flags}", "--"]


def head_port(cluster: Obj) -> str:
    """The GCS port workers dial: ``headGroupSpec.rayStartParams.port`` or 6379."""
    params = cluster.get("spec", {}).get("headGroupSpec", {}).get("rayStartParams") or {}
    return str(params.get("port", c.DEFAULT_GCS_SERVER_PORT))


def creator_crd(cluster: Obj) -> str:
    """``RayCluster``, ``RayJob`` or ``RayService`` from ``ray.io/originated-from-crd``."""
    lbl = (cluster.get("metadata", {}).get("labels") or {}).get(c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY)
    return lbl if lbl in (c.CRDType.RAY_JOB, c.CRDType.RAY_SERVICE) else c.CRDType.RAY_CLUSTER


def is_gcs_ft_enabled(cluster: Obj) -> bool:
    ann = cluster.get("metadata", {}).get("annotations") or {}
    return ann.get(c.RAY_FT_ENABLED_ANNOTATION_KEY, "").lower() == "true" or bool(
        cluster.get("spec", {}).get("gcsFaultToleranceOptions"))


# --- ray start -----------------------------------------------------------------------------------

def convert_param_map(params: dict[str, str]) -> str:
    """Render rayStartParams as `` --key=value `` in key order; ``true`` → `` --key ``, ``false``
    dropped except for ``log-color``, ``include-dashboard``, ``include-log-monitor``."""
    out = []
    for key in sorted(params):
        v = str(params[key])
        if v.lower() in ("true", "false") and key not in _KEEP_FALSE_FLAGS:
            if v.lower() == "true":
                out.append(f" --{key} ")
        else:
            out.append(f" --{key}={v} ")
    return "".join(out)


def _resources_map(params: dict[str, str]) -> dict[str, float]:
    raw = params.get("resources")
    if raw is None:
        return {}
    loaded = json.loads(raw.strip("'\"` "))
    return {str(k): float(v) for k, v in loaded.items()}


def _json_compact(m: dict[str, float]) -> str:
    return json.dumps({k: (int(v) if float(v).is_integer() else v) for k, v in m.items()}, separators=(",", ":"))


def complete_resources_params(params: dict[str, str], limits: dict[str, Any]) -> None:
    """Add ``num-gpus`` and the first TPU / Neuron limit (``resources`` JSON) from the container
    limits, in sorted key order, unless already given."""
    if not limits:
        return
    rmap = _resources_map(params)
    accel_added = any(v in rmap for v in _CUSTOM_ACCELERATORS.values())
    for key in sorted(limits):
        q = parse_quantity(limits[key])
        if "num-gpus" not in params and is_gpu_resource_key(key) and q != 0:
            params["num-gpus"] = str(value(limits[key]))
        if not accel_added and key in _CUSTOM_ACCELERATORS and q != 0:
            ray_name = _CUSTOM_ACCELERATORS[key]
            if ray_name not in rmap:
                rmap[ray_name] = float(q)
                params["resources"] = f"'{_json_compact(rmap)}'"
            accel_added = True


def generate_ray_start_command(node_type: str, params: dict[str, str], resources: Obj) -> str:
    """Fill ``num-cpus`` (cpu limit, else request, rounded up), ``memory`` (memory limit, bytes)
    and accelerators into ``params`` (in place) and return ``ray start [--head] <flags>``."""
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    if "num-cpus" not in params:
        cpu = limits.get("cpu")
        if cpu is not None and parse_quantity(cpu) != 0:
            params["num-cpus"] = str(value(cpu))
        elif requests.get("cpu") is not None and parse_quantity(requests["cpu"]) != 0:
            params["num-cpus"] = str(value(requests["cpu"]))
    if "memory" not in params:
        mem = limits.get("memory")
        if mem is not None and parse_quantity(mem) != 0:
            params["memory"] = str(value(mem))
    try:
        complete_resources_params(params, limits)
    except ValueError:
        pass  # an unparsable ``resources`` param is passed through as given (upstream logs it)
    if node_type == c.RayNodeType.HEAD:
        return f"ray start --head {convert_param_map(params)}"
    return f"ray start {convert_param_map(params)}"


def set_missing_ray_start_params(params: dict[str, str], node_type: str, port: str, fqdn: str) -> dict[str, str]:
    """Defaults every Ray node gets: worker ``address``; head ``dashboard-host=0.0.0.0``;
    ``metrics-export-port=8080``, ``block=true`` (forced), ``dashboard-agent-listen-port=52365``."""
    if node_type == c.RayNodeType.WORKER and "address" not in params:
        params["address"] = f"{fqdn}:{port}"
    if node_type == c.RayNodeType.HEAD and "dashboard-host" not in params:
        params["dashboard-host"] = "0.0.0.0"
    params.setdefault("metrics-export-port", str(c.DEFAULT_METRICS_PORT))
    params["block"] = "true"
    params.setdefault("dashboard-agent-listen-port", str(c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT))
    return params


def _apply_group_resources_and_labels(params: dict[str, str], group: Obj) -> None:
    res = group.get("resources") or {}
    if res:
        custom: dict[str, float] = {}
        for name, qty in res.items():
            try:
                q = parse_quantity(qty)
            except ValueError:
                continue
            low = name.lower()
            if low == "cpu":
                params["num-cpus"] = str(value(qty))
            elif low == "memory":
                params["memory"] = str(value(qty))
            elif is_gpu_resource_key(low):
                params["num-gpus"] = str(value(qty))
            else:
                custom[name] = float(q)
        if custom:
            params["resources"] = f"'{_json_compact(dict(sorted(custom.items())))}'"
    lbls = group.get("labels") or {}
    if lbls:
        params["labels"] = ",".join(f"{k}={lbls[k]}" for k in sorted(lbls))


# --- labels, env, probes -------------------------------------------------------------------------

def pod_labels(node_type: str, cluster_name: str, group_name: str, overrides: dict[str, str]) -> dict[str, str]:
    """Default Ray labels merged with user labels; cluster, node-type and group are not overridable."""
    out = {
        c.RAY_IS_RAY_NODE_LABEL_KEY: "yes",
        c.RAY_CLUSTER_LABEL_KEY: cluster_name,
        c.RAY_NODE_TYPE_LABEL_KEY: str(node_type),
        c.RAY_NODE_GROUP_LABEL_KEY: group_name,
        c.RAY_ID_LABEL_KEY: assoc.identifier(cluster_name, node_type),
        c.KUBERNETES_APPLICATION_NAME_LABEL_KEY: c.APPLICATION_NAME,
        c.KUBERNETES_CREATED_BY_LABEL_KEY: c.COMPONENT_NAME,
    }
    for k, v in overrides.items():
        if k in (c.RAY_NODE_TYPE_LABEL_KEY, c.RAY_NODE_GROUP_LABEL_KEY, c.RAY_CLUSTER_LABEL_KEY):
            continue
        out[k] = v
    return out


def _env_exists(env: list[Obj], name: str) -> bool:
    return any(e.get("name") == name for e in env)


def _field_env(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _set_container_env(container: Obj, node_type: str, fqdn: str, port: str, ray_start: str, crd: str,
                       defaults: tuple[Obj, ...] = ()) -> None:
    env: list[Obj] = container.setdefault("env", [])
    for default in defaults:
        if not _env_exists(env, str(default.get("name"))):
            env.append(copy.deepcopy(default))
    ip = "127.0.0.1"
    if node_type == c.RayNodeType.WORKER:
        ip = fqdn
        env.append({"name": "FQ_RAY_IP", "value": fqdn})
        env.append({"name": "RAY_IP", "value": fqdn.split(".")[0]})
    env.append(_field_env("RAY_CLUSTER_NAME", f"metadata.labels['{c.RAY_CLUSTER_LABEL_KEY}']"))
    env.append(_field_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"))
    env.append(_field_env("RAY_CLOUD_INSTANCE_ID", "metadata.name"))
    env.append(_field_env("RAY_NODE_TYPE_NAME", f"metadata.labels['{c.RAY_NODE_GROUP_LABEL_KEY}']"))
    env.append({"name": "KUBERAY_GEN_RAY_START_CMD", "value": ray_start})
    if not _env_exists(env, "RAY_PORT"):
        env.append({"name": "RAY_PORT", "value": port})
    if crd == c.CRDType.RAY_SERVICE:
        for name, val in (("RAY_timeout_ms_task_wait_for_death_info", "0"),
                          ("RAY_gcs_server_request_timeout_seconds", "5"),
                          ("RAY_SERVE_KV_TIMEOUT_S", "5")):
            if not _env_exists(env, name):
                env.append({"name": name, "value": val})
    if not _env_exists(env, "RAY_ADDRESS"):
        env.append({"name": "RAY_ADDRESS", "value": f"{ip}:{port}"})
    if not _env_exists(env, "RAY_USAGE_STATS_KUBERAY_IN_USE"):
        env.append({"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"})
    if node_type == c.RayNodeType.HEAD:
        env.append({"name": "RAY_USAGE_STATS_EXTRA_TAGS",
                    "value": f"kuberay_version={c.KUBERAY_VERSION};kuberay_crd={crd}"})
    if not _env_exists(env, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"):
        env.append({"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"})


def supports_unified_health_check(ray_version: str) -> bool:
    """Ray ≥ 2.53 serves ``/api/healthz`` on the dashboard agent."""
    m = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", ray_version or "")
    if not m:
        return False
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) >= (2, 53, 0)


def _port_param(params: dict[str, str], key: str, default: int) -> int:
    try:
        return int(params[key])
    except (KeyError, ValueError):
        return default


def init_probes(container: Obj, node_type: str, crd: str, params: dict[str, str], ray_version: str) -> None:
    """Inject liveness and readiness probes unless the user set them (HTTP ``/api/healthz`` on
    52365 for Ray ≥ 2.53, else ``wget`` exec checks of the raylet and, on the head, the GCS)."""
    agent_port = _port_param(params, "dashboard-agent-listen-port", c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT)
    http = supports_unified_health_check(ray_version)
    commands = [c.BASE_WGET_HEALTH_COMMAND.format(timeout=c.READINESS_PROBE["timeoutSeconds"], port=agent_port,
                                                  path=c.RAY_AGENT_RAYLET_HEALTH_PATH)]
    if node_type == c.RayNodeType.HEAD:
        commands.append(c.BASE_WGET_HEALTH_COMMAND.format(
            timeout=c.READINESS_PROBE["failureThreshold"],
            port=_port_param(params, "dashboard-port", c.DEFAULT_DASHBOARD_PORT),
            path=c.RAY_DASHBOARD_GCS_HEALTH_PATH))

    def probe(defaults: dict[str, int]) -> Obj:
        timeout = defaults["headTimeoutSeconds"] if node_type == c.RayNodeType.HEAD else defaults["timeoutSeconds"]
        p: Obj = {
            "initialDelaySeconds": defaults["initialDelaySeconds"],
            "timeoutSeconds": timeout,
            "periodSeconds": defaults["periodSeconds"],
            "successThreshold": defaults["successThreshold"],
            "failureThreshold": defaults["failureThreshold"],
        }
        if http:
            p["httpGet"] = {"path": c.RAY_NODE_HEALTH_PATH, "port": agent_port}
        else:
            p["exec"] = {"command": ["bash", "-c", " && ".join(commands)]}
        return p

    if container.get("livenessProbe") is None:
        container["livenessProbe"] = probe(c.LIVENESS_PROBE)
    if container.get("readinessProbe") is None:
        rp = probe(c.READINESS_PROBE)
        if crd == c.CRDType.RAY_SERVICE and node_type == c.RayNodeType.WORKER:
            serve_port = _find_container_port(container, c.SERVING_PORT_NAME, c.DEFAULT_SERVING_PORT)
            cmds = [*commands, c.BASE_WGET_HEALTH_COMMAND.format(
                timeout=c.READINESS_PROBE["initialDelaySeconds"], port=serve_port, path="-/healthz")]
            rp["failureThreshold"] = 1
            rp.pop("httpGet", None)
            rp["exec"] = {"command": ["bash", "-c", " && ".join(cmds)]}
        container["readinessProbe"] = rp


def _find_container_port(container: Obj, name: str, default: int) -> int:
    for p in container.get("ports") or []:
        if p.get("name") == name:
            return int(p["containerPort"])
    return default


def _add_metrics_port(container: Obj) -> None:
    ports = container.setdefault("ports", [])
    if not any(p.get("name") == c.METRICS_PORT_NAME for p in ports):
        ports.append({"name": c.METRICS_PORT_NAME, "containerPort": c.DEFAULT_METRICS_PORT})


def _add_shm(pod: Obj, container: Obj) -> None:
    mounts = container.setdefault("volumeMounts", [])
    if any(m.get("mountPath") == c.SHARED_MEMORY_VOLUME_MOUNT_PATH for m in mounts):
        return
    vols = pod["spec"].setdefault("volumes", [])
    if not any(v.get("name") == c.SHARED_MEMORY_VOLUME_NAME for v in vols):
        empty: Obj = {"medium": "Memory"}
        res = container.get("resources") or {}
        mem = (res.get("limits") or {}).get("memory") or (res.get("requests") or {}).get("memory")
        if mem is not None:
            empty["sizeLimit"] = mem
        vols.append({"name": c.SHARED_MEMORY_VOLUME_NAME, "emptyDir": empty})
    mounts.append({"name": c.SHARED_MEMORY_VOLUME_NAME, "mountPath": c.SHARED_MEMORY_VOLUME_MOUNT_PATH})


def _add_empty_dir(pod: Obj, container: Obj, name: str, path: str) -> None:
    """Mount emptyDir ``name`` at ``path`` in ``container`` (volume added once per Pod; nothing when
    the container already mounts something at ``path``)."""
    mounts = container.setdefault("volumeMounts", [])
    if any(m.get("mountPath") == path for m in mounts):
        return
    vols = pod["spec"].setdefault("volumes", [])
    if not any(v.get("name") == name for v in vols):
        vols.append({"name": name, "emptyDir": {}})
    mounts.append({"name": name, "mountPath": path})


# --- in-tree autoscaler ----------------------------------------------------------------------------

AUTOSCALER_CONTAINER_NAME = "autoscaler"
AUTOSCALER_START_COMMAND = ("ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
                            "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)")
RAY_LOG_VOLUME_NAME = "ray-logs"
RAY_LOG_VOLUME_MOUNT_PATH = "/tmp/ray"
RAY_ENABLE_AUTOSCALER_V2 = "RAY_enable_autoscaler_v2"


def head_service_account_name(cluster: Obj) -> str:
    """The head template's ``serviceAccountName`` or the cluster name (upstream
    ``GetHeadGroupServiceAccountName``)."""
    tmpl = ((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("template") or {}
    return str((tmpl.get("spec") or {}).get("serviceAccountName") or cluster["metadata"]["name"])


def autoscaler_version(cluster: Obj) -> str:
    """``autoscalerOptions.version`` (``v1`` / ``v2``) or ``""``."""
    return str(((cluster.get("spec") or {}).get("autoscalerOptions") or {}).get("version") or "")


def build_autoscaler_container(image: str, options: PodOptions = DEFAULT_POD_OPTIONS) -> Obj:
    """The ``autoscaler`` sidecar: the head's image running ``ray kuberay-autoscaler`` with the
    cluster name/namespace/head Pod name from the downward API, 500m/512Mi.

    Mirrors: common/pod.go BuildAutoscalerContainer."""
    return {
        "name": AUTOSCALER_CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            _field_env("RAY_CLUSTER_NAME", f"metadata.labels['{c.RAY_CLUSTER_LABEL_KEY}']"),
            _field_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
            _field_env("RAY_HEAD_POD_NAME", "metadata.name"),
            {"name": "KUBERAY_CRD_VER", "value": "v1"},
            {"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": AUTOSCALER_START_COMMAND},
        ],
        "command": container_command(options),
        "args": [AUTOSCALER_START_COMMAND],
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}},
    }


def merge_autoscaler_overrides(container: Obj, autoscaler_options: Obj | None) -> None:
    """``autoscalerOptions``: resources, image, imagePullPolicy, securityContext, command and args
    replace; env, envFrom and volumeMounts append.

    Mirrors: common/pod.go mergeAutoscalerOverrides."""
    opts = autoscaler_options or {}
    for key in ("resources", "image", "imagePullPolicy", "securityContext"):
        if opts.get(key) is not None:
            container[key] = copy.deepcopy(opts[key])
    for key in ("env", "envFrom", "volumeMounts"):
        if opts.get(key):
            container[key] = [*(container.get(key) or []), *copy.deepcopy(opts[key])]
    for key in ("command", "args"):
        if opts.get(key):
            container[key] = list(opts[key])


RAY_AUTH_MODE_ENV_VAR = "RAY_AUTH_MODE"
RAY_AUTH_TOKEN_ENV_VAR = "RAY_AUTH_TOKEN"
RAY_AUTH_TOKEN_SECRET_KEY = "auth_token"
RAY_ENABLE_K8S_TOKEN_AUTH_ENV_VAR = "RAY_ENABLE_K8S_TOKEN_AUTH"
RAY_TOKEN_VOLUME_NAME = "ray-token"
RAY_TOKEN_MOUNT_PATH = "/var/run/secrets/ray.io/serviceaccount"


def is_auth_enabled(spec: Obj) -> bool:
    """``authOptions.mode: token`` (utils.IsAuthEnabled)."""
    return ((spec.get("authOptions") or {}).get("mode") or "") == c.AuthMode.TOKEN


def is_k8s_auth_enabled(auth_options: Obj | None) -> bool:
    """``authOptions.enableK8sTokenAuth: true`` (utils.IsK8sAuthEnabled)."""
    return bool((auth_options or {}).get("enableK8sTokenAuth"))


def auth_secret_name(cluster_name: str, auth_options: Obj | None) -> str:
    """The Secret holding ``auth_token``: ``authOptions.secretName``, else the cluster's name."""
    return str((auth_options or {}).get("secretName") or assoc.check_name(cluster_name))


def set_container_token_auth_env(cluster_name: str, container: Obj, auth_options: Obj | None) -> None:
    """``RAY_AUTH_MODE=token`` plus either ``RAY_ENABLE_K8S_TOKEN_AUTH`` and the ``ray-token``
    mount (Kubernetes token auth) or ``RAY_AUTH_TOKEN`` from the auth Secret; variables the user
    set are kept.

    Mirrors: common/pod.go SetContainerTokenAuthEnvVars."""
    env = container.setdefault("env", [])
    if not _env_exists(env, RAY_AUTH_MODE_ENV_VAR):
        env.append({"name": RAY_AUTH_MODE_ENV_VAR, "value": str(c.AuthMode.TOKEN)})
    if is_k8s_auth_enabled(auth_options):
        if not _env_exists(env, RAY_ENABLE_K8S_TOKEN_AUTH_ENV_VAR):
            env.append({"name": RAY_ENABLE_K8S_TOKEN_AUTH_ENV_VAR, "value": "true"})
        mounts = container.setdefault("volumeMounts", [])
        if not any(m.get("name") == RAY_TOKEN_VOLUME_NAME for m in mounts):
            mounts.append({"name": RAY_TOKEN_VOLUME_NAME, "mountPath": RAY_TOKEN_MOUNT_PATH, "readOnly": True})
    elif not _env_exists(env, RAY_AUTH_TOKEN_ENV_VAR):
        env.append({"name": RAY_AUTH_TOKEN_ENV_VAR, "valueFrom": {"secretKeyRef": {
            "name": auth_secret_name(cluster_name, auth_options), "key": RAY_AUTH_TOKEN_SECRET_KEY}}})


def add_ray_token_volume(pod_spec: Obj) -> None:
    """The projected ServiceAccount-token volume ``ray-token`` (Kubernetes token auth), once.

    Mirrors: common/pod.go AddRayTokenVolume."""
    vols = pod_spec.setdefault("volumes", [])
    if not any(v.get("name") == RAY_TOKEN_VOLUME_NAME for v in vols):
        vols.append({"name": RAY_TOKEN_VOLUME_NAME,
                     "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}})


def _configure_token_auth(cluster: Obj, tmpl: Obj) -> None:
    """Token auth for the Ray container and the ``wait-gcs-ready`` init container, and the
    projected ``ray-token`` volume for Kubernetes token auth.

    Mirrors: common/pod.go configureTokenAuth, AddRayTokenVolume."""
    spec = cluster.get("spec") or {}
    if not is_auth_enabled(spec):
        return
    opts = spec.get("authOptions")
    name = cluster["metadata"]["name"]
    pod_spec = tmpl["spec"]
    set_container_token_auth_env(name, pod_spec["containers"][c.RAY_CONTAINER_INDEX], opts)
    if is_k8s_auth_enabled(opts):
        add_ray_token_volume(pod_spec)
    for init in pod_spec.get("initContainers") or []:
        if init.get("name") == c.WAIT_GCS_READY_INIT_CONTAINER:
            set_container_token_auth_env(name, init, opts)


def _inject_autoscaler(cluster: Obj, tmpl: Obj, options: PodOptions) -> None:
    """Head template with in-tree autoscaling: service account, the sidecar, the v1/v2 switch."""
    pod_spec = tmpl["spec"]
    pod_spec["serviceAccountName"] = assoc.check_name(head_service_account_name(cluster))
    ray = pod_spec["containers"][c.RAY_CONTAINER_INDEX]
    sidecar = build_autoscaler_container(str(ray.get("image", "")), options)
    if is_auth_enabled(cluster.get("spec") or {}):
        set_container_token_auth_env(cluster["metadata"]["name"], sidecar, (cluster.get("spec") or {}).get("authOptions"))
    merge_autoscaler_overrides(sidecar, (cluster.get("spec") or {}).get("autoscalerOptions"))
    pod_spec["containers"].append(sidecar)
    version = autoscaler_version(cluster)
    if version == "v2":
        ray.setdefault("env", []).append({"name": RAY_ENABLE_AUTOSCALER_V2, "value": "true"})
        pod_spec["restartPolicy"] = "Never"
    elif version == "v1":
        ray.setdefault("env", []).append({"name": RAY_ENABLE_AUTOSCALER_V2, "value": "false"})


def _cmd_to_string(parts: list[str]) -> str:
    return "".join(f" {p} " for p in parts)


def wait_gcs_ready_script(fqdn: str, port: str) -> str:
    """The worker init container's script, the text upstream's Pod carries: ``ray health-check``
    every 5 s; quiet for the first 120 s, then with the health check's own output and a pointer to
    the troubleshooting FAQ."""
    addr = f"{fqdn}:{port}"
    t = "\t\t\t\t\t"
    lines = [
        "",
        "SECONDS=0",
        "while true; do",
        "\tif (( SECONDS <= 120 )); then",
        f"\t\tif ray health-check --address {addr} > /dev/null 2>&1; then",
        '\t\t\techo "GCS is ready."',
        "\t\t\tbreak",
        "\t\tfi",
        '\t\techo "$SECONDS seconds elapsed: Waiting for GCS to be ready."',
        "\telse",
        f"\t\tif ray health-check --address {addr}; then",
        '\t\t\techo "GCS is ready. Any error messages above can be safely ignored."',
        "\t\t\tbreak",
        "\t\tfi",
        '\t\techo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to the '
        'FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."',
        "\tfi",
        "\tsleep 5",
        "done",
        "",
    ]
    return "\n".join(t + line if line else (t[:-1] if i == len(lines) - 1 else "") for i, line in enumerate(lines))


# --- FT ------------------------------------------------------------------------------------------

def _configure_gcs_ft(template: Obj, cluster: Obj, node_type: str, params: dict[str, str]) -> None:
    ft = is_gcs_ft_enabled(cluster)
    ann = template["metadata"].setdefault("annotations", {})
    if node_type == c.RayNodeType.HEAD:
        ann[c.RAY_FT_ENABLED_ANNOTATION_KEY] = "true" if ft else "false"
    if not ft:
        return
    container = template["spec"]["containers"][c.RAY_CONTAINER_INDEX]
    env = container.setdefault("env", [])
    if node_type == c.RayNodeType.WORKER:
        if not _env_exists(env, "RAY_gcs_rpc_server_reconnect_timeout_s"):
            env.append({"name": "RAY_gcs_rpc_server_reconnect_timeout_s", "value": "600"})
        return
    options = cluster.get("spec", {}).get("gcsFaultToleranceOptions")
    cl_ann = cluster.get("metadata", {}).get("annotations") or {}
    storage_ns = cl_ann.get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY, cluster.get("metadata", {}).get("uid", ""))
    if options and options.get("externalStorageNamespace"):
        storage_ns = options["externalStorageNamespace"]
    ann[c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY] = storage_ns
    if not _env_exists(env, "RAY_external_storage_namespace"):
        env.append({"name": "RAY_external_storage_namespace", "value": storage_ns})
    if options:
        env.append({"name": "RAY_REDIS_ADDRESS", "value": options.get("redisAddress", "")})
        for field, env_name, param in (("redisUsername", "REDIS_USERNAME", "redis-username"),
                                       ("redisPassword", "REDIS_PASSWORD", "redis-password")):
            src = options.get(field)
            if src is not None:
                params[param] = f"${env_name}"
                entry: Obj = {"name": env_name}
                if "value" in src:
                    entry["value"] = src["value"]
                if "valueFrom" in src:
                    entry["valueFrom"] = src["valueFrom"]
                env.append(entry)
    elif not _env_exists(env, "REDIS_PASSWORD") and "redis-password" in params:
        env.append({"name": "REDIS_PASSWORD", "value": params["redis-password"]})


# --- builders ------------------------------------------------------------------------------------

def _finish_pod(cluster: Obj, template: Obj, node_type: str, params: dict[str, str], options: PodOptions) -> Obj:
    """BuildPod: shm volume, command, env, probes, owner reference."""
    crd = creator_crd(cluster)
    port = head_port(cluster)
    fqdn = assoc.fqdn_head_service(cluster, options.cluster_domain)
    spec = cluster.get("spec", {})
    labels = template["metadata"].setdefault("labels", {})
    if crd == c.CRDType.RAY_SERVICE:
        labels[c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY] = "false" if node_type == c.RayNodeType.HEAD else "true"
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": template["metadata"], "spec": template["spec"]}
    container = pod["spec"]["containers"][c.RAY_CONTAINER_INDEX]
    if "plasma-directory" not in params:
        _add_shm(pod, container)
    if node_type == c.RayNodeType.HEAD and is_autoscaling_enabled(spec):
        for ct in (container, *[x for x in pod["spec"]["containers"] if x.get("name") == AUTOSCALER_CONTAINER_NAME]):
            _add_empty_dir(pod, ct, RAY_LOG_VOLUME_NAME, RAY_LOG_VOLUME_MOUNT_PATH)

    user_cmd = ""
    if container.get("command"):
        user_cmd = _cmd_to_string(container["command"])
    if container.get("args"):
        user_cmd += _cmd_to_string(container["args"])
    ulimit = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}"
    ray_start = generate_ray_start_command(node_type, params, container.get("resources") or {})
    overwrite = (pod["metadata"].get("annotations") or {}).get(c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY, "")
    if overwrite.lower() != "true" and "ray start" not in user_cmd:
        generated = f"{ulimit}; {ray_start}"
        container["command"] = container_command(options)
        container["args"] = [f"{user_cmd} && {generated}" if user_cmd else generated]

    for init in pod["spec"].get("initContainers") or []:
        init.setdefault("env", []).extend([{"name": "FQ_RAY_IP", "value": fqdn},
                                           {"name": "RAY_IP", "value": fqdn.split(".")[0]}])
    _set_container_env(container, node_type, fqdn, port, ray_start, crd, options.default_container_envs)
    if options.enable_probes_injection:
        init_probes(container, node_type, crd, params, str(spec.get("rayVersion", "")))
    pod["metadata"]["ownerReferences"] = [owner_reference(cluster, default=scheme.RAY_CLUSTER)]
    if not pod["metadata"].get("annotations"):
        pod["metadata"].pop("annotations", None)
    return pod


def _template_copy(group: Obj, namespace: str) -> Obj:
    tmpl = copy.deepcopy(group.get("template") or {})
    meta = tmpl.setdefault("metadata", {})
    meta["namespace"] = namespace
    tmpl.setdefault("spec", {})
    return tmpl


def _init_template_annotations(cluster: Obj, tmpl: Obj) -> None:
    ann = tmpl["metadata"].setdefault("annotations", {})
    cl_ann = cluster.get("metadata", {}).get("annotations") or {}
    if cl_ann.get(c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY, "").lower() == "true":
        ann[c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY] = "true"


def build_head_pod(cluster: Obj, options: PodOptions = DEFAULT_POD_OPTIONS) -> Obj:
    """The head Pod of ``cluster``.

    Returns:
        A Pod dict with ``generateName: <cluster>-head-`` (or ``name: <cluster>-head`` with
        ``deterministic_head_pod_name``), ``ray start --head`` in container 0.
    Raises:
        KeyError / IndexError: the head template has no container (validation rejects this first).
    """
    name = cluster["metadata"]["name"]
    ns = cluster["metadata"].get("namespace", "default")
    head = cluster.get("spec", {}).get("headGroupSpec") or {}
    tmpl = _template_copy(head, ns)
    meta = tmpl["metadata"]
    meta.pop("name", None)
    if options.deterministic_head_pod_name:
        meta["name"] = assoc.check_name(f"{name}-head").lower()
    else:
        meta["generateName"] = assoc.head_pod_generate_name(name)
    params = {str(k): str(v) for k, v in (head.get("rayStartParams") or {}).items()}
    _apply_group_resources_and_labels(params, head)
    merged = {**(meta.get("labels") or {}), **(head.get("labels") or {})}
    meta["labels"] = pod_labels(c.RayNodeType.HEAD, name, c.HEAD_GROUP_NAME, merged)
    set_missing_ray_start_params(params, c.RayNodeType.HEAD, head_port(cluster), "")
    _init_template_annotations(cluster, tmpl)
    if is_autoscaling_enabled(cluster.get("spec", {})):
        params["no-monitor"] = "true"
        _inject_autoscaler(cluster, tmpl, options)
    _configure_gcs_ft(tmpl, cluster, c.RayNodeType.HEAD, params)
    _add_metrics_port(tmpl["spec"]["containers"][c.RAY_CONTAINER_INDEX])
    _configure_token_auth(cluster, tmpl)
    tmpl["spec"]["containers"].extend(copy.deepcopy(list(options.head_sidecar_containers)))
    return _finish_pod(cluster, tmpl, c.RayNodeType.HEAD, params, options)


def build_worker_pod(cluster: Obj, group: Obj, options: PodOptions = DEFAULT_POD_OPTIONS, *,
                     replica_index: int = 0, replica_name: str = "", host_index: int = 0) -> Obj:
    """A worker Pod of ``group``.

    Args:
        replica_index: ``ray.io/worker-group-replica-index`` (multi-host indexing gate).
        replica_name / host_index: multi-host bookkeeping when ``numOfHosts > 1``.
    Returns:
        A Pod dict with ``generateName: <cluster>-<group>-worker-`` and the ``wait-gcs-ready`` init
        container (unless disabled).
    """
    name = cluster["metadata"]["name"]
    ns = cluster["metadata"].get("namespace", "default")
    tmpl = _template_copy(group, ns)
    meta = tmpl["metadata"]
    meta["generateName"] = assoc.worker_pod_generate_name(name, group["groupName"])
    fqdn = assoc.fqdn_head_service(cluster, options.cluster_domain)
    port = head_port(cluster)
    ray_ct = tmpl["spec"]["containers"][c.RAY_CONTAINER_INDEX]
    if options.enable_init_container_injection:
        init: Obj = {"name": c.WAIT_GCS_READY_INIT_CONTAINER, "image": ray_ct.get("image", "")}
        if ray_ct.get("imagePullPolicy"):
            init["imagePullPolicy"] = ray_ct["imagePullPolicy"]
        init["command"] = container_command(options)
        init["args"] = [wait_gcs_ready_script(fqdn, port)]
        if ray_ct.get("securityContext") is not None:
            init["securityContext"] = copy.deepcopy(ray_ct["securityContext"])
        init["env"] = copy.deepcopy(ray_ct.get("env") or [])
        if ray_ct.get("volumeMounts"):
            init["volumeMounts"] = copy.deepcopy(ray_ct["volumeMounts"])
        init["resources"] = {"limits": {"cpu": "200m", "memory": "256Mi"},
                             "requests": {"cpu": "200m", "memory": "256Mi"}}
        tmpl["spec"].setdefault("initContainers", []).append(init)
    meta.pop("name", None)
    params = {str(k): str(v) for k, v in (group.get("rayStartParams") or {}).items()}
    _apply_group_resources_and_labels(params, group)
    merged = {**(meta.get("labels") or {}), **(group.get("labels") or {})}
    labels = pod_labels(c.RayNodeType.WORKER, name, group["groupName"], merged)
    if options.multi_host_indexing:
        labels[c.RAY_WORKER_REPLICA_INDEX_KEY] = str(replica_index)
        if int(group.get("numOfHosts") or 1) > 1:
            labels[c.RAY_WORKER_REPLICA_NAME_KEY] = replica_name
            labels[c.RAY_HOST_INDEX_KEY] = str(host_index)
    meta["labels"] = labels
    set_missing_ray_start_params(params, c.RayNodeType.WORKER, port, fqdn)
    _init_template_annotations(cluster, tmpl)
    _configure_gcs_ft(tmpl, cluster, c.RayNodeType.WORKER, params)
    if is_autoscaling_enabled(cluster.get("spec", {})) and autoscaler_version(cluster) == "v2":
        tmpl["spec"]["restartPolicy"] = "Never"
    _add_metrics_port(ray_ct)
    _configure_token_auth(cluster, tmpl)
    tmpl["spec"]["containers"].extend(copy.deepcopy(list(options.worker_sidecar_containers)))
    return _finish_pod(cluster, tmpl, c.RayNodeType.WORKER, params, options)
