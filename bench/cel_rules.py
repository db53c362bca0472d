"""CRD validation rules (CEL) per write: the cost of evaluating the RayJob CRD's
x-kubernetes-validations on the upstream sample RayJob, beside the structural-schema validation
every custom-resource write already pays (the baseline, measured in the same run).

Timed (CPU time, per call): ``RuleSet.validate`` on a create (no old object: every rule runs),
on a spec update (managedBy and deletionStrategy unchanged, the entrypoint changed: the rules
under unchanged values are skipped by ratcheting), on a status update (spec unchanged: no rule
runs); ``pumice.api.schema.validate`` of the same object; compiling the three KubeRay CRDs' rules,
and the CRD-create check of them (compile + ``undefined field`` type-check).

Case ``library-rules``: one rule calling Kubernetes' CEL libraries (``quantity(...)`` compared,
``ip``/``cidr``, ``lowerAscii``) beside a rule of the same shape using only built-in functions,
on the same small object: the cost of a library call (Python callbacks from the interpreter).

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
from pumice.apiserver.celrules import compile_rules, rule_compile_causes
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
    t0 = time.process_time()
    for kind in ("RayCluster", "RayJob", "RayService"):
        assert not rule_compile_causes(crds[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "x")
    check_ms = (time.process_time() - t0) * 1e3
    print(f"case=rayjob-rules rules={len(rules.rules)} schema_validate_us={base:.1f} create_us={create:.1f} "
          f"spec_update_us={spec:.1f} status_update_us={status:.1f} ratio_create_to_schema={create / base:.3f} "
          f"ratio_status_to_schema={status / base:.4f} compile_kuberay_rules={n} compile_ms={compile_ms:.1f} "
          f"crd_create_check_ms={check_ms:.1f}")
    _library(calls)


def _library(calls: int) -> None:
    def rules(rule: str) -> Any:
        compiled = compile_rules({"type": "object", "properties": {"spec": {
            "type": "object", "x-kubernetes-validations": [{"rule": rule}],
            "properties": {k: {"type": "string"} for k in ("cpu", "address", "name")}}}})
        assert compiled is not None
        return compiled

    obj = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
           "spec": {"cpu": "1500m", "address": "10.1.2.3", "name": "Web-1"}}
    native = rules("self.cpu.size() < 8 && self.address.startsWith('10.') && self.name.matches('^[A-Za-z0-9-]+$')")
    library = rules("quantity(self.cpu).isLessThan(quantity('4')) && cidr('10.0.0.0/8').containsIP(self.address) "
                    "&& self.name.lowerAscii() == 'web-1'")
    assert not native.validate(obj, None) and not library.validate(obj, None)
    base = _cpu_us(lambda: native.validate(obj, None), calls)
    lib = _cpu_us(lambda: library.validate(obj, None), calls)
    print(f"case=library-rules native_rule_us={base:.1f} library_rule_us={lib:.1f} ratio={lib / base:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    main(ap.parse_args().calls)
