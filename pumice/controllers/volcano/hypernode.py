"""HyperNode controller: ``status.nodeCount`` of every HyperNode, and label-based auto-discovery.

Discovery reads ``networkTopologyDiscovery`` from the ConfigMap ``volcano-controller-configmap``
(namespace ``volcano-system``, key ``volcano-controller.conf``). For an enabled ``source: label``
entry, ``config.networkTopologyTypes`` maps a topology type to node labels, top level first,
ending with ``kubernetes.io/hostname`` (the node itself, dropped). For ``[A, B, hostname]``, B
makes tier-1 HyperNodes (members: the Nodes) and A tier-2 ones (members: the tier-1 HyperNodes);
a node missing a label stops its chain there. One HyperNode per (label key, value), labelled
``<key>=<value>`` and ``volcano.sh/network-topology-source=label``, ``tierName`` = the key.
HyperNodes of that source that are no longer discovered are deleted; others are never touched.

Other sources (``ufm``, ``roce``) are read and logged as unsupported.

Mirrors: volcano pkg/controllers/hypernode (hypernode_controller.go reconcileTopology, the node
count in hypernode_handler.go, discovery/label/label.go, config/loader.go).
Deviates: a new HyperNode's name suffix is derived from a hash of its type, key and value
(upstream: 5 random characters), so names are stable and runs repeat.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import yaml

from pumice.api import Obj, scheme
from pumice.api.volcano.constants import NETWORK_TOPOLOGY_SOURCE_LABEL, TOPOLOGY_API_VERSION
from pumice.api.volcano.topology import real_node_count
from pumice.client.base import KubeClient, create_unless_exists, is_not_found
from pumice.runtime.reconcile import Request, Result

log = logging.getLogger(__name__)

CONFIG_MAP_NAME = "volcano-controller-configmap"
CONFIG_MAP_NAMESPACE = "volcano-system"
CONFIG_KEY = "volcano-controller.conf"
HOSTNAME_LABEL = "kubernetes.io/hostname"
LABEL_SOURCE = "label"
MAX_TYPE_NAME = 20
DISCOVERY_REQUEST = Request("", "hypernode-discovery/label")


def parse_label_topology_types(conf_text: str) -> dict[str, list[str]]:
    """Topology type -> label keys from tier 1 up (hostname dropped), from the controller conf
    text; types with a name over 20 characters or duplicate labels are skipped, as upstream.

    Raises:
        ValueError: the text is not YAML.
    """
    try:
        doc = yaml.safe_load(conf_text) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{CONFIG_KEY}: invalid YAML: {str(e).splitlines()[0]}") from e
    out: dict[str, list[str]] = {}
    for entry in (doc.get("networkTopologyDiscovery") or []) if isinstance(doc, dict) else []:
        if not isinstance(entry, dict) or not entry.get("enabled"):
            continue
        if entry.get("source") != LABEL_SOURCE:
            log.warning("HyperNode discovery source %r is not supported by pumice; ignored", entry.get("source"))
            continue
        for name, labels in ((entry.get("config") or {}).get("networkTopologyTypes") or {}).items():
            keys = [str((x or {}).get("nodeLabel") or "") for x in labels or []]
            if len(str(name)) > MAX_TYPE_NAME or len(set(keys)) != len(keys) or not keys:
                log.warning("HyperNode discovery type %r skipped (name too long or duplicate labels)", name)
                continue
            out[str(name)] = list(reversed(keys[:-1]))
    return out


def _clean(s: str) -> str:
    return "".join(c.lower() if c.isalpha() else c if (c.isdigit() or c in ".-") else "-" for c in s)


def hypernode_name(topology_type: str, tier: int, key: str, value: str) -> str:
    """``hypernode-<type>-tier<t>-<5 chars>``, the suffix a hash of (type, key, value)."""
    digest = hashlib.sha256(f"{topology_type}\0{key}\0{value}".encode()).hexdigest()
    suffix = "".join(c for c in digest if c.isalpha() or c.isdigit())[:5]
    return f"hypernode-{_clean(topology_type)}-tier{tier}-{suffix}"


def discover(nodes: list[Obj], types: dict[str, list[str]], existing: list[Obj]) -> dict[str, Obj]:
    """The HyperNodes the labels describe: name -> desired object (pure).

    An existing label-sourced HyperNode carrying ``<key>=<value>`` and whose name starts with
    ``hypernode-<type>-tier<t>`` keeps its name.
    """
    reuse: dict[tuple[str, str, str], str] = {}
    for hn in sorted(existing, key=lambda o: o["metadata"]["name"]):
        lab = hn["metadata"].get("labels") or {}
        if lab.get(NETWORK_TOPOLOGY_SOURCE_LABEL) != LABEL_SOURCE:
            continue
        for k, v in lab.items():
            if k != NETWORK_TOPOLOGY_SOURCE_LABEL:
                reuse.setdefault((hn["metadata"]["name"].rsplit("-", 1)[0], k, v), hn["metadata"]["name"])
    infos: dict[str, Obj] = {}
    names: dict[tuple[str, str], str] = {}
    for node in sorted(nodes, key=lambda o: o["metadata"]["name"]):
        labels = node["metadata"].get("labels") or {}
        for ttype in sorted(types):
            member, member_type = node["metadata"]["name"], "Node"
            for i, key in enumerate(types[ttype]):
                if key not in labels:
                    break
                tier, value = i + 1, str(labels[key])
                name = names.get((key, value))
                if name is None:
                    prefix = f"hypernode-{_clean(ttype)}-tier{tier}"
                    name = reuse.get((prefix, key, value)) or hypernode_name(ttype, tier, key, value)
                    names[(key, value)] = name
                info = infos.setdefault(name, {"tier": tier, "tierName": key, "members": set(), "type": member_type,
                                               "labels": {key: value}})
                info["members"].add(member)
                member, member_type = name, "HyperNode"
    out: dict[str, Obj] = {}
    for name, info in infos.items():
        out[name] = {
            "apiVersion": TOPOLOGY_API_VERSION, "kind": "HyperNode",
            "metadata": {"name": name, "labels": {**info["labels"], NETWORK_TOPOLOGY_SOURCE_LABEL: LABEL_SOURCE}},
            "spec": {"tier": info["tier"], "tierName": info["tierName"],
                     "members": [{"type": info["type"], "selector": {"exactMatch": {"name": m}}} for m in sorted(info["members"])]},
        }
    return out


class HyperNodeDiscoveryReconciler:
    """Reconciles the label-sourced HyperNodes with the Nodes' labels (one request for all)."""

    def __init__(self, client: KubeClient, nodes: Any, hypernodes: Any, configmaps: Any) -> None:
        self.client = client
        self.nodes = nodes
        self.hypernodes = hypernodes
        self.configmaps = configmaps

    def _types(self) -> dict[str, list[str]]:
        cm = self.configmaps.get(CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME)
        text = ((cm or {}).get("data") or {}).get(CONFIG_KEY)
        if not text:
            return {}
        try:
            return parse_label_topology_types(text)
        except ValueError as e:
            log.error("HyperNode discovery config in ConfigMap %s/%s not loaded: %s", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME, e)
            return {}

    async def reconcile(self, req: Request) -> Result:
        types = self._types()
        existing = [o for o in self.hypernodes.list()
                    if ((o.get("metadata") or {}).get("labels") or {}).get(NETWORK_TOPOLOGY_SOURCE_LABEL) == LABEL_SOURCE]
        if not types and not existing:
            return Result()
        want = discover(self.nodes.list(), types, existing) if types else {}
        have = {o["metadata"]["name"]: o for o in existing}
        for name, obj in sorted(want.items()):
            cur = have.get(name)
            if cur is None:
                await create_unless_exists(self.client, obj)
            elif cur.get("spec") != obj["spec"] or (cur["metadata"].get("labels") or {}) != obj["metadata"]["labels"]:
                new = dict(cur)
                new["spec"] = obj["spec"]
                new["metadata"] = {**cur["metadata"], "labels": obj["metadata"]["labels"]}
                await self.client.update(new)
        for name in sorted(set(have) - set(want)):
            try:
                await self.client.delete(scheme.HYPER_NODE, name)
            except Exception as e:
                if not is_not_found(e):
                    raise
        return Result()


