"""Admission for JobFlows (``flow.volcano.sh/v1alpha1`` ``jobflows``, CREATE and UPDATE):
``validatejobflow.volcano.sh``.

The flows and their ``dependsOn.targets`` must form a directed acyclic graph: a target that names
no flow of the same JobFlow is refused with ``jobflow Flow is not DAG: vertex is not defined:
<target>``, a dependency cycle (a flow depending on itself included) with ``jobflow Flow is not
DAG``. Without this check such a flow is stored and waits for ever for a Job that never comes.

Mirrors: volcano pkg/webhooks/admission/jobflows/validate/validate_jobflow.go (messages verbatim)
and util.go (``LoadVertexs``, ``IsDAG``).
Deviates: upstream walks the flows in Go map order, so with several undefined targets which one
it names varies from call to call; here it is the first one in ``spec.flows`` order. The cycle
search is an iterative depth-first search (linear time, no recursion limit) where upstream's
recursive one is exponential on wide graphs; both refuse exactly the graphs with a cycle.
"""

from __future__ import annotations

from typing import Any

from pumice.api.admission import AdmissionRequest, ObjectReader
from pumice.controllers.volcano.admission._common import deny, is_kind

VALIDATE_WEBHOOK = "validatejobflow.volcano.sh"
FLOW_NOT_DAG = "jobflow Flow is not DAG"
VERTEX_NOT_DEFINED = "vertex is not defined"


def flow_graph(jobflow: dict[str, Any]) -> dict[str, list[str]]:
    """``spec.flows`` as ``{flow name: [target names]}`` in spec order (a repeated name: the last
    entry wins, as upstream's map). Entries that are not objects are skipped (the CRD schema
    refuses them before validation)."""
    flows = (jobflow.get("spec") or {}).get("flows") or []
    graph: dict[str, list[str]] = {}
    for flow in flows if isinstance(flows, list) else []:
        if not isinstance(flow, dict):
            continue
        targets = (flow.get("dependsOn") or {}).get("targets") or []
        graph[str(flow.get("name") or "")] = [str(t) for t in targets] if isinstance(targets, list) else []
    return graph


def _has_cycle(graph: dict[str, list[str]]) -> bool:
    """Whether the (closed: every target is a key) graph has a directed cycle."""
    done: set[str] = set()
    for root in graph:
        if root in done:
            continue
        on_path = {root}
        stack = [(root, iter(graph[root]))]
        while stack:
            vertex, edges = stack[-1]
            nxt = next(edges, None)
            if nxt is None:
                stack.pop()
                on_path.discard(vertex)
                done.add(vertex)
            elif nxt in on_path:
                return True
            elif nxt not in done:
                on_path.add(nxt)
                stack.append((nxt, iter(graph[nxt])))
    return False


def validate_jobflow_dag(jobflow: dict[str, Any]) -> str:
    """Upstream's ``validateJobFlowDAG`` message ("" when the flows form a DAG)."""
    graph = flow_graph(jobflow)
    for targets in graph.values():
        for target in targets:
            if target not in graph:
                return f"{FLOW_NOT_DAG}: {VERTEX_NOT_DEFINED}: {target}"
    return FLOW_NOT_DAG if _has_cycle(graph) else ""


class JobFlowValidator:
    """``validatejobflow.volcano.sh``: the flows' dependencies form a DAG (CREATE and UPDATE)."""

    name = VALIDATE_WEBHOOK

    def handles(self, req: AdmissionRequest) -> bool:
        return is_kind(req, "flow.volcano.sh", "jobflows") and req.operation in ("CREATE", "UPDATE")

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        msg = validate_jobflow_dag(req.obj or {})
        if msg:
            raise deny(self.name, msg)
