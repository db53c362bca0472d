"""The RayCluster spec hash (``ray.io/hash-without-replicas-and-workers-to-delete``, the head Pod's
``ray.io/upgrade-strategy-recreate-hash``) equals upstream's, byte for byte, on every RayCluster
spec of KubeRay's samples (RayClusters, RayJobs' ``rayClusterSpec``, RayServices'
``rayClusterConfig``).

Upstream's own function computes the expected values: a tiny Go program, built in a temporary
directory outside the repository against KubeRay's ray-operator module from the Go module proxy
(v1.5.0, the newest version it serves), decodes each spec, with the fields the hash ignores
cleared by :func:`spec_for_hashing`, into upstream's ``RayClusterSpec`` and calls upstream's
``utils.GenerateJsonHash`` and ``json.Marshal`` on it. (In v1.5.0 the function that clears those
fields is unexported and ignores fewer of them; the list pumice clears is the reference
snapshot's, tested in test_rayservice.py.) The same module's type layout
(``tools/gen_go_json_layout.py``) drives pumice's serializer, so the Go JSON bytes are compared
too; the shipped layout (the reference snapshot's types) must give the same hashes for these specs.
Skipped only when ``go`` is absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.controllers.ray.common.gojson import GoLayout, marshal
from pumice.controllers.ray.common.hashing import json_hash, spec_for_hashing
from pumice.testing.paths import shared_dir

pytestmark = [pytest.mark.timeout(900), pytest.mark.skipif(shutil.which("go") is None, reason="go is not on PATH")]

MODULE = "github.com/ray-project/kuberay/ray-operator"
VERSION = "v1.5.0"

HASH_PROGRAM = r'''package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

func main() {
	in, _ := io.ReadAll(os.Stdin)
	var specs []json.RawMessage
	if err := json.Unmarshal(in, &specs); err != nil {
		panic(err)
	}
	out := []map[string]string{}
	for _, raw := range specs {
		var spec rayv1.RayClusterSpec
		if err := json.Unmarshal(raw, &spec); err != nil {
			panic(err)
		}
		h, err := utils.GenerateJsonHash(spec)
		if err != nil {
			panic(err)
		}
		b, _ := json.Marshal(spec)
		out = append(out, map[string]string{"hash": h, "json": string(b)})
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
'''


def _sample_specs() -> list[tuple[str, Any]]:
    specs = []
    for path in sorted((shared_dir() / "samples" / "kuberay").glob("ray-*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            spec = doc.get("spec") or {}
            got = {"RayCluster": spec, "RayJob": spec.get("rayClusterSpec"),
                   "RayService": spec.get("rayClusterConfig")}.get(doc.get("kind", ""))
            if got:
                specs.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", spec_for_hashing(got)))
    return specs


def _layout_tool() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gen_go_json_layout", Path(__file__).resolve().parents[2] / "tools" / "gen_go_json_layout.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Upstream's hashes and JSON of the sample specs, and the Go layout of the same module."""
    work = tmp_path_factory.mktemp("kuberay-hash-go")
    (work / "go.mod").write_text(f"module hashcheck\n\ngo 1.24\n\nrequire {MODULE} {VERSION}\n")
    for name, program in (("hash", HASH_PROGRAM), ("layout", _layout_tool().PROGRAM)):
        (work / name).mkdir()
        (work / name / "main.go").write_text(program)
    go = str(shutil.which("go"))
    env = {**os.environ, "GOFLAGS": "-mod=mod"}

    def run(*args: str, stdin: str | None = None) -> str:
        p = subprocess.run([go, *args], cwd=work, env=env, input=stdin, capture_output=True, text=True, timeout=800)
        assert p.returncode == 0, f"go {' '.join(args)} failed:\n{p.stderr[-3000:]}"
        return p.stdout

    run("mod", "tidy")
    layout = json.loads(run("run", "./layout", f"{MODULE}@{VERSION}"))
    specs = _sample_specs()
    results = json.loads(run("run", "./hash", stdin=json.dumps([s for _, s in specs])))
    return {"specs": specs, "results": results,
            "layout": GoLayout(root=layout["root"], source=layout["source"],
                               types={k: [tuple(f) for f in v] for k, v in layout["types"].items()})}


def test_the_samples_hold_cluster_specs() -> None:
    assert len(_sample_specs()) >= 20


def test_go_json_of_every_sample_spec_is_byte_equal(upstream: dict[str, Any]) -> None:
    for (name, spec), want in zip(upstream["specs"], upstream["results"], strict=True):
        assert marshal(spec, upstream["layout"]).decode() == want["json"], name


def test_spec_hash_equals_upstreams_for_every_sample(upstream: dict[str, Any]) -> None:
    for (name, spec), want in zip(upstream["specs"], upstream["results"], strict=True):
        assert json_hash(spec, upstream["layout"]) == want["hash"], name
        # The shipped layout (the reference snapshot's types) hashes these specs the same way.
        assert json_hash(spec) == want["hash"], name
