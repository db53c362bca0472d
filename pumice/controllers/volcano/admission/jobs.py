"""Admission for Volcano Jobs (``batch.volcano.sh/v1alpha1`` ``jobs``).

Three plugins, in the order the API server runs them:

- :class:`JobMutator` (``mutatejob.volcano.sh``, CREATE): queue ``default``, schedulerName
  ``volcano``, maxRetry 3, task names ``default<i>``, task minAvailable = replicas (or
  minPartitions x partitionSize), task maxRetry 3, hostNetwork dnsPolicy, job minAvailable =
  sum of task minAvailable, and the ``svc``/``ssh`` plugins the framework plugins need.
- :class:`JobValidator` (``validatejob.volcano.sh``, CREATE and UPDATE): the webhook's checks
  with its messages (tasks present, minAvailable <= replicas, unique task names, policies, pod
  names, templates, partition policy, job name, job minAvailable <= total replicas, plugins,
  volumes, target queue exists/Open/not root/leaf, dependsOn is a DAG).
- :class:`JobPolicyValidator` (``job-validation-policy``): the basic numeric and name checks that
  upstream ships as a ValidatingAdmissionPolicy (minAvailable, maxRetry, ttl, replicas >= 0; task
  names are DNS-1123 labels), with the VAP message wording (HTTP 422 Invalid).

Mirrors: volcano pkg/webhooks/admission/jobs/mutate/mutate_job.go,
pkg/webhooks/admission/jobs/validate/admit_job.go and util.go, and the job-validation-policy of
installer/volcano-development-vap.yaml.
"""

from __future__ import annotations

import copy
from typing import Any

from pumice.api.admission import AdmissionError, AdmissionRequest, ObjectReader
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.admission._common import (
    child_queues,
    deny,
    get_queue,
    is_kind,
    queue_state,
)
from pumice.controllers.volcano.admission._validation import (
    go_list,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    quantity_errors,
)
from pumice.controllers.volcano.job import builders

MUTATE_WEBHOOK = "mutatejob.volcano.sh"
VALIDATE_WEBHOOK = "validatejob.volcano.sh"
_FRAMEWORK_NEEDS_SVC = ("tensorflow", "mpi", "pytorch", "ray")
_MPI_DEFAULT_MASTER = "master"


def _is_job(req: AdmissionRequest) -> bool:
    return is_kind(req, "batch.volcano.sh", "jobs")


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


# ----------------------------------------------------------------------------------------------
# mutate


def mutate_job(job: dict[str, Any], scheduler_name: str = keys.DEFAULT_SCHEDULER_NAME) -> None:
    """Apply the CREATE defaults of ``mutatejob.volcano.sh`` to ``job`` in place (pure)."""
    spec = job.setdefault("spec", {})
    if not spec.get("queue"):
        spec["queue"] = keys.DEFAULT_QUEUE
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name
    if not spec.get("maxRetry"):
        spec["maxRetry"] = keys.DEFAULT_MAX_RETRY
    for i, task in enumerate(spec.get("tasks") or []):
        if not task.get("name"):
            task["name"] = f"{keys.DEFAULT_TASK_SPEC}{i}"
        pod_spec = (task.get("template") or {}).get("spec") or {}
        if pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if task.get("minAvailable") is None:
            pp = task.get("partitionPolicy") or {}
            if _int(pp.get("minPartitions")) > 0:
                task["minAvailable"] = _int(pp.get("minPartitions")) * _int(pp.get("partitionSize"))
            else:
                task["minAvailable"] = _int(task.get("replicas"))
        if not task.get("maxRetry"):
            task["maxRetry"] = keys.DEFAULT_MAX_RETRY
    if not spec.get("minAvailable"):
        total = 0
        for task in spec.get("tasks") or []:
            ma = task.get("minAvailable")
            total += _int(ma) if ma is not None else _int(task.get("replicas"))
        spec["minAvailable"] = total
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        if any(p in plugins for p in _FRAMEWORK_NEEDS_SVC) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []


