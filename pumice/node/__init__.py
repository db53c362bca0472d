"""pumice.node: the node agent (kubelet) with two container runtimes.

Entry points:

- :class:`pumice.node.agent.NodeAgent` ``(client, *, runtime="process"|"simulated", data_dir,
  nodes=1, node_cpu=None, node_memory=None, node_gpus=0, node_pods=110,
  node_name_prefix="pumice-node", node_names=None, labels=None, taints=None, clock=None,
  image_envs=None, network="auto"|"netns"|"host", pod_cidr="10.244.0.0/16",
  pod_egress="proxy"|"nat"|"none", apiserver_url_for_pods=None, keep_pods=False, seed=0, ...)``
  with ``await start()``, ``await stop()`` and ``await run(stop_event=None)``;
- ``pumice node-agent`` (:mod:`pumice.cli.node_agent`).

Modules: :mod:`.agent` (Nodes, Leases, Pod watch, admission, state file), :mod:`.worker` (one Pod:
sandbox, init containers, containers, restarts, probes, status, deletion), :mod:`.runtime`
(``process`` with the container shim, ``simulated``), :mod:`.network` (bridge + per-Pod network
namespaces, or host network), :mod:`.services` (Service names for hosts files), :mod:`.proxy`
(egress proxy, API server forwarder), :mod:`.logs` (CRI log files, the kubelet log endpoint),
:mod:`.podspec` and :mod:`.volumes` (pure spec helpers).

The kubelet log endpoint (what the API server proxies ``pods/{name}/log`` to) listens on
127.0.0.1 (and the bridge address in netns mode) at the port published in each Node's
``status.daemonEndpoints.kubeletEndpoint.Port``; the Node's ``InternalIP`` is that address.
"""
