"""Click callbacks of the node agent's options that ``pumice up`` and ``pumice node-agent`` share:
the Pod network (``--pod-cidr``, ``--bridge``) and the Node capacity (``--node-cpu``,
``--node-memory``). A bad value is a usage error naming the option (exit 2) before anything
starts, with the node agent's own check (:mod:`pumice.node.network`, :mod:`pumice.node.agent`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


def _checked_by(check_name: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """A click callback: None stays None; else ``pumice.node.network.<check_name>(value)`` must
    pass (imported when an option is given, so the CLI's start-up does not load the network code).

    Raises (from the callback):
        click.BadParameter: the check's NetworkError message."""
    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        from pumice.node import network

        check: Any = getattr(network, check_name)
        try:
            check(value)
        except network.NetworkError as e:
            raise click.BadParameter(str(e)) from None
        return value
    return callback


pod_cidr_option = _checked_by("parse_pod_cidr")
"""``--pod-cidr``: :func:`pumice.node.network.parse_pod_cidr` must take it (``bad Pod CIDR
'10.0.0.0/33': ...``)."""

bridge_option = _checked_by("check_bridge_name")
"""``--bridge``: :func:`pumice.node.network.check_bridge_name` must pass (``bridge name 'x...' is
longer than 15 characters``)."""


def _capacity_checked(resource: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """A click callback: None stays None; else :func:`pumice.node.agent.check_node_capacity`
    must pass for ``resource``."""
    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        from pumice.node.agent import AgentError, check_node_capacity

        try:
            check_node_capacity(resource, value)
        except AgentError as e:
            raise click.BadParameter(str(e)) from None
        return value
    return callback


node_cpu_option = _capacity_checked("cpu")
"""``--node-cpu``: a positive quantity of at most int64 millicores (``'1e400' is more than a Node
can have (at most 9223372036854775807m cpu)``)."""

node_memory_option = _capacity_checked("memory")
"""``--node-memory``: a positive quantity of at most int64 bytes."""