class JobMutator:
    """``mutatejob.volcano.sh``: defaults on CREATE."""

    name = MUTATE_WEBHOOK

    def __init__(self, scheduler_name: str = keys.DEFAULT_SCHEDULER_NAME) -> None:
        self.scheduler_name = scheduler_name

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_job(req) and req.operation == "CREATE"

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is not None:
            mutate_job(req.obj, self.scheduler_name)


# ----------------------------------------------------------------------------------------------
# validate (webhook)


def _event_list(policy: dict[str, Any]) -> list[str]:
    events = list(policy.get("events") or [])
    if policy.get("event"):
        events.append(policy["event"])
    out: list[str] = []
    for e in events:
        if e not in out:
            out.append(e)
    return out


def validate_policies(policies: list[dict[str, Any]], path: str) -> str:
    """The upstream ``validatePolicies`` errors joined as go-multierror prints them ("" if valid)."""
    errs: list[str] = []
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for policy in policies or []:
        has_event = bool(policy.get("event")) or bool(policy.get("events"))
        exit_code = policy.get("exitCode")
        if has_event and exit_code is not None:
            errs.append("must not specify event and exitCode simultaneously")
            break
        if not has_event and exit_code is None:
            errs.append("either event and exitCode should be specified")
            break
        if has_event:
            bad = False
            for event in _event_list(policy):
                if event not in keys.POLICY_EVENTS:
                    errs.append(f"{path}: Invalid value: \"{event}\": invalid policy event")
                    bad = True
                    break
                action = policy.get("action") or ""
                if action not in keys.POLICY_ACTIONS:
                    errs.append(f"{path}: Invalid value: \"{action}\": invalid policy action")
                    bad = True
                    break
                if event in seen_events:
                    errs.append(f"duplicate event {event}  across different policy")
                    bad = True
                    break
                seen_events.add(event)
            if bad:
                break
        else:
            code = _int(exit_code)
            if code == 0:
                errs.append("0 is not a valid error code")
                break
            if code in seen_codes:
                errs.append(f"duplicate exitCode {code}")
                break
            seen_codes.add(code)
    if keys.Event.ANY in seen_events and len(seen_events) > 1:
        errs.append("if there's * here, no other policy should be here")
    if not errs:
        return ""
    if len(errs) == 1:
        return f"1 error occurred:\n\t* {errs[0]}\n\n"
    body = "".join(f"\t* {e}\n" for e in errs)
    return f"{len(errs)} errors occurred:\n{body}\n"


def _valid_events_actions() -> str:
    return (f" valid events are {go_list([str(e) for e in keys.POLICY_EVENTS])}, "
            f"valid actions are {go_list([str(a) for a in keys.POLICY_ACTIONS])};")


def _validate_network_topology(nt: Any) -> str:
    if isinstance(nt, dict) and nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        return "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"
    return ""


def _validate_partition_policy(task: dict[str, Any], job_name: str) -> str:
    pp = task.get("partitionPolicy")
    if not isinstance(pp, dict):
        return ""
    name = task.get("name", "")
    total, size = _int(pp.get("totalPartitions")), _int(pp.get("partitionSize"))
    min_parts, replicas = _int(pp.get("minPartitions")), _int(task.get("replicas"))
    msg = ""
    if total <= 0:
        msg = f"'TotalPartitions' must be greater than 0 in task: {name}, job: {job_name}"
    elif size <= 0:
        msg = f"'PartitionSize' must be greater than 0 in task: {name}, job: {job_name}"
    elif replicas != total * size:
        msg = f"'Replicas' are not equal to TotalPartitions*PartitionSize in task: {name}, job: {job_name}"
    elif task.get("minAvailable") is not None and min_parts > 0 and min_parts * size != _int(task["minAvailable"]):
        msg = f"'MinAvailable' is not equal to MinPartitions*PartitionSize in task: {name}, job: {job_name}"
    return msg + _validate_network_topology(pp.get("networkTopology"))


_RESTART_POLICIES = ("Always", "OnFailure", "Never")


