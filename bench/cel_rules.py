"""CRD validation rules (CEL) per write: the cost of evaluating the RayJob CRD's
x-kubernetes-validations on the upstream sample RayJob, beside the structural-schema validation
every custom-resource write already pays (the baseline, measured in the same run).

Timed (CPU time, per call): ``RuleSet.validate`` on a create (no old object: every rule runs),
on a spec update (managedBy and deletionStrategy unchanged, the entrypoint changed: the rules
under unchanged values are skipped by ratcheting), on a status update (spec unchanged: no rule
runs); ``pumice.api.schema.validate`` of the same object; compiling the three KubeRay CRDs' rules.

Usage: python bench/cel_rules.py [--calls 5000]
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

import yaml

from pumice.api import schema as kschema
from pumice.api.crds import builtin_crds
from pumice.apiserver.celrules import compile_rules
from pumice.apiserver.crds import crd_info
from pumice.testing.paths import samples_dir


def _cpu_us(fn: Any, calls: int) -> float:
    t0 = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - t0) / calls * 1e6


def main(calls: int) -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in builtin_crds()}
    version = crd_info(crds["RayJob"]).versions["v1"]
    assert version.rules is not None and version.schema is not None
    rules, schema = version.rules, version.schema
    docs = yaml.safe_load_all((samples_dir() / "kuberay" / "ray-job.sample.yaml").read_text())
    job = next(d for d in docs if d and d.get("kind") == "RayJob")
    job["spec"]["managedBy"] = "ray.io/kuberay-operator"
    job["spec"]["deletionStrategy"] = {"deletionRules": [
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}}]}
    spec_update = copy.deepcopy(job)
    spec_update["spec"]["entrypoint"] = "python -c pass"
    status_update = copy.deepcopy(job)
    status_update["status"] = {"jobStatus": "RUNNING", "jobDeploymentStatus": "Running"}
    body = {k: v for k, v in job.items() if k not in ("apiVersion", "kind", "metadata")}
    assert not rules.validate(job, None) and not kschema.validate(schema, body)
    base = _cpu_us(lambda: kschema.validate(schema, body), calls)
    create = _cpu_us(lambda: rules.validate(job, None), calls)
    spec = _cpu_us(lambda: rules.validate(spec_update, job), calls)
    status = _cpu_us(lambda: rules.validate(status_update, job), calls)
    t0 = time.process_time()
    n = 0
    for kind in ("RayCluster", "RayJob", "RayService"):
        compiled = compile_rules(crds[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        n += len(compiled.rules) if compiled else 0
    compile_ms = (time.process_time() - t0) * 1e3
    print(f"case=rayjob-rules rules={len(rules.rules)} schema_validate_us={base:.1f} create_us={create:.1f} "
          f"spec_update_us={spec:.1f} status_update_us={status:.1f} ratio_create_to_schema={create / base:.3f} "
          f"ratio_status_to_schema={status / base:.4f} compile_kuberay_rules={n} compile_ms={compile_ms:.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    main(ap.parse_args().calls)
