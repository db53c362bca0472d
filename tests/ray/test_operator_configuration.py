"""KubeRay's operator configuration file (``config.ray.io/v1alpha1`` Configuration) read by
``pumice controller-manager --kuberay-config``: parsed once, refused with a reason, and turned into
the RayCluster/RayJob options that put the sidecars, default envs and default Pod metadata on the
Pods the operator makes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from pumice.api import Obj, scheme
from pumice.cli.controller_manager import command
from pumice.controllers.ray.options import ConfigurationError, KubeRayConfiguration, parse_watch_namespace
from pumice.testing.fake_client import FakeClient
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import load_sample, ray_scheme
from .test_setup import running, wait_for

DOC: dict[str, Any] = {
    "apiVersion": "config.ray.io/v1alpha1", "kind": "Configuration",
    "headSidecarContainers": [{"name": "fluentbit", "image": "fluent/fluent-bit:1.9.6"}],
    "workerSidecarContainers": [{"name": "w-side", "image": "busybox"}],
    "defaultContainerEnvs": [{"name": "TEAM", "value": "ml"}],
    "defaultPodLabels": {"fleet": "managed"},
    "defaultPodAnnotations": {"scrape": "true"},
    "deleteRayJobAfterJobFinishes": True,
}


def test_the_configuration_becomes_the_raycluster_and_rayjob_options() -> None:
    opts = KubeRayConfiguration.from_document(DOC).setup_options()
    rc, rj = opts["raycluster_options"], opts["rayjob_options"]
    assert [c["name"] for c in rc.pod.head_sidecar_containers] == ["fluentbit"]
    assert [c["name"] for c in rc.pod.worker_sidecar_containers] == ["w-side"]
    assert rc.pod.default_container_envs == ({"name": "TEAM", "value": "ml"},)
    assert (dict(rc.default_pod_labels), dict(rc.default_pod_annotations)) == ({"fleet": "managed"}, {"scrape": "true"})
    assert rj.delete_rayjob_after_job_finishes is True
    assert rc.pod.enable_probes_injection and rc.default_requeue_seconds == 300  # the rest stays default


def test_a_key_left_empty_counts_as_absent() -> None:
    # YAML `defaultPodLabels:` with nothing after it is null, which Go decodes into a nil map (the
    # key unset); pumice refused it ('a map of strings to strings, got None')
    doc = {"apiVersion": "config.ray.io/v1alpha1", "kind": "Configuration", "defaultPodLabels": None,
           "headSidecarContainers": None, "deleteRayJobAfterJobFinishes": None, "enableLeaderElection": None}
    assert KubeRayConfiguration.from_document(doc) == KubeRayConfiguration()


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "KubeSchedulerConfiguration"}, "has apiVersion config.ray.io/v1alpha1 and kind Configuration"),
    ({"batchScheduler": "volcano"}, "batchScheduler: use --batch-scheduler (pumice controller-manager)"),
    ({"watchNamespace": ["a", "b"]}, "watchNamespace: namespaces separated by commas, got ['a', 'b']"),
    ({"headSidecarContainer": []}, "unknown key 'headSidecarContainer' in the KubeRay configuration; known: "
                                   "defaultContainerEnvs, defaultPodAnnotations, defaultPodLabels, "
                                   "deleteRayJobAfterJobFinishes, headSidecarContainers, watchNamespace, "
                                   "workerSidecarContainers"),
    ({"defaultPodLabels": {"a": 1}}, "defaultPodLabels: a map of strings to strings"),
    ({"headSidecarContainers": [{"image": "x"}]}, "headSidecarContainers: a list of objects with a name"),
    ({"deleteRayJobAfterJobFinishes": "yes"}, "deleteRayJobAfterJobFinishes: true or false"),
], ids=["kind", "flag", "namespace-type", "unknown", "map-type", "list-type", "bool-type"])
def test_a_configuration_pumice_cannot_use_is_refused_with_the_reason(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError) as e:
        KubeRayConfiguration.from_document({**DOC, **change})
    assert message in str(e.value)


def test_controller_manager_refuses_a_bad_configuration_file_before_connecting(tmp_path: Path) -> None:
    path = tmp_path / "kuberay.yaml"
    path.write_text(yaml.safe_dump({**DOC, "batchScheduler": "volcano"}))
    result = CliRunner().invoke(command, ["--kuberay-config", str(path), "--controllers", "ray"])
    assert result.exit_code == 2
    assert "batchScheduler: use --batch-scheduler (pumice controller-manager)" in result.output


# What upstream's Helm chart (helm-chart/kuberay-operator/templates/configmap.yaml) writes into
# config.yaml with its default values: pumice refused every one of these keys (review 16).
HELM_DEFAULTS = {"apiVersion": "config.ray.io/v1alpha1", "kind": "Configuration", "enableLeaderElection": True,
                 "enableMetrics": True, "reconcileConcurrency": 1, "useKubernetesProxy": False,
                 "logStdoutEncoder": "json"}


def test_the_helm_charts_default_configuration_is_read_with_a_warning_per_process_key(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="pumice.controllers.ray.options"):
        assert KubeRayConfiguration.from_document(HELM_DEFAULTS) == KubeRayConfiguration()
    ignored = sorted(r.getMessage().split()[2] for r in caplog.records)
    assert ignored == ["enableLeaderElection", "enableMetrics", "logStdoutEncoder", "reconcileConcurrency"]
    # a value that would change what is reconciled is still refused
    with pytest.raises(ConfigurationError, match="useKubernetesProxy: use --use-kubernetes-proxy"):
        KubeRayConfiguration.from_document({**HELM_DEFAULTS, "useKubernetesProxy": True})


async def test_the_operator_set_up_from_the_configuration_puts_the_sidecars_on_the_pods() -> None:
    client = FakeClient(ray_scheme())
    async with running(client, FakeRayDashboard(), **KubeRayConfiguration.from_document(DOC).setup_options()):
        await client.create(load_sample("ray-cluster.sample.yaml", "RayCluster"))

        async def pods() -> list[Obj]:
            return (await client.list(scheme.POD, "default", label_selector="ray.io/cluster=raycluster-kuberay")).items

        async def both() -> bool:
            return len(await pods()) == 2

        await wait_for(both)
        by_type = {p["metadata"]["labels"]["ray.io/node-type"]: p for p in await pods()}
    head, worker = by_type["head"], by_type["worker"]
    assert [c["name"] for c in head["spec"]["containers"]] == ["ray-head", "fluentbit"]
    assert [c["name"] for c in worker["spec"]["containers"]] == ["ray-worker", "w-side"]
    assert {"name": "TEAM", "value": "ml"} in head["spec"]["containers"][0]["env"]
    assert head["metadata"]["labels"]["fleet"] == "managed" and head["metadata"]["annotations"]["scrape"] == "true"


@pytest.mark.parametrize(("value", "namespaces"), [
    ("", None), ("team-a", {"team-a"}), ("team-a,team-b", {"team-a", "team-b"}),
    # as written, as upstream splits it: " team-b" is a namespace no object has
    ("team-a, team-b", {"team-a", " team-b"}),
    # an empty entry is controller-runtime's all-namespaces key
    ("team-a,", None),
])
def test_watch_namespace_is_split_as_upstream_splits_it(value: str, namespaces: set[str] | None) -> None:
    assert parse_watch_namespace(value) == (None if namespaces is None else frozenset(namespaces))


def test_the_configurations_watch_namespace_reaches_setup_only_when_written() -> None:
    assert KubeRayConfiguration.from_document({**DOC, "watchNamespace": "team-a"}).setup_options()[
        "watch_namespace"] == "team-a"
    assert "watch_namespace" not in KubeRayConfiguration.from_document(DOC).setup_options()


async def test_an_operator_watching_one_namespace_leaves_the_others_alone() -> None:
    client = FakeClient(ray_scheme())
    async with running(client, FakeRayDashboard(), watch_namespace="team-a") as mgr:
        # it lists and watches /namespaces/team-a/... only, so a Role in team-a is all it needs
        # (KubeRay's singleNamespaceInstall); an informer of every namespace would be refused there
        informers = mgr.informers.informers()
        assert {inf.kind.plural for inf in informers} >= {"rayclusters", "rayjobs", "rayservices", "pods", "services"}
        assert [(inf.kind.plural, inf.namespace) for inf in informers if inf.kind.namespaced and
                inf.namespace != "team-a"] == []
        for ns in ("team-b", "team-a"):  # team-b's event comes first and would be reconciled first
            cluster = load_sample("ray-cluster.sample.yaml", "RayCluster")
            cluster["metadata"]["namespace"] = ns
            await client.create(cluster)

        async def team_a_pods() -> bool:
            return len((await client.list(scheme.POD, "team-a")).items) == 2

        await wait_for(team_a_pods)
        assert (await client.list(scheme.POD, "team-b")).items == []
        assert "status" not in await client.get(scheme.RAY_CLUSTER, "raycluster-kuberay", "team-b")


def test_controller_manager_hands_the_namespaces_and_the_lease_namespace_on(monkeypatch: pytest.MonkeyPatch,
                                                                            tmp_path: Path) -> None:
    import pumice.cli.controller_manager as cm
    import pumice.client.kubeconfig as kubeconfig

    seen: dict[str, Any] = {}

    class Client:
        async def close(self) -> None:
            pass

    def fake_setups(names: list[str], **kw: Any) -> list[Any]:
        seen["ray_options"] = kw["ray_options"]
        return []

    async def fake_run(client: Any, setups: Any, **kw: Any) -> None:
        seen.update(kw)

    monkeypatch.setattr(kubeconfig, "connect", lambda *a, **k: Client())
    monkeypatch.setattr(cm, "controller_setups", fake_setups)
    monkeypatch.setattr(cm, "run_controller_manager", fake_run)
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\n")
    result = CliRunner().invoke(command, ["--kubeconfig", str(kc), "--controllers", "ray", "--watch-namespace",
                                          "team-a", "--leader-elect-resource-namespace", "team-a"])
    assert result.exit_code == 0, result.output
    assert seen["ray_options"]["watch_namespace"] == "team-a"
    assert seen["leader_election_namespace"] == "team-a"


def test_controller_manager_refuses_a_configuration_file_that_is_a_device() -> None:
    result = CliRunner().invoke(command, ["--kuberay-config", "/dev/zero", "--controllers", "ray"])
    assert result.exit_code == 2
    assert "/dev/zero: not a regular file (a character device)" in result.output


def test_controller_manager_refuses_a_configuration_nested_too_deep_in_one_line(tmp_path: Path) -> None:
    # review 19 R-4: yaml.safe_load of 600 nested "[" ended in RecursionError (internal error)
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 600 + "]" * 600 + "\n")
    result = CliRunner().invoke(command, ["--kuberay-config", str(path), "--controllers", "ray"])
    assert result.exit_code == 2, result.output
    assert f"{path}: yaml: exceeded max depth of 100" in result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
