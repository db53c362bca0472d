"""tests/conftest.py's xdist work units: the real-Ray modules share one unit, other tests are their
own."""

from __future__ import annotations

from pathlib import Path

from conftest import REAL_RAY_UNIT, scope_of

ROOT = Path(__file__).resolve().parent.parent


def test_every_test_of_a_real_ray_module_shares_one_unit() -> None:
    for nodeid in ("tests/ray/test_e2e_ray.py::test_sample_rayjob_succeeds",
                   "tests/ray/test_e2e_job_submit.py::test_a",
                   "tests/node/test_ray.py::test_two_ray_nodes_and_a_driver_pod_run_on_one_node"):
        assert scope_of(nodeid, ROOT) == REAL_RAY_UNIT, nodeid


def test_other_tests_are_each_their_own_unit() -> None:
    for nodeid in ("tests/apiserver/test_quantity_numbers.py::test_an_hpa_metric_target_number_is_stored_as_a_string",
                   "tests/cli/test_ray_cli_up.py::test_the_verbs_against_pumice_up_simulated",
                   "tests/no_such_module.py::test_x[1]"):
        assert scope_of(nodeid, ROOT) == nodeid


def test_an_xdist_group_suffix_names_the_unit() -> None:
    assert scope_of("tests/apiserver/test_kubectl.py::test_x@kubectl", ROOT) == "kubectl"
