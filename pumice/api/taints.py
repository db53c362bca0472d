"""The well-known Node taint keys the control plane sets and tolerates.

Mirrors: k8s.io/api core/v1 well_known_taints.go (TaintNodeNotReady, TaintNodeUnreachable,
TaintNodeUnschedulable).
"""

from __future__ import annotations

__all__ = ["TAINT_NODE_NOT_READY", "TAINT_NODE_UNREACHABLE", "TAINT_NODE_UNSCHEDULABLE"]

#: a Node whose Ready condition is False (node lifecycle controller)
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
#: a Node whose Ready condition is Unknown: its heartbeat stopped (node lifecycle controller)
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
#: a cordoned Node (spec.unschedulable)
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
