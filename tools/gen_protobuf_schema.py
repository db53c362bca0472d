"""Generate pumice/api/protobuf_schema.json, the wire facts of Kubernetes' protobuf encoding.

Reads upstream's ``generated.proto`` files (message names, field numbers, proto types) and the Go
struct tags of the same packages (JSON names, ``omitempty``, ``,inline``, pointer fields, list
wrapper types) from local git mirrors, and writes one compact JSON document in pumice's own
format. No upstream text is copied: only names, numbers and types end up in the output.

Usage::

    python tools/gen_protobuf_schema.py /work/.mirror/kubernetes+api/repo \\
        /work/.mirror/kubernetes+apimachinery/repo \\
        /work/.mirror/kubernetes+apiextensions-apiserver/repo \\
        /work/.mirror/kubernetes+kube-aggregator/repo \\
        /work/.mirror/kubernetes+metrics/repo > pumice/api/protobuf_schema.json

Output shape::

    {"source": {"<repo>": "<commit>"},
     "groups": {"<proto package>": ["<group>", "<version>"]},
     "messages": {"<proto package>.<Message>": {
         "fields": [[number, "<json name>", "<type>", "<flags>"], ...],
         "list": true}}}            # "list": the Go type is a slice wrapped in a message

``type`` is a proto scalar (``string``, ``int32``, ``int64``, ``bool``, ``bytes``, ``double``,
``float``), a full message name, or ``map:<key type>:<value type>``. ``flags``: ``r`` repeated,
``p`` Go pointer, ``o`` omitempty, ``i`` JSON-inlined (the message's fields appear in the parent).
A fifth element, when present, holds the field's strategic-merge-patch tags
(``{"patchStrategy": "merge", "patchMergeKey": "name"}``), under ``goType`` the Go type of the
field as Go's reflection names it (``v1.RestartPolicy``, ``types.UID``, ``v1.ResourceList``: what
encoding/json's errors print) when it is not the one the proto type implies (a named type; see
pumice.api.godecode), and the field's schema markers from its Go comment: ``listType``
(``+listType``), ``listMapKeys`` (the ``+listMapKey`` markers, in order) and ``mapType``
(``+mapType`` or ``+structType``), and ``default`` (a ``+default=`` marker's JSON value: what
openapi-gen publishes as the field's ``default``). A message's own ``+structType``/``+mapType`` marker is its
``mapType`` (beside ``fields``). These are what controller-gen turns into
``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys`` and ``x-kubernetes-map-type`` where a CRD
embeds the type (pumice.api.crds). The ``+k8s:``-prefixed declarative-validation tags are not read.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

PACKAGES = {
    # repo key -> list of (package dir, group or None for non-API packages)
    "api": [
        (f"{g}/{v}", None) for g, v in (
            ("core", "v1"), ("apps", "v1"), ("batch", "v1"), ("coordination", "v1"), ("scheduling", "v1"),
            ("rbac", "v1"), ("events", "v1"), ("discovery", "v1"), ("policy", "v1"), ("storage", "v1"),
            ("autoscaling", "v1"), ("autoscaling", "v2"), ("authentication", "v1"), ("authorization", "v1"),
            ("networking", "v1"), ("node", "v1"), ("certificates", "v1"), ("admissionregistration", "v1"),
            ("flowcontrol", "v1"),
        )
    ],
    "apimachinery": [
        ("pkg/apis/meta/v1", None), ("pkg/runtime", None), ("pkg/util/intstr", None), ("pkg/api/resource", None),
    ],
    "apiextensions": [("pkg/apis/apiextensions/v1", None)],
    "aggregator": [("pkg/apis/apiregistration/v1", None)],
    "metrics": [("pkg/apis/metrics/v1beta1", None)],
}

SCALARS = {"string", "int32", "int64", "bool", "bytes", "double", "float", "uint32", "uint64", "sint32",
           "sint64", "fixed32", "fixed64"}

_MSG = re.compile(r"^message (\w+) \{")
_FIELD = re.compile(r"^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+);")
_MAP = re.compile(r"^\s*map<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+);")
_GO_STRUCT = re.compile(r"^type (\w+) struct \{")
_GO_SLICE = re.compile(r"^type (\w+) \[\]([\w.*]+)\s*$")
_GO_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?([*\[\]\w.]+(?:\[[\w.]+\][*\w.\[\]]+)?)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')
#: a schema marker in a Go comment: ``// +listType=map``, ``// +listMapKey=name``, ``// +structType=atomic``
_MARKER = re.compile(r"^\s*//\s*\+(listType|listMapKey|mapType|structType)=(\w+)\s*$")
#: a field's default marker with a JSON literal value: ``// +default="TCP"``, ``// +default=1``
#: (``+default=ref(...)``, a Go constant, is not read)
_DEFAULT = re.compile(r"^\s*//\s*\+default=(.+?)\s*$")
_IMPORT = re.compile(r'^\s*(?:import\s+)?(\w+\s+)?"([\w./-]+)"\s*$')
_IDENT = re.compile(r"\b(?:(\w+)\.)?([A-Za-z_]\w*)\b")
#: Go's predeclared types as reflection names them (byte is uint8, rune int32)
_GO_BUILTIN = {"string": "string", "bool": "bool", "byte": "uint8", "rune": "int32", "int": "int", "int8": "int8",
               "int16": "int16", "int32": "int32", "int64": "int64", "uint": "uint", "uint8": "uint8",
               "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "float32": "float32",
               "float64": "float64", "map": "map"}
#: the Go type a proto scalar decodes from JSON into when the field is not a named type
_PROTO_GO = {"string": "string", "int32": "int32", "int64": "int64", "bool": "bool", "bytes": "[]uint8",
             "double": "float64", "float": "float32", "uint32": "uint32", "uint64": "uint64"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def parse_proto(text: str) -> tuple[str, dict[str, list[tuple[str, str, str, int]]]]:
    """``(package, {message: [(label, type, name, number)]})``; label ``map`` carries
    ``key:value`` as the type."""
    package = re.search(r"^package ([\w.]+);", text, re.M)
    assert package is not None
    messages: dict[str, list[tuple[str, str, str, int]]] = {}
    current: list[tuple[str, str, str, int]] | None = None
    for line in text.splitlines():
        if line.strip().startswith("//"):
            continue
        m = _MSG.match(line)
        if m:
            current = messages.setdefault(m.group(1), [])
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is None:
            continue
        m = _MAP.match(line)
        if m:
            current.append(("map", f"{m.group(1)}:{m.group(2)}", m.group(3), int(m.group(4))))
            continue
        m = _FIELD.match(line)
        if m:
            current.append((m.group(1), m.group(2), m.group(3), int(m.group(4))))
    return package.group(1), messages


def go_imports(text: str) -> dict[str, str]:
    """The file's imports: the name it refers to each by -> the package's own name (the last path
    element: ``metav1`` -> ``v1``)."""
    out: dict[str, str] = {}
    block = False
    for line in text.splitlines():
        if line.startswith("import ("):
            block = True
            continue
        if block and line.startswith(")"):
            block = False
            continue
        if block or line.startswith("import "):
            m = _IMPORT.match(line)
            if m:
                last = m.group(2).rsplit("/", 1)[-1]
                out[(m.group(1) or last).strip()] = last
    return out


def reflect_name(gotype: str, package: str, imports: dict[str, str]) -> str:
    """A field's Go type as source text (``*metav1.LabelSelector``, ``[]Container``) as Go's
    reflection prints the type it decodes into (``v1.LabelSelector``, ``[]v1.Container``): the
    pointer dropped, each named type with its package's name."""
    def name(m: re.Match[str]) -> str:
        qual, ident = m.group(1), m.group(2)
        if qual:
            return f"{imports.get(qual, qual)}.{ident}"
        return _GO_BUILTIN.get(ident, f"{package}.{ident}")

    return _IDENT.sub(name, gotype.lstrip("*"))


