"""Pod network of the process runtime.

``netns`` (root): one bridge per instance (``pumice-<h8>``, first address of the Pod CIDR, fixed
MAC; see :func:`choose_instance_network`), one network namespace ``pumice-<h12>`` and veth pair (host side ``pv<h12>``, h12 = 12 hex digits of the uid's sha256, Pod side ``eth0``) per Pod,
the Pod IP on ``eth0`` and an on-link default route (``dev eth0``), a per-Pod hosts file and a
fail-fast resolv.conf in ``/etc/netns/<ns>/`` (``ip netns exec`` binds them over ``/etc``; they
are rewritten in place only, since the bind mount pins the inode). No NAT, no sysctl changes.

``host``: the host network, one loopback address per Pod (127.0.0.2 and up; never 127.0.0.1,
which Ray rewrites to the machine address); two Pods that declare the same containerPort cannot
both run (the second fails with reason ``PortConflict``). As root each container still gets a
private mount namespace (``unshare --mount``) in which the agent binds the Pod's hosts file, so
Service names resolve to those loopback addresses; without root there is no mount namespace,
Service names do not resolve inside Pods (use Pod IPs), /tmp is shared (TMPDIR points at the Pod's
directory) and volumes appear as symlinks at mount paths that must not exist yet.

Instances: each ``pumice up`` (and each node agent not told otherwise) gets its own bridge, named
from a hash of its scope (the data dir, or for ``pumice node-agent`` the API server URL, so that
agents of one cluster share a bridge) and its own /22 slot of 10.244.0.0/16, probing the next
free slot when the derived one is taken. A Pod CIDR given explicitly that overlaps an address of
another interface is refused with one line. Several agents may still share one bridge (same
name): namespace and veth names hash the agent's data dir with the Pod uid, and Pod IPs are
claimed machine-wide in ``/run/pumice/ips``.

Mirrors: the recipe in shared/reference/netns.md (tried by hand with real Ray); the kubelet's
managed /etc/hosts (pkg/kubelet/kubelet_pods.go managedHostsFileContent).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import ipaddress
import logging
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

BRIDGE_PREFIX = "pumice-"
POD_RANGE = ipaddress.ip_network("10.244.0.0/16")
INSTANCE_PREFIXLEN = 22  # 64 slots of 1,021 Pod addresses each
NETWORK_LOCK = Path("/run/pumice/network.lock")
NETNS_PREFIX = "pumice-"
VETH_PREFIX = "pv"
IP_CLAIMS = Path("/run/pumice/ips")
RESOLV_CONF = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"


class NetworkError(Exception):
    """Setting up or tearing down a Pod network failed; the message says which command and why."""


def bridge_name(scope: str) -> str:
    """``pumice-<8 hex of sha256(scope)>`` (15 characters, the interface name limit)."""
    return BRIDGE_PREFIX + hashlib.sha256(scope.encode()).hexdigest()[:8]


def parse_pod_cidr(cidr: str) -> ipaddress.IPv4Network:
    """A Pod CIDR as given to ``--pod-cidr`` (host bits may be set: ``10.0.0.1/24`` is
    ``10.0.0.0/24``).

    Raises:
        NetworkError: not an IPv4 network (``ipaddress``'s text), or fewer than 4 addresses (the
            network and broadcast addresses and the bridge's take 3). One line.
    """
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError as e:
        raise NetworkError(f"bad Pod CIDR {cidr!r}: {e}") from None
    if not isinstance(net, ipaddress.IPv4Network) or net.num_addresses < 4:
        raise NetworkError(f"Pod CIDR {cidr} must be an IPv4 network of at least 4 addresses")
    return net


def check_bridge_name(name: str) -> None:
    """Refuse a bridge name Linux would refuse as an interface name.

    Raises:
        NetworkError: empty, longer than 15 characters (IFNAMSIZ 16 with the NUL), ``.`` or
            ``..``, or holding ``/``, ``:`` or whitespace (net/core/dev.c dev_valid_name). One line.
    """
    if not name:
        raise NetworkError("the bridge name is empty")
    if len(name) > 15:
        raise NetworkError(f"bridge name {name!r} is longer than 15 characters")
    if name in (".", "..") or any(ch in "/:" or ch.isspace() for ch in name):
        raise NetworkError(f"bridge name {name!r} is not a valid interface name (no '/', ':' or whitespace, "
                           "not '.' or '..')")


def host_networks(text: str) -> list[tuple[str, ipaddress.IPv4Interface]]:
    """Parse ``ip -o -4 addr show`` into (interface, address/prefix) pairs."""
    out: list[tuple[str, ipaddress.IPv4Interface]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "inet":
            with contextlib.suppress(ValueError):
                out.append((parts[1].split("@")[0], ipaddress.IPv4Interface(parts[3])))
    return out


def choose_instance_network(scope: str, taken: list[tuple[str, ipaddress.IPv4Interface]], *,
                            bridge: str | None = None, cidr: str | None = None) -> tuple[str, str]:
    """The (bridge name, Pod CIDR) of one instance.

    Args:
        scope: what names the instance (its data dir, or the API server URL of a cluster).
        taken: the machine's interface addresses (:func:`host_networks`).
        bridge: an explicit bridge name (default: :func:`bridge_name` of ``scope``).
        cidr: an explicit Pod CIDR (default: the bridge's existing range when the bridge exists,
            else the /22 slot of 10.244.0.0/16 derived from the bridge name, or the next free one).
    Returns:
        (bridge, cidr), cidr in canonical ``a.b.c.d/n`` form.
    Raises:
        NetworkError: ``cidr`` is bad (:func:`parse_pod_cidr`), overlaps another interface's
            network or differs from the existing bridge's, the name is bad
            (:func:`check_bridge_name`), or every slot is taken. One line, naming what to change.
    """
    bridge = bridge or bridge_name(scope)
    check_bridge_name(bridge)
    own = [a for name, a in taken if name == bridge]
    others = [(name, a) for name, a in taken if name != bridge]

    def clash(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> tuple[str, ipaddress.IPv4Interface] | None:
        for name, a in others:
            if a.network.overlaps(net):
                return name, a
        return None

    if cidr is not None:
        net = parse_pod_cidr(cidr)
        hit = clash(net)
        if hit is not None:
            raise NetworkError(f"Pod CIDR {net} overlaps {hit[1]} on {hit[0]} (another pumice instance or a host "
                               "network): choose another --pod-cidr, or the same --bridge to share its network")
        if own and own[0].network != net:
            raise NetworkError(f"bridge {bridge} already has {own[0]}, not Pod CIDR {net}: use --pod-cidr "
                               f"{own[0].network} or another --bridge")
        return bridge, str(net)
    if own:
        return bridge, str(own[0].network)
    slots = 2 ** (INSTANCE_PREFIXLEN - POD_RANGE.prefixlen)
    first = int(hashlib.sha256(bridge.encode()).hexdigest(), 16) % slots
    for i in range(slots):
        net = list(POD_RANGE.subnets(new_prefix=INSTANCE_PREFIXLEN))[(first + i) % slots]
        if clash(net) is None:
            return bridge, str(net)
    name, a = clash(POD_RANGE) or ("?", ipaddress.IPv4Interface("0.0.0.0/0"))
    raise NetworkError(f"no free /{INSTANCE_PREFIXLEN} Pod range left in {POD_RANGE} (e.g. {a} on {name}): "
                       "stop other pumice instances or pass --pod-cidr")


async def run(*argv: str, check: bool = True, input_: bytes | None = None) -> tuple[int, str]:
    """Run a command, return (exit code, combined output).

    Raises:
        NetworkError: ``check`` and a non-zero exit.
    """
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if input_ is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate(input_)
    text = out.decode(errors="replace").strip()
    if check and proc.returncode != 0:
        raise NetworkError(f"{' '.join(argv)}: exit {proc.returncode}: {text}")
    return proc.returncode or 0, text


def _short(uid: str, scope: str) -> str:
    return hashlib.sha256(f"{scope}/{uid}".encode()).hexdigest()[:12]


def netns_name(uid: str, scope: str = "") -> str:
    """``pumice-<12 hex of sha256(scope/uid)>``; ``scope`` tells agents on one machine apart (API
    servers may hand out the same uids, e.g. seeded ones in tests)."""
    return NETNS_PREFIX + _short(uid, scope)


def veth_name(uid: str, scope: str = "") -> str:
    """``pv<same 12 hex>`` (within the 15-character interface name limit)."""
    return VETH_PREFIX + _short(uid, scope)


def veth_of(ns: str) -> str:
    """The host-side veth of namespace ``ns``."""
    return VETH_PREFIX + ns[len(NETNS_PREFIX):]


class IPAM:
    """Pod IP allocation from a CIDR, skipping the network, broadcast and reserved addresses.

    ``allocate(uid)`` is idempotent per uid; ``restore`` re-reserves addresses from the state file.
    With ``claims_dir``, every address is also claimed machine-wide by creating
    ``<claims_dir>/<ip>`` (O_EXCL, holding the owner: the Pod's namespace name), so several agents on one machine (sharing the
    bridge) never hand out the same address; a claim whose Pod namespace is gone is stale and is
    taken over.
    """

    def __init__(self, cidr: str, reserved: Iterable[str] = (), claims_dir: Path | None = None,
                 owner: Callable[[str], str] | None = None) -> None:
        self._owner = owner or (lambda uid: uid)
        self.claims_dir = claims_dir
        self.net = ipaddress.ip_network(cidr, strict=False)
        self._reserved = {ipaddress.ip_address(a) for a in reserved}
        self._by_uid: dict[str, str] = {}
        self._used: set[str] = set()
        self._next = 0
        self._hosts = self.net.num_addresses - 2

    def restore(self, uid: str, ip: str) -> None:
        self._by_uid[uid] = ip
        self._used.add(ip)

    def allocate(self, uid: str, avoid: Iterable[str] = ()) -> str:
        """Raises:
        NetworkError: the CIDR is exhausted."""
        if uid in self._by_uid:
            ip = self._by_uid[uid]
            if self._claim(ip, uid):  # restored (e.g. the Pod's address before a restart)
                return ip
            del self._by_uid[uid]
            self._used.discard(ip)
        avoid = set(avoid)
        for _ in range(self._hosts):
            cand = self.net.network_address + 1 + self._next
            self._next = (self._next + 1) % self._hosts
            s = str(cand)
            if cand in self._reserved or s in self._used or s in avoid or not self._claim(s, uid):
                continue
            self._by_uid[uid] = s
            self._used.add(s)
            return s
        raise NetworkError(f"Pod CIDR {self.net} has no free address")

    def _claim(self, ip: str, uid: str) -> bool:
        if self.claims_dir is None:
            return True
        me = self._owner(uid)
        self.claims_dir.mkdir(parents=True, exist_ok=True)
        path = self.claims_dir / ip
        for _ in range(2):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                try:
                    owner = path.read_text().strip()
                except OSError:
                    continue
                if owner == me:
                    return True
                if Path("/run/netns", owner).exists():
                    return False
                with contextlib.suppress(OSError):
                    path.unlink()  # stale: its Pod namespace is gone
                continue
            os.write(fd, me.encode())
            os.close(fd)
            return True
        return False

    def release(self, uid: str) -> None:
        ip = self._by_uid.pop(uid, None)
        if ip is not None:
            self._used.discard(ip)
            if self.claims_dir is not None:
                path = self.claims_dir / ip
                with contextlib.suppress(OSError):
                    if path.read_text().strip() == self._owner(uid):
                        path.unlink()

    def used(self) -> dict[str, str]:
        return dict(self._by_uid)


def hosts_content(pod_ip: str, hostname: str, fqdn: str, services: Iterable[tuple[str, list[str]]],
                  host_aliases: Iterable[dict[str, object]] = ()) -> str:
    """The managed hosts file of a Pod: localhost lines, the Pod's own name, Service names, and
    ``spec.hostAliases`` (as the kubelet appends them)."""
    lines = [
        "# Kubernetes-managed hosts file (pumice node agent).",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
    ]
    own = [fqdn, hostname] if fqdn and fqdn != hostname else [hostname]
    lines.append(f"{pod_ip}\t" + " ".join(own))
    for ip, names in services:
        lines.append(f"{ip}\t" + " ".join(names))
    aliases = list(host_aliases)
    if aliases:
        lines.append("")
        lines.append("# Entries added by HostAliases.")
        for a in aliases:
            hn = a.get("hostnames") or []
            if isinstance(hn, list) and hn:
                lines.append(f"{a.get('ip', '')}\t" + "\t".join(str(h) for h in hn))
    return "\n".join(lines) + "\n"


def _lock_file(path: Path) -> IO[str]:
    f = open(path, "a+")  # noqa: SIM115 - closed by the caller to release the lock
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    return f


def write_in_place(path: Path, content: str) -> None:
    """Rewrite ``path`` in place (truncate + write, same inode), creating it if needed."""
    data = content.encode()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.pread(fd, len(data) + 1, 0) == data:
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)


class NetnsNetwork:
    """Bridge + per-Pod network namespaces (needs root).

    Args:
        cidr: the Pod CIDR; its first address goes on the bridge.
    """

    mode = "netns"

    def __init__(self, cidr: str | None = None, *, default_via_gateway: bool = False, scope: str = "",
                 bridge: str | None = None, bridge_scope: str | None = None) -> None:
        self.default_via_gateway = default_via_gateway
        self.scope = scope
        self.bridge_scope = bridge_scope if bridge_scope is not None else scope
        self.bridge = bridge or bridge_name(self.bridge_scope)
        self.requested_cidr = cidr
        self._bridge_ready = False
        self._lock = asyncio.Lock()
        self._configure(cidr or str(POD_RANGE))

    def _configure(self, cidr: str) -> None:
        self.cidr = cidr
        net = IPAM(cidr).net
        self.prefixlen = net.prefixlen
        self.gateway = str(net.network_address + 1)
        self.ipam = IPAM(cidr, reserved=[self.gateway], claims_dir=IP_CLAIMS, owner=self.netns_name)

    @property
    def host_ip(self) -> str:
        return self.gateway

    def netns_name(self, uid: str) -> str:
        return netns_name(uid, self.scope)

    def veth_name(self, uid: str) -> str:
        return veth_name(uid, self.scope)

    async def ensure_bridge(self) -> None:
        """Choose this instance's bridge and Pod CIDR (:func:`choose_instance_network`, under a
        machine-wide lock so that two instances starting together do not pick the same slot) and
        create the bridge when missing (idempotent). Warns when br_netfilter plus a dropping
        FORWARD policy would block Pod-to-Pod traffic (we never change iptables ourselves).

        Raises:
            NetworkError: the range overlaps another instance's (one line).
        """
        async with self._lock:
            if self._bridge_ready:
                return
            NETWORK_LOCK.parent.mkdir(parents=True, exist_ok=True)
            lock = await asyncio.to_thread(_lock_file, NETWORK_LOCK)
            try:
                _, out = await run("ip", "-o", "-4", "addr", "show")
                bridge, cidr = choose_instance_network(self.bridge_scope, host_networks(out), bridge=self.bridge,
                                                       cidr=self.requested_cidr)
                if cidr != self.cidr:
                    self._configure(cidr)
                if not Path(f"/sys/class/net/{bridge}").exists():
                    octets = [int(x) for x in self.gateway.split(".")]
                    mac = "02:00:" + ":".join(f"{o:02x}" for o in octets)
                    await run("ip", "link", "add", bridge, "address", mac, "type", "bridge")
                _, out = await run("ip", "-o", "addr", "show", "dev", bridge, check=False)
                if f"{self.gateway}/{self.prefixlen}" not in out:
                    await run("ip", "addr", "add", f"{self.gateway}/{self.prefixlen}", "dev", bridge)
                await run("ip", "link", "set", bridge, "up")
            finally:
                lock.close()
            self._bridge_ready = True
            await self._check_forward_policy()

    async def _check_forward_policy(self) -> None:
        nf = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
        if not nf.exists() or nf.read_text().strip() != "1" or shutil.which("iptables") is None:
            return
        rc, out = await run("iptables", "-S", "FORWARD", check=False)
        bridge = self.bridge
        if rc == 0 and "-P FORWARD DROP" in out and f"-i {bridge} -o {bridge}" not in out:
            log.error(
                "br_netfilter is loaded and the iptables FORWARD policy is DROP: traffic between Pods "
                "on %s will be dropped. Allow it with `iptables -I FORWARD -i %s -o %s -j ACCEPT` or "
                "`sysctl net.bridge.bridge-nf-call-iptables=0` (pumice does not change host settings).",
                bridge, bridge, bridge,
            )

    async def setup(self, uid: str, hostname: str) -> tuple[str, str]:
        """Create the Pod's namespace and veth; returns (netns name, Pod IP). Idempotent: an
        existing namespace of this uid is torn down and made again."""
        await self.ensure_bridge()
        ns, veth = self.netns_name(uid), self.veth_name(uid)
        ip = self.ipam.allocate(uid, avoid=self._addresses_of_other_pods(ns))
        if Path(f"/run/netns/{ns}").exists():
            await self.teardown(uid, ns, release=False)
        etc = Path("/etc/netns") / ns
        etc.mkdir(parents=True, exist_ok=True)
        write_in_place(etc / "resolv.conf", RESOLV_CONF)
        if not (etc / "hosts").exists():
            write_in_place(etc / "hosts", hosts_content(ip, hostname, "", []))
        host_batch = (f"netns add {ns}\n"
                      f"link add {veth} type veth peer name eth0 netns {ns}\n"
                      f"link set {veth} master {self.bridge} up\n")
        try:
            await run("ip", "-batch", "-", input_=host_batch.encode())
            batch = (
                f"addr add {ip}/{self.prefixlen} dev eth0\n"
                "link set lo up\n"
                "link set eth0 up\n"
            ) + (f"route add default via {self.gateway}\n" if self.default_via_gateway
                   else "route add default dev eth0\n")
            await run("ip", "-n", ns, "-batch", "-", input_=batch.encode())
        except NetworkError:
            await self.teardown(uid, ns)
            raise
        return ns, ip

    @staticmethod
    def _addresses_of_other_pods(own: str) -> set[str]:
        """Pod IPs named in the hosts files of other pumice namespaces on this machine (agents that
        predate the machine-wide claims, or whose claims were lost)."""
        out: set[str] = set()
        for hosts in Path("/etc/netns").glob(f"{NETNS_PREFIX}*/hosts"):
            if hosts.parent.name == own:
                continue
            try:
                lines = hosts.read_text().splitlines()
            except OSError:
                continue
            if len(lines) > 7 and lines[0].startswith("# Kubernetes-managed hosts file"):
                out.add(lines[7].split("\t", 1)[0])
        return out

    async def pids(self, ns: str) -> list[int]:
        rc, out = await run("ip", "netns", "pids", ns, check=False)
        return [int(x) for x in out.split() if x.isdigit()] if rc == 0 else []

    async def teardown(self, uid: str, ns: str, *, release: bool = True) -> None:
        """Delete the namespace (which removes the veth pair) and its /etc/netns files. The caller
        kills the namespace's processes first: a live process keeps the namespace alive."""
        if Path(f"/run/netns/{ns}").exists():
            await run("ip", "netns", "del", ns, check=False)
        veth = veth_of(ns)
        if Path(f"/sys/class/net/{veth}").exists():
            await run("ip", "link", "del", veth, check=False)
        shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)
        if release:
            self.ipam.release(uid)

    async def remove_bridge(self) -> None:
        """Remove this instance's bridge when no veth is attached to it any more (another agent
        may share it), and empty /etc/netns when nothing is left in it."""
        brif = Path(f"/sys/class/net/{self.bridge}/brif")
        if brif.exists() and any(brif.iterdir()):
            return
        if Path(f"/sys/class/net/{self.bridge}").exists():
            await run("ip", "link", "del", self.bridge, check=False)
        try:
            Path("/etc/netns").rmdir()
        except OSError:
            pass
        self._bridge_ready = False

    def hosts_path(self, ns: str) -> Path:
        return Path("/etc/netns") / ns / "hosts"


class HostNetwork:
    """Host network with one loopback address per Pod (127.0.0.2 and up)."""

    mode = "host"

    def __init__(self) -> None:
        self.ipam = IPAM("127.0.0.0/8", reserved=["127.0.0.1"])
        self.gateway = "127.0.0.1"
        self._ports: dict[int, str] = {}

    @property
    def host_ip(self) -> str:
        return "127.0.0.1"

    def claim_ports(self, uid: str, label: str, ports: Iterable[int]) -> None:
        """Reserve host ports for a Pod.

        Raises:
            NetworkError: another Pod already declared one of them (they share the host network).
        """
        ports = list(ports)
        for p in ports:
            owner = self._ports.get(p)
            if owner is not None and owner.split(" ")[0] != uid:
                raise NetworkError(
                    f"containerPort {p} is already used by Pod {owner.split(' ', 1)[1]} on this host "
                    "(host network mode: run the node agent as root for one network namespace per Pod)"
                )
        for p in ports:
            self._ports[p] = f"{uid} {label}"

    def release_ports(self, uid: str) -> None:
        for p in [p for p, o in self._ports.items() if o.split(" ")[0] == uid]:
            del self._ports[p]
