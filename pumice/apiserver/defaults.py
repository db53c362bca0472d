"""Defaulting of built-in kinds on create and update, a subset of the API server's scheme defaults.

Each function changes the wire-form dict in place. Only the defaults that pumice's components and
kubectl users observe are set; others are left out on purpose.

Mirrors: kubernetes pkg/apis/core/v1/defaults.go (SetDefaults_Pod, SetDefaults_PodSpec,
SetDefaults_Container, SetDefaults_Service, SetDefaults_Namespace, SetDefaults_LimitRangeItem), pkg/apis/apps/v1/defaults.go,
pkg/apis/batch/v1/defaults.go, pkg/registry/batch/job/strategy.go (generateSelector).
"""

from __future__ import annotations

import base64

from pumice.api import Obj


def _container(c: Obj) -> None:
    image = str(c.get("image", ""))
    if "imagePullPolicy" not in c:
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        vf = env.get("valueFrom") if isinstance(env, dict) else None
        if isinstance(vf, dict) and isinstance(vf.get("fieldRef"), dict):
            vf["fieldRef"].setdefault("apiVersion", "v1")


def pod_spec(spec: Obj) -> None:
    """SetDefaults_PodSpec plus container defaults (a Pod's spec and every pod template's)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container(c)


def _requests_from_limits(c: Obj) -> None:
    """A container's ``resources.requests`` take each of its ``limits`` not requested."""
    res = c.get("resources")
    if not isinstance(res, dict):
        return
    limits = res.get("limits")
    if limits and isinstance(limits, dict):
        req = res.setdefault("requests", {})
        if isinstance(req, dict):
            for k, v in limits.items():
                req.setdefault(k, v)


def pod(obj: Obj) -> None:
    """SetDefaults_PodSpec, then what SetDefaults_Pod adds for a Pod only (pod templates keep
    both unset, as kube-apiserver returns them): each container's and init container's requests
    default to its limits, and ``enableServiceLinks`` to true.

    Mirrors: kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Pod."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        pod_spec(spec)
        for key in ("initContainers", "containers"):
            for c in spec.get(key) or []:
                if isinstance(c, dict):
                    _requests_from_limits(c)
        spec.setdefault("enableServiceLinks", True)


def _template(obj: Obj) -> None:
    tpl = obj.get("spec", {}).get("template")
    if isinstance(tpl, dict):
        tpl.setdefault("metadata", {})  # a Go struct: written as {} when empty
    if isinstance(tpl, dict) and isinstance(tpl.get("spec"), dict):
        pod_spec(tpl["spec"])


def service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for p in spec.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
            # an unset, 0 or "" targetPort is the port (Go writes 0 for unset)
            if "port" in p and p.get("targetPort") in (None, 0, ""):
                p["targetPort"] = p["port"]
    kind = spec.get("type")
    # ExternallyAccessible: LoadBalancer, NodePort, or ClusterIP with externalIPs
    externally = kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and spec.get("externalIPs"))
    if externally and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    # ipFamilies and ipFamilyPolicy are the allocator's (pumice.apiserver.servicealloc), as upstream


def deployment(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = strategy.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", "25%")
        ru.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(obj)


def replicaset(obj: Obj) -> None:
    obj.setdefault("spec", {}).setdefault("replicas", 1)
    _template(obj)


def pod_failure_policy(job_spec: Obj) -> None:
    """SetDefaults_PodFailurePolicyOnPodConditionsPattern on every pattern of a Job spec's (or a
    CronJob jobTemplate's) podFailurePolicy: an unset status is ``True``."""
    pfp = job_spec.get("podFailurePolicy")
    for rule in (pfp.get("rules") or []) if isinstance(pfp, dict) else []:
        for pattern in (rule.get("onPodConditions") or []) if isinstance(rule, dict) else []:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"