class HyperNodeStatusReconciler:
    """Keeps ``status.nodeCount`` of one HyperNode equal to the Nodes it spans."""

    def __init__(self, client: KubeClient, nodes: Any, hypernodes: Any) -> None:
        self.client = client
        self.nodes = nodes
        self.hypernodes = hypernodes

    async def reconcile(self, req: Request) -> Result:
        hn = self.hypernodes.get("", req.name)
        if hn is None:
            return Result()
        all_hns = {o["metadata"]["name"]: o for o in self.hypernodes.list()}
        labels = {o["metadata"]["name"]: (o["metadata"].get("labels") or {}) for o in self.nodes.list()}
        count = real_node_count(all_hns, labels).get(req.name, 0)
        if (hn.get("status") or {}).get("nodeCount") == count:
            return Result()
        try:
            await self.client.patch(scheme.HYPER_NODE, req.name, {"status": {"nodeCount": count}}, patch_type="merge",
                                    subresource="status")
        except Exception as e:
            if not is_not_found(e):
                raise
        return Result()


def hypernodes_to_all(hypernodes: Any) -> Any:
    """Any Node or HyperNode change may change every HyperNode's count."""

    def mapper(_obj: Obj) -> list[Request]:
        return [Request("", o["metadata"]["name"]) for o in hypernodes.list()]

    return mapper


def is_discovery_config(cm: Obj) -> bool:
    md = cm.get("metadata") or {}
    return md.get("name") == CONFIG_MAP_NAME and md.get("namespace") == CONFIG_MAP_NAMESPACE


