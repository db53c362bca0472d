"""``pumice install --print``: the manifests that run pumice's KubeRay operator, Volcano scheduler
and admission webhook on a real Kubernetes cluster, for ``kubectl apply --server-side -f -``.

What it prints, in apply order:

- the Namespace (``pumice-system`` by default);
- the CustomResourceDefinitions (ray.io, Volcano), generated from pumice's models;
- one ServiceAccount, ClusterRole and ClusterRoleBinding per component, each with only the verbs
  that component uses (the leader-election Lease is a namespaced Role);
- the webhook's serving certificate as a Secret, its Service, and the Mutating/Validating
  WebhookConfigurations that trust it (a self-signed certificate for
  ``pumice-webhook.<namespace>.svc``, made fresh on each run: re-apply the whole output together);
- the Deployments: controller manager (KubeRay + Volcano controllers, Lease leader election,
  2 replicas), Volcano scheduler (1 replica, Recreate) and webhook (2 replicas), with health probes
  where the component serves them.

The image is built from the repository's ``Containerfile`` (``--image`` names it). Components run
as the non-root user of that image and read their in-cluster ServiceAccount config.
"""

from __future__ import annotations

import base64
import datetime as _dt

import click
import yaml

from pumice.api import Obj

ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ = ["get", "list", "watch"]
EVENTS = ["create", "update", "patch"]

__all__ = ["cluster_roles", "command", "manifests"]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def cluster_roles() -> dict[str, list[Obj]]:
    """Component -> the rules of its ClusterRole (least privilege for what pumice's code does)."""
    return {
        "controller-manager": [
            _rule([""], ["pods", "services", "configmaps", "secrets", "serviceaccounts",
                         "persistentvolumeclaims"], ALL),
            _rule([""], ["pods/status", "services/status"], ["get", "update", "patch"]),
            _rule([""], ["events"], EVENTS),
            _rule(["events.k8s.io"], ["events"], EVENTS),
            _rule([""], ["nodes", "namespaces", "endpoints"], READ),
            _rule(["discovery.k8s.io"], ["endpointslices"], READ),
            _rule(["apps"], ["replicasets"], READ),
            _rule(["batch"], ["jobs"], ALL),
            _rule(["batch"], ["jobs/status"], ["get"]),
            _rule(["rbac.authorization.k8s.io"], ["roles", "rolebindings"], ALL),
            _rule(["networking.k8s.io"], ["networkpolicies", "ingresses"], ALL),
            _rule(["scheduling.k8s.io"], ["priorityclasses"], READ),
            _rule(["ray.io"], ["rayclusters", "rayjobs", "rayservices"], ALL),
            _rule(["ray.io"], ["rayclusters/status", "rayjobs/status", "rayservices/status",
                               "rayclusters/finalizers", "rayjobs/finalizers", "rayservices/finalizers"],
                  ["get", "update", "patch"]),
            _rule(["scheduling.volcano.sh"], ["podgroups", "queues"], ALL),
            _rule(["scheduling.volcano.sh"], ["podgroups/status", "queues/status"], ["get", "update", "patch"]),
            _rule(["batch.volcano.sh"], ["jobs", "cronjobs"], ALL),
            _rule(["batch.volcano.sh"], ["jobs/status", "cronjobs/status", "jobs/finalizers"],
                  ["get", "update", "patch"]),
            _rule(["bus.volcano.sh"], ["commands"], ALL),
            _rule(["topology.volcano.sh"], ["hypernodes"], ALL),
            _rule(["topology.volcano.sh"], ["hypernodes/status"], ["get", "update", "patch"]),
            _rule(["flow.volcano.sh"], ["jobflows", "jobtemplates"], ALL),
            _rule(["flow.volcano.sh"], ["jobflows/status", "jobtemplates/status"], ["get", "update", "patch"]),
        ],
        "scheduler": [
            _rule([""], ["pods"], ["get", "list", "watch", "update", "patch", "delete"]),
            _rule([""], ["pods/binding"], ["create"]),
            _rule([""], ["pods/status"], ["get", "update", "patch"]),
            _rule([""], ["nodes", "namespaces", "resourcequotas", "services"], READ),
            # VolumeBinding's PreBind gives a waiting claim its volume (upstream's role: update)
            _rule([""], ["persistentvolumeclaims", "persistentvolumes"], [*READ, "update"]),
            # as upstream's volcano-scheduler ClusterRole: it runs (or, with a file, publishes) the
            # configuration in volcano-scheduler-configmap and records there what it runs for
            # pumice explain and the UI (get + update, create when absent)
            _rule([""], ["configmaps"], ["get", "list", "watch", "create", "delete", "update"]),
            _rule([""], ["events"], EVENTS),
            _rule(["events.k8s.io"], ["events"], EVENTS),
            _rule(["scheduling.volcano.sh"], ["podgroups", "queues"], ["get", "list", "watch", "update", "patch"]),
            _rule(["scheduling.volcano.sh"], ["podgroups/status", "queues/status"], ["get", "update", "patch"]),
            _rule(["batch.volcano.sh"], ["jobs"], READ),
            _rule(["topology.volcano.sh"], ["hypernodes"], READ),
            _rule(["scheduling.k8s.io"], ["priorityclasses"], READ),
            _rule(["storage.k8s.io"], ["storageclasses", "csinodes"], READ),
            _rule(["policy"], ["poddisruptionbudgets"], READ),
        ],
        "webhook": [
            _rule(["scheduling.volcano.sh"], ["queues", "podgroups"], READ),
            _rule(["batch.volcano.sh"], ["jobs"], READ),
            _rule(["topology.volcano.sh"], ["hypernodes"], READ),
            _rule([""], ["pods", "namespaces"], READ),
        ],
    }


