"""pumice.apiserver: a Kubernetes-compatible API server (kube-apiserver subset) that kubectl, the
official ``kubernetes`` client, lightkube and every pumice component talk to.

Modules:
- :mod:`~pumice.apiserver.server`: :class:`APIServer` wiring storage, registry, admission and the
  ASGI app; ``serve()`` runs uvicorn (HTTPS with a self-signed certificate by default).
- :mod:`~pumice.apiserver.storage`: the :class:`Storage` protocol, ``MemoryStorage``,
  ``SqliteStorage`` (stdlib sqlite3, WAL, one transaction per write).
- :mod:`~pumice.apiserver.store`: the in-memory object cache, global resourceVersion, bounded
  per-resource event history (410 Expired), per-watcher queues fed on commit.
- :mod:`~pumice.apiserver.registry`: REST semantics (create/update/patch/delete, status, generation,
  finalizers, graceful Pod deletion, binding, eviction, CRD install, Event TTL).
- :mod:`~pumice.apiserver.http`: the Starlette app (routing, content negotiation, Tables, watch
  streams, log proxy to the node agent, Status errors).
- :mod:`~pumice.apiserver.discovery`: /version, legacy and aggregated discovery, minimal OpenAPI v3.
- :mod:`~pumice.apiserver.admission`: the admission chain and NamespaceLifecycle, Priority,
  ServiceAccount.
- :mod:`~pumice.apiserver.crds`, :mod:`~pumice.apiserver.defaults`, :mod:`~pumice.apiserver.errors`:
  CRD serving, built-in defaulting, Status construction (unknown-field detection and type checks
  of built-in kinds: :mod:`pumice.api.fields`, shared with the admission webhook).

Deviates from kube-apiserver (on purpose, documented where implemented):
- server-side apply tracks managedFields for Apply managers only (pumice.api.apply);
- request bodies must be JSON or YAML: protobuf bodies (``kubectl create deployment|configmap|
  namespace|job`` generators) get 415; ``kubectl create -f``/``apply -f``/``run``/``expose`` work;
- continued lists read the current state after the last key (no snapshot, no 410 for old tokens);
- PodDisruptionBudgets are not served, so evictions are never refused;
- the ServiceAccount plugin defaults the name but does not require the ServiceAccount to exist;
- no authorization (one bearer token is the cluster admin), no exec/attach/port-forward.
"""