def validate_pod_template(task: dict[str, Any], index: int) -> str:
    """A subset of Kubernetes ``ValidatePodTemplate`` (containers present, named, unique, with
    valid resource quantities; restartPolicy) plus the NUMA topologyPolicy integer-cpu rule."""
    errs: list[str] = []
    tmpl = task.get("template")
    spec = (tmpl or {}).get("spec") if isinstance(tmpl, dict) else None
    base = "template.spec"
    if not isinstance(spec, dict):
        errs.append(f"{base}.containers: Required value")
        spec = {}
    containers = spec.get("containers") or []
    if isinstance(spec, dict) and spec and not containers:
        errs.append(f"{base}.containers: Required value")
    names: set[str] = set()
    for kind, ctrs in (("containers", containers), ("initContainers", spec.get("initContainers") or [])):
        for ci, c in enumerate(ctrs):
            p = f"{base}.{kind}[{ci}]"
            cname = c.get("name") or ""
            if not cname:
                errs.append(f"{p}.name: Required value")
            else:
                for m in is_dns1123_label(cname):
                    errs.append(f"{p}.name: Invalid value: \"{cname}\": {m}")
                if cname in names:
                    errs.append(f"{p}.name: Duplicate value: \"{cname}\"")
                names.add(cname)
            res = c.get("resources") or {}
            errs.extend(quantity_errors(res.get("requests"), f"{p}.resources.requests"))
            errs.extend(quantity_errors(res.get("limits"), f"{p}.resources.limits"))
    rp = spec.get("restartPolicy")
    if rp and rp not in _RESTART_POLICIES:
        errs.append(f"{base}.restartPolicy: Unsupported value: \"{rp}\": supported values: "
                    "\"Always\", \"OnFailure\", \"Never\"")
    if errs:
        return f"spec.task[{index}]." + "".join(e + ". " for e in errs)
    tp = task.get("topologyPolicy")
    if tp and tp != "none":
        from pumice.api.quantity import milli_value

        for ci, c in enumerate([*containers, *(spec.get("initContainers") or [])]):
            res = c.get("resources") or {}
            req = res.get("requests") or res.get("limits") or {}
            cpu = req.get("cpu")
            try:
                millis = milli_value(cpu) if cpu is not None else 0
            except Exception:
                millis = 0
            if millis == 0 or millis % 1000 != 0:
                return f"the cpu request isn't an integer in spec.task[{index}] container[{ci}]."
    return ""


def _validate_volumes(volumes: list[dict[str, Any]]) -> str:
    """The first problem of ``spec.volumes`` ("" when none). Mirrors: volcano
    pkg/webhooks/admission/jobs/validate/util.go validateIO."""
    seen: set[str] = set()
    for v in volumes or []:
        mp = v.get("mountPath") or ""
        if not mp:
            return " mountPath is required;"
        if mp in seen:
            return f" duplicated mountPath: {mp};"
        if v.get("volumeClaim") is None and not v.get("volumeClaimName"):
            return " either VolumeClaim or VolumeClaimName must be specified;"
        if v.get("volumeClaimName") and v.get("volumeClaim") is not None:
            return ("conflict: If you want to use an existing PVC, just specify VolumeClaimName."
                    "If you want to create a new PVC, you do not need to specify VolumeClaimName")
        if v.get("volumeClaimName"):
            errs = is_dns1123_subdomain(str(v["volumeClaimName"]))
            if errs:
                return f"invalid VolumeClaimName {v['volumeClaimName']} : {go_list(errs)}"
        seen.add(mp)
    return ""


def _is_dag(tasks: list[dict[str, Any]]) -> bool:
    names = [t.get("name", "") for t in tasks]
    indeg = dict.fromkeys(names, 0)
    edges: dict[str, list[str]] = {}
    for t in tasks:
        for dep in ((t.get("dependsOn") or {}).get("name") or []):
            edges.setdefault(dep, []).append(t.get("name", ""))
            indeg[t.get("name", "")] = indeg.get(t.get("name", ""), 0) + 1
    stack = [n for n in names if indeg.get(n, 0) == 0]
    done = 0
    while stack:
        n = stack.pop()
        done += 1
        for m in edges.get(n, []):
            indeg[m] -= 1
            if indeg[m] == 0:
                stack.append(m)
    return done == len(names)


