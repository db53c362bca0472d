"""What a RayJob creates: its RayCluster, the submitter batch/v1 Job (K8sJobMode), the sidecar
submitter container (SidecarMode), and the ``ray job submit`` script they run.

Mirrors: kuberay ray-operator/controllers/ray/common/job.go (BuildJobSubmitCommand,
GetSubmitterTemplate, GetDefaultSubmitterContainer) and rayjob_controller.go
(constructRayClusterForRayJob, getSubmitterTemplate, configureSubmitterContainer, createNewK8sJob).
"""

from __future__ import annotations

import copy
import json
import re

import yaml

from pumice._util.gostrings import quote as go_quote
from pumice.api import Obj, scheme, yamlsafe
from pumice.api.meta import owner_reference
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common.pod import (
    DEFAULT_POD_OPTIONS,
    PodOptions,
    add_ray_token_volume,
    container_command,
    is_auth_enabled,
    is_k8s_auth_enabled,
    set_container_token_auth_env,
)


class SubmitCommandError(ValueError):
    """The RayJob spec cannot be turned into a submit command (bad runtimeEnvYAML, old Ray for
    metadata, unsupported mode)."""


def submission_mode(rayjob: Obj) -> str:
    return str(rayjob.get("spec", {}).get("submissionMode") or c.JobSubmissionMode.K8S_JOB_MODE)


def runtime_env_json(rayjob: Obj) -> str:
    """``runtimeEnvYAML`` as compact JSON with sorted keys (``""`` when unset).

    Raises:
        SubmitCommandError: the YAML does not parse to a mapping.
    """
    text = rayjob.get("spec", {}).get("runtimeEnvYAML") or ""
    if not text:
        return ""
    try:
        data = yamlsafe.safe_load(text)
    except yaml.YAMLError as e:
        raise SubmitCommandError(f"failed to parse runtimeEnvYAML: {e}") from e
    if not isinstance(data, dict):
        raise SubmitCommandError("runtimeEnvYAML must be a YAML mapping")
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def _version_tuple(v: str) -> tuple[int, ...] | None:
    m = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", v)
    if not m:
        return None
    return tuple(int(x or 0) for x in m.groups())


def metadata_json(rayjob: Obj) -> str:
    """``spec.metadata`` as JSON for ``--metadata-json`` (Ray ≥ 2.6 required)."""
    md = rayjob.get("spec", {}).get("metadata") or {}
    rv = (rayjob.get("spec", {}).get("rayClusterSpec") or {}).get("rayVersion") or ""
    if rv:
        vt = _version_tuple(rv)
        if vt is None:
            raise SubmitCommandError(f"failed to parse Ray version: {rv}")
        if vt < (2, 6, 0):
            raise SubmitCommandError("the Ray version must be at least 2.6.0 to use the metadata field")
    return json.dumps(md, separators=(",", ":"), sort_keys=True)


def _find_port(container: Obj, name: str, default: int) -> int:
    for p in container.get("ports") or []:
        if p.get("name") == name:
            return int(p["containerPort"])
    return default