def _meta(name: str, namespace: str | None = None) -> Obj:
    md: Obj = {"name": name, "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "pumice"}}
    if namespace is not None:
        md["namespace"] = namespace
    return md


def _deployment(name: str, namespace: str, image: str, args: list[str], *, replicas: int, sa: str,
                probe: Obj | None = None, ports: list[Obj] | None = None, volumes: list[Obj] | None = None,
                mounts: list[Obj] | None = None, recreate: bool = False) -> Obj:
    container: Obj = {"name": name, "image": image, "args": args,
                      "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                      "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                          "capabilities": {"drop": ["ALL"]}}}
    if probe is not None:
        container["livenessProbe"] = {**probe, "initialDelaySeconds": 15, "periodSeconds": 20}
        container["readinessProbe"] = {**probe, "initialDelaySeconds": 5, "periodSeconds": 10}
    if ports:
        container["ports"] = ports
    if mounts:
        container["volumeMounts"] = mounts
    spec: Obj = {"serviceAccountName": sa, "containers": [container]}
    if volumes:
        spec["volumes"] = volumes
    labels = {"app.kubernetes.io/name": name}
    dep: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, namespace),
                "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels}, "spec": spec}}}
    if recreate:
        dep["spec"]["strategy"] = {"type": "Recreate"}
    return dep


