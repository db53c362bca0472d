"""Cluster inputs: node lists from the traces (or Node manifests) -> :class:`NodeSpec`.

Formats (detected from the CSV header; see ../shared/traces/README.md for the columns):

- Alibaba openb ``openb_node_list_*.csv`` (``sn, cpu_milli, memory_mib, gpu, model``): one Node
  per row, named after ``sn``.
- Alibaba PAI ``pai_machine_spec.csv`` (``machine, gpu_type, cap_cpu, cap_mem, cap_gpu``): cpu in
  cores, memory in GiB; ``gpu_type`` ``CPU`` means no GPU model. Nodes are named
  ``pai-<row>`` (the machine hashes are 24 hex digits, kept as the ``pumice.io/machine`` label).
- Tiresias cluster specs (``num_switch, num_node_p_switch, num_gpu_p_node, num_cpu_p_node,
  mem_p_node``): ``num_switch x num_node_p_switch`` identical Nodes ``tiresias-<i>``, memory in GiB.
- YAML: Node manifests (``kind: Node``, ``status.allocatable``, else ``status.capacity``, per
  resource; cpu 1 and memory 1Gi when neither says; ``ephemeral-storage`` carried when given),
  one or more documents; a ``.yaml``/``.yml`` file, or any text that is no known CSV and reads as
  manifests (a pipe: ``--nodes <(cat nodes.yaml)``). The trace node lists carry no disk size, so their Nodes report no
  ``ephemeral-storage``: a workload whose Pods request it needs Node manifests that give it.

GPUs are published as ``nvidia.com/gpu``; for GPU sharing as ``alibabacloud.com/gpu-milli``
(1000 per GPU, pooled per Node; for YAML workloads, no trace adapter asks for it) and as Volcano's per-card pair
``volcano.sh/gpu-memory`` (1000 per GPU: the simulator's unit is a thousandth of a card, the unit
the openb pod lists use, not MiB) and ``volcano.sh/gpu-number`` (the cards), which the
``deviceshare`` plugin fits card by card (:mod:`pumice.scheduler.volcano.api.gpushare`); the GPU
model is the label ``nvidia.com/gpu.product``. Every Node gets ``pods: 110`` unless its manifest says more
(openb-scale nodes run more small Pods than that, so the CSV formats give 1000).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pumice._util.files import InputFileError, read_text_file
from pumice.api import quantity
from pumice.api.yamlsafe import PLAIN_LOADER, error_line, safe_load_all
from pumice.scheduler.volcano.api import gpushare

GPU = "nvidia.com/gpu"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_MEMORY = gpushare.GPU_MEMORY
GPU_NUMBER = gpushare.GPU_NUMBER
GPU_MODEL_LABEL = "nvidia.com/gpu.product"
MIB = 1024 * 1024
GIB = 1024 * MIB


def gpu_milli(requests: Mapping[str, int]) -> int:
    """Thousandths of a GPU in ``requests`` (:func:`pumice.node.podspec.pod_requests` units): whole
    cards (``nvidia.com/gpu``, ``volcano.sh/gpu-number``) x 1000 plus the shares
    (``alibabacloud.com/gpu-milli``, ``volcano.sh/gpu-memory``, both 1000 per card here)."""
    return (requests.get(GPU, 0) + requests.get(GPU_NUMBER, 0)) * 1000 + requests.get(GPU_MILLI, 0) \
        + requests.get(GPU_MEMORY, 0)


class InputError(Exception):
    """An input file cannot be read as the format it claims (the message names file and row)."""


@dataclass(frozen=True)
class NodeSpec:
    """One simulated Node. Units: cpu in millicores, memory and ephemeral_storage in bytes, gpus
    whole devices. ``ephemeral_storage`` 0 means the input gave none (the trace node lists carry no
    disk size): the Node then reports no ``ephemeral-storage``, and a Pod requesting some does not
    fit it, as on a kubelet that reports none."""

    name: str
    cpu_milli: int
    memory: int
    gpus: int = 0
    gpu_model: str = ""
    pods: int = 1000
    labels: dict[str, str] = field(default_factory=dict)
    ephemeral_storage: int = 0

    def capacity(self) -> dict[str, str]:
        """The Node's ``status.capacity`` as quantities."""
        cap = {"cpu": f"{self.cpu_milli}m", "memory": str(self.memory), "pods": str(self.pods)}
        if self.ephemeral_storage:
            cap["ephemeral-storage"] = str(self.ephemeral_storage)
        if self.gpus:
            cap[GPU] = str(self.gpus)
            cap[GPU_MILLI] = str(self.gpus * 1000)
            cap[GPU_MEMORY] = str(self.gpus * 1000)
            cap[GPU_NUMBER] = str(self.gpus)
        return cap

    def node_labels(self) -> dict[str, str]:
        out = dict(self.labels)
        if self.gpu_model:
            out[GPU_MODEL_LABEL] = self.gpu_model
        return out


