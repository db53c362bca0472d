"""``svc`` job plugin: a headless Service named after the job, a ConfigMap ``<job>-svc`` with the
host lists (``<task>.host``, ``VC_<TASK>_HOSTS``, ``VC_<TASK>_NUM``) mounted at ``/etc/volcano``,
host env vars, Pod hostname/subdomain, and (unless ``--disable-network-policy``) a NetworkPolicy
admitting traffic from the job's own Pods (created only when networking.k8s.io is served).

Arguments: ``--publish-not-ready-addresses`` (false), ``--disable-network-policy`` (false),
``--inject-hosts-env`` (true).

Mirrors: volcano pkg/controllers/job/plugins/svc/svc.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.job.builders import pod_name
from pumice.controllers.volcano.job.plugins._base import (
    PluginClient,
    controlled,
    owned,
    parse_flags,
    set_controlled,
)

CONFIGMAP_MOUNT_PATH = "/etc/volcano"


def _env_key(task_name: str) -> str:
    return task_name.replace("-", "_")


def generate_hosts(job: Obj) -> dict[str, str]:
    """The ConfigMap data: per task ``<task>.host`` (newline list), ``VC_<TASK>_HOSTS`` (comma
    list) and ``VC_<TASK>_NUM``."""
    out: dict[str, str] = {}
    jname = job["metadata"]["name"]
    for ts in (job.get("spec") or {}).get("tasks") or []:
        pspec = (ts.get("template") or {}).get("spec") or {}
        hosts: list[str] = []
        for i in range(int(ts.get("replicas") or 0)):
            host = pspec.get("hostname") or pod_name(jname, ts.get("name", ""), i)
            sub = pspec.get("subdomain") or jname
            hosts.append(f"{host}.{sub}")
            if pspec.get("hostname"):
                break
        k = _env_key(ts.get("name", ""))
        out[f"{k}.host"] = "\n".join(hosts)
        out[f"VC_{k.upper()}_HOSTS"] = ",".join(hosts)
        out[f"VC_{k.upper()}_NUM"] = str(len(hosts))
    return out


class SvcPlugin:
    name = "svc"

    def __init__(self, arguments: list[str] | None = None) -> None:
        f = parse_flags(list(arguments or []), {"publish-not-ready-addresses": False,
                                                "disable-network-policy": False,
                                                "inject-hosts-env": True})
        self.publish_not_ready = bool(f["publish-not-ready-addresses"])
        self.disable_network_policy = bool(f["disable-network-policy"])
        self.inject_hosts_env = bool(f["inject-hosts-env"])

    @staticmethod
    def cm_name(job: Obj) -> str:
        return f"{job['metadata']['name']}-svc"

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        spec = pod.setdefault("spec", {})
        if not spec.get("hostname"):
            spec["hostname"] = pod["metadata"]["name"]
        if not spec.get("subdomain"):
            spec["subdomain"] = job["metadata"]["name"]
        ctrs = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        if self.inject_hosts_env:
            env: list[Obj] = []
            for ts in (job.get("spec") or {}).get("tasks") or []:
                k = _env_key(ts.get("name", "")).upper()
                for name in (f"VC_{k}_HOSTS", f"VC_{k}_NUM"):
                    env.append({"name": name, "valueFrom": {"configMapKeyRef": {
                        "name": self.cm_name(job), "key": name}}})
            for c in ctrs:
                c.setdefault("env", []).extend([dict(e) for e in env])
        spec.setdefault("volumes", []).append({"name": self.cm_name(job),
                                               "configMap": {"name": self.cm_name(job)}})
        for c in ctrs:
            c.setdefault("volumeMounts", []).append({"mountPath": CONFIGMAP_MOUNT_PATH,
                                                     "name": self.cm_name(job)})

    def desired_service(self, job: Obj) -> Obj:
        md = job["metadata"]
        return owned(job, "v1", "Service", md["name"], spec={
            "clusterIP": "None",
            "selector": {keys.JOB_NAME_KEY: md["name"], keys.JOB_NAMESPACE_KEY: md.get("namespace", "default")},
            "publishNotReadyAddresses": self.publish_not_ready,
        })

    def desired_network_policy(self, job: Obj) -> Obj:
        md = job["metadata"]
        sel = {"matchLabels": {keys.JOB_NAME_KEY: md["name"],
                               keys.JOB_NAMESPACE_KEY: md.get("namespace", "default")}}
        return owned(job, "networking.k8s.io/v1", "NetworkPolicy", md["name"], spec={
            "podSelector": sel, "ingress": [{"from": [{"podSelector": sel}]}], "policyTypes": ["Ingress"]})

    async def on_job_add(self, job: Obj, client: PluginClient) -> None:
        if controlled(job, self.name):
            return
        await client.apply_data(owned(job, "v1", "ConfigMap", self.cm_name(job), data=generate_hosts(job)))
        await client.create_if_missing(self.desired_service(job))
        if not self.disable_network_policy:
            await client.create_if_missing(self.desired_network_policy(job))
        set_controlled(job, self.name, True)

    async def on_job_delete(self, job: Obj, client: PluginClient) -> None:
        if not controlled(job, self.name):
            return
        ns = job["metadata"].get("namespace", "default")
        await client.delete_if_present("v1", "ConfigMap", self.cm_name(job), ns)
        await client.delete_if_present("v1", "Service", job["metadata"]["name"], ns)
        if not self.disable_network_policy:
            await client.delete_if_present("networking.k8s.io/v1", "NetworkPolicy", job["metadata"]["name"], ns)
        set_controlled(job, self.name, False)

    async def on_job_update(self, job: Obj, client: PluginClient) -> None:
        await client.apply_data(owned(job, "v1", "ConfigMap", self.cm_name(job), data=generate_hosts(job)))
