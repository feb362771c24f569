"""What the pure vcjob reconcile sees of one job: its :class:`~extender.jobs.reconcile.World`, read from the
store of watched objects.

The job's pods and Commands come from the store's indexes (pods by owning vcjob, Commands by target job),
its PodGroup by name. Invariants: a pod or Command left from an earlier job of the same name (another UID)
is not this job's; the PodGroup's phase is the scheduler's in-memory one when it is ahead of the stored
object (an admission whose status write has not come back through the watch yet), so pods are created as
soon as the group is admitted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from controllers.state.indexes import TARGET_JOB, VCJOB
from controllers.state.store import ObjectStore
from extender.api import labels as L
from extender.core.timestamps import epoch
from extender.jobs.model import Job, podgroup_name
from extender.jobs.plugins.base import PluginContext
from extender.jobs.pods import view_pod
from extender.jobs.reconcile import CommandView, World


def job_world(
    store: ObjectStore,
    key: str,
    job: Job,
    *,
    now: float,
    gang_admission: bool,
    plugin_context: PluginContext,
    group_phase: Callable[[str, str], str | None],
    problems: Sequence[str] = (),
) -> World:
    """The world of job ``key`` (``namespace/name``, parsed as ``job``) as the store holds it now."""
    pods = []
    for s in store.indexed("pods", VCJOB, key):
        owner = s.meta.owner(L.JOB_KIND, L.BATCH_GROUP)
        if owner is None or owner.uid in ("", job.uid):
            pods.append(s.pod.view() if s.pod is not None else view_pod(s.obj))
    commands = []
    for s in store.indexed("commands", TARGET_JOB, key):
        target = s.obj.get("target")
        target_uid = target.get("uid") if isinstance(target, Mapping) else None
        if target_uid and target_uid != job.uid:
            continue  # meant for an earlier job of this name
        commands.append(
            CommandView(
                name=s.meta.name,
                uid=s.meta.uid,
                action=str(s.obj.get("action") or ""),
                created=epoch(s.meta.creation_timestamp),
            )
        )
    held = store.get("podgroups", f"{job.namespace}/{podgroup_name(job)}")
    pg = held.obj if held is not None else None
    phase = group_phase(job.namespace, podgroup_name(job)) if pg is not None else None
    if pg is not None and phase and phase != (pg.get("status") or {}).get("phase"):
        pg = {**pg, "status": {**(pg.get("status") or {}), "phase": phase}}
    return World(
        job=job,
        pods=pods,
        podgroup=pg,
        commands=commands,
        now=now,
        gang_admission=gang_admission,
        plugin_context=plugin_context,
        problems=tuple(problems),
    )