def default_go_type(label: str, ptype: str) -> str:
    """The Go type the proto type implies (pumice.api.godecode derives the same)."""
    def one(t: str) -> str:
        if t in _PROTO_GO:
            return _PROTO_GO[t]
        parts = t.lstrip(".").split(".")
        return f"{parts[-2]}.{parts[-1]}"

    if label == "map":
        k, v = ptype.split(":")
        return f"map[{one(k)}]{one(v)}"
    return ("[]" if label == "repeated" else "") + one(ptype)


Markers = dict[str, object]


def _add_marker(markers: Markers, line: str) -> bool:
    """Record the schema marker on ``line`` (a Go comment) in ``markers``; False when it holds none."""
    m = _MARKER.match(line)
    if not m:
        d = _DEFAULT.match(line)
        if d is None:
            return False
        try:
            markers["default"] = json.loads(d.group(1))
        except ValueError:
            return False
        return True
    name, value = m.group(1), m.group(2)
    if name == "listMapKey":
        keys = markers.setdefault("listMapKeys", [])
        assert isinstance(keys, list)
        keys.append(value)
    else:
        markers["mapType" if name == "structType" else name] = value
    return True


def parse_go(texts: list[str], package: str = "") -> tuple[
        dict[str, dict[str, tuple[str, str, str, str, str, Markers]]], set[str], dict[str, Markers]]:
    """``({struct: {proto name: (json tag, go type, reflect name, patchStrategy, patchMergeKey,
    markers)}}, {slice type names}, {struct: its own markers})``; the go type as reflection names
    it (:func:`reflect_name`, in Go package ``package``); markers from the comment lines right
    above a field or a type (:func:`_add_marker`)."""
    structs: dict[str, dict[str, tuple[str, str, str, str, str, Markers]]] = {}
    slices: set[str] = set()
    type_markers: dict[str, Markers] = {}
    for text in texts:
        imports = go_imports(text)
        current: dict[str, tuple[str, str, str, str, str, Markers]] | None = None
        depth = 0
        pending: Markers = {}
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("//"):
                _add_marker(pending, line)
                continue
            if current is None:
                m = _GO_SLICE.match(line)
                if m:
                    slices.add(m.group(1))
                    pending = {}
                    continue
                m = _GO_STRUCT.match(line)
                if m:
                    current = structs.setdefault(m.group(1), {})
                    if pending:
                        type_markers[m.group(1)] = pending
                    depth = 1
                pending = {}
                continue
            markers, pending = pending, {}
            depth += line.count("{") - line.count("}")
            if depth <= 0:
                current = None
                continue
            m = _GO_FIELD.match(line)
            if not m:
                continue
            tags = dict(_TAG.findall(m.group(3)))
            proto = tags.get("protobuf")
            if not proto:
                continue
            pparts = proto.split(",")
            pname = next((p[5:] for p in pparts if p.startswith("name=")), None)
            value = (tags.get("json", pname or ""), m.group(2), reflect_name(m.group(2), package, imports),
                     tags.get("patchStrategy", ""),
                     tags.get("patchMergeKey", ""), markers)
            if len(pparts) > 1 and pparts[1].isdigit():
                current["#" + pparts[1]] = value
            if pname is not None:
                current[pname] = value
    return structs, slices, type_markers


