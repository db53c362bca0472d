"""Scheduler plugins, one module each, registered by upstream name.

Each module exports ``PLUGIN_NAME``, ``parse_arguments(mapping) -> <its Arguments struct>`` (run
once when the configuration is loaded) and ``new(args) -> plugin`` (run at every session open).

Mirrors: volcano pkg/scheduler/plugins/factory.go.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pumice.scheduler.volcano.framework.interface import Plugin
from pumice.scheduler.volcano.framework.registry import Registry


@dataclass(frozen=True)
class PluginFactory:
    """How one plugin is configured and built.

    ``parse`` raises :class:`~pumice.scheduler.volcano.framework.arguments.ArgumentError`;
    calling the factory with a mapping parses and builds in one step.
    """

    name: str
    parse: Callable[[Mapping[str, Any]], Any]
    build: Callable[[Any], Plugin]

    def __call__(self, arguments: Mapping[str, Any]) -> Plugin:
        return self.build(self.parse(arguments))


PLUGINS: Registry[PluginFactory] = Registry("plugin")

# every plugin module, named once: imported and registered under its PLUGIN_NAME
_MODULES = (
    "admission_fair_sharing",
    "binpack",
    "capacity",
    "cohort",
    "conformance",
    "deviceshare",
    "drf",
    "gang",
    "network_topology_aware",
    "nodeorder",
    "overcommit",
    "placement",
    "predicates",
    "priority",
    "proportion",
    "queue_position",
    "single_node_fit",
    "sla",
    "task_topology",
    "usage_budget",
    "user_limits",
    "wait_for_pods_ready",
)

for _name in _MODULES:
    _m = importlib.import_module(f"{__name__}.{_name}")
    PLUGINS.register(_m.PLUGIN_NAME, PluginFactory(_m.PLUGIN_NAME, _m.parse_arguments, _m.new))

__all__ = ["PLUGINS", "PluginFactory"]