def validate_job_spec(job: dict[str, Any]) -> str:
    """The reader-free part of ``validateJobCreate``: the message ("" when valid)."""
    spec = job.get("spec") or {}
    name = (job.get("metadata") or {}).get("name", "")
    tasks = builders.tasks(job)
    if not tasks:
        return "No task specified in job spec"
    plugins = spec.get("plugins") or {}
    if "mpi" in plugins:
        master = _MPI_DEFAULT_MASTER
        for arg in plugins.get("mpi") or []:
            if isinstance(arg, str) and arg.startswith("--master="):
                master = arg.split("=", 1)[1]
        if master not in [t.get("name") for t in tasks]:
            return "The specified mpi master task was not found"
    b: list[str] = [_validate_network_topology(spec.get("networkTopology"))]
    names: set[str] = set()
    total = 0
    for i, task in enumerate(tasks):
        tname = task.get("name", "")
        ma = task.get("minAvailable")
        if ma is not None and _int(ma) > _int(task.get("replicas")):
            b.append(f" 'minAvailable' is greater than 'replicas' in task: {tname}, job: {name};")
        total += _int(task.get("replicas"))
        if tname in names:
            b.append(f" duplicated task name {tname};")
            break
        names.add(tname)
        perr = validate_policies(task.get("policies") or [], "spec.tasks.policies")
        if perr:
            b.append(perr + _valid_events_actions())
        pod_name = f"{name}-{tname}-{i}"
        qerrs = is_qualified_name(pod_name)
        if qerrs:
            b.append(f"create pod with name {pod_name} validate failed {go_list(qerrs)};")
        b.append(validate_pod_template(task, i))
        b.append(_validate_partition_policy(task, name))
    qerrs = is_qualified_name(name)
    if qerrs:
        b.append(f"create job with name {name} validate failed {go_list(qerrs)}")
    if total < _int(spec.get("minAvailable")):
        b.append(" job 'minAvailable' should not be greater than total replicas in tasks;")
    perr = validate_policies(spec.get("policies") or [], "spec.policies")
    if perr:
        b.append(perr + _valid_events_actions())
    for pname in plugins:
        if pname not in keys.JOB_PLUGINS:
            b.append(f" unable to find job plugin: {pname};")
    b.append(_validate_volumes(spec.get("volumes") or []))
    return "".join(b)


async def validate_job_queue(job: dict[str, Any], reader: ObjectReader) -> str:
    """The queue part of ``validateJobCreate`` ("" when the queue is an Open leaf)."""
    qname = (job.get("spec") or {}).get("queue") or keys.DEFAULT_QUEUE
    queue = await get_queue(reader, qname)
    if queue is None:
        return f' unable to find job queue: queue.scheduling.volcano.sh "{qname}" not found;'
    b = ""
    state = queue_state(queue)
    if state != keys.QueueState.OPEN:
        b += f" can only submit job to queue with state `Open`, queue `{qname}` status is `{state}`;"
    if qname == keys.ROOT_QUEUE:
        b += " can not submit job to root queue;"
    else:
        children = await child_queues(reader, qname)
        if children:
            b += f" can only submit job to leaf queue, queue `{qname}` has {len(children)} child queues;"
    return b


