"""Click callbacks of the API server's Service range options that ``pumice apiserver`` and ``pumice
up`` share: ``--service-cluster-ip-range`` (an IPv4 CIDR, returned normalized) and
``--service-node-port-range`` (returned as ``(first, last)``). A bad value is a usage error naming
the option (exit 2) before anything starts, with the allocator's own parsing
(:mod:`pumice.apiserver.servicealloc`)."""

from __future__ import annotations

import click

#: the defaults, as text (the CLI does not load the API server to print its help; a test checks
#: they match pumice.apiserver.servicealloc's)
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
DEFAULT_NODE_PORT_RANGE = "30000-32767"
SERVICE_CIDR_HELP = ("IPv4 CIDR the Services' cluster IPs come from (kube-apiserver's flag; the addresses are "
                     "allocated but not routed: there is no kube-proxy).")
NODE_PORT_RANGE_HELP = "Node ports for NodePort and LoadBalancer Services: first-last (kube-apiserver's flag)."


def service_cidr_option(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``--service-cluster-ip-range``: :func:`pumice.apiserver.servicealloc.parse_service_cidr`.

    Raises (from the callback):
        click.BadParameter: the parser's message."""
    from pumice.apiserver.servicealloc import parse_service_cidr

    try:
        return parse_service_cidr(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def node_port_range_option(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, int]:
    """``--service-node-port-range``: :func:`pumice.apiserver.servicealloc.parse_node_port_range`.

    Raises (from the callback):
        click.BadParameter: the parser's message."""
    from pumice.apiserver.servicealloc import parse_node_port_range

    try:
        return parse_node_port_range(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


ADVERTISE_ADDRESS_HELP = ("IPv4 address the Endpoints default/kubernetes give for this API server (kube-apiserver's "
                          "flag); default: the bind address when it is a specific non-loopback one, else this "
                          "host's default-route address.")


def advertise_address_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--advertise-address``: an IPv4 address, neither loopback nor unspecified (the Endpoints
    ``default/kubernetes`` carry it; kube-apiserver's Endpoints validation refuses both).

    Raises (from the callback):
        click.BadParameter: not such an address."""
    import ipaddress

    if value is None:
        return None
    try:
        ip = ipaddress.ip_address(value.strip())
    except ValueError:
        raise click.BadParameter(f"{value} is not an IP address") from None
    if ip.version != 4 or ip.is_loopback or ip.is_unspecified:
        raise click.BadParameter(f"{value}: must be an IPv4 address that is neither loopback nor unspecified")
    return str(ip)


def check_service_cidr_apart(service_cidr: str, pod_cidr: str | None) -> None:
    """Refuse a service CIDR that overlaps the Pod addresses (``pod_cidr``, or the 10.244.0.0/16
    the node agent takes its Pod range from when none is given): a cluster IP equal to a Pod IP
    would name two things.

    Raises:
        click.UsageError: ``--service-cluster-ip-range 10.244.0.0/16 overlaps the Pod CIDR
            10.244.0.0/16``."""
    import ipaddress

    from pumice.node.network import POD_RANGE, parse_pod_cidr

    pods = parse_pod_cidr(pod_cidr) if pod_cidr is not None else POD_RANGE
    if ipaddress.ip_network(service_cidr).overlaps(pods):
        raise click.UsageError(f"--service-cluster-ip-range {service_cidr} overlaps the Pod CIDR {pods}")
