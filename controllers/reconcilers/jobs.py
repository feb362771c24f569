"""The vcjob controller: keeps each Volcano Job's PodGroup, pods, plugin objects and status as its spec says.

It watches Jobs and Commands itself and shares the process's Pod and PodGroup watches (the informers feed it
through :meth:`JobController.handlers`; it keeps only the objects that belong to a job). Every change marks a
job dirty; workers take dirty jobs one at a time per job (never two workers on the same job), run the pure
reconcile (:mod:`extender.jobs.reconcile`) and perform its plan.

Restart safety: the status write carries the job's resourceVersion, so a reconcile that read a stale job
fails with 409 and runs again on fresh data instead of applying an action twice; the object the API server
returns replaces the cached one at once. Pod names are deterministic, so a pod created twice is refused
(409) rather than duplicated.

Containment: a job's pods are deleted only on the job's own deletion (its watch DELETED event, or a GET that
answers 404) or by a decision of its state machine, never because a LIST did not show it. A job pumice cannot
read, or whose sync fails, is that job's problem: its status and an Event say why, it is retried with
per-job exponential backoff, and every other job carries on.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from controllers.events import EventRecorder, Ref
from controllers.fanout import bounded
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, UnreadableResponse, ignore_404, object_key
from controllers.kube.informer import Handler
from controllers.workqueue import WorkQueue
from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.core.timestamps import epoch
from extender.jobs.model import Job, parse_job, placeholder_job, podgroup_name
from extender.jobs.notices import transition_event
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.ssh import secret_name as ssh_secret_name
from extender.jobs.pods import view_pod
from extender.jobs.reconcile import INVALID_SPEC, CommandView, Plan, World, reconcile

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# What the Job and Command informers watch (every namespace).
JOBS_PATH = paths.JOBS.collection()
COMMANDS_PATH = paths.COMMANDS.collection()
# API calls in flight at once for one job (pods, plugin objects).
FANOUT = 32

# What plugins create, by kind.
_PLUGIN_RESOURCES = {
    "Service": paths.SERVICES,
    "ConfigMap": paths.CONFIG_MAPS,
    "Secret": paths.SECRETS,
    "NetworkPolicy": paths.NETWORK_POLICIES,
}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _job_of(obj: Mapping[str, Any]) -> str | None:
    """``namespace/job`` of a pod or PodGroup a Job controls, from its controller owner reference."""
    meta = _meta(obj)
    for ref in meta.get("ownerReferences") or ():
        if ref.get("kind") == L.JOB_KIND and str(ref.get("apiVersion", "")).startswith(f"{L.BATCH_GROUP}/"):
            return f"{meta.get('namespace') or 'default'}/{ref.get('name')}"
    return None


def _newer(obj: Mapping[str, Any], cached: Mapping[str, Any] | None) -> bool:
    """Whether a watch event should replace what is cached. The controller caches the objects its own
    writes return, so a watch event still on its way from before that write must not undo it. Compared
    only for the same object (UID) and when both resourceVersions are numbers, as etcd's revisions are."""
    if cached is None:
        return True
    new_meta, old_meta = _meta(obj), _meta(cached)
    if new_meta.get("uid") != old_meta.get("uid"):
        return True
    try:
        return int(new_meta.get("resourceVersion") or 0) >= int(old_meta.get("resourceVersion") or 0)
    except ValueError:
        return True


