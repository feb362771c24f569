"""Metrics only the watch can observe: pods bound, and how long vcjobs and PodGroups waited to run.

kube-scheduler binds pumice's pods itself unless the extender's ``bind`` verb is configured, so counting
binds at the verb counted nothing in the usual set-up. What is counted here is what the watch shows: a pod
of one of pumice's scheduler names first seen without a node, later seen with one. Likewise the waits: a
vcjob (or PodGroup) seen not yet Running, later seen Running, is observed once, as the time from its
``metadata.creationTimestamp`` to when the watch showed it Running. An object first seen already bound or
already Running (pumice restarted meanwhile) is not observed: its wait was never watched, and observing it
at a restart would count it twice.

Volcano's PodGroup phases (Pending, Inqueue, Running, ...) and vcjob ``status.state.phase`` are read as
the API server stores them; nothing here decides anything. Memory: one set entry per object not yet
bound or running, dropped on delete.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controllers.kube.informer import Handler, Listing
from controllers.state.meta import read_meta
from extender.core.timestamps import epoch

Obj = dict[str, Any]
Observe = Callable[[float], None]
Count = Callable[[], object]

_RUNNING = "Running"
# Phases after which a wait can no longer end in Running.
_FINISHED_JOB = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
_FINISHED_POD = frozenset({"Succeeded", "Failed"})


def _section(obj: Obj, key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _uid(obj: Obj) -> str:
    # read_meta(obj).uid without reading the rest (called for every pod of every LIST).
    meta = obj.get("metadata")
    uid = meta.get("uid") if isinstance(meta, Mapping) else None
    return uid if isinstance(uid, str) else ""


class _Transitions:
    """Objects seen in a 'before' state; ``seen(obj)`` says whether ``obj`` just left it for 'after'."""

    def __init__(self, before: Callable[[Obj], bool], after: Callable[[Obj], bool]) -> None:
        self._before = before
        self._after = after
        self._waiting: set[str] = set()

    def seen(self, obj: Obj) -> bool:
        uid = _uid(obj)
        if not uid:
            return False
        if self._after(obj):
            if uid in self._waiting:
                self._waiting.discard(uid)
                return True
            return False
        if self._before(obj):
            self._waiting.add(uid)
        else:
            self._waiting.discard(uid)
        return False

    def forget(self, obj: Obj) -> None:
        self._waiting.discard(_uid(obj))

    def keep_only(self, objs: Sequence[Obj]) -> None:
        self._waiting &= {_uid(o) for o in objs}

    def listing(self, upsert: Callable[[Obj], None]) -> Listing:
        """A LIST page by page: each object seen as it arrives, the waiting set trimmed at the end to
        what the LIST showed (only the UIDs are kept meanwhile, not the objects)."""
        return _Listing(self, upsert)


class _Listing:
    def __init__(self, t: _Transitions, upsert: Callable[[Obj], None]) -> None:
        self._t = t
        self._upsert = upsert
        self._uids: set[str] = set()

    def page(self, objs: Sequence[Obj], /) -> None:
        for o in objs:
            self._upsert(o)
            self._uids.add(_uid(o))

    def done(self) -> None:
        self._t._waiting &= self._uids


class WatchMetrics:
    """Feeds ``binds``, ``job_wait`` and ``podgroup_wait`` from the pods, vcjobs and PodGroups watches."""

    def __init__(
        self,
        *,
        scheduler_names: frozenset[str],
        binds: Count,
        job_wait: Observe,
        podgroup_wait: Observe,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._binds = binds
        self._job_wait = job_wait
        self._podgroup_wait = podgroup_wait
        self._clock = clock

        def ours(pod: Obj) -> bool:
            return _section(pod, "spec").get("schedulerName") in scheduler_names

        def unbound(pod: Obj) -> bool:
            return (
                ours(pod)
                and not _section(pod, "spec").get("nodeName")
                and _section(pod, "status").get("phase") not in _FINISHED_POD
                and not read_meta(pod).deleting
            )

        def bound(pod: Obj) -> bool:
            return ours(pod) and bool(_section(pod, "spec").get("nodeName"))

        self._pods = _Transitions(unbound, bound)
        self._groups = _Transitions(
            lambda pg: _section(pg, "status").get("phase") in (None, "Pending", "Inqueue", "Unknown"),
            lambda pg: _section(pg, "status").get("phase") == _RUNNING,
        )

        def job_phase(job: Obj) -> Any:
            return _section(_section(job, "status"), "state").get("phase")

        self._jobs = _Transitions(
            lambda job: job_phase(job) not in _FINISHED_JOB and job_phase(job) != _RUNNING,
            lambda job: job_phase(job) == _RUNNING,
        )

    def _waited(self, obj: Obj) -> float:
        created = epoch(read_meta(obj).creation_timestamp)
        return max(0.0, self._clock() - created) if created else 0.0

    def handlers(self) -> dict[str, Handler]:
        """One handler per watch, to be tee'd with the cache's and the job controller's."""

        def pods(obj: Obj) -> None:
            if self._pods.seen(obj):
                self._binds()

        def groups(obj: Obj) -> None:
            if self._groups.seen(obj):
                self._podgroup_wait(self._waited(obj))

        def jobs(obj: Obj) -> None:
            if self._jobs.seen(obj):
                self._job_wait(self._waited(obj))

        def handler(t: _Transitions, upsert: Callable[[Obj], None]) -> Handler:
            def replace(objs: Sequence[Obj]) -> None:
                for o in objs:
                    upsert(o)
                t.keep_only(objs)

            return Handler(replace=replace, upsert=upsert, remove=t.forget, listing=lambda: t.listing(upsert))

        return {
            "pods": handler(self._pods, pods),
            "podgroups": handler(self._groups, groups),
            "jobs": handler(self._jobs, jobs),
        }