def build_job_submit_command(rayjob: Obj, mode: str, *, status_guard: bool | None = None) -> list[str]:
    """The submitter's shell words: wait for the dashboard's GCS health, then (K8sJobMode) submit
    only if ``ray job status`` does not know the id, and follow the logs.

    K8sJobMode targets ``http://<status.dashboardURL>``; SidecarMode targets
    ``http://127.0.0.1:<dashboard port>`` without the status guard.

    Raises:
        SubmitCommandError: unsupported mode, bad runtimeEnvYAML or metadata.
    """
    spec = rayjob.get("spec", {})
    status = rayjob.get("status") or {}
    port = c.DEFAULT_DASHBOARD_PORT
    if mode == c.JobSubmissionMode.SIDECAR_MODE:
        head_ct = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][c.RAY_CONTAINER_INDEX]
        port = _find_port(head_ct, c.DASHBOARD_PORT_NAME, c.DEFAULT_DASHBOARD_PORT)
        address = f"http://127.0.0.1:{port}"
        health_url = f"http://localhost:{port}/{c.RAY_DASHBOARD_GCS_HEALTH_PATH}"
    elif mode == c.JobSubmissionMode.K8S_JOB_MODE:
        address = str(status.get("dashboardURL") or "")
        if not address.startswith("http://"):
            address = "http://" + address
        health_url = f"{address}/{c.RAY_DASHBOARD_GCS_HEALTH_PATH}"
    else:
        raise SubmitCommandError(f"unsupported submission mode for job submit command: {mode}")
    guard = (mode == c.JobSubmissionMode.K8S_JOB_MODE) if status_guard is None else status_guard
    job_id = str(status.get("jobId") or "")
    entrypoint = str(spec.get("entrypoint") or "").strip()

    health = c.BASE_PYTHON_HEALTH_COMMAND.format(url=health_url, timeout=c.RAY_DASHBOARD_GCS_HEALTH_CHECK_TIMEOUT_SECONDS)
    cmd = ["until", health, ">/dev/null", "2>&1", ";",
           "do", "echo", go_quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ..."), ";",
           "sleep", "2", ";", "done", ";"]
    if guard:
        cmd += ["if", "!", "ray", "job", "status", "--address", address, job_id, ">/dev/null", "2>&1", ";", "then"]
    cmd += ["ray", "job", "submit", "--address", address]
    if guard:
        cmd.append("--no-wait")
    renv = runtime_env_json(rayjob)
    if renv:
        cmd += ["--runtime-env-json", go_quote(renv)]
    if spec.get("metadata"):
        cmd += ["--metadata-json", go_quote(metadata_json(rayjob))]
    if job_id:
        cmd += ["--submission-id", job_id]
    if float(spec.get("entrypointNumCpus") or 0) > 0:
        cmd += ["--entrypoint-num-cpus", f"{float(spec['entrypointNumCpus']):f}"]
    if float(spec.get("entrypointNumGpus") or 0) > 0:
        cmd += ["--entrypoint-num-gpus", f"{float(spec['entrypointNumGpus']):f}"]
    if spec.get("entrypointResources"):
        cmd += ["--entrypoint-resources", go_quote(str(spec["entrypointResources"]))]
    cmd += ["--", entrypoint, ";"]
    if guard:
        cmd += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job_id]
    return cmd


def default_submitter_container(cluster_spec: Obj) -> Obj:
    """``ray-job-submitter``: the head image, requests 500m/200Mi, limits 1/1Gi."""
    image = cluster_spec["headGroupSpec"]["template"]["spec"]["containers"][c.RAY_CONTAINER_INDEX].get("image", "")
    return {
        "name": c.SUBMITTER_CONTAINER_NAME,
        "image": image,
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}},
    }


def submitter_template(rayjob: Obj, cluster_spec: Obj) -> Obj:
    """``spec.submitterPodTemplate`` or the default one-container template (restartPolicy Never)."""
    user = rayjob.get("spec", {}).get("submitterPodTemplate")
    if user:
        return copy.deepcopy(user)
    return {"spec": {"containers": [default_submitter_container(cluster_spec)], "restartPolicy": "Never"}}


def configure_submitter_container(container: Obj, rayjob: Obj, mode: str,
                                  options: PodOptions = DEFAULT_POD_OPTIONS, *, cluster_name: str = "",
                                  cluster_spec: Obj | None = None) -> None:
    """Set the generated script (unless a K8sJobMode user container has its own command) and the
    env ``PYTHONUNBUFFERED``, ``RAY_DASHBOARD_ADDRESS``, ``RAY_JOB_SUBMISSION_ID``; for a cluster
    with ``authOptions.mode: token`` (``cluster_spec`` of RayCluster ``cluster_name``) also the
    token-auth env, so ``ray job submit`` can talk to the dashboard.

    Mirrors: rayjob_controller.go configureSubmitterContainer."""
    words = build_job_submit_command(rayjob, mode)
    if not container.get("command") or mode == c.JobSubmissionMode.SIDECAR_MODE:
        container["command"] = container_command(options, "e")
        container["args"] = [" ".join(words)]
    status = rayjob.get("status") or {}
    env = container.setdefault("env", [])
    env.append({"name": "PYTHONUNBUFFERED", "value": "1"})
    env.append({"name": "RAY_DASHBOARD_ADDRESS", "value": str(status.get("dashboardURL") or "")})
    env.append({"name": "RAY_JOB_SUBMISSION_ID", "value": str(status.get("jobId") or "")})
    if cluster_spec is not None and is_auth_enabled(cluster_spec):
        set_container_token_auth_env(cluster_name, container, cluster_spec.get("authOptions"))


