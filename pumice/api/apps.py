"""apps/v1 names the API server and the workload controllers share.

Mirrors: k8s.io/api apps/v1 types.go (DeprecatedTemplateGeneration), kubernetes pkg/apis/apps
(DaemonSetTemplateGenerationKey).
"""

from __future__ import annotations

__all__ = ["DAEMONSET_TEMPLATE_GENERATION_LABEL", "TEMPLATE_GENERATION"]

#: apps/v1 carries the internal DaemonSetSpec.TemplateGeneration in this DaemonSet annotation
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
#: the DaemonSet controller labels each Pod it makes with the template generation it came from
DAEMONSET_TEMPLATE_GENERATION_LABEL = "pod-template-generation"