def manifests(*, namespace: str = "pumice-system", image: str = "pumice:0.1.0",
              batch_scheduler: str = "volcano", now: _dt.datetime | None = None) -> list[Obj]:
    """Every object ``pumice install --print`` prints, in apply order (see the module docstring)."""
    from pumice._util.tls import self_signed
    from pumice.api.crds import builtin_crds
    from pumice.controllers.webhook import default_webhooks, webhook_configurations

    objs: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)}]
    objs += builtin_crds()
    for component, rules in cluster_roles().items():
        name = f"pumice-{component}"
        objs.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)})
        objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(name),
                     "rules": rules})
        objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                     "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]})
    # leader election: the controller manager's Lease lives in kube-system, as kube-controller-manager's
    lease_role = "pumice-controller-manager-leader-election"
    objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(lease_role, "kube-system"),
                 "rules": [_rule(["coordination.k8s.io"], ["leases"], ALL)]})
    objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": _meta(lease_role, "kube-system"),
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": lease_role},
                 "subjects": [{"kind": "ServiceAccount", "name": "pumice-controller-manager", "namespace": namespace}]})

    service = "pumice-webhook"
    cert, key = self_signed(f"{service}.{namespace}.svc",
                            [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
                             f"{service}.{namespace}.svc.cluster.local"], now=now or _dt.datetime.now(_dt.UTC))
    objs.append({"apiVersion": "v1", "kind": "Secret", "metadata": _meta(f"{service}-tls", namespace),
                 "type": "kubernetes.io/tls",
                 "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}})
    objs.append({"apiVersion": "v1", "kind": "Service", "metadata": _meta(service, namespace),
                 "spec": {"selector": {"app.kubernetes.io/name": service},
                          "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}})

    health = {"exec": {"command": ["python", "-c", "import urllib.request as u; "
                                   "u.urlopen('http://127.0.0.1:8081/healthz', timeout=5)"]}}
    objs.append(_deployment(
        "pumice-controller-manager", namespace, image,
        ["controller-manager", "--controllers", "ray,volcano", "--batch-scheduler", batch_scheduler,
         "--leader-elect", "--health-port", "8081"],
        replicas=2, sa="pumice-controller-manager", probe=health))
    objs.append(_deployment("pumice-scheduler", namespace, image, ["scheduler", "--name", "volcano"],
                            replicas=1, sa="pumice-scheduler", recreate=True))
    objs.append(_deployment(
        service, namespace, image,
        ["webhook", "--tls-cert-file", "/etc/pumice/tls/tls.crt", "--tls-private-key-file", "/etc/pumice/tls/tls.key"],
        replicas=2, sa="pumice-webhook",
        probe={"httpGet": {"path": "/healthz", "port": 8443, "scheme": "HTTPS"}},
        ports=[{"name": "https", "containerPort": 8443}],
        volumes=[{"name": "tls", "secret": {"secretName": f"{service}-tls"}}],
        mounts=[{"name": "tls", "mountPath": "/etc/pumice/tls", "readOnly": True}]))
    objs += webhook_configurations(default_webhooks(), namespace=namespace, service=service, ca_bundle=cert)
    return objs


@click.command(name="install")
@click.option("--print", "print_", is_flag=True,
              help="Print the manifests (YAML) to stdout, for `kubectl apply --server-side -f -` (required: "
              "pumice never changes a cluster by itself).")
@click.option("--namespace", default="pumice-system", show_default=True)
@click.option("--image", default="pumice:0.1.0", show_default=True, help="The image built from the Containerfile.")
@click.option("--batch-scheduler", type=click.Choice(["volcano", "none"]), default="volcano", show_default=True)
def command(print_: bool, namespace: str, image: str, batch_scheduler: str) -> None:
    """Print the manifests that install pumice's operator, scheduler and webhook on a cluster."""
    if not print_:
        raise click.UsageError("pass --print and apply the output: pumice install --print | kubectl apply --server-side -f -")
    from pumice.api.validation import is_dns1123_label

    problems = is_dns1123_label(namespace)
    if problems:
        raise click.BadParameter(f"{namespace!r}: {'; '.join(problems)}", param_hint="--namespace")
    if not image.strip():
        raise click.BadParameter("an image name is required", param_hint="--image")
    objs = manifests(namespace=namespace, image=image, batch_scheduler=batch_scheduler)
    # libyaml's emitter (PyYAML's wheels ship it): the pure-Python one takes seconds over the CRDs
    click.echo(yaml.dump_all(objs, Dumper=yaml.CSafeDumper, sort_keys=False), nl=False)