def build_submitter_pod_template(rayjob: Obj, cluster_spec: Obj, options: PodOptions = DEFAULT_POD_OPTIONS, *,
                                 cluster_name: str = "") -> Obj:
    """The submitter Job's pod template with the configured container and originated-from labels
    (and the ``ray-token`` volume when the cluster, RayCluster ``cluster_name``, uses Kubernetes
    token auth).

    Mirrors: rayjob_controller.go getSubmitterTemplate."""
    tmpl = submitter_template(rayjob, cluster_spec)
    tmpl.setdefault("spec", {})
    configure_submitter_container(tmpl["spec"]["containers"][c.RAY_CONTAINER_INDEX], rayjob,
                                  c.JobSubmissionMode.K8S_JOB_MODE, options, cluster_name=cluster_name,
                                  cluster_spec=cluster_spec)
    if is_k8s_auth_enabled(cluster_spec.get("authOptions")):
        add_ray_token_volume(tmpl["spec"])
    labels = tmpl.setdefault("metadata", {}).setdefault("labels", {})
    labels[c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY] = rayjob["metadata"]["name"]
    labels[c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY] = c.CRDType.RAY_JOB
    labels[c.KUBERNETES_CREATED_BY_LABEL_KEY] = c.COMPONENT_NAME
    return tmpl


def build_submitter_job(rayjob: Obj, pod_template: Obj) -> Obj:
    """The batch/v1 Job ``<rayjob>`` (backoffLimit = submitterConfig.backoffLimit or 2)."""
    name = rayjob["metadata"]["name"]
    backoff = (rayjob.get("spec", {}).get("submitterConfig") or {}).get("backoffLimit")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": rayjob["metadata"].get("namespace", "default"),
            "labels": {
                c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: name,
                c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRDType.RAY_JOB,
                c.KUBERNETES_CREATED_BY_LABEL_KEY: c.COMPONENT_NAME,
            },
            "ownerReferences": [owner_reference(rayjob, default=scheme.RAY_JOB)],
        },
        "spec": {"backoffLimit": 2 if backoff is None else int(backoff), "template": pod_template},
    }


def build_sidecar_submitter_container(rayjob: Obj, options: PodOptions = DEFAULT_POD_OPTIONS, *,
                                      cluster_name: str = "") -> Obj:
    """The SidecarMode submitter container for RayCluster ``cluster_name`` (built from the RayJob's
    ``rayClusterSpec``). Mirrors: rayjob_controller.go getSubmitterContainer."""
    spec = rayjob["spec"]["rayClusterSpec"]
    ct = default_submitter_container(spec)
    configure_submitter_container(ct, rayjob, c.JobSubmissionMode.SIDECAR_MODE, options, cluster_name=cluster_name,
                                  cluster_spec=spec)
    return ct


def build_cluster_for_rayjob(rayjob: Obj, cluster_name: str, options: PodOptions = DEFAULT_POD_OPTIONS) -> Obj:
    """The RayCluster a RayJob creates: RayJob labels + originated-from + submission mode, RayJob
    annotations (+ disable-provisioned-head-restart in SidecarMode), a deep copy of
    ``rayClusterSpec``, controller owner = the RayJob; SidecarMode appends the submitter container
    to the head and forces ``restartPolicy: Never``."""
    meta = rayjob["metadata"]
    mode = submission_mode(rayjob)
    labels = dict(meta.get("labels") or {})
    labels[c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY] = meta["name"]
    labels[c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY] = c.CRDType.RAY_JOB
    labels[c.RAY_JOB_SUBMISSION_MODE_LABEL_KEY] = mode
    annotations = dict(meta.get("annotations") or {})
    if mode == c.JobSubmissionMode.SIDECAR_MODE:
        annotations[c.DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION_KEY] = "true"
    cluster_meta: Obj = {"name": cluster_name, "namespace": meta.get("namespace", "default"), "labels": labels,
                         "ownerReferences": [owner_reference(rayjob, default=scheme.RAY_JOB)]}
    if annotations:
        cluster_meta["annotations"] = annotations
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": cluster_meta,
               "spec": copy.deepcopy(rayjob["spec"]["rayClusterSpec"])}
    if mode == c.JobSubmissionMode.SIDECAR_MODE:
        head_spec = cluster["spec"]["headGroupSpec"]["template"]["spec"]
        head_spec["containers"].append(build_sidecar_submitter_container(rayjob, options, cluster_name=cluster_name))
        head_spec["restartPolicy"] = "Never"
    return cluster
