"""network-topology-aware: accepted so upstream configs load; scores HyperNodes (see issue #16).

Mirrors: volcano pkg/scheduler/plugins/network-topology-aware (name and arguments).
Deviates: registers no callbacks yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from pumice.scheduler.volcano.framework.arguments import Arguments, decode
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "network-topology-aware"


class NetworkTopologyAwareArgs(Arguments, frozen=True):
    """Upstream keys: ``weight``, ``hypernode.binpack.*``, ``hypernode.gradient.evict.max-hypernodes``."""

    weight: int = msgspec.field(default=1, name="weight")
    binpack_cpu: int = msgspec.field(default=1, name="hypernode.binpack.cpu")
    binpack_memory: int = msgspec.field(default=1, name="hypernode.binpack.memory")
    binpack_resources: str = msgspec.field(default="", name="hypernode.binpack.resources")
    normal_pod_enable: bool = msgspec.field(default=True, name="hypernode.binpack.normal-pod.enable")
    normal_pod_fading: float = msgspec.field(default=0.8, name="hypernode.binpack.normal-pod.fading")
    evict_max_hypernodes: int = msgspec.field(default=0, name="hypernode.gradient.evict.max-hypernodes")
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class NetworkTopologyAwarePlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NetworkTopologyAwareArgs) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        pass

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> NetworkTopologyAwareArgs:
    """Parse (once, at configuration load) the arguments under their upstream keys.

    Raises:
        ArgumentError: an unknown key or a value of the wrong type.
    """
    return decode(NetworkTopologyAwareArgs, arguments, extra=lambda k: k.startswith("hypernode.binpack.resources."))


def new(args: NetworkTopologyAwareArgs) -> NetworkTopologyAwarePlugin:
    return NetworkTopologyAwarePlugin(args)
