"""Cluster inputs: node lists from the traces (or Node manifests) -> :class:`NodeSpec`.

Formats (detected from the CSV header; see ../shared/traces/README.md for the columns):

- Alibaba openb ``openb_node_list_*.csv`` (``sn, cpu_milli, memory_mib, gpu, model``): one Node
  per row, named after ``sn``.
- Alibaba PAI ``pai_machine_spec.csv`` (``machine, gpu_type, cap_cpu, cap_mem, cap_gpu``): cpu in
  cores, memory in GiB; ``gpu_type`` ``CPU`` means no GPU model. Nodes are named
  ``pai-<row>`` (the machine hashes are 24 hex digits, kept as the ``pumice.io/machine`` label).
- Tiresias cluster specs (``num_switch, num_node_p_switch, num_gpu_p_node, num_cpu_p_node,
  mem_p_node``): ``num_switch x num_node_p_switch`` identical Nodes ``tiresias-<i>``, memory in GiB.
- YAML: Node manifests (``kind: Node``, ``status.capacity``), one or more documents.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pumice.api import quantity
from pumice.api.yamlsafe import error_line
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
    """One simulated Node. Units: cpu in millicores, memory in bytes, gpus whole devices."""

    name: str
    cpu_milli: int
    memory: int
    gpus: int = 0
    gpu_model: str = ""
    pods: int = 1000
    labels: dict[str, str] = field(default_factory=dict)

    def capacity(self) -> dict[str, str]:
        """The Node's ``status.capacity`` as quantities."""
        cap = {"cpu": f"{self.cpu_milli}m", "memory": str(self.memory), "pods": str(self.pods)}
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


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    text = path.read_text()
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    return [h.strip() for h in (reader.fieldnames or [])], rows


def load_nodes(path: str | Path) -> list[NodeSpec]:
    """Read a node list in any supported format (see the module docstring).

    Raises:
        InputError: unknown header, a bad number, or no Node at all.
    """
    p = Path(path)
    if p.suffix in (".yaml", ".yml"):
        return _yaml_nodes(p)
    header, rows = _rows(p)
    try:
        if {"sn", "cpu_milli", "memory_mib", "gpu"} <= set(header):
            out = [NodeSpec(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]) * MIB, int(r["gpu"] or 0),
                            (r.get("model") or "").strip()) for r in rows]
        elif {"machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"} <= set(header):
            out = [NodeSpec(f"pai-{i:04d}", int(float(r["cap_cpu"]) * 1000), int(float(r["cap_mem"]) * GIB),
                            int(float(r["cap_gpu"] or 0)), "" if r["gpu_type"] == "CPU" else r["gpu_type"],
                            labels={"pumice.io/machine": r["machine"]})
                   for i, r in enumerate(rows)]
        elif {"num_switch", "num_node_p_switch", "num_gpu_p_node"} <= set(header):
            out = []
            for r in rows:
                n = int(r["num_switch"]) * int(r["num_node_p_switch"])
                for _ in range(n):
                    out.append(NodeSpec(f"tiresias-{len(out):04d}", int(r["num_cpu_p_node"]) * 1000,
                                        int(float(r["mem_p_node"]) * GIB), int(r["num_gpu_p_node"])))
        else:
            raise InputError(f"{p}: unknown node list header {header}; expected openb (sn,cpu_milli,...), "
                             "PAI (machine,gpu_type,...) or Tiresias (num_switch,num_node_p_switch,...)")
    except (KeyError, ValueError) as e:
        raise InputError(f"{p}: bad row: {e}") from None
    if not out:
        raise InputError(f"{p}: no nodes")
    return out


def _yaml_nodes(p: Path) -> list[NodeSpec]:
    out = []
    try:
        docs = [d for d in yaml.safe_load_all(p.read_text()) if d]
    except yaml.YAMLError as e:
        raise InputError(error_line(e, str(p))) from None
    items = [i for d in docs for i in (d.get("items") or [] if d.get("kind") == "List" else [d])]
    for d in items:
        if d.get("kind") != "Node":
            continue
        md, cap = d.get("metadata") or {}, (d.get("status") or {}).get("capacity") or {}
        try:
            labels = dict(md.get("labels") or {})
            model = labels.pop(GPU_MODEL_LABEL, "")
            out.append(NodeSpec(md["name"], quantity.milli_value(str(cap.get("cpu", "1"))),
                                quantity.value(str(cap.get("memory", "1Gi"))), int(quantity.value(str(cap.get(GPU, "0")))),
                                model, int(cap.get("pods", 110)), labels))
        except (KeyError, ValueError) as e:
            raise InputError(f"{p}: Node {md.get('name')!r}: {e}") from None
    if not out:
        raise InputError(f"{p}: no Node manifests")
    return out
