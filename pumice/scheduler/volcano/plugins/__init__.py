"""Scheduler plugins, one module each, registered by upstream name.

Mirrors: volcano pkg/scheduler/plugins/factory.go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pumice.scheduler.volcano.framework.interface import Plugin
from pumice.scheduler.volcano.framework.registry import Registry

PluginBuilder = Callable[[Mapping[str, Any]], Plugin]
PLUGINS: Registry[PluginBuilder] = Registry("plugin")

from pumice.scheduler.volcano.plugins import (  # noqa: E402
    binpack,
    capacity,
    conformance,
    drf,
    gang,
    network_topology_aware,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
    sla,
    task_topology,
)

for _m in (
    binpack,
    capacity,
    conformance,
    drf,
    gang,
    network_topology_aware,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
    sla,
    task_topology,
):
    PLUGINS.register(_m.PLUGIN_NAME, _m.new)

__all__ = ["PLUGINS", "PluginBuilder"]
