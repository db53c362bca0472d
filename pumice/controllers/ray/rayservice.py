"""The RayService controller: Serve applications on a RayCluster it owns, with zero-downtime
upgrades through a pending cluster.

One pass (kuberay-2.md §11.4): get; external ``managedBy`` → stop; drop serve-config cache entries
of clusters no longer active or pending; dangling-cluster GC; deletion (finalizer); add the
finalizer; validate (Warning event + ``Ready`` False/``ValidationFailed``, no requeue); the suspend
machine; the terminal initializing timeout; find/create/update the active and pending RayClusters;
the head Pods' ``ray.io/serve`` label; Serve applications (PUT when the last-applied cache differs);
point ``<rs>-head-svc`` and the serve Service at the ready cluster; compute the status (promotion,
new pending name, endpoints, conditions) and write it once when it changed. Every pass requeues
2 s except where §11.3 says not.

In memory only (as upstream): the serve-config cache (``ns/name`` → cluster → last PUT config) and
the dangling clusters' deletion times.

Mirrors: kuberay ray-operator/controllers/ray/rayservice_controller.go (Reconcile, handleSuspend,
cleanUpRayClusterInstance, reconcileRayCluster, shouldUpdateCluster, shouldPrepareNewCluster,
updateHeadPodServeLabel, reconcileServe, getAndCheckServeStatus, checkIfNeedSubmitServeApplications,
reconcileServices, reconcilePromotionAndServingStatus, calculateStatus, calculateConditions,
markFailedOnInitializingTimeout) and utils/consistency.go InconsistentRayServiceStatuses.

Deviates:
- ``NewClusterWithIncrementalUpgrade`` runs as upstream does with the ``RayServiceIncrementalUpgrade``
  gate off: it validates, and a spec change is then not rolled out (no Gateway API here).
- Where upstream panics (the two Services select different clusters, or a cluster that is neither
  active nor pending) this logs and requeues.
- The dangling-cluster deletion times are keyed by namespace and name (upstream: name only).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import random
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from pumice._util.clock import Clock, default_clock, parse_rfc3339, rfc3339
from pumice._util.duration import go_duration_string
from pumice.api import Obj, scheme, yamlsafe
from pumice.api import meta as m
from pumice.api.godecode import go_json_value
from pumice.api.ray.constants import (
    ApplicationStatus,
    RayServiceConditionReason,
    RayServiceConditionType,
    RayServiceUpgradeType,
    ServiceStatus,
)
from pumice.client.base import KubeClient, get_or_none, is_not_found
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.cluster_service import reconcile_cluster_service
from pumice.controllers.ray.common import rayservice as rsb
from pumice.controllers.ray.common import service as svcb
from pumice.controllers.ray.dashboard import (
    DashboardClientFactory,
    ServeProxyHealthCheck,
    dashboard_client_for,
    http_dashboard_client_factory,
    http_serve_proxy_healthy,
)
from pumice.controllers.ray.raycluster import EventRecorder, NullRecorder
from pumice.controllers.ray.validation import (
    ValidationError,
    initializing_timeout_seconds,
    validate_rayservice_metadata,
    validate_rayservice_spec,
)
from pumice.controllers.ray.wiring import PRIMARY_PREDICATE, event_recorder
from pumice.runtime.reconcile import Request, Result

if TYPE_CHECKING:
    from pumice.controllers.ray.options import RayOperatorOptions

log = logging.getLogger(__name__)

COND = RayServiceConditionType
REASON = RayServiceConditionReason
SERVE_CONFIG_CACHE_SIZE = 1000


@dataclass(frozen=True)
class RayServiceOptions:
    """Operator-wide switches.

    Attributes:
        requeue_seconds: ``ServiceDefaultRequeueDuration`` (2 s).
        enable_zero_downtime: env ``ENABLE_ZERO_DOWNTIME`` (default on; used when
            ``upgradeStrategy.type`` is unset).
        kuberay_version: written to ``ray.io/kuberay-version``; a different value on the active
            cluster triggers an in-place update.
        cluster_domain: for the dashboard URL ``<head-svc>.<ns>.svc.<domain>:<port>``.
    """

    requeue_seconds: float = c.RAYSERVICE_DEFAULT_REQUEUE_SECONDS
    enable_zero_downtime: bool = True
    kuberay_version: str = c.KUBERAY_VERSION
    cluster_domain: str = c.DEFAULT_CLUSTER_DOMAIN
    service: svcb.ServiceOptions = svcb.DEFAULT_SERVICE_OPTIONS

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> RayServiceOptions:
        """``ENABLE_ZERO_DOWNTIME=false`` (case-insensitive) turns zero-downtime off."""
        env = dict(os.environ) if env is None else env
        return cls(enable_zero_downtime=env.get("ENABLE_ZERO_DOWNTIME", "").lower() != "false")


@dataclass
class _Observed:
    """What one pass learned about the Serve applications of the clusters it queried."""

    active_ready: bool = False
    pending_ready: bool = False
    active_apps: Obj | None = None
    pending_apps: Obj | None = None
    head_svc: Obj | None = None
    serve_svc: Obj | None = None


def _status(rs: Obj) -> Obj:
    st: Obj = rs.setdefault("status", {})
    return st


def _side(rs: Obj, which: str) -> Obj:
    side: Obj = _status(rs).setdefault(which, {})
    return side


def _name_of(rs: Obj, which: str) -> str:
    return str(((rs.get("status") or {}).get(which) or {}).get("rayClusterName") or "")


def _has_true(rs: Obj, ctype: str) -> bool:
    return m.is_condition_true(rs.get("status") or {}, ctype)


def _apps_key(apps: Obj | None) -> Any:
    out = []
    for name, app in sorted((apps or {}).items()):
        deps = sorted((d, (v or {}).get("status", ""), (v or {}).get("message", ""))
                      for d, v in ((app or {}).get("serveDeploymentStatuses") or {}).items())
        out.append((name, (app or {}).get("status", ""), (app or {}).get("message", ""), deps))
    return out


def inconsistent_rayservice_status(old: Obj, new: Obj) -> bool:
    """Whether ``new`` differs from ``old`` in a field worth a write: serviceStatus,
    numServeEndpoints, conditions (type/status/reason/message/lastTransitionTime), and per side the
    cluster name and the application/deployment statuses and messages.

    Mirrors: utils/consistency.go InconsistentRayServiceStatuses (rayClusterStatus and
    observedGeneration alone do not cause a write)."""
    if (old.get("serviceStatus") or "") != (new.get("serviceStatus") or ""):
        return True
    if int(old.get("numServeEndpoints") or 0) != int(new.get("numServeEndpoints") or 0):
        return True

    def conds(st: Obj) -> Any:
        return sorted((x.get("type", ""), x.get("status", ""), x.get("reason", ""), x.get("message", ""),
                       x.get("lastTransitionTime", "")) for x in st.get("conditions") or [])

    if conds(old) != conds(new):
        return True
    for which in ("activeServiceStatus", "pendingServiceStatus"):
        a, b = old.get(which) or {}, new.get(which) or {}
        if (a.get("rayClusterName") or "") != (b.get("rayClusterName") or ""):
            return True
        if _apps_key(a.get("applicationStatuses")) != _apps_key(b.get("applicationStatuses")):
            return True
    return False


def apps_from_serve_details(details: Obj) -> tuple[bool, Obj]:
    """``(ready, applicationStatuses)`` from ``GET /api/serve/applications/?api_type=declarative``:
    ready iff at least one application and every one ``RUNNING``; app name ``""`` is stored as
    ``default``.

    Mirrors: getAndCheckServeStatus."""
    apps: Obj = {}
    ready = True
    for name, app in sorted(((details or {}).get("applications") or {}).items()):
        app = app or {}
        status = str(app.get("status") or "")
        if status != ApplicationStatus.RUNNING:
            ready = False
        deps = {d: {"status": str((v or {}).get("status") or ""), "message": str((v or {}).get("message") or "")}
                for d, v in sorted((app.get("deployments") or {}).items())}
        apps[name or c.DEFAULT_SERVE_APP_NAME] = {"status": status, "message": str(app.get("message") or ""),
                                                  "serveDeploymentStatuses": deps}
    return ready and bool(apps), apps


def serve_config_of(text: str) -> Obj:
    """``serveConfigV2`` decoded as upstream decodes it (YAML into a map): the Serve config sent by
    ``PUT /api/serve/applications/``. An empty text is ``{}``.

    Raises:
        ValueError: not YAML, or YAML that is not a mapping (a string, a list), in
            sigs.k8s.io/yaml's words (``error converting YAML to JSON: yaml: line 1: did not find
            expected ',' or ']'``; ``error unmarshaling JSON: while decoding JSON: json: cannot
            unmarshal array into Go value of type map[string]interface {}``); the controller
            records it as a Warning Event ``FailedToUpdateServeApplications`` and retries.

    Mirrors: rayservice_controller.go updateServeDeployment (yaml.Unmarshal into map[string]any).
    """
    try:
        config = yamlsafe.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"error converting YAML to JSON: {yamlsafe.go_yaml_error(e, text)}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        # a YAML timestamp or other scalar becomes a JSON string on the way
        kind = go_json_value(config) if isinstance(config, list | bool | int | float | str) else "string"
        raise ValueError(f"error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {kind} into Go "
                         "value of type map[string]interface {}")
    return config


def need_submit_serve_applications(cached: str, current: str, apps: Obj) -> tuple[bool, str]:
    """Whether to PUT the Serve config, and why: nothing cached for the cluster; no application
    reported (a head restart without GCS FT); the cached config differs from ``serveConfigV2``.

    Mirrors: checkIfNeedSubmitServeApplications."""
    if not cached:
        return True, "Nothing has been cached for the cluster."
    if not apps:
        return True, ("No Serve application found in the RayCluster. A possible reason is that the head Pod "
                      "crashed and GCS FT was not enabled.")
    if cached != current:
        return True, "Current V2 Serve config doesn't match cached Serve config."
    return False, "Current V2 Serve config matches cached Serve config."


def is_zero_downtime_enabled(rs: Obj, default: bool) -> bool:
    """kuberay-2.md §11.8 table (incremental runs as the gate-off case)."""
    utype = ((rs.get("spec") or {}).get("upgradeStrategy") or {}).get("type")
    if utype == RayServiceUpgradeType.NEW_CLUSTER:
        return True
    if utype in (RayServiceUpgradeType.NONE, RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE):
        return False
    return default


class RayServiceReconciler:
    """Reconciles ``ray.io/v1`` RayService (see module docstring).

    Args:
        client: the API client.
        dashboard_client_factory: ``(ray_cluster, dashboard_url) -> RayDashboardClient``.
        serve_proxy_healthy: ``(head Pod, port) -> bool`` for the head Pod's ``ray.io/serve`` label.
        rng: seeded generator for pending cluster names (``<rs>-<5 alnum>``).
    """

    def __init__(self, client: KubeClient, *, recorder: EventRecorder | None = None, clock: Clock | None = None,
                 dashboard_client_factory: DashboardClientFactory | None = None,
                 serve_proxy_healthy: ServeProxyHealthCheck | None = None,
                 options: RayServiceOptions = RayServiceOptions(), rng: random.Random | None = None) -> None:
        self.client = client
        self.recorder: EventRecorder = recorder or NullRecorder()
        self.clock = clock or default_clock()
        self.dashboard_client_factory = dashboard_client_factory or http_dashboard_client_factory
        self.serve_proxy_healthy = serve_proxy_healthy or http_serve_proxy_healthy
        self.options = options
        self.rng = rng or random.Random()
        self.serve_configs: OrderedDict[str, dict[str, str]] = OrderedDict()
        self.deletion_times: dict[tuple[str, str], float] = {}

    @classmethod
    def setup_with_manager(cls, mgr: Any, opts: RayOperatorOptions) -> RayServiceReconciler:
        """Build the reconciler and register controller ``rayservice``: RayServices (spec, label
        and annotation changes), owned RayClusters and Services.

        Mirrors: rayservice_controller.go SetupWithManager."""
        rs = cls(mgr.client, recorder=event_recorder(mgr, "rayservice-controller"), clock=getattr(mgr, "clock", None),
                 dashboard_client_factory=opts.dashboard_client_factory, serve_proxy_healthy=opts.serve_proxy_healthy,
                 options=opts.rayservice or RayServiceOptions.from_env(), rng=opts.child_rng())
        (opts.controller(mgr, "rayservice").for_(scheme.RAY_SERVICE, PRIMARY_PREDICATE).owns(scheme.RAY_CLUSTER)
            .owns(scheme.SERVICE).with_options(max_concurrent_reconciles=opts.reconcile_concurrency).complete(rs))
        return rs

    def _requeue(self) -> Result:
        return Result(requeue_after=self.options.requeue_seconds)

    def _event(self, rs: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(rs, type_, reason, message)

    def _now_str(self) -> str:
        return rfc3339(self.clock.now())

    def _set(self, rs: Obj, ctype: str, status: str, reason: str, message: str) -> None:
        st = _status(rs)
        m.set_condition(st, {"type": ctype, "status": status, "reason": reason, "message": message,
                             "observedGeneration": st.get("observedGeneration", 0)}, self._now_str())

    # --- entry -----------------------------------------------------------------------------

    async def reconcile(self, req: Request) -> Result:
        try:
            rs = await self.client.get(scheme.RAY_SERVICE, req.name, req.namespace)
        except Exception as e:
            if is_not_found(e):
                return Result()
            raise
        managed_by = (rs.get("spec") or {}).get("managedBy")
        if managed_by and managed_by != c.ManagedBy.KUBERAY_OPERATOR:
            return Result()
        original = copy.deepcopy(rs.get("status") or {})

        self._clean_up_serve_config_cache(rs)
        has_clusters_to_clean = await self._clean_up_dangling_clusters(rs)

        if rs["metadata"].get("deletionTimestamp"):
            if not has_clusters_to_clean:
                rs["metadata"]["finalizers"] = [f for f in rs["metadata"].get("finalizers") or []
                                                if f != c.RAYSERVICE_FINALIZER]
                await self.client.update(rs)
                self.serve_configs.pop(m.key(rs), None)
                return Result()
            return self._requeue()
        if c.RAYSERVICE_FINALIZER not in (rs["metadata"].get("finalizers") or []):
            rs["metadata"].setdefault("finalizers", []).append(c.RAYSERVICE_FINALIZER)
            await self.client.update(rs)
            return self._requeue()

        invalid = self._validate(rs)
        if invalid is not None:
            reason, err = invalid
            self._event(rs, "Warning", reason, f"{req.namespace}/{req.name}: {err}")
            self._set(rs, COND.READY, "False", REASON.VALIDATION_FAILED, str(err))
            _status(rs)["lastUpdateTime"] = self._now_str()
            await self.client.update_status(rs)
            return Result()

        result = await self._handle_suspend(rs)
        await self._write_status_if_changed(original, rs)
        if result is not None:
            return result
        original = copy.deepcopy(rs.get("status") or {})

        ready_cond = m.get_condition(rs.get("status") or {}, COND.READY)
        if ready_cond and ready_cond.get("status") == "False" and ready_cond.get("reason") == REASON.INITIALIZING_TIMEOUT:
            return self._requeue() if has_clusters_to_clean else Result()

        active, pending = await self._reconcile_ray_cluster(rs)
        obs = _Observed()
        await self._update_head_pod_serve_label(rs, active)
        await self._update_head_pod_serve_label(rs, pending)

        if pending is not None:
            obs.pending_ready, obs.pending_apps = await self._reconcile_serve(rs, pending)
        if active is not None and pending is None and not self._should_prepare_new_cluster(rs, active, None, False):
            obs.active_ready, obs.active_apps = await self._reconcile_serve(rs, active)

        if obs.pending_ready or obs.active_ready:
            target = pending if obs.pending_ready else active
            assert target is not None
            obs.head_svc = await self._reconcile_service(
                rs, svcb.build_owner_head_service(rs, c.CRDType.RAY_SERVICE, target, self.options.service))
            obs.serve_svc = await self._reconcile_service(rs, self._build_serve_service(rs, target))

        await self._calculate_status(rs, active, pending, obs)
        await self._write_status_if_changed(original, rs)
        return self._requeue()

    @staticmethod
    def _validate(rs: Obj) -> tuple[str, ValidationError] | None:
        """``(event reason, error)`` of the first failing rule, None when valid."""
        try:
            validate_rayservice_metadata(rs)
        except ValidationError as e:
            return "InvalidRayServiceMetadata", e
        try:
            validate_rayservice_spec(rs)
        except ValidationError as e:
            return "InvalidRayServiceSpec", e
        return None

    async def _write_status_if_changed(self, original: Obj, rs: Obj) -> None:
        if not inconsistent_rayservice_status(original, rs.get("status") or {}):
            return
        _status(rs)["lastUpdateTime"] = self._now_str()
        updated = await self.client.update_status(rs)
        rs["metadata"] = updated.get("metadata", rs["metadata"])

    def _build_serve_service(self, rs: Obj, cluster: Obj) -> Obj:
        try:
            return rsb.build_serve_service(rs, cluster)
        except ValueError as e:
            self._event(rs, "Warning", "FailedToCreateService",
                        f"Failed to create the service {m.namespace(rs)}/{rsb.serve_service_name(rs)}, {e}")
            raise

    # --- serve-config cache and dangling clusters -------------------------------------------

    def _clean_up_serve_config_cache(self, rs: Obj) -> None:
        keep = {_name_of(rs, "activeServiceStatus"), _name_of(rs, "pendingServiceStatus")}
        cached = self.serve_configs.get(m.key(rs))
        if cached:
            for name in [n for n in cached if n not in keep]:
                del cached[name]

    def _cache_serve_config(self, rs: Obj, cluster_name: str) -> None:
        config = (rs.get("spec") or {}).get("serveConfigV2") or ""
        if not config:
            return
        key = m.key(rs)
        self.serve_configs.setdefault(key, {})[cluster_name] = config
        self.serve_configs.move_to_end(key)
        while len(self.serve_configs) > SERVE_CONFIG_CACHE_SIZE:
            self.serve_configs.popitem(last=False)

    async def _owned_clusters(self, rs: Obj) -> list[Obj]:
        sel = {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: m.name(rs),
               c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRDType.RAY_SERVICE.value}
        items = (await self.client.list(scheme.RAY_CLUSTER, m.namespace(rs),
                                        label_selector=assoc.selector_string(sel))).items
        return sorted(items, key=lambda x: x["metadata"]["name"])

    async def _clean_up_dangling_clusters(self, rs: Obj) -> bool:
        """Delete clusters that are neither active nor pending once their delay has passed (all of
        them, at once, while the RayService is being deleted). Returns whether any exist."""
        deleting = bool(rs["metadata"].get("deletionTimestamp"))
        delay = (rs.get("spec") or {}).get("rayClusterDeletionDelaySeconds")
        delay_s = 0.0 if deleting else float(c.RAYSERVICE_CLUSTER_DELETION_DELAY_SECONDS if delay is None else delay)
        keep = {_name_of(rs, "activeServiceStatus"), _name_of(rs, "pendingServiceStatus")} - {""}
        ns, now = m.namespace(rs), self.clock.now()
        found = False
        for cluster in await self._owned_clusters(rs):
            name = cluster["metadata"]["name"]
            if not deleting and name in keep:
                continue
            found = True
            due = self.deletion_times.get((ns, name))
            if due is None and not deleting:
                self.deletion_times[(ns, name)] = now + delay_s
                log.info("RayService %s: RayCluster %s scheduled for deletion in %ss", m.key(rs), name, delay_s)
                continue
            if not deleting and due is not None and now <= due:
                continue
            if cluster["metadata"].get("deletionTimestamp"):
                continue
            try:
                await self.client.delete(scheme.RAY_CLUSTER, name, ns, propagation_policy="Background")
            except Exception as e:
                if is_not_found(e):
                    continue
                self._event(rs, "Warning", "FailedToDeleteRayCluster",
                            f"Failed to delete the RayCluster {ns}/{name}: {e}")
                raise
            self._event(rs, "Normal", "DeletedRayCluster", f"Deleted the RayCluster {ns}/{name}")
        return found

    # --- suspend -----------------------------------------------------------------------------

    async def _handle_suspend(self, rs: Obj) -> Result | None:
        """The suspend machine of kuberay-2.md §11.5. Returns a Result when the pass must stop
        (Suspending or Suspended is operative), None to continue."""
        suspend = bool((rs.get("spec") or {}).get("suspend"))
        st = _status(rs)
        if _has_true(rs, COND.SUSPENDED):
            if suspend:
                return Result()
            st["observedGeneration"] = rs["metadata"].get("generation", 0)
            self._set(rs, COND.SUSPENDED, "False", REASON.RAY_SERVICE_RESUMED,
                      "Spec.Suspend is false; RayService has resumed.")
            for ctype in (COND.READY, COND.UPGRADE_IN_PROGRESS):
                m.remove_condition(st, ctype)
                self._set(rs, ctype, "False", REASON.INITIALIZING,
                          "RayService is initializing after resuming from suspend.")
            return None
        if not _has_true(rs, COND.SUSPENDING):
            if not suspend:
                return None
            st["observedGeneration"] = rs["metadata"].get("generation", 0)
            self._set(rs, COND.SUSPENDING, "True", REASON.SUSPEND_REQUESTED,
                      "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.")
            self._set(rs, COND.READY, "False", REASON.SUSPEND_IN_PROGRESS, "RayService is suspending.")
            self._set(rs, COND.UPGRADE_IN_PROGRESS, "False", REASON.SUSPEND_IN_PROGRESS, "No upgrade in progress.")
            self._set(rs, COND.ROLLBACK_IN_PROGRESS, "False", REASON.SUSPEND_IN_PROGRESS, "No rollback in progress.")
            st["activeServiceStatus"] = {}
            st["pendingServiceStatus"] = {}
            st["numServeEndpoints"] = 0
            st["serviceStatus"] = ServiceStatus.NOT_RUNNING.value
            return self._requeue()
        if not await self._delete_owned_resources(rs):
            self._set(rs, COND.SUSPENDING, "True", REASON.SUSPEND_IN_PROGRESS,
                      "Waiting for all Kubernetes resources owned by this RayService to be deleted.")
            return self._requeue()
        done = "All owned resources have been deleted."
        self._set(rs, COND.SUSPENDING, "False", REASON.SUSPEND_COMPLETE, done)
        self._set(rs, COND.SUSPENDED, "True", REASON.SUSPEND_COMPLETE, done)
        self._set(rs, COND.READY, "False", REASON.SUSPEND_COMPLETE, "RayService is suspended.")
        self._set(rs, COND.UPGRADE_IN_PROGRESS, "False", REASON.SUSPEND_COMPLETE, "No upgrade in progress.")
        self._set(rs, COND.ROLLBACK_IN_PROGRESS, "False", REASON.SUSPEND_COMPLETE, "No rollback in progress.")
        return self._requeue()

    async def _delete_owned_resources(self, rs: Obj) -> bool:
        """Delete (background) every RayCluster and Service labelled as this RayService's; True
        when none is left (terminating ones count as left)."""
        sel = assoc.selector_string({c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: m.name(rs),
                                     c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRDType.RAY_SERVICE.value})
        ns = m.namespace(rs)
        left = False
        for kind in (scheme.RAY_CLUSTER, scheme.SERVICE):
            for obj in (await self.client.list(kind, ns, label_selector=sel)).items:
                left = True
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    await self.client.delete(kind, obj["metadata"]["name"], ns, propagation_policy="Background")
                except Exception as e:
                    if not is_not_found(e):
                        raise
        return not left

    # --- clusters ------------------------------------------------------------------------------

    async def _get_cluster(self, ns: str, name: str) -> Obj | None:
        if not name:
            return None
        return await get_or_none(self.client, scheme.RAY_CLUSTER, name, ns)

    async def _reconcile_ray_cluster(self, rs: Obj) -> tuple[Obj | None, Obj | None]:
        ns = m.namespace(rs)
        active = await self._get_cluster(ns, _name_of(rs, "activeServiceStatus"))
        pending_name = _name_of(rs, "pendingServiceStatus")
        pending = await self._get_cluster(ns, pending_name)
        if pending_name and pending is None:
            goal = rsb.build_cluster_for_rayservice(rs, pending_name, self.options.kuberay_version)
            try:
                pending = await self.client.create(goal)
            except Exception as e:
                self._event(rs, "Warning", "FailedToCreateRayCluster",
                            f"Failed to create the RayCluster {ns}/{pending_name}: {e}")
                raise
            self._event(rs, "Normal", "CreatedRayCluster", f"Created the RayCluster {ns}/{pending_name}")
            return active, pending
        for which, cluster in (("active", active), ("pending", pending)):
            if cluster is None or not self._should_update_cluster(rs, cluster, which == "active"):
                continue
            goal = rsb.build_cluster_for_rayservice(rs, cluster["metadata"]["name"], self.options.kuberay_version)
            suspend = (cluster.get("spec") or {}).get("suspend")
            cluster["spec"] = goal["spec"]
            if suspend is not None:
                cluster["spec"]["suspend"] = suspend
            else:
                cluster["spec"].pop("suspend", None)
            cluster["metadata"]["labels"] = goal["metadata"]["labels"]
            cluster["metadata"]["annotations"] = goal["metadata"]["annotations"]
            name = cluster["metadata"]["name"]
            try:
                updated = await self.client.update(cluster)
            except Exception as e:
                self._event(rs, "Warning", "FailedToUpdateRayCluster",
                            f"Failed to update the {which} RayCluster {ns}/{name}: {e}")
                raise
            self._event(rs, "Normal", "UpdatedRayCluster", f"Updated the {which} RayCluster {ns}/{name}")
            if which == "active":
                active = updated
            else:
                pending = updated
        return active, pending

    def _should_update_cluster(self, rs: Obj, cluster: Obj, is_active: bool) -> bool:
        if is_active:
            if _has_true(rs, COND.UPGRADE_IN_PROGRESS):
                return False
            ann = cluster["metadata"].get("annotations") or {}
            if ann.get(c.KUBERAY_VERSION_KEY) != self.options.kuberay_version:
                return True
        if rsb.is_cluster_spec_hash_equal(rs, cluster, partial=False):
            return False
        return rsb.is_cluster_spec_hash_equal(rs, cluster, partial=True)

    def _should_prepare_new_cluster(self, rs: Obj, active: Obj | None, pending: Obj | None,
                                    pending_serving: bool) -> bool:
        if pending_serving or _has_true(rs, COND.ROLLBACK_IN_PROGRESS):
            return False
        if active is None and pending is None:
            return True
        cluster = pending if pending is not None else active
        assert cluster is not None
        if rsb.is_cluster_spec_hash_equal(rs, cluster, partial=False):
            return False
        if rsb.is_cluster_spec_hash_equal(rs, cluster, partial=True):
            return False
        return is_zero_downtime_enabled(rs, self.options.enable_zero_downtime)

    # --- head Pod serve label -------------------------------------------------------------------

    async def _update_head_pod_serve_label(self, rs: Obj, cluster: Obj | None) -> None:
        """Set ``ray.io/serve`` on the head Pod to whether its Serve proxy is healthy (``false``
        with ``excludeHeadPodFromServeSvc``). Raises LookupError when the cluster has no head Pod."""
        if cluster is None:
            return
        ns, cname = m.namespace(cluster), cluster["metadata"]["name"]
        heads = (await self.client.list(scheme.POD, ns, label_selector=assoc.selector_string(
            assoc.head_pods_selector(cname)))).items
        if not heads:
            raise LookupError(f"found 0 head. cluster name {cname}, namespace {ns}")
        head = heads[0]
        new = "false"
        if not (rs.get("spec") or {}).get("excludeHeadPodFromServeSvc"):
            container = (head.get("spec") or {}).get("containers", [{}])[c.RAY_CONTAINER_INDEX]
            port = next((int(p["containerPort"]) for p in container.get("ports") or []
                         if p.get("name") == c.SERVING_PORT_NAME), c.DEFAULT_SERVING_PORT)
            healthy = await self.serve_proxy_healthy(head, port)
            new = "true" if healthy else "false"
        labels = head["metadata"].setdefault("labels", {})
        if labels.get(c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY) == new:
            return
        labels[c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY] = new
        head.setdefault("apiVersion", "v1")
        head.setdefault("kind", "Pod")
        pname = head["metadata"]["name"]
        try:
            await self.client.update(head)
        except Exception as e:
            self._event(rs, "Warning", "FailedToUpdateHeadPodServeLabel",
                        f'Failed to update the serve label to "{new}" for the Head Pod {ns}/{pname}: {e}')
            raise
        self._event(rs, "Normal", "UpdatedHeadPodServeLabel",
                    f'Updated the serve label to "{new}" for the Head Pod {ns}/{pname}')

    # --- Serve applications --------------------------------------------------------------------

    async def _dashboard_url(self, cluster: Obj) -> str:
        ns = m.namespace(cluster)
        svc_name = assoc.head_service_name(cluster)
        svc = await self.client.get(scheme.SERVICE, svc_name, ns)
        for p in (svc.get("spec") or {}).get("ports") or []:
            if p.get("name") == c.DASHBOARD_PORT_NAME:
                return f"{svc_name}.{ns}.svc.{self.options.cluster_domain}:{p['port']}"
        raise LookupError(f"head Service {ns}/{svc_name} has no port named {c.DASHBOARD_PORT_NAME}")

    async def _reconcile_serve(self, rs: Obj, cluster: Obj) -> tuple[bool, Obj | None]:
        """Read the cluster's Serve applications and PUT ``serveConfigV2`` when the last-applied
        cache says so. Returns ``(ready, applicationStatuses)`` as read before the PUT; ``(False,
        None)`` while the head Pod is not ready.

        Raises:
            DashboardError: the dashboard did not answer (the pass is retried).
        """
        if not m.is_condition_true(cluster.get("status") or {}, c.RayClusterConditionType.HEAD_POD_READY):
            return False, None
        url = await self._dashboard_url(cluster)
        dash = await dashboard_client_for(self.client, self.dashboard_client_factory, cluster, url)
        details = await dash.get_serve_details()
        ready, apps = apps_from_serve_details(details)
        cname, ns = cluster["metadata"]["name"], m.namespace(cluster)
        current = (rs.get("spec") or {}).get("serveConfigV2") or ""
        cached = (self.serve_configs.get(m.key(rs)) or {}).get(cname, "")
        submit, why = need_submit_serve_applications(cached, current, apps)
        if submit:
            log.info("RayService %s: submitting Serve applications to %s: %s", m.key(rs), cname, why)
            try:
                config = serve_config_of(current)
                await dash.update_deployments(json.loads(json.dumps(config)))
            except Exception as e:
                self._event(rs, "Warning", "FailedToUpdateServeApplications",
                            f"Failed to update serve applications to the RayCluster {ns}/{cname}: {e}")
                raise
            self._cache_serve_config(rs, cname)
            self._event(rs, "Normal", "UpdatedServeApplications",
                        f"Updated serve applications to the RayCluster {ns}/{cname}")
        return ready, apps

    # --- Services ------------------------------------------------------------------------------

    async def _reconcile_service(self, rs: Obj, want: Obj) -> Obj:
        return await reconcile_cluster_service(self.client, self.recorder, rs, want)

    # --- status --------------------------------------------------------------------------------

    def _promote(self, rs: Obj, obs: _Observed) -> bool:
        """Promotion when both Services select a cluster other than the active one. Returns
        whether the pending cluster is serving."""
        assert obs.head_svc is not None and obs.serve_svc is not None
        points_to = ((obs.head_svc.get("spec") or {}).get("selector") or {}).get(c.RAY_CLUSTER_LABEL_KEY, "")
        serve_to = ((obs.serve_svc.get("spec") or {}).get("selector") or {}).get(c.RAY_CLUSTER_LABEL_KEY, "")
        active_name, pending_name = _name_of(rs, "activeServiceStatus"), _name_of(rs, "pendingServiceStatus")
        if points_to != serve_to or points_to not in (active_name, pending_name):
            log.error("RayService %s: head Service selects %r, serve Service %r; active %r, pending %r",
                      m.key(rs), points_to, serve_to, active_name, pending_name)
            return False
        if points_to != active_name:
            st = _status(rs)
            st["activeServiceStatus"] = st.get("pendingServiceStatus") or {}
            st["pendingServiceStatus"] = {}
            log.info("RayService %s: promoted %s to active (was %r)", m.key(rs), points_to, active_name)
        return bool(points_to == pending_name)

    async def _num_serve_endpoints(self, rs: Obj) -> int:
        sel = assoc.selector_string({"kubernetes.io/service-name": rsb.serve_service_name(rs)})
        slices = (await self.client.list(scheme.ENDPOINT_SLICE, m.namespace(rs), label_selector=sel)).items
        uids = set()
        for s in slices:
            for ep in s.get("endpoints") or []:
                ref = ep.get("targetRef") or {}
                if (ep.get("conditions") or {}).get("ready") and ref.get("uid"):
                    uids.add(ref["uid"])
        return len(uids)

    async def _calculate_status(self, rs: Obj, active: Obj | None, pending: Obj | None, obs: _Observed) -> None:
        st = _status(rs)
        st["observedGeneration"] = rs["metadata"].get("generation", 0)
        a, p = _side(rs, "activeServiceStatus"), _side(rs, "pendingServiceStatus")
        a["rayClusterStatus"] = copy.deepcopy((active or {}).get("status") or {})
        p["rayClusterStatus"] = copy.deepcopy((pending or {}).get("status") or {})
        for side, apps in ((a, obs.active_apps), (p, obs.pending_apps)):
            if apps is None:
                side.pop("applicationStatuses", None)
            else:
                side["applicationStatuses"] = apps
        pending_serving = False
        if obs.head_svc is not None and obs.serve_svc is not None:
            pending_serving = self._promote(rs, obs)
        if self._should_prepare_new_cluster(rs, active, pending, pending_serving):
            st["pendingServiceStatus"] = {"rayClusterName": assoc.rayjob_cluster_name(m.name(rs), self.rng)}
            log.info("RayService %s: preparing a new RayCluster %s", m.key(rs),
                     st["pendingServiceStatus"]["rayClusterName"])
        st["numServeEndpoints"] = await self._num_serve_endpoints(rs)
        self._calculate_conditions(rs)
        st["serviceStatus"] = (ServiceStatus.RUNNING if _has_true(rs, COND.READY) else ServiceStatus.NOT_RUNNING).value

    def _calculate_conditions(self, rs: Obj) -> None:
        st = _status(rs)
        if not st.get("conditions"):
            msg = "RayService is initializing"
            self._set(rs, COND.READY, "False", REASON.INITIALIZING, msg)
            self._set(rs, COND.UPGRADE_IN_PROGRESS, "False", REASON.INITIALIZING, msg)
        if int(st.get("numServeEndpoints") or 0) > 0:
            self._set(rs, COND.READY, "True", REASON.NON_ZERO_SERVE_ENDPOINTS,
                      "Number of serve endpoints is greater than 0")
        elif _has_true(rs, COND.READY):
            self._set(rs, COND.READY, "False", REASON.ZERO_SERVE_ENDPOINTS, "Number of serve endpoints dropped to 0")
        else:
            self._mark_failed_on_initializing_timeout(rs)
        active_name, pending_name = _name_of(rs, "activeServiceStatus"), _name_of(rs, "pendingServiceStatus")
        if active_name and pending_name:
            self._set(rs, COND.UPGRADE_IN_PROGRESS, "True", REASON.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
                      "Both active and pending Ray clusters exist")
        elif active_name:
            self._set(rs, COND.UPGRADE_IN_PROGRESS, "False", REASON.NO_PENDING_CLUSTER,
                      "Active Ray cluster exists and no pending Ray cluster")
        else:
            cond = m.get_condition(st, COND.UPGRADE_IN_PROGRESS)
            if cond is None or cond.get("reason") not in (REASON.INITIALIZING, REASON.INITIALIZING_TIMEOUT):
                self._set(rs, COND.UPGRADE_IN_PROGRESS, "Unknown", REASON.NO_ACTIVE_CLUSTER,
                          "No active Ray cluster exists, and the RayService is not initializing. Please open a "
                          "GitHub issue in the KubeRay repository.")

    def _mark_failed_on_initializing_timeout(self, rs: Obj) -> None:
        try:
            timeout = initializing_timeout_seconds(rs["metadata"].get("annotations") or {})
        except ValidationError:
            return
        cond = m.get_condition(_status(rs), COND.READY)
        if timeout is None or cond is None or cond.get("status") != "False" or cond.get("reason") != REASON.INITIALIZING:
            return
        elapsed = self.clock.now() - parse_rfc3339(cond.get("lastTransitionTime") or self._now_str())
        if elapsed < timeout:
            return
        _side(rs, "activeServiceStatus").pop("rayClusterName", None)
        _side(rs, "pendingServiceStatus").pop("rayClusterName", None)
        self._set(rs, COND.READY, "False", REASON.INITIALIZING_TIMEOUT,
                  f"RayService failed to become ready within the configured timeout of {go_duration_string(timeout)}. "
                  f"Time spent initializing: {go_duration_string(elapsed)}")
        self._event(rs, "Warning", "RayServiceInitializingTimeout",
                    f"RayService initializing timeout exceeded after {go_duration_string(elapsed)} "
                    f"(configured timeout: {go_duration_string(timeout)})")