def job(obj: Obj) -> None:
    """Batch Job defaults (SetDefaults_Job: podReplacementPolicy ``Failed`` when a
    podFailurePolicy is set, else ``TerminatingOrFailed``; onPodConditions status ``True``;
    ``manualSelector`` false; a Job without labels gets its template's). The selector and the
    template labels keyed on the Job's uid come later, on create only
    (:func:`job_generate_selector`).

    A Job without labels gets its template's labels: SetDefaults_Job makes ``metadata.labels``
    the template's Go map; and a Job read back from storage is defaulted again, so clients see
    them (the generated ones too) even where the template had no labels when it was created."""
    spec = obj.setdefault("spec", {})
    md = obj.setdefault("metadata", {})
    completions_set = "completions" in spec
    if not completions_set and "parallelism" not in spec:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    # with backoffLimitPerIndex the Job-wide limit defaults to "none" (math.MaxInt32)
    spec.setdefault("backoffLimit", 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    # JobPodReplacementPolicy (on since 1.29): only Failed Pods are replaced under a podFailurePolicy
    pfp = spec.get("podFailurePolicy")
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed" if pfp is None else "Failed")
    pod_failure_policy(spec)
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    tpl = spec.setdefault("template", {})
    tpl_labels = (tpl.get("metadata") or {}).get("labels")
    if not md.get("labels") and isinstance(tpl_labels, dict) and tpl_labels:
        md["labels"] = dict(tpl_labels)
    _template(obj)


def job_generate_selector(obj: Obj) -> None:
    """A created Job's selector and template labels keyed on its uid
    (``batch.kubernetes.io/controller-uid``, added to a selector given, and
    ``batch.kubernetes.io/job-name``, ``controller-uid``, ``job-name``), unless
    ``spec.manualSelector`` is true or the Job has no uid yet. A Job whose labels are its
    template's (:func:`job`: upstream shares the one map) shows the generated labels too.

    Mirrors: kubernetes pkg/registry/batch/job/strategy.go (PrepareForCreate, generateSelector).
    Deviates: a Job given labels equal to its template's gets the generated ones as well
    (upstream's maps are then two, and the Job's stay as given)."""
    spec = obj.setdefault("spec", {})
    md = obj.setdefault("metadata", {})
    uid, name = md.get("uid", ""), md.get("name", "")
    if spec.get("manualSelector") or not uid:
        return
    tpl = spec.setdefault("template", {})
    labels = tpl.setdefault("metadata", {}).setdefault("labels", {})
    shared = not md.get("labels") or md.get("labels") == labels
    labels.setdefault("batch.kubernetes.io/controller-uid", uid)
    labels.setdefault("batch.kubernetes.io/job-name", name)
    labels.setdefault("controller-uid", uid)
    labels.setdefault("job-name", name)
    # generateSelector: the controller-uid label is added to the selector given (an empty one
    # too: it then selects this Job's Pods only), or makes the selector when there is none
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    if not isinstance(selector.get("matchLabels"), dict):
        selector["matchLabels"] = {}
    selector["matchLabels"].setdefault("batch.kubernetes.io/controller-uid", uid)
    if shared:
        md["labels"] = dict(labels)


def namespace(obj: Obj) -> None:
    md = obj.setdefault("metadata", {})
    md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md.get("name", "")


def secret(obj: Obj) -> None:
    """SetDefaults_Secret: an unset or empty type is Opaque. And the v1 conversion: ``stringData``
    is write-only, merged into ``data`` (base64; a key in both takes the stringData value) and
    never stored or returned (Convert_v1_Secret_To_core_Secret). Values are strings here: the
    typed check before refused the rest."""
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        old = obj.get("data")
        data: dict[str, str] = old if isinstance(old, dict) else {}
        obj["data"] = {**data, **{k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()}}


def limit_range(obj: Obj) -> None:
    """SetDefaults_LimitRangeItem, for each ``Container`` item: a ``max`` with no ``default``
    becomes the default limit, a ``default`` with no ``defaultRequest`` the default request, and a
    ``min`` with neither the default request (empty maps stay unset, as Go's omitempty)."""
    spec = obj.get("spec")
    for item in (spec.get("limits") if isinstance(spec, dict) else None) or []:
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        request = dict(item.get("defaultRequest") or {})
        for source, target in ((item.get("max"), default), (default, request), (item.get("min"), request)):
            for k, v in (source or {}).items():
                target.setdefault(k, v)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


def custom_resource_definition(obj: Obj) -> None:
    """SetDefaults_CustomResourceDefinitionSpec (apiextensions v1): ``names.singular`` (the kind
    lower-cased), ``names.listKind`` (``<Kind>List``), ``conversion: {strategy: None}``."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and names.get("kind"):
        if not names.get("singular"):
            names["singular"] = str(names["kind"]).lower()
        if not names.get("listKind"):
            names["listKind"] = f"{names['kind']}List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}


def priority_class(obj: Obj) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


def pod_qos_class(pod_obj: Obj) -> str:
    """Guaranteed / Burstable / BestEffort from cpu and memory requests and limits.

    Mirrors: kubernetes pkg/apis/core/helper/qos/qos.go GetPodQOS (without pod-level resources).
    """
    containers = list(pod_obj.get("spec", {}).get("containers") or []) + list(
        pod_obj.get("spec", {}).get("initContainers") or []
    )
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for r in ("cpu", "memory"):
            if r in req or r in lim:
                any_set = True
            if r not in lim or (r in req and str(req[r]) != str(lim[r])):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