def generate_ssh_key() -> PluginContext:
    """A fresh key pair for the ssh plugin (ed25519: instant to make, accepted by every current OpenSSH)."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return PluginContext(ssh_private_key=private, ssh_public_key=public.decode())


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> Obj:
    """A JSON merge patch (RFC 7386) turning ``old`` into ``new``: keys gone from ``new`` become null, so
    a map such as ``taskStatusCount`` loses phases that no longer have pods instead of keeping them."""
    out: Obj = {}
    for k, v in new.items():
        o = old.get(k)
        if isinstance(v, Mapping) and isinstance(o, Mapping):
            out[k] = merge_patch(o, v)
        else:
            out[k] = v
    for k in old:
        if k not in new:
            out[k] = None
    return out


class JobController:
    def __init__(
        self,
        client: KubeClient,
        *,
        scheduler_names: frozenset[str],
        workers: int = 16,
        clock: Callable[[], float] = time.time,
        group_phase: Callable[[str, str], str | None] = lambda _ns, _name: None,
        validate: Callable[[Mapping[str, Any]], list[str]] = lambda _obj: [],
        events: EventRecorder | None = None,
        max_backoff: float = 300.0,
    ) -> None:
        self.client = client
        self.scheduler_names = scheduler_names
        self.workers = workers
        self.clock = clock
        # The scheduler's in-memory phase of a PodGroup: pods can be created as soon as it admits the
        # group, without waiting for the status write and its watch event to come round.
        self.group_phase = group_phase
        # Every problem of a job object as admission would word it (pure; see extender.jobs.rules).
        self.validate = validate
        self.events = events
        # Jobs seen deleted in the watch: only these (or a GET answering 404) have their pods cleaned up.
        self.deleted: set[str] = set()
        # Jobs that exist but cannot be read (metadata only): left alone, reported.
        self.unreadable: dict[str, Obj] = {}
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=max_backoff)
        self.jobs: dict[str, Obj] = {}
        self.pods: dict[str, dict[str, Obj]] = {}
        self.podgroups: dict[str, Obj] = {}
        self.commands: dict[str, dict[str, Obj]] = {}
        # Plugin objects last applied per job (uid), so an unchanged set is not re-sent every reconcile.
        self.applied: dict[str, bytes] = {}
        self.ssh_keys: dict[str, PluginContext] = {}
        self.synced = {"jobs": False, "commands": False, "pods": False, "podgroups": False}
        self.stats = {
            "reconciles": 0,
            "conflicts": 0,
            "errors": 0,
            "invalid": 0,
            "pods_created": 0,
            "pods_deleted": 0,
        }

    # --- queue ---------------------------------------------------------------------------------------------
    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    def _enqueue_later(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)

    @property
    def ready(self) -> bool:
        return all(self.synced.values())

    # --- informer handlers ------------------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        return {
            "jobs": Handler(self._replace_jobs, self._upsert_job, self._remove_job, self._unreadable_jobs),
            "commands": Handler(self._replace_commands, self._upsert_command, self._remove_command),
            "pods": Handler(self._replace_pods, self._upsert_pod, self._remove_pod),
            "podgroups": Handler(self._replace_podgroups, self._upsert_podgroup, self._remove_podgroup),
        }

    def _upsert_job(self, obj: Obj) -> None:
        key = object_key(obj)
        if not _newer(obj, self.jobs.get(key)):
            return  # our own write already put a later version here
        self.jobs[key] = obj
        self.deleted.discard(key)
        self.unreadable.pop(key, None)
        self.enqueue(key)

    def _store_written(self, key: str, obj: Obj) -> None:
        """Cache what our write returned, unless the job was deleted (or replaced) while the write was on
        its way: the watch's DELETE may arrive before the response, which must not bring the job back."""
        cached = self.jobs.get(key)
        if cached is not None and _meta(cached).get("uid") == _meta(obj).get("uid"):
            self._upsert_job(obj)

    def _forget_job(self, key: str) -> None:
        """The API server says job ``key`` is gone: clean up as a watched deletion would."""
        self.deleted.add(key)
        self.jobs.pop(key, None)
        self.enqueue(key)

    def _remove_job(self, obj: Obj) -> None:
        key = object_key(obj)
        self.deleted.add(key)
        self.unreadable.pop(key, None)
        self.jobs.pop(key, None)
        self.applied.pop(str(_meta(obj).get("uid")), None)
        self.ssh_keys.pop(str(_meta(obj).get("uid")), None)
        self.enqueue(key)  # cleans up what the garbage collector would, in clusters that run one

    def _replace_jobs(self, objs: Sequence[Obj]) -> None:
        # Jobs missing from the list are looked at again; sync deletes nothing before a GET confirms it.
        gone = set(self.jobs)
        self.jobs = {}
        for o in objs:
            self._upsert_job(o)
        for key in gone - set(self.jobs):
            self.enqueue(key)
        self._mark("jobs")

    def _unreadable_jobs(self, metas: Sequence[Obj]) -> None:
        for m in metas:
            key = object_key(m)
            self.unreadable[key] = m
            self.jobs.pop(key, None)
            self.stats["invalid"] += 1
            self._event(
                m,
                "Warning",
                "Unreadable",
                "pumice cannot decode this job (nesting too deep?); fix or delete it",
            )
            log.error("unreadable job", extra={"job": key})

    @staticmethod
    def _command_job(obj: Mapping[str, Any]) -> str | None:
        target = obj.get("target") or {}
        if target.get("kind") != L.JOB_KIND:
            return None
        return f"{_meta(obj).get('namespace') or 'default'}/{target.get('name')}"

    def _upsert_command(self, obj: Obj) -> None:
        job = self._command_job(obj)
        if job is not None:
            self.commands.setdefault(job, {})[str(_meta(obj).get("name"))] = obj
            self.enqueue(job)

    def _remove_command(self, obj: Obj) -> None:
        job = self._command_job(obj)
        if job is not None:
            self.commands.get(job, {}).pop(str(_meta(obj).get("name")), None)

    def _replace_commands(self, objs: Sequence[Obj]) -> None:
        self.commands = {}
        for o in objs:
            self._upsert_command(o)
        self._mark("commands")

    def _upsert_pod(self, obj: Obj) -> None:
        job = _job_of(obj)
        if job is not None:
            pods = self.pods.setdefault(job, {})
            name = str(_meta(obj).get("name"))
            if _newer(obj, pods.get(name)):
                pods[name] = obj
                self.enqueue(job)

    def _remove_pod(self, obj: Obj) -> None:
        job = _job_of(obj)
        if job is not None:
            pods = self.pods.get(job, {})
            name = str(_meta(obj).get("name"))
            if name in pods and _meta(pods[name]).get("uid") == _meta(obj).get("uid"):
                del pods[name]
            if not pods:
                self.pods.pop(job, None)
            self.enqueue(job)

    def _replace_pods(self, objs: Sequence[Obj]) -> None:
        before = set(self.pods)
        self.pods = {}
        for o in objs:
            self._upsert_pod(o)
        for key in before - set(self.pods):
            self.enqueue(key)
        self._mark("pods")

    def _upsert_podgroup(self, obj: Obj) -> None:
        job = _job_of(obj)
        if job is not None and _newer(obj, self.podgroups.get(object_key(obj))):
            self.podgroups[object_key(obj)] = obj
            self.enqueue(job)

    def _remove_podgroup(self, obj: Obj) -> None:
        job = _job_of(obj)
        if job is not None:
            self.podgroups.pop(object_key(obj), None)
            self.enqueue(job)

    def _replace_podgroups(self, objs: Sequence[Obj]) -> None:
        self.podgroups = {}
        for o in objs:
            self._upsert_podgroup(o)
        self._mark("podgroups")

    def group_admitted(self, key: str) -> None:
        """A PodGroup (``namespace/name``) changed phase in the scheduler: its job may create pods now."""
        pg = self.podgroups.get(key)
        job = _job_of(pg) if pg is not None else None
        if job is not None:
            self.enqueue(job)

    def _mark(self, name: str) -> None:
        self.synced[name] = True
        if self.ready:
            for key in self.jobs:
                self.enqueue(key)

    # --- workers -------------------------------------------------------------------------------------------
    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for i in range(self.workers):
                tg.create_task(self._worker(), name=f"job-worker-{i}")

    async def _worker(self) -> None:
        await self.queue.work(self._sync_contained)

    async def _sync_contained(self, key: str) -> None:
        if not self.ready:
            return  # _mark re-queues every job once all caches are synced
        try:
            await self.sync(key)
            self.queue.forget(key)
        except asyncio.CancelledError:
            raise
        except ApiError as e:
            if e.status == 409:  # a stale read: run again at once on fresh data
                self.stats["conflicts"] += 1
                self._enqueue_later(key, 0.05)
            else:
                self._failed(key, e, str(e))
        except (OSError, TimeoutError) as e:
            self._failed(key, e, repr(e))
        except Exception as e:  # a bug or an object we did not foresee: this job's problem only
            log.exception("job sync raised", extra={"job": key})
            self._failed(key, e, f"internal error: {type(e).__name__}: {e}")

    def _failed(self, key: str, error: BaseException, why: str) -> None:
        """Count, log, tell the job's owner (an Event), and retry with per-job exponential backoff."""
        self.stats["errors"] += 1
        delay = self.queue.backoff(key)
        n = self.queue.failures[key]
        log.warning("job sync failed", extra={"job": key, "error": why, "attempt": n, "retry_s": delay})
        obj = self.jobs.get(key)
        if obj is not None and not isinstance(error, ApiError | OSError | TimeoutError):
            self._event(obj, "Warning", "SyncFailed", f"{why[:400]} (attempt {n}; retrying in {delay:g}s)")
        self._enqueue_later(key, delay)

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            ref = Ref.of(obj, api_version=paths.JOBS.api_version, kind=L.JOB_KIND)
            self.events.record(ref, type_=type_, reason=reason, note=note, action="Sync")

    def world(self, key: str, job: Job, problems: Sequence[str] = ()) -> World:
        pods = []
        for obj in self.pods.get(key, {}).values():
            refs = _meta(obj).get("ownerReferences") or ()
            owner: Mapping[str, Any] = next((r for r in refs if r.get("kind") == L.JOB_KIND), {})
            if owner.get("uid") in (None, job.uid):
                pods.append(view_pod(obj))
        commands = []
        for obj in self.commands.get(key, {}).values():
            target_uid = (obj.get("target") or {}).get("uid")
            if target_uid and target_uid != job.uid:
                continue  # meant for an earlier job of this name
            meta = _meta(obj)
            commands.append(
                CommandView(
                    name=str(meta.get("name")),
                    uid=str(meta.get("uid") or ""),
                    action=str(obj.get("action") or ""),
                    created=epoch(str(meta.get("creationTimestamp") or "")),
                )
            )
        pg = self.podgroups.get(f"{job.namespace}/{podgroup_name(job)}")
        phase = self.group_phase(job.namespace, podgroup_name(job)) if pg is not None else None
        if pg is not None and phase and phase != (pg.get("status") or {}).get("phase"):
            pg = {**pg, "status": {**(pg.get("status") or {}), "phase": phase}}
        return World(
            job=job,
            pods=pods,
            podgroup=pg,
            commands=commands,
            now=self.clock(),
            gang_admission=job.scheduler_name in self.scheduler_names,
            plugin_context=self.ssh_keys.get(job.uid, PluginContext()),
            problems=tuple(problems),
        )

    async def sync(self, key: str) -> None:
        obj = self.jobs.get(key)
        if obj is None:
            if key in self.unreadable:
                return  # it exists; what we cannot read we do not act on
            if key in self.deleted or await self._confirmed_gone(key):
                await self._cleanup(key)
                self.deleted.discard(key)
            return
        problems = self.validate(obj)
        job: Job | None
        try:
            job = parse_job(obj)
        except InvalidObject as e:
            problems = problems or [str(e)]
            job = placeholder_job(obj)  # identity and status only: enough to say why in its status
        if job is None:
            log.warning("job without a usable name", extra={"job": key})
            return
        if not problems and "ssh" in job.plugins and job.uid not in self.ssh_keys:
            try:
                self.ssh_keys[job.uid] = await self._ssh_key(job)
            except InvalidObject as e:
                problems = [str(e)]
        self.stats["reconciles"] += 1
        if problems:
            self.stats["invalid"] += 1
        plan = reconcile(self.world(key, job, problems))
        await self.perform(key, job, obj, plan, warn=bool(problems))

    async def _confirmed_gone(self, key: str) -> bool:
        """Whether the API server says job ``key`` does not exist (404). A job a LIST did not show may
        still exist: the LIST may have been cut short or unreadable."""
        ns, name = key.split("/", 1)
        try:
            obj = await self.client.get(paths.JOBS.item(name, namespace=ns))
        except UnreadableResponse:
            self.unreadable[key] = {"metadata": {"namespace": ns, "name": name}}
            return False
        except ApiError as e:
            if e.status == 404:
                return True
            raise
        self._upsert_job(obj)
        return False

    async def _ssh_key(self, job: Job) -> PluginContext:
        """The key pair already in the job's ssh Secret (so a restart keeps it), else a new one."""
        path = paths.SECRETS.item(ssh_secret_name(job), namespace=job.namespace)
        try:
            secret = await self.client.get(path)
        except ApiError as e:
            if e.status != 404:
                raise
            return generate_ssh_key()
        data = secret.get("data") or {}

        def read(k: str) -> str:
            return base64.b64decode(data.get(k) or "").decode()

        try:
            ctx = PluginContext(ssh_private_key=read("id_rsa"), ssh_public_key=read("id_rsa.pub"))
        except (ValueError, TypeError, AttributeError):  # not base64, not UTF-8, not strings
            # A new key would not match the one in the Secret that running pods mount: do not guess.
            raise InvalidObject(
                f"Secret {job.namespace}/{ssh_secret_name(job)} does not hold an ssh key pair pumice can "
                "read (data.id_rsa, data.id_rsa.pub: base64 of UTF-8 text); delete it to have a new one made"
            ) from None
        return ctx if ctx.ssh_private_key and ctx.ssh_public_key else generate_ssh_key()

    async def perform(self, key: str, job: Job, obj: Obj, plan: Plan, *, warn: bool = False) -> None:
        ns = job.namespace
        for message in plan.events:
            log.log(
                logging.WARNING if warn else logging.INFO, "job event", extra={"job": key, "detail": message}
            )
            # Problems of the spec are Warnings on the job; other plan events (a dropped Command) Normal.
            self._event(obj, "Warning" if warn else "Normal", INVALID_SPEC if warn else "JobEvent", message)
        if plan.status is not None:
            body = {
                "metadata": {"resourceVersion": _meta(obj).get("resourceVersion")},
                "status": merge_patch(obj.get("status") or {}, plan.status),
            }
            try:
                written = await self.client.merge_patch(paths.JOBS.status(job.name, namespace=ns), body)
            except ApiError as e:
                if e.status == 404 and await self._confirmed_gone(key):
                    # Deleted while we looked at it (the watch has not said so yet): clean up as for a
                    # deletion, rather than retry a write to an object that is gone.
                    self._forget_job(key)
                    return
                raise
            self._store_written(key, written)
            state = plan.status.get("state") or {}
            notice = transition_event((obj.get("status") or {}).get("state") or {}, state)
            if notice is not None:  # after the write: a refused write is retried, and tells then
                self._event(obj, notice.type, notice.reason, notice.note)
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
        if plan.podgroup_create is not None:
            created = await self._create(paths.PODGROUPS.collection(ns), plan.podgroup_create)
            if created:
                self._upsert_podgroup(created)
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
        await bounded([self._create(pods, p, self._upsert_pod) for p in plan.create_pods], FANOUT)
        self.stats["pods_created"] += len(plan.create_pods)
        for name in plan.delete_commands:
            await ignore_404(self.client.delete(paths.COMMANDS.item(name, namespace=ns)))
        if plan.delete_job:
            log.info("job ttl expired; deleting", extra={"job": key})
            path = paths.JOBS.item(job.name, namespace=ns)
            await ignore_404(self.client.request("DELETE", path, body={"propagationPolicy": "Background"}))
        if plan.requeue_after is not None:
            self._enqueue_later(key, plan.requeue_after + 0.05)

    async def _cleanup(self, key: str) -> None:
        """The job is gone: delete its pods and PodGroup (the garbage collector would, where one runs; this
        also frees the nodes at once)."""
        ns = key.split("/", 1)[0]
        pods = [n for n, p in self.pods.get(key, {}).items() if not _meta(p).get("deletionTimestamp")]
        if pods:
            log.info("deleting pods of a deleted job", extra={"job": key, "pods": len(pods)})
        await bounded(
            [ignore_404(self.client.delete(paths.PODS.item(n, namespace=ns))) for n in pods], FANOUT
        )
        self.stats["pods_deleted"] += len(pods)
        for pg in list(self.podgroups.values()):
            if _job_of(pg) == key:
                path = paths.PODGROUPS.item(str(_meta(pg).get("name")), namespace=ns)
                await ignore_404(self.client.delete(path))
        self.commands.pop(key, None)

    async def _create(self, path: str, body: Obj, record: Callable[[Obj], None] | None = None) -> Obj | None:
        """POST, taking "already exists" as done. ``record`` caches the created object at once, so the
        next reconcile does not try again before the watch shows it."""
        try:
            created = await self.client.post(path, body)
        except ApiError as e:
            if e.status != 409:
                raise
            return None
        if record is not None:
            record(created)
        return created

    async def _apply(self, obj: Obj) -> None:
        """Create a plugin object; if it exists, bring a ConfigMap's data up to date (host lists change
        with replicas). Other kinds stay as they are: a Secret's key must not change under running pods."""
        meta = _meta(obj)
        resource, ns = _PLUGIN_RESOURCES[str(obj.get("kind"))], str(meta.get("namespace"))
        try:
            await self.client.post(resource.collection(ns), obj)
        except ApiError as e:
            if e.status != 409:
                raise
            if obj.get("kind") == "ConfigMap":
                path = resource.item(str(meta.get("name")), namespace=ns)
                await self.client.merge_patch(path, {"data": obj.get("data") or {}})
