"""Click callbacks of the Pod network options ``--pod-cidr`` and ``--bridge`` (``pumice up``,
``pumice node-agent``): a bad value is a usage error naming the option (exit 2) before anything
starts, with the node agent's own check (:mod:`pumice.node.network`)."""

from __future__ import annotations

import click


def pod_cidr_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--pod-cidr``: None stays None; else :func:`pumice.node.network.parse_pod_cidr` must take it.

    Raises:
        click.BadParameter: its message (``bad Pod CIDR '10.0.0.0/33': ...``)."""
    if value is None:
        return None
    from pumice.node.network import NetworkError, parse_pod_cidr

    try:
        parse_pod_cidr(value)
    except NetworkError as e:
        raise click.BadParameter(str(e)) from None
    return value


def bridge_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--bridge``: None stays None; else :func:`pumice.node.network.check_bridge_name` must pass.

    Raises:
        click.BadParameter: its message (``bridge name 'x...' is longer than 15 characters``)."""
    if value is None:
        return None
    from pumice.node.network import NetworkError, check_bridge_name

    try:
        check_bridge_name(value)
    except NetworkError as e:
        raise click.BadParameter(str(e)) from None
    return value