def qualify(package: str, t: str, known: set[str]) -> str:
    t = t.lstrip(".")
    if t in SCALARS:
        return t
    if "." in t:
        return t
    return f"{package}.{t}"


def main(argv: list[str]) -> int:
    repos = dict(zip(("api", "apimachinery", "apiextensions", "aggregator", "metrics"), (Path(a) for a in argv[1:6]),
                     strict=True))
    out: dict[str, object] = {"source": {}, "groups": {}, "messages": {}}
    messages: dict[str, dict[str, object]] = {}
    for key, repo in repos.items():
        commit = git(repo, "rev-parse", "HEAD").strip()
        out["source"][key] = commit  # type: ignore[index]
        files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
        for pkg_dir, _ in PACKAGES[key]:
            proto_text = git(repo, "show", f"HEAD:{pkg_dir}/generated.proto")
            package, msgs = parse_proto(proto_text)
            go_texts = [git(repo, "show", f"HEAD:{f}") for f in files
                        if f.startswith(pkg_dir + "/") and f.count("/") == pkg_dir.count("/") + 1
                        and f.endswith(".go") and not f.endswith("_test.go")
                        and not Path(f).name.startswith(("zz_", "generated")) and "swagger" not in f]
            structs, slices, type_markers = parse_go(go_texts, pkg_dir.rsplit("/", 1)[1])
            group = None
            for t in go_texts:
                gm = re.search(r'^const GroupName = "([^"]*)"', t, re.M)
                if gm:
                    group = gm.group(1)
            if key == "api":
                version = pkg_dir.split("/")[1]
                out["groups"][package] = ["" if pkg_dir.startswith("core/") else (group or ""), version]  # type: ignore[index]
            if key in ("apiextensions", "aggregator", "metrics"):
                out["groups"][package] = [group or "", pkg_dir.rsplit("/", 1)[1]]  # type: ignore[index]
            for name, fields in msgs.items():
                go = structs.get(name, {})
                rows = []
                for label, ptype, pname, number in sorted(fields, key=lambda f: f[3]):
                    tag, gotype, reflected, strategy, merge_key, markers = (
                        go.get(pname) or go.get(f"#{number}") or (pname, "", "", "", "", {}))
                    parts = tag.split(",")
                    jname = parts[0]
                    flags = ""
                    if label == "repeated":
                        flags += "r"
                    if gotype.startswith("*"):
                        flags += "p"
                    if "omitempty" in parts[1:]:
                        flags += "o"
                    if "inline" in parts[1:] or jname == "":
                        flags += "i"
                    if jname == "-":
                        continue
                    if label == "map":
                        k, v = ptype.split(":")
                        t = f"map:{qualify(package, k, set())}:{qualify(package, v, set())}"
                    else:
                        t = qualify(package, ptype, set())
                    row: list[object] = [number, jname or pname, t, flags]
                    extra: dict[str, object] = {}
                    if strategy or merge_key:
                        extra = {"patchStrategy": strategy, "patchMergeKey": merge_key}
                    if reflected and reflected != default_go_type(label, t[4:] if label == "map" else t):
                        extra["goType"] = reflected
                    extra.update(markers)
                    if extra:
                        row.append(extra)
                    rows.append(row)
                entry: dict[str, object] = {"fields": rows}
                if name in slices:
                    entry["list"] = True
                entry.update(type_markers.get(name, {}))
                messages[f"{package}.{name}"] = entry
    out["messages"] = dict(sorted(messages.items()))
    json.dump(out, sys.stdout, indent=None, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
