"""The workload PodGroup controller: a real PodGroup for every ReplicaSet, StatefulSet and batch Job whose
pods are pumice's (Volcano's ``pg-controller``).

It reads pods and PodGroups from the store of watched objects (:mod:`controllers.state.store`; its
``WORKLOAD`` index places only pods of pumice's scheduler names whose controller owner is a workload kind
and that name no other group: a pod that names one -- Spark's driver and executors, a vcjob's pods -- is
someone else's) and is told of their changes. Work is keyed by owner (``ns/kind/name/uid``), so a
1 000-replica Deployment costs one owner GET per sync, not one per pod. A sync:

1. GETs the owner (its annotations size the group; a 404 means the garbage collector is on its way);
2. creates ``podgroup-<owner uid>`` (:func:`extender.core.workloads.desired_podgroup`), owned by the
   workload, or brings its ``minMember``/``minResources`` up to date when the owner's annotations changed;
3. annotates each of the owner's pods that does not say so yet with ``scheduling.k8s.io/group-name``.

The scheduler does not wait for step 3: it keys such a pod by its owner's group from the start
(:func:`extender.core.workloads.pod_group_name`), so the pod waits for the group instead of running alone
in an implicit one. The annotation is for everything else that reads pods (Volcano's tools, ``pumice job
why``, kubectl). On Kubernetes >= 1.28 the pod webhook already added it at creation.

Like Volcano, the group of a ReplicaSet or StatefulSet scaled to zero is deleted (looked at when its last
pod goes). Owners are not watched (that would hold every ReplicaSet of the cluster in memory): an owner
whose annotations change is picked up at its next pod event or at the periodic resync.

Idempotent and restart-safe: every sync recomputes the desired state from the API server's objects; a
create that finds the group there (409) is done; a restart lists everything again. One owner's failure is
that owner's: logged, a Warning Event on it when its annotations are wrong, per-owner backoff, and every
other owner carries on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final

from controllers.events import EventRecorder, Ref
from controllers.fanout import bounded
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, ignore_404
from controllers.state.indexes import WORKLOAD, workload_of
from controllers.state.meta import read_meta
from controllers.state.store import Change, ObjectStore, Stored, Subscription
from controllers.workqueue import WorkQueue
from extender.core.errors import InvalidObject
from extender.core.parse import pod_requests
from extender.core.workloads import (
    PODGROUP_PREFIX,
    Owner,
    annotation_patch,
    desired_podgroup,
    named_group,
    owner_group_name,
    spec_patch,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# What each workload kind's owner GET goes to.
_OWNER_RESOURCES: Final = {
    "ReplicaSet": paths.REPLICA_SETS,
    "StatefulSet": paths.STATEFUL_SETS,
    "Job": paths.BATCH_JOBS,
}
# Kinds whose group goes when they are scaled to zero (Volcano's addReplicaSet / addStatefulSet).
_SCALABLE: Final = frozenset({"ReplicaSet", "StatefulSet"})
# Pod annotation patches in flight at once for one owner.
FANOUT: Final = 16


KINDS: Final = frozenset({"pods", "podgroups"})


class WorkloadGroupController:
    def __init__(
        self,
        client: KubeClient,
        store: ObjectStore,
        *,
        scheduler_names: frozenset[str],
        events: EventRecorder | None = None,
        workers: int = 4,
        resync: float = 300.0,
        max_backoff: float = 300.0,
    ) -> None:
        self.client = client
        self.store = store
        self.scheduler_names = scheduler_names
        self.events = events
        self.workers = workers
        self.resync = resync
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=max_backoff)
        # Per owner key, the owner reference its pods carry (kept after its last pod went: the group of a
        # ReplicaSet scaled to zero is deleted then).
        self.owners: dict[str, Owner] = {}
        self.stats = {"syncs": 0, "created": 0, "updated": 0, "deleted": 0, "annotated": 0, "errors": 0}
        store.subscribe(Subscription(kinds=KINDS, changed=self._changed, listed=self._listed))

    @property
    def ready(self) -> bool:
        return self.store.listed(*KINDS)

    # --- what the store tells ------------------------------------------------------------------------------
    def _changed(self, change: Change) -> None:
        if change.kind == "pods":
            for s in (change.old, change.new):
                key = self._owner_key(s) if s is not None else None
                if key is not None:
                    self.queue.add(key)
        elif (
            change.removed and not change.listed and change.key.split("/", 1)[-1].startswith(PODGROUP_PREFIX)
        ):
            # Deleted by hand while its pods live: make it again.
            ns, name = change.key.split("/", 1)
            for k, owner in self.owners.items():
                if k.startswith(f"{ns}/") and owner_group_name(owner) == name:
                    self.queue.add(k)

    def _owner_key(self, pod: Stored) -> str | None:
        """The owner key of a pod this controller looks after (the store's ``WORKLOAD`` index), its owner
        remembered."""
        found = workload_of(pod, self.scheduler_names)
        if found is None:
            return None
        self.owners[found[0]] = found[1]
        return found[0]

    def _listed(self, _kind: str) -> None:
        if self.ready:
            for key in self.store.index_values("pods", WORKLOAD):
                self.queue.add(key)

    # --- workers -------------------------------------------------------------------------------------------
    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for i in range(self.workers):
                tg.create_task(self.queue.work(self._sync_contained), name=f"workload-groups-{i}")
            tg.create_task(self._resync(), name="workload-groups-resync")

    async def _resync(self) -> None:
        """Owners are not watched: look at every owner with pods again now and then, so a changed
        ``group-min-member`` reaches its group without a pod event."""
        while True:
            await asyncio.sleep(self.resync)
            if self.ready:
                for key in self.store.index_values("pods", WORKLOAD):
                    self.queue.add(key)

    async def _sync_contained(self, key: str) -> None:
        if not self.ready:
            return  # _mark queues every owner once both caches are synced
        try:
            await self.sync(key)
            self.queue.forget(key)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # an API error, or an object we did not foresee: this owner's problem
            self.stats["errors"] += 1
            delay = self.queue.backoff(key)
            level = logging.WARNING if isinstance(e, ApiError | OSError | TimeoutError) else logging.ERROR
            log.log(
                level,
                "workload group sync failed",
                extra={"owner": key, "error": f"{type(e).__name__}: {e}", "retry_s": delay},
                exc_info=level == logging.ERROR,
            )
            self.queue.add_after(key, delay)

    async def _get_owner(self, namespace: str, owner: Owner) -> Obj | None:
        """The owner as the API server has it, or None if it is gone (or replaced by a namesake)."""
        path = _OWNER_RESOURCES[owner.kind].item(owner.name, namespace=namespace)
        try:
            obj = await self.client.get(path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise
        return obj if read_meta(obj).uid == owner.uid else None

    async def sync(self, key: str) -> None:
        owner = self.owners.get(key)
        if owner is None:
            return
        namespace = key.split("/", 1)[0]
        group_key = f"{namespace}/{owner_group_name(owner)}"
        pods = sorted(
            self.store.indexed("pods", WORKLOAD, key),
            key=lambda p: (p.meta.creation_timestamp, p.meta.name),
        )
        self.stats["syncs"] += 1
        if not pods:
            self.owners.pop(key, None)
            await self._scaled_to_zero(namespace, owner, group_key)
            return
        owner_obj = await self._get_owner(namespace, owner)
        if owner_obj is None:
            return  # the owner is gone: the garbage collector removes its pods and its group
        desired = None
        for pod in pods:
            try:
                requests = pod_requests(pod.obj.get("spec") or {})
            except (InvalidObject, ValueError, TypeError, AttributeError):
                continue  # the cache reports an unreadable pod; size the group from another
            desired = desired_podgroup(pod.obj, owner, owner_obj, requests)
            break
        if desired is None:
            log.warning("no readable pod to size a workload group from", extra={"owner": key})
            return
        for problem in desired.problems:
            log.warning("workload annotation ignored", extra={"owner": key, "detail": problem})
            if self.events is not None:
                ref = Ref.of(owner_obj, api_version=owner.api_version, kind=owner.kind)
                self.events.record(
                    ref, type_="Warning", reason="InvalidAnnotation", note=problem, action="Sync"
                )
        existing = self.store.get("podgroups", group_key)
        if existing is None:
            await self._create(namespace, desired.body, key)
        else:
            patch = spec_patch(existing.obj, desired)
            if patch is not None:
                path = paths.PODGROUPS.item(desired.name, namespace=namespace)
                # Kept unless the watch removed it meanwhile (deleted by hand: it is made again, not revived).
                self.store.written("podgroups", await self.client.merge_patch(path, patch))
                self.stats["updated"] += 1
                log.info(
                    "workload group updated",
                    extra={"owner": key, "podgroup": group_key, "spec": patch["spec"]},
                )
        todo = [p.meta.name for p in pods if named_group(p.meta.raw) is None and not p.meta.deleting]
        body = annotation_patch(desired.name)
        await bounded(
            [
                ignore_404(self.client.merge_patch(paths.PODS.item(n, namespace=namespace), body))
                for n in todo
            ],
            FANOUT,
        )
        self.stats["annotated"] += len(todo)

    async def _create(self, namespace: str, body: Obj, key: str) -> None:
        try:
            created = await self.client.post(paths.PODGROUPS.collection(namespace), body)
        except ApiError as e:
            if e.status != 409:
                raise
            return  # made already (by us before a restart): the watch brings it, the next sync compares
        self.store.fetched("podgroups", created)
        self.stats["created"] += 1
        spec = body["spec"]
        log.info(
            "workload group created",
            extra={
                "owner": key,
                "podgroup": f"{namespace}/{body['metadata']['name']}",
                "min_member": spec["minMember"],
                "min_resources": spec["minResources"],
            },
        )

    async def _scaled_to_zero(self, namespace: str, owner: Owner, group_key: str) -> None:
        """The owner's last pod went: delete its group if it is a ReplicaSet or StatefulSet at zero replicas
        (a Deployment's old ReplicaSet after a rollout), as Volcano does. A gone owner's group is the garbage
        collector's; a finished Job keeps its group, as it keeps its pods' record."""
        if self.store.get("podgroups", group_key) is None or owner.kind not in _SCALABLE:
            return
        owner_obj = await self._get_owner(namespace, owner)
        if owner_obj is None:
            return
        spec = owner_obj.get("spec")
        replicas = spec.get("replicas") if isinstance(spec, Mapping) else None
        if replicas == 0:
            name = group_key.split("/", 1)[1]
            await ignore_404(self.client.delete(paths.PODGROUPS.item(name, namespace=namespace)))
            self.store.gone("podgroups", group_key)
            self.stats["deleted"] += 1
            log.info("workload group deleted: scaled to zero", extra={"podgroup": group_key})