def validate_job_update(old: dict[str, Any], new: dict[str, Any]) -> str:
    """``validateJobUpdate``: the error message ("" when the update is allowed)."""
    total = 0
    for task in builders.tasks(new):
        tname = task.get("name", "")
        if _int(task.get("replicas")) < 0:
            return f"'replicas' must be >= 0 in task: {tname}"
        ma = task.get("minAvailable")
        if ma is not None:
            if _int(ma) < 0:
                return f"'minAvailable' must be >= 0 in task: {tname}"
            if _int(ma) > _int(task.get("replicas")):
                return f"'minAvailable' must be <= 'replicas' in task: {tname}"
        msg = _validate_partition_policy(task, (new.get("metadata") or {}).get("name", ""))
        if msg:
            return msg
        total += _int(task.get("replicas"))
    nspec, ospec = new.get("spec") or {}, old.get("spec") or {}
    if _int(nspec.get("minAvailable")) > total:
        return "job 'minAvailable' must not be greater than total replicas"
    if _int(nspec.get("minAvailable")) < 0:
        return "job 'minAvailable' must be >= 0"
    msg = _validate_network_topology(nspec.get("networkTopology"))
    if msg:
        return msg
    if len(builders.tasks(old)) != len(builders.tasks(new)):
        return "job updates may not add or remove tasks"
    a, b = copy.deepcopy(nspec), copy.deepcopy(ospec)
    for s in (a, b):
        s.pop("minAvailable", None)
        s.pop("priorityClassName", None)
        for t in s.get("tasks") or []:
            t.pop("replicas", None)
            t.pop("minAvailable", None)
        for v in s.get("volumes") or []:
            if v.get("volumeClaim") is not None:
                v.pop("volumeClaimName", None)
    if a != b:
        return ("job updates may not change fields other than `minAvailable`, "
                "`tasks[*].replicas under spec` and `PriorityClassName`")
    return ""


class JobValidator:
    """``validatejob.volcano.sh``: CREATE and UPDATE checks with the webhook's messages."""

    name = VALIDATE_WEBHOOK

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_job(req) and req.operation in ("CREATE", "UPDATE")

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        job = req.obj or {}
        if req.operation == "CREATE":
            msg = validate_job_spec(job)
            if msg != "No task specified in job spec" and not msg.startswith("The specified mpi"):
                msg += await validate_job_queue(job, reader)
                msg += _dag_message(job)
            if msg.strip():
                raise deny(self.name, msg)
        else:
            if req.old is not None and _spec_changed(req.old, job):
                msg = validate_job_update(req.old, job)
                if msg:
                    raise deny(self.name, msg)


def _spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return (old.get("spec") or {}) != (new.get("spec") or {})


def _dag_message(job: dict[str, Any]) -> str:
    tasks = builders.tasks(job)
    if any(t.get("dependsOn") for t in tasks) and not _is_dag(tasks):
        return " job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);"
    return ""


# ----------------------------------------------------------------------------------------------
# validating admission policy (basic checks)

POLICY_NAME = "job-validation-policy"


def policy_violation(job: dict[str, Any]) -> str:
    """The first failing basic rule of the upstream job-validation-policy ("" if none)."""
    spec = job.get("spec") or {}
    if "minAvailable" in spec and _int(spec.get("minAvailable")) < 0:
        return "job 'minAvailable' must be >= 0"
    if "maxRetry" in spec and _int(spec.get("maxRetry")) < 0:
        return "'maxRetry' cannot be less than zero"
    if "ttlSecondsAfterFinished" in spec and _int(spec.get("ttlSecondsAfterFinished")) < 0:
        return "'ttlSecondsAfterFinished' cannot be less than zero"
    for task in builders.tasks(job):
        if is_dns1123_label(str(task.get("name", ""))):
            return ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                    f"(task name {task.get('name', '')!r})")
        if "replicas" in task and _int(task.get("replicas")) < 0:
            return "'replicas' < 0 in task"
        if task.get("minAvailable") is not None and _int(task.get("minAvailable")) < 0:
            return "'minAvailable' < 0 in task"
    return ""


class JobPolicyValidator:
    """The basic checks upstream ships as the ``job-validation-policy`` ValidatingAdmissionPolicy."""

    name = POLICY_NAME

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_job(req) and req.operation in ("CREATE", "UPDATE")

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        msg = policy_violation(req.obj or {})
        if msg:
            raise AdmissionError(
                f"ValidatingAdmissionPolicy '{POLICY_NAME}' with binding '{POLICY_NAME}-binding' "
                f"denied request: {msg}", code=422, reason="Invalid")
