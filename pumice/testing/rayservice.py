"""KubeRay's ray-service.sample.yaml as the real-Ray acceptance test
(tests/ray/test_e2e_rayservice.py) and ``bench/kuberay.py --rayservice`` run it, with two changes
to its Serve config:

- ``working_dir`` points at ``local:///tmp/serve-apps``: a directory of our own Serve applications
  (tests/ray/serve_apps: the sample's application and deployment names and routes), mounted from
  the ConfigMap :func:`serve_apps_configmap` into every Ray Pod, because the sample's zip on GitHub
  is out of reach here;
- the ``Router`` deployment asks for ``num_cpus: 0.1``, as every other deployment of the sample
  does, instead of Serve's default of 1 CPU.

Why the second change: as published, the sample can deadlock on its own cluster (head 2 CPUs,
one worker with 1 CPU). Serve spreads replicas over the nodes. When the Router's replica lands on
the worker, it takes the worker's only CPU. MangoStand's second replica (``max_replicas_per_node:
1``, a per-node resource of which the head's first replica holds the head's one unit) then fits
nowhere, and the RayService never becomes Ready. Which node the Router gets depends on when the
worker's raylet joins relative to the Serve deployments, so it happened now and then under CI load
(session 4's final run: the Serve controller repeating "has 1 replicas that have taken more than
30s to be scheduled ... total resources available: {"CPU": 1.4}", the worker's raylet holding
Router ``{CPU: 1}`` with 0 CPU left and MangoStand's lease waiting). KubeRay's maintainers name the
same cause for their own e2e test (ray-project/kuberay#2536). With 0.1 CPU the seven replicas need
0.7 CPU, so every placement fits: the worker can hold all of them but the head's MangoStand.
"""

from __future__ import annotations

from typing import Any

import yaml

from pumice.api import Obj
from pumice.testing.paths import repo_root, samples_dir

__all__ = ["MOUNT", "NAME", "sample_rayservice", "serve_apps_configmap"]

NAME = "rayservice-sample"
"""The sample RayService's name (namespace ``default``)."""
MOUNT = "/tmp/serve-apps"
"""Where the Serve applications are mounted in every Ray Pod."""
_SAMPLE_ZIP = "https://github.com/ray-project/test_dag/archive/"


def serve_apps_configmap() -> Obj:
    """ConfigMap ``default/serve-apps``: every ``tests/ray/serve_apps/*.py`` by file name."""
    apps = repo_root() / "tests" / "ray" / "serve_apps"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "serve-apps", "namespace": "default"},
            "data": {p.name: p.read_text() for p in sorted(apps.glob("*.py"))}}


def sample_rayservice() -> Obj:
    """The upstream sample RayService in namespace ``default`` with the module's two changes, and
    the ConfigMap volume mounted at :data:`MOUNT` in every Pod template.

    Raises:
        ValueError: the sample no longer has the shape these changes expect (a working_dir other
            than the test_dag zip, or a Router that sets its own actor options).
    """
    docs = [d for d in yaml.safe_load_all((samples_dir() / "kuberay" / "ray-service.sample.yaml").read_text()) if d]
    rs: dict[str, Any] = next(d for d in docs if d.get("kind") == "RayService")
    rs["metadata"]["namespace"] = "default"
    serve = yaml.safe_load(rs["spec"]["serveConfigV2"])
    for app in serve["applications"]:
        if not str(app["runtime_env"]["working_dir"]).startswith(_SAMPLE_ZIP):
            raise ValueError(f"{app['name']}: working_dir is {app['runtime_env']['working_dir']!r}")
        app["runtime_env"]["working_dir"] = f"local://{MOUNT}"
        for d in app["deployments"]:
            if d["name"] == "Router":
                if "ray_actor_options" in d:
                    raise ValueError(f"Router sets ray_actor_options {d['ray_actor_options']!r}")
                d["ray_actor_options"] = {"num_cpus": 0.1}
    rs["spec"]["serveConfigV2"] = yaml.safe_dump(serve, sort_keys=False)
    cfg = rs["spec"]["rayClusterConfig"]
    for group in [cfg["headGroupSpec"], *cfg["workerGroupSpecs"]]:
        pod = group["template"]["spec"]
        pod.setdefault("volumes", []).append({"name": "serve-apps", "configMap": {"name": "serve-apps"}})
        pod["containers"][0].setdefault("volumeMounts", []).append({"name": "serve-apps", "mountPath": MOUNT})
    return rs
