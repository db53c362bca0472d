"""tests/conftest.py's xdist work units: the real-Ray modules share one unit, other tests are their
own."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# by path: every tests/ package has a conftest, so the name "conftest" is not this one
_spec = importlib.util.spec_from_file_location("pumice_tests_root_conftest", ROOT / "tests" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
REAL_RAY_UNIT, scope_of = _conftest.REAL_RAY_UNIT, _conftest.scope_of


def test_every_test_of_a_real_ray_module_shares_one_unit() -> None:
    for nodeid in ("tests/ray/test_e2e_ray.py::test_sample_rayjob_succeeds",
                   "tests/ray/test_e2e_job_submit.py::test_a",
                   "tests/node/test_ray.py::test_two_ray_nodes_and_a_driver_pod_run_on_one_node"):
        assert scope_of(nodeid, ROOT) == REAL_RAY_UNIT, nodeid


def test_other_tests_are_each_their_own_unit() -> None:
    for nodeid in ("tests/apiserver/test_quantity_numbers.py::test_an_hpa_metric_target_number_is_stored_as_a_string",
                   "tests/cli/test_ray_cli_up.py::test_the_verbs_against_pumice_up_simulated",
                   "tests/no_such_module.py::test_x[1]", "tests/no_such_module.py::test_y[user@host]"):
        assert scope_of(nodeid, ROOT) == nodeid


def test_an_xdist_group_suffix_names_the_unit() -> None:
    assert scope_of("tests/apiserver/test_kubectl.py::test_x@kubectl", ROOT) == "kubectl"