def read_text(path: Path) -> str:
    """The file's text (UTF-8).

    Raises:
        InputError: not UTF-8 text (``<file>: not a text file: byte 0xf6 at offset 2 is not
            UTF-8``), or it cannot be read.
    """
    try:
        return read_text_file(path)
    except InputFileError as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


@dataclass(frozen=True)
class CsvRow:
    """One data row of a trace CSV: its file, its number among the data rows (1 = the first after
    the header) and its source line, and its fields by column name."""

    path: Path
    row: int
    line: int
    fields: dict[str, str]

    def where(self, column: str) -> str:
        return f"{self.path}: row {self.row} (line {self.line}), column {column}"

    def text(self, column: str) -> str:
        """The column's text, stripped ('' when the row is short)."""
        return (self.fields.get(column) or "").strip()

    def number(self, column: str, *, whole: bool = False, optional: bool = False, default: float = 0.0,
               positive: bool = False) -> float:
        """The column as a finite number, 0 or more (more than 0 with ``positive``; a whole number
        with ``whole``); ``default`` for an empty field when ``optional``.

        Raises:
            InputError: ``<file>: row N (line L), column C: expected a whole number, 0 or more,
                got '-4'``.
        """
        v = self.text(column)
        if v == "" and optional:
            return default
        what = ("a whole number" if whole else "a number") + (", more than 0" if positive else ", 0 or more")
        try:
            x = float(v)
        except ValueError:
            raise InputError(f"{self.where(column)}: expected {what}, got {v!r}") from None
        if not math.isfinite(x) or x < 0 or (positive and x == 0) or (whole and x != int(x)):
            raise InputError(f"{self.where(column)}: expected {what}, got {v!r}")
        return x


def read_csv(path: Path, fmt: str, required: tuple[str, ...], text: str | None = None) -> list[CsvRow]:
    """The data rows of a trace CSV in format ``fmt``, after checking that its header has every
    ``required`` column. ``text``: the file's text when the caller read it already (a pipe,
    ``--nodes <(...)``, can be read only once); ``None`` reads ``path``.

    Raises:
        InputError: not text, not CSV, ``<file>: the header does not match the <fmt> format:
            no column(s) a, b (its header: x,y,z)``, a row with more or fewer fields than the
            header (``<file>: row 3 (line 4): 6 field(s), the header has 7``), or no data row.
    """
    reader = csv.DictReader(io.StringIO(read_text(path) if text is None else text))
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in required if c not in header]
        if missing:
            got = ",".join(header)
            got = got if len(got) <= 120 else got[:117] + "..."
            raise InputError(f"{path}: the header does not match the {fmt} format: no column(s) "
                             f"{', '.join(missing)} (its header: {got or 'empty'})")
        rows = []
        for i, r in enumerate(reader, 1):
            n = sum(len(v) if isinstance(v, list) else v is not None for v in r.values())
            if n != len(header):
                raise InputError(f"{path}: row {i} (line {reader.line_num}): {n} field(s), the header has "
                                 f"{len(header)}")
            rows.append(CsvRow(path, i, reader.line_num, {(k or "").strip(): v for k, v in r.items()
                                                          if isinstance(v, str)}))
    except csv.Error as e:
        raise InputError(f"{path}: line {reader.line_num}: not CSV: {e}") from None
    if not rows:
        raise InputError(f"{path}: no data rows (only the header)")
    return rows


