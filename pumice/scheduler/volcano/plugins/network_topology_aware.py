"""network-topology-aware: accepted so upstream configs load; no HyperNodes exist in pumice.

Mirrors: volcano pkg/scheduler/plugins/network-topology-aware (name and arguments only).
Deviates: registers no callbacks (HyperNode scheduling is out of scope).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "network-topology-aware"


class NetworkTopologyAwarePlugin:
    name = PLUGIN_NAME

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.arguments = dict(arguments)

    def on_session_open(self, ssn: Session) -> None:
        pass

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(arguments: Mapping[str, Any]) -> NetworkTopologyAwarePlugin:
    return NetworkTopologyAwarePlugin(arguments)
