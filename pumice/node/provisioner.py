"""The local-path provisioner of the node agent: a PersistentVolumeClaim of a StorageClass whose
provisioner is ``pumice.dev/local-path`` becomes a directory under ``<data_dir>/pv/`` and a
PersistentVolume (``pvc-<claim uid>``, hostPath, pre-bound to the claim); the PersistentVolume
binder then binds the two, and the Pod's ``persistentVolumeClaim`` volume is that directory bound
into the Pod's mount namespace. A Released volume with reclaim policy Delete loses its directory
and its PersistentVolume.

The claim's ``volume.kubernetes.io/storage-provisioner`` annotation (set by the binder) says whose
claim it is, as for any external provisioner.

Mirrors: rancher/local-path-provisioner (directory per volume, hostPath PV) and
kubernetes-sigs/sig-storage-lib-external-provisioner (the annotations, events and the
pre-bound PersistentVolume it creates). Deviates: no node affinity on the volume (all Nodes of one
agent share the machine's filesystem), so it does not wait for the first consumer.

With the simulated runtime (``make_dirs=False``) it makes the same PersistentVolumes but no
directories: no Pod process ever mounts them, and a simulated cluster leaves the disk alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pumice._util.clock import Clock, rfc3339
from pumice._util.errors import FATAL_TYPES
from pumice.api import Obj
from pumice.api.scheme import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from pumice.client.base import ApiError, KubeClient, create_unless_exists, is_not_found
from pumice.client.informer import Informer
from pumice.client.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    RateLimitingQueue,
)

log = logging.getLogger(__name__)

PROVISIONER = "pumice.dev/local-path"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


def volume_name(pvc: Obj) -> str:
    return f"pvc-{pvc['metadata']['uid']}"


def desired_volume(pvc: Obj, sc: Obj, path: Path) -> Obj:
    """The PersistentVolume for ``pvc`` (pure)."""
    md = pvc["metadata"]
    spec = pvc.get("spec") or {}
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": volume_name(pvc), "annotations": {ANN_PROVISIONED_BY: PROVISIONER}},
        "spec": {
            "capacity": {"storage": storage},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "storageClassName": spec.get("storageClassName") or "",
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": md.get("namespace"),
                         "name": md["name"], "uid": md.get("uid"), "resourceVersion": md.get("resourceVersion")},
        },
    }


#: per-item retry delays of a failed provision or reclaim: 15 s doubling up to 1000 s, and the
#: number of failures after which an item is given up (until its next event).
#: Mirrors: sig-storage-lib-external-provisioner controller.go (exponentialBackOffOnError,
#: DefaultFailedProvisionThreshold / DefaultFailedDeleteThreshold).
RETRY_BASE_DELAY, RETRY_MAX_DELAY, FAILED_THRESHOLD = 15.0, 1000.0, 15

#: a work item: ("claim" or "volume", namespace ("" for a volume), name, the claim's uid ("" for a
#: volume)). A claim's item carries its uid, as upstream keys the claim queue by UID: a claim
#: made again under the same name is a new item, with no failures of the old one.
Item = tuple[str, str, str, str]


class LocalPathProvisioner:
    """Provisions and deletes volumes (see the module docstring).

    Claims and volumes go through a rate-limited work queue keyed by kind and name (and a claim's
    uid); a worker handles the object the informer holds then (none, or a claim of another uid:
    nothing to do). A failure (an API error, a
    transport error, an OSError) is logged and the item retried with per-item backoff
    (:data:`RETRY_BASE_DELAY` .. :data:`RETRY_MAX_DELAY`) up to :data:`FAILED_THRESHOLD` times, as
    the external provisioner library's claim and volume queues; a FATAL_TYPES error, in the loop
    or in an informer's handler, ends :meth:`run` with it.

    Args:
        client: API client.
        root: directory holding one sub-directory per volume.
        clock: project clock.
        record_events: write Events about claims (component ``pumice.dev/local-path``).
        make_dirs: create (and on reclaim delete) the volume directories; False for the
            simulated runtime, whose volumes are only API objects.
    """

    def __init__(self, client: KubeClient, root: Path, clock: Clock, *, record_events: bool = True,
                 make_dirs: bool = True) -> None:
        self.client = client
        self.root = root
        self.clock = clock
        self.record_events = record_events
        self.make_dirs = make_dirs
        self._seq = 0
        self._classes: dict[str, Obj] = {}
        self._queue: RateLimitingQueue[Item] = RateLimitingQueue(
            "local-path-provisioner", clock=clock,
            rate_limiter=MaxOfRateLimiter(ItemExponentialFailureRateLimiter(RETRY_BASE_DELAY, RETRY_MAX_DELAY),
                                          BucketRateLimiter(10.0, 100, clock=clock)))
        self._stores: dict[str, Informer] = {}

    def _on_class(self, typ: str, sc: Obj) -> None:
        name = sc["metadata"]["name"]
        if typ == "DELETED":
            self._classes.pop(name, None)
        else:
            self._classes[name] = sc

    def _on_claim(self, typ: str, pvc: Obj) -> None:
        md = pvc["metadata"]
        item = ("claim", str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid") or ""))
        if typ == "DELETED":  # its uid never comes back: drop its failure count
            self._queue.forget(item)
        else:
            self._queue.add(item)

    def _on_volume(self, typ: str, pv: Obj) -> None:
        if typ == "DELETED":
            self._queue.forget(("volume", "", str(pv["metadata"]["name"]), ""))
        else:
            self._queue.add(("volume", "", str(pv["metadata"]["name"]), ""))

    def _informer(self, kind: Any, fn: Callable[[str, Obj], None]) -> Informer:
        inf = Informer(self.client, kind, clock=self.clock)
        inf.add_event_handler(lambda o: fn("ADDED", o), lambda _o, n: fn("MODIFIED", n), lambda o: fn("DELETED", o))
        return inf

    async def run(self) -> None:
        """Run until cancelled.

        Raises:
            BaseException: a FATAL_TYPES error of the work loop, or whatever ended one of the
                three informers (a FATAL_TYPES error in a handler).
        """
        if self.make_dirs:
            self.root.mkdir(parents=True, exist_ok=True)
        informers = [self._informer(STORAGE_CLASS, self._on_class), self._informer(PERSISTENT_VOLUME_CLAIM, self._on_claim),
                     self._informer(PERSISTENT_VOLUME, self._on_volume)]
        self._stores = {"claim": informers[1], "volume": informers[2]}
        work = asyncio.get_running_loop().create_task(self._work(), name="local-path provisioner work")
        try:
            # classes first, so the first claims find their class
            informers[0].start()
            await informers[0].wait_synced()
            for inf in informers[1:]:
                inf.start()
            watched: list[asyncio.Task[Any]] = [work, *(i.task for i in informers if i.task is not None)]
            done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            ended = done.pop()
            raise ended.exception() or RuntimeError(f"local-path provisioner: {ended.get_name()} ended")
        finally:
            work.cancel()
            self._queue.shutdown()
            for inf in informers:
                try:
                    await inf.stop()
                except Exception as e:  # a cancellation is not swallowed
                    log.warning("local-path provisioner: stopping informer %s: %s", inf.kind.plural, e)
            with contextlib.suppress(asyncio.CancelledError):
                await work

    async def _work(self) -> None:
        """Take items from the queue and sync each; see the class docstring for failures."""
        while True:
            try:
                item = await self._queue.get()
            except QueueShutDown:
                return
            try:
                await self._sync(item)
                self._queue.forget(item)
            except FATAL_TYPES:
                raise
            except Exception as e:  # an ApiError, a transport error (timeout, refused), an OSError
                self._failed(item, e)
                if isinstance(e, OSError) and item[0] == "claim" and (obj := self._live(item)) is not None:
                    await self._event(obj, "Warning", "ProvisioningFailed", f"failed to provision volume: {e}")
            finally:
                self._queue.done(item)

    def _live(self, item: Item) -> Obj | None:
        """The informer's object of ``item``; None when it is gone (a claim made again under the
        same name is another item)."""
        what, namespace, name, uid = item
        obj = self._stores[what].store.get(namespace or None, name)
        if obj is None or (uid and obj["metadata"].get("uid") != uid):
            return None
        return obj

    async def _sync(self, item: Item) -> None:
        obj = self._live(item)
        if obj is None:  # gone meanwhile: nothing to do
            return
        if item[0] == "claim":
            await self.provision(obj)
        else:
            await self.reclaim(obj)

    def _failed(self, item: Item, e: Exception) -> None:
        """Retry ``item`` with backoff, or give it up once its retries reach the threshold. The
        lines give the library's numbers and words: ``failures`` is the retries so far (0 at the
        first failure), so an item is tried FAILED_THRESHOLD + 1 times."""
        what, namespace, name, _uid = item
        failures = self._queue.num_requeues(item)
        key = f"{namespace}/{name}" if namespace else name
        if failures < FAILED_THRESHOLD:
            log.warning("local-path provisioner: %s %s: %s: %s; retrying because failures < threshold "
                        "(failures: %d, threshold: %d)", what, key, type(e).__name__, e, failures, FAILED_THRESHOLD)
            self._queue.add_rate_limited(item)
        else:
            log.error("local-path provisioner: giving up on %s %s because failures >= threshold "
                      "(failures: %d, threshold: %d): %s: %s", what, key, failures, FAILED_THRESHOLD,
                      type(e).__name__, e)

    def _ours(self, pvc: Obj) -> Obj | None:
        ann = (pvc["metadata"].get("annotations") or {})
        if ann.get(ANN_STORAGE_PROVISIONER) != PROVISIONER:
            return None
        sc = self._classes.get(str((pvc.get("spec") or {}).get("storageClassName") or ""))
        if sc is None or sc.get("provisioner") != PROVISIONER:
            return None
        return sc

    async def provision(self, pvc: Obj) -> None:
        """Create the directory and the PersistentVolume of an unbound claim that is ours."""
        if (pvc.get("spec") or {}).get("volumeName") or pvc["metadata"].get("deletionTimestamp"):
            return
        sc = self._ours(pvc)
        if sc is None:
            return
        md = pvc["metadata"]
        path = self.root / f"{volume_name(pvc)}_{md.get('namespace')}_{md['name']}"
        if self.make_dirs:
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)
        if not await create_unless_exists(self.client, desired_volume(pvc, sc, path)):
            return
        await self._event(pvc, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {volume_name(pvc)}")

    async def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        if not self.record_events:
            return
        md = obj["metadata"]
        now = rfc3339(self.clock.now())
        self._seq += 1
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": f"{md['name']}.{int(self.clock.now() * 1e3):x}{self._seq:04x}",
                           "namespace": md.get("namespace") or "default"},
              "involvedObject": {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", ""),
                                 "name": md["name"], "namespace": md.get("namespace"), "uid": md.get("uid")},
              "reason": reason, "message": message, "type": type_,
              "source": {"component": PROVISIONER}, "reportingComponent": PROVISIONER,
              "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        try:
            await self.client.create(ev)
        except ApiError as e:
            log.warning("local-path provisioner: cannot record event %s on %s: %s", reason, md["name"], e)

    async def reclaim(self, pv: Obj) -> None:
        """Delete a Released volume of ours whose reclaim policy is Delete, directory first."""
        md, spec = pv["metadata"], pv.get("spec") or {}
        if (md.get("annotations") or {}).get(ANN_PROVISIONED_BY) != PROVISIONER or md.get("deletionTimestamp"):
            return
        if (pv.get("status") or {}).get("phase") != "Released" or spec.get("persistentVolumeReclaimPolicy") != "Delete":
            return
        path = Path(str((spec.get("hostPath") or {}).get("path") or ""))
        if self.make_dirs and path.is_dir() and path.parent == self.root:
            shutil.rmtree(path)
        try:
            await self.client.delete(PERSISTENT_VOLUME, md["name"])
        except ApiError as e:
            if not is_not_found(e):
                raise
