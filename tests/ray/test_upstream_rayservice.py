"""Cases ported from upstream's RayService controller unit tests at the snapshot of
reference/kuberay-2.md (kuberay master feeaf72fa, ray-operator/controllers/ray/
rayservice_controller_unit_test.go); each case keeps upstream's name."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from pumice._util.clock import FakeClock, rfc3339
from pumice.api import Obj
from pumice.api import meta as m
from pumice.controllers.ray.common import rayservice as rsb
from pumice.controllers.ray.rayservice import (
    RayServiceOptions,
    RayServiceReconciler,
    apps_from_serve_details,
    is_zero_downtime_enabled,
    need_submit_serve_applications,
)
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

ORIGIN = "kuberay ray-operator/controllers/ray/rayservice_controller_unit_test.go"


def up(test: str, case: str = "") -> Any:
    return pytest.mark.upstream(f"{ORIGIN}: {test}" + (f" / {case}" if case else ""))


def reconciler(options: RayServiceOptions = RayServiceOptions()) -> RayServiceReconciler:
    return RayServiceReconciler(FakeClient(ray_scheme()), clock=FakeClock(), options=options, rng=random.Random(0))


def svc(status: Obj | None = None, generation: int = 0) -> Obj:
    return {"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "rs", "namespace": "default", "generation": generation}, "status": status or {}}


# --- TestCalculateConditions ----------------------------------------------------------------------

CONDITION_CASES = [
    ("initial RayServiceReady", {}, "Ready", "False", "Initializing", "False", "Initializing"),
    ("initial RayServiceInitializing", {}, "UpgradeInProgress", "False", "Initializing", "False", "Initializing"),
    ("Ready condition remains false unchanged", {"numServeEndpoints": 0}, "Ready", "False", "WhateverReason",
     "False", "WhateverReason"),
    ("Ready condition remains true always has NonZeroServeEndPoints reason", {"numServeEndpoints": 1}, "Ready",
     "True", "WhateverReason", "True", "NonZeroServeEndpoints"),
    ("Ready condition becomes true", {"numServeEndpoints": 1}, "Ready", "False", "WhateverReason", "True",
     "NonZeroServeEndpoints"),
    ("Ready condition becomes false", {"numServeEndpoints": 0}, "Ready", "True", "NonZeroServeEndpoints", "False",
     "ZeroServeEndpoints"),
    ("UpgradeInProgress condition is true if both active and pending clusters exist",
     {"activeServiceStatus": {"rayClusterName": "active-cluster"},
      "pendingServiceStatus": {"rayClusterName": "pending-cluster"}},
     "UpgradeInProgress", "False", "WhateverReason", "True", "BothActivePendingClustersExist"),
    ("UpgradeInProgress condition is false if only active cluster exists",
     {"activeServiceStatus": {"rayClusterName": "active-cluster"}},
     "UpgradeInProgress", "True", "BothActivePendingClustersExist", "False", "NoPendingCluster"),
    ("UpgradeInProgress condition is unknown if no active cluster exists and RayService is not initializing", {},
     "UpgradeInProgress", "True", "BothActivePendingClustersExist", "Unknown", "NoActiveCluster"),
    ("UpgradeInProgress condition is false if RayService is initializing",
     {"pendingServiceStatus": {"rayClusterName": "pending-cluster"}},
     "UpgradeInProgress", "False", "Initializing", "False", "Initializing"),
    ("UpgradeInProgress condition is not overridden when in InitializingTimeout state with no active cluster",
     {"numServeEndpoints": 0, "observedGeneration": 1}, "UpgradeInProgress", "False", "InitializingTimeout",
     "False", "InitializingTimeout"),
    ("Conditions calculated normally when not in InitializingTimeout state",
     {"numServeEndpoints": 5, "observedGeneration": 1, "activeServiceStatus": {"rayClusterName": "active"}},
     "Ready", "False", "Initializing", "True", "NonZeroServeEndpoints"),
]


@pytest.mark.parametrize(("name", "status", "ctype", "orig_status", "orig_reason", "want_status", "want_reason"),
                         [pytest.param(*c, marks=up("TestCalculateConditions", c[0]), id=c[0]) for c in CONDITION_CASES])
def test_calculate_conditions(name: str, status: Obj, ctype: str, orig_status: str, orig_reason: str,
                              want_status: str, want_reason: str) -> None:
    rs = svc(copy.deepcopy(status), generation=1)
    m.set_condition(rs["status"], {"type": ctype, "status": orig_status, "reason": orig_reason, "message": ""},
                    rfc3339(0))
    reconciler()._calculate_conditions(rs)
    cond = m.get_condition(rs["status"], ctype)
    assert cond is not None and (cond["status"], cond["reason"]) == (want_status, want_reason)


# --- TestCheckIfNeedSubmitServeApplications -------------------------------------------------------

APPS = {"myapp": {"status": "RUNNING"}}


@pytest.mark.parametrize(("cached", "current", "apps", "want"), [
    pytest.param("", "serve-config-1", {}, True, marks=up("TestCheckIfNeedSubmitServeApplications", "Test 1"), id="1"),
    pytest.param("serve-config-1", "serve-config-1", APPS, False,
                 marks=up("TestCheckIfNeedSubmitServeApplications", "Test 2"), id="2"),
    pytest.param("serve-config-1", "serve-config-2", APPS, True,
                 marks=up("TestCheckIfNeedSubmitServeApplications", "Test 3"), id="3"),
    pytest.param("serve-config-1", "serve-config-1", {}, True,
                 marks=up("TestCheckIfNeedSubmitServeApplications", "Test 4"), id="4"),
    pytest.param("", "serve-config-1", APPS, True, marks=up("TestCheckIfNeedSubmitServeApplications", "Test 5"), id="5"),
])
def test_check_if_need_submit_serve_applications(cached: str, current: str, apps: Obj, want: bool) -> None:
    assert need_submit_serve_applications(cached, current, apps)[0] is want


# --- TestIsZeroDowntimeUpgradeEnabled -------------------------------------------------------------

@pytest.mark.parametrize(("name", "strategy", "env", "want"), [
    pytest.param(n, s, e, w, marks=up("TestIsZeroDowntimeUpgradeEnabled", n), id=n) for n, s, e, w in [
        ("both upgrade strategy and env var are not set", None, "", True),
        ("upgrade strategy is not set, but env var is set to true", None, "true", True),
        ("upgrade strategy is not set, but env var is set to false", None, "false", False),
        ("upgrade strategy is set to NewCluster", "NewCluster", "", True),
        ("upgrade strategy is set to NewCluster, and env var is not set", "NewCluster", "true", True),
        ("upgrade strategy is set to NewCluster, and env var is set to false", "NewCluster", "false", True),
        ("upgrade strategy is set to RayServiceUpgradeNone, and env var is not set", "None", "", False),
        ("upgrade strategy is set to RayServiceUpgradeNone, and env var is set to true", "None", "true", False),
        ("upgrade strategy is set to RayServiceUpgradeNone, and env var is set to false", "None", "false", False),
    ]])
def test_is_zero_downtime_upgrade_enabled(name: str, strategy: str | None, env: str, want: bool) -> None:
    rs = svc()
    rs["spec"] = {"upgradeStrategy": {"type": strategy}} if strategy else {}
    opts = RayServiceOptions.from_env({"ENABLE_ZERO_DOWNTIME": env} if env else {})
    assert is_zero_downtime_enabled(rs, opts.enable_zero_downtime) is want


# --- TestGetAndCheckServeStatus -------------------------------------------------------------------

@pytest.mark.parametrize(("statuses", "want_ready"), [
    pytest.param(["RUNNING"], True, marks=up("TestGetAndCheckServeStatus", "RUNNING"), id="running"),
    pytest.param(["DEPLOYING"], False, marks=up("TestGetAndCheckServeStatus", "DEPLOYING"), id="deploying"),
    pytest.param(["UNHEALTHY"], False, marks=up("TestGetAndCheckServeStatus", "UNHEALTHY"), id="unhealthy"),
    pytest.param(["DEPLOY_FAILED"], False, marks=up("TestGetAndCheckServeStatus", "DEPLOY_FAILED"), id="failed"),
    pytest.param(["RUNNING", "DEPLOYING"], False, marks=up("TestGetAndCheckServeStatus", "multi-app"), id="multi"),
    pytest.param([], False, marks=up("TestGetAndCheckServeStatus", "no app"), id="empty"),
])
def test_get_and_check_serve_status(statuses: list[str], want_ready: bool) -> None:
    details = {"applications": {f"app{i}": {"status": s, "deployments": {"d": {"status": "HEALTHY"}}}
                                for i, s in enumerate(statuses)}}
    ready, apps = apps_from_serve_details(details)
    assert ready is want_ready and len(apps) == len(statuses)


# --- TestIsClusterSpecHashEqual / TestShouldPrepareNewCluster --------------------------------------

def _rs_and_cluster() -> tuple[Obj, Obj]:
    rs = load_sample("ray-service.sample.yaml", "RayService")
    cl = rsb.build_cluster_for_rayservice(rs, "rs-cluster")
    return rs, cl


@up("TestIsClusterSpecHashEqual", "the same spec")
def test_is_cluster_spec_hash_equal_same_spec() -> None:
    rs, cl = _rs_and_cluster()
    assert rsb.is_cluster_spec_hash_equal(rs, cl, partial=False)
    assert rsb.is_cluster_spec_hash_equal(rs, cl, partial=True)


@up("TestIsClusterSpecHashEqual", "a new worker group appended")
def test_is_cluster_spec_hash_equal_appended_group_matches_only_partially() -> None:
    rs, cl = _rs_and_cluster()
    g = copy.deepcopy(rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0])
    g["groupName"] = "new-group"
    rs["spec"]["rayClusterConfig"]["workerGroupSpecs"].append(g)
    assert not rsb.is_cluster_spec_hash_equal(rs, cl, partial=False)
    assert rsb.is_cluster_spec_hash_equal(rs, cl, partial=True)


@up("TestIsClusterSpecHashEqual", "an existing worker group changed")
def test_is_cluster_spec_hash_equal_changed_group_matches_neither_way() -> None:
    rs, cl = _rs_and_cluster()
    rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["groupName"] = "renamed"
    assert not rsb.is_cluster_spec_hash_equal(rs, cl, partial=False)
    assert not rsb.is_cluster_spec_hash_equal(rs, cl, partial=True)


@up("TestShouldPrepareNewCluster_PrepareNewCluster")
def test_should_prepare_new_cluster_when_there_is_none() -> None:
    rs, _ = _rs_and_cluster()
    assert reconciler()._should_prepare_new_cluster(rs, None, None, False)


@up("TestShouldPrepareNewCluster_ZeroDowntimeUpgrade")
def test_should_prepare_new_cluster_for_a_zero_downtime_upgrade() -> None:
    rs, cl = _rs_and_cluster()
    rs["spec"]["rayClusterConfig"]["rayVersion"] = "2.100.0"
    assert reconciler()._should_prepare_new_cluster(rs, cl, None, False)
    assert not reconciler(RayServiceOptions(enable_zero_downtime=False))._should_prepare_new_cluster(rs, cl, None, False)


@up("TestShouldPrepareNewCluster_PendingCluster")
def test_should_prepare_new_cluster_compares_against_the_pending_cluster() -> None:
    rs, active = _rs_and_cluster()
    rs["spec"]["rayClusterConfig"]["rayVersion"] = "2.100.0"
    pending = rsb.build_cluster_for_rayservice(rs, "rs-pending")
    assert not reconciler()._should_prepare_new_cluster(rs, active, pending, False)
    assert not reconciler()._should_prepare_new_cluster(rs, active, None, True), "pending is serving"