def load_nodes(path: str | Path) -> list[NodeSpec]:
    """Read a node list in any supported format (see the module docstring). The file is read once
    (a pipe, ``--nodes <(...)`` or ``/dev/stdin``, can be read only once).

    Raises:
        InputError: unknown header, a bad number, or no Node at all.
    """
    p = Path(path)
    if p.suffix in (".yaml", ".yml"):
        return _distinct(p, _yaml_nodes(p))
    text = read_text(p)
    header = {h.strip() for h in text.split("\n", 1)[0].split(",")}
    out: list[NodeSpec] = []
    if {"sn", "cpu_milli", "memory_mib", "gpu"} <= header:
        for r in read_csv(p, "openb node list", ("sn", "cpu_milli", "memory_mib", "gpu"), text):
            out.append(NodeSpec(r.text("sn"), int(r.number("cpu_milli", whole=True, positive=True)),
                                int(r.number("memory_mib", whole=True, positive=True)) * MIB,
                                int(r.number("gpu", whole=True, optional=True)), r.text("model")))
    elif {"machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"} <= header:
        for r in read_csv(p, "PAI machine spec", ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"), text):
            out.append(NodeSpec(f"pai-{r.row - 1:04d}", int(r.number("cap_cpu", positive=True) * 1000),
                                int(r.number("cap_mem", positive=True) * GIB),
                                int(r.number("cap_gpu", whole=True, optional=True)),
                                "" if r.text("gpu_type") == "CPU" else r.text("gpu_type"),
                                labels={"pumice.io/machine": r.text("machine")}))
    elif {"num_switch", "num_node_p_switch", "num_gpu_p_node"} <= header:
        cols = ("num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node")
        for r in read_csv(p, "Tiresias cluster spec", cols, text):
            n = int(r.number("num_switch", whole=True, positive=True)) \
                * int(r.number("num_node_p_switch", whole=True, positive=True))
            cpu = int(r.number("num_cpu_p_node", whole=True, positive=True)) * 1000
            mem = int(r.number("mem_p_node", positive=True) * GIB)
            gpus = int(r.number("num_gpu_p_node", whole=True))
            for _ in range(n):
                out.append(NodeSpec(f"tiresias-{len(out):04d}", cpu, mem, gpus))
    elif (docs := _manifests(p, text)) is not None:  # a pipe has no suffix: --nodes <(cat nodes.yaml)
        return _distinct(p, _yaml_nodes(p, docs))
    else:
        raise InputError(f"{p}: unknown node list header {sorted(header)}; expected openb (sn,cpu_milli,...), "
                         "PAI (machine,gpu_type,...), Tiresias (num_switch,num_node_p_switch,...) or YAML Node "
                         "manifests")
    return _distinct(p, out)


def _manifests(p: Path, text: str) -> list[Any] | None:
    """The YAML documents of ``text`` when it reads as Kubernetes manifests (each a mapping with a
    ``kind``), else None (no YAML, or a CSV with a header of no known format)."""
    try:
        docs = yaml_documents(p, text)
    except InputError:
        return None
    return docs if docs and all(isinstance(d, dict) and "kind" in d for d in docs) else None


def _distinct(p: Path, nodes: list[NodeSpec]) -> list[NodeSpec]:
    """``nodes``, after checking that no two share a name.

    Raises:
        InputError: ``<file>: two Nodes are named 'n1'``.
    """
    seen: set[str] = set()
    for n in nodes:
        if n.name in seen:
            raise InputError(f"{p}: two Nodes are named {n.name!r}")
        seen.add(n.name)
    return nodes


def yaml_documents(path: Path, text: str | None = None) -> list[Any]:
    """The non-empty YAML documents of a simulator input file, in order (PyYAML's safe types).
    ``text``: the file's text when the caller read it already; ``None`` reads ``path``.

    Before anything is expanded, each document is checked by the API server's rule
    (:func:`pumice.api.yamlsafe.check_node`: go-yaml's alias ratio, depth and size), so an alias
    bomb is refused at once instead of being expanded.

    Raises:
        InputError: one line: not readable text, malformed YAML (``<file>:<line>:<col>: ...``), or
            ``yaml: document contains excessive aliasing`` (and the depth and size limits:
            ``<file>: yaml: exceeded max depth of 100``, however deep).
    """
    if text is None:
        text = read_text(path)
    try:
        return [d for d in safe_load_all(text, loader=PLAIN_LOADER) if d]
    except yaml.YAMLError as e:
        raise InputError(error_line(e, str(path))) from None


def _yaml_nodes(p: Path, docs: list[Any] | None = None) -> list[NodeSpec]:
    out = []
    docs = yaml_documents(p) if docs is None else docs
    if not all(isinstance(d, dict) for d in docs):
        raise InputError(f"{p}: expected Node manifests (mappings)")
    items = [i for d in docs for i in (d.get("items") or [] if d.get("kind") == "List" else [d])]
    for d in items:
        if d.get("kind") != "Node":
            continue
        md, st = d.get("metadata") or {}, d.get("status") or {}
        # what the schedulers fit against is allocatable; capacity where allocatable says nothing
        cap = {**(st.get("capacity") or {}), **(st.get("allocatable") or {})}
        name = md.get("name")
        try:
            if not name or not isinstance(name, str):
                raise ValueError("metadata.name: a Node needs a name")
            if not cap:  # trial-10 F-5: it ran as a 1-CPU Node and the run stalled without a word
                raise ValueError("no status.allocatable or status.capacity: a simulated Node's resources are read "
                                 "from them")
            labels = dict(md.get("labels") or {})
            model = labels.pop(GPU_MODEL_LABEL, "")
            cpu = quantity.milli_value(str(cap.get("cpu", "1")))
            memory = quantity.value(str(cap.get("memory", "1Gi")))
            gpus = quantity.value(str(cap.get(GPU, "0")))
            pods = quantity.value(str(cap.get("pods", 110)))
            storage = quantity.value(str(cap.get("ephemeral-storage", 0)))
            for what, v, least in (("cpu", cpu, 1), ("memory", memory, 1), (GPU, gpus, 0), ("pods", pods, 1),
                                   ("ephemeral-storage", storage, 0)):
                if v < least or (what != "cpu" and v != int(v)):
                    raise ValueError(f"status.allocatable/capacity {what}: expected "
                                     f"{'a whole number' if what != 'cpu' else 'a quantity'}"
                                     f"{', more than 0' if least else ', 0 or more'}, got {cap.get(what)!r}")
            out.append(NodeSpec(name, int(cpu), int(memory), int(gpus), model, int(pods), labels, int(storage)))
        except (KeyError, ValueError, TypeError) as e:
            raise InputError(f"{p}: Node {name!r}: {e}") from None
    if not out:
        raise InputError(f"{p}: no Node manifests")
    return out
