"""The vcjob controller's writes: a reconcile's :class:`~extender.jobs.reconcile.Plan` carried out against the
API server, and the clean-up of a deleted job.

Order matters and is kept: the status first (resourceVersion-guarded: a plan made from a stale job is
refused with 409 and nothing else of it happens), then the PodGroup, the plugin objects (before the pods,
which mount and read them), the pods deleted then created, the Commands carried out, and the job itself
deleted when its TTL ran out. What a write returns goes into the store of watched objects at once, so the
next reconcile reads it without waiting for the watch: a status write's response only while the job is
still there (:meth:`~controllers.state.store.ObjectStore.written`: the watch's DELETE may come first), a
created pod or PodGroup as a watch event would (a second create is refused with 409, pod names being
deterministic, and taken as done).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, Final

import orjson

from controllers.fanout import bounded
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, ignore_404
from controllers.reconcilers.watched import merge_patch
from controllers.state.indexes import VCJOB
from controllers.state.store import ObjectStore, Stored
from extender.jobs.model import Job, podgroup_name
from extender.jobs.notices import transition_event
from extender.jobs.reconcile import Plan

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Event = Callable[[Mapping[str, Any], str, str, str], None]

# API calls in flight at once for one job (pods, plugin objects).
FANOUT: Final = 32

# What plugins create, by kind.
_PLUGIN_RESOURCES: Final = {
    "Service": paths.SERVICES,
    "ConfigMap": paths.CONFIG_MAPS,
    "Secret": paths.SECRETS,
    "NetworkPolicy": paths.NETWORK_POLICIES,
}


class JobWrites:
    """Performs plans for the job controller, counting pods in its ``stats``."""

    def __init__(
        self, client: KubeClient, store: ObjectStore, *, event: Event, stats: MutableMapping[str, int]
    ) -> None:
        self.client = client
        self.store = store
        self.event = event
        self.stats = stats
        # Plugin objects last applied per job (uid), so an unchanged set is not re-sent every reconcile.
        self.applied: dict[str, bytes] = {}

    async def status(self, key: str, job: Job, stored: Stored, status: Mapping[str, Any]) -> None:
        """Write the job's status (guarded by the resourceVersion it was read at), then tell its phase
        change. Raises the write's ApiError (404: the caller finds out whether the job is gone)."""
        obj = stored.obj
        body = {
            "metadata": {"resourceVersion": stored.meta.resource_version or None},
            "status": merge_patch(obj.get("status") or {}, status),
        }
        path = paths.JOBS.status(job.name, namespace=job.namespace)
        self.store.written("jobs", await self.client.merge_patch(path, body))
        state = status.get("state") or {}
        notice = transition_event((obj.get("status") or {}).get("state") or {}, state)
        if notice is not None:  # after the write: a refused write is retried, and tells then
            self.event(obj, notice.type, notice.reason, notice.note)
        if state.get("phase") != job.status.phase:
            log.info(
                "job phase",
                extra={
                    "job": key,
                    "from": job.status.phase.value,
                    "to": state.get("phase"),
                    "reason": state.get("reason", ""),
                    "detail": state.get("message", ""),
                },
            )

    async def rest(self, key: str, job: Job, plan: Plan) -> None:
        """Everything of ``plan`` after its status write."""
        ns = job.namespace
        if plan.podgroup_create is not None:
            await self._create(paths.PODGROUPS.collection(ns), plan.podgroup_create, "podgroups")
        if plan.podgroup_patch is not None:
            pg_path = paths.PODGROUPS.item(podgroup_name(job), namespace=ns)
            await ignore_404(self.client.merge_patch(pg_path, plan.podgroup_patch))
        if plan.objects:  # before the pods, which mount and read them
            digest = orjson.dumps(plan.objects, option=orjson.OPT_SORT_KEYS)
            if self.applied.get(job.uid) != digest:
                await bounded([self._apply(o) for o in plan.objects], FANOUT)
                self.applied[job.uid] = digest
        if plan.delete_pods:
            log.info(
                "deleting pods",
                extra={"job": key, "pods": len(plan.delete_pods), "phase": job.status.phase.value},
            )
        await bounded(
            [ignore_404(self.client.delete(paths.PODS.item(n, namespace=ns))) for n in plan.delete_pods],
            FANOUT,
        )
        self.stats["pods_deleted"] += len(plan.delete_pods)
        pods = paths.PODS.collection(ns)
        await bounded([self._create(pods, p, "pods") for p in plan.create_pods], FANOUT)
        self.stats["pods_created"] += len(plan.create_pods)
        for name in plan.delete_commands:
            await ignore_404(self.client.delete(paths.COMMANDS.item(name, namespace=ns)))
        if plan.delete_job:
            log.info("job ttl expired; deleting", extra={"job": key})
            path = paths.JOBS.item(job.name, namespace=ns)
            await ignore_404(self.client.request("DELETE", path, body={"propagationPolicy": "Background"}))

    async def cleanup(self, key: str) -> None:
        """The job is gone: delete its pods and PodGroup (the garbage collector would, where one runs; this
        also frees the nodes at once)."""
        ns = key.split("/", 1)[0]
        pods = [p.meta.name for p in self.store.indexed("pods", VCJOB, key) if not p.meta.deleting]
        if pods:
            log.info("deleting pods of a deleted job", extra={"job": key, "pods": len(pods)})
        await bounded(
            [ignore_404(self.client.delete(paths.PODS.item(n, namespace=ns))) for n in pods], FANOUT
        )
        self.stats["pods_deleted"] += len(pods)
        for pg in self.store.indexed("podgroups", VCJOB, key):
            await ignore_404(self.client.delete(paths.PODGROUPS.item(pg.meta.name, namespace=ns)))

    async def _create(self, path: str, body: Obj, kind: str) -> None:
        """POST, taking "already exists" as done. The created object goes into the store at once, so the
        next reconcile does not try again before the watch shows it."""
        try:
            created = await self.client.post(path, body)
        except ApiError as e:
            if e.status != 409:
                raise
            return
        self.store.fetched(kind, created)

    async def _apply(self, obj: Obj) -> None:
        """Create a plugin object; if it exists, bring a ConfigMap's data up to date (host lists change
        with replicas). Other kinds stay as they are: a Secret's key must not change under running pods."""
        meta = obj.get("metadata") or {}
        resource, ns = _PLUGIN_RESOURCES[str(obj.get("kind"))], str(meta.get("namespace"))
        try:
            await self.client.post(resource.collection(ns), obj)
        except ApiError as e:
            if e.status != 409:
                raise
            if obj.get("kind") == "ConfigMap":
                path = resource.item(str(meta.get("name")), namespace=ns)
                await self.client.merge_patch(path, {"data": obj.get("data") or {}})
