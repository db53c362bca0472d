"""Generate pumice/controllers/ray/common/raycluster_spec_layout.json: how Go's encoding/json
writes a KubeRay ``RayClusterSpec`` (field order, JSON names, ``omitempty``/``omitzero``, pointers,
inlined structs and the types with their own JSON encoding), for the byte-exact spec hash of
:mod:`pumice.controllers.ray.common.hashing`.

A small Go program, built in a temporary directory outside the repository, walks the Go types with
``reflect`` and prints the layout; only names, flags and type shapes end up in the output. The
KubeRay module comes from a local checkout (``--src``, e.g. a ``git archive`` of the mirror at the
reference snapshot) or from the Go module proxy (``--version``); its dependencies from the proxy.

Usage::

    python tools/gen_go_json_layout.py --src /tmp/kuberay-src/ray-operator \\
        > pumice/controllers/ray/common/raycluster_spec_layout.json
    python tools/gen_go_json_layout.py --version v1.5.0 > layout.json

Output shape::

    {"source": "<module version or checkout commit>", "root": "<type id>",
     "types": {"<type id>": [["<json name>", "<type>", "<flags>"], ...]}}

``type`` is ``string``, ``int``, ``uint``, ``float``, ``bool``, ``bytes``, ``any``, one of the
self-encoding types ``quantity``, ``time``, ``microtime``, ``duration``, ``intorstring``, ``raw``
(JSON written as given), a struct
type id, ``*<type>`` (pointer), ``[]<type>`` or ``map[<type>]<type>``. ``flags``: ``o`` omitempty,
``z`` omitzero, ``i`` an embedded struct whose fields Go writes into the parent.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MODULE = "github.com/ray-project/kuberay/ray-operator"

PROGRAM = r'''package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
)

var special = map[string]string{
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "quantity",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":        "time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":   "microtime",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":    "duration",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString":  "intorstring",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":    "raw",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":     "raw",
}

var types = map[string][][3]string{}
var marshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
var textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()

func id(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

func desc(t reflect.Type) string {
	if s, ok := special[id(t)]; ok {
		return s
	}
	if t.Kind() != reflect.Pointer && (t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) {
		fmt.Fprintf(os.Stderr, "unhandled self-encoding type %s\n", id(t))
		os.Exit(2)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + desc(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + desc(t.Elem())
	case reflect.Array:
		return "[]" + desc(t.Elem())
	case reflect.Map:
		return "map[" + desc(t.Key()) + "]" + desc(t.Elem())
	case reflect.Struct:
		walk(t)
		return id(t)
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "uint"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Interface:
		return "any"
	}
	fmt.Fprintf(os.Stderr, "unhandled kind %s\n", t.Kind())
	os.Exit(2)
	return ""
}

func walk(t reflect.Type) {
	if _, seen := types[id(t)]; seen {
		return
	}
	types[id(t)] = nil
	fields := [][3]string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		parts := strings.Split(tag, ",")
		name, flags := parts[0], ""
		for _, o := range parts[1:] {
			if o == "omitempty" {
				flags += "o"
			}
			if o == "omitzero" {
				flags += "z"
			}
			if o == "string" {
				fmt.Fprintf(os.Stderr, "unhandled ,string option on %s.%s\n", id(t), f.Name)
				os.Exit(2)
			}
		}
		ft := f.Type
		if f.Anonymous && name == "" && (ft.Kind() == reflect.Struct || (ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct)) {
			flags += "i"
		} else if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields = append(fields, [3]string{name, desc(ft), flags})
	}
	types[id(t)] = fields
}

func main() {
	root := desc(reflect.TypeOf(rayv1.RayClusterSpec{}))
	out, _ := json.Marshal(map[string]any{"source": os.Args[1], "root": root, "types": types})
	os.Stdout.Write(out)
}
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--src", type=Path, help="a ray-operator checkout (the directory holding its go.mod)")
    g.add_argument("--version", help="a ray-operator module version the Go module proxy serves")
    ap.add_argument("--label", help="the source recorded in the output (default: the version or the path)")
    args = ap.parse_args()
    go = shutil.which("go")
    if go is None:
        sys.exit("go is not on PATH")
    with tempfile.TemporaryDirectory(prefix="pumice-go-layout-") as d:
        work = Path(d)
        (work / "main.go").write_text(PROGRAM)
        if args.src:
            src = args.src.resolve()
            gomod = (src / "go.mod").read_text()
            gover = next(line.split()[1] for line in gomod.splitlines() if line.startswith("go "))
            (work / "go.mod").write_text(f"module layout\n\ngo {gover}\n\nrequire {MODULE} v0.0.0\n\n"
                                         f"replace {MODULE} => {src}\n")
        else:
            (work / "go.mod").write_text(f"module layout\n\ngo 1.24\n\nrequire {MODULE} {args.version}\n")
        env = {"GOFLAGS": "-mod=mod", "PATH": str(Path(go).parent) + ":/usr/bin:/bin"}
        import os

        env = {**os.environ, **env}
        subprocess.run([go, "mod", "tidy"], cwd=work, check=True, env=env)
        label = args.label or args.version or str(args.src)
        out = subprocess.run([go, "run", ".", label], cwd=work, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"go run failed:\n{out.stderr[-3000:]}")
    layout = json.loads(out.stdout)
    json.dump({"source": layout["source"], "root": layout["root"],
               "types": dict(sorted(layout["types"].items()))}, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
