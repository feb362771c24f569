"""Metrics only the watch can observe: pods bound, how long vcjobs and PodGroups waited to run, vcjobs
that finished.

kube-scheduler binds pumice's pods itself unless the extender's ``bind`` verb is configured, so counting
binds at the verb counted nothing in the usual set-up. What is counted here is what the watch shows: a pod
of one of pumice's scheduler names first seen without a node, later seen with one. Likewise the waits: a
vcjob (or PodGroup) seen not yet Running, later seen Running, is observed once, as the time from its
``metadata.creationTimestamp`` to when the watch showed it Running. An object first seen already bound or
already Running (pumice restarted meanwhile) is not observed: its wait was never watched, and observing it
at a restart would count it twice. Likewise a vcjob seen unfinished, later seen Completed or Failed, is
reported once (Volcano's job phase counters). Each report names the object and its queue (``spec.queue``,
else the default queue), so the figures can be kept per queue and per object; a deleted vcjob or PodGroup
is reported ``gone`` so per-object figures go with it.

Volcano's PodGroup phases (Pending, Inqueue, Running, ...) and vcjob ``status.state.phase`` are read as
the API server stores them; nothing here decides anything. Memory: one set entry per object not yet
bound or running, dropped on delete.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from controllers.kube.informer import Handler, Listing
from controllers.state.meta import read_meta
from extender.core.timestamps import epoch

Obj = dict[str, Any]
Observe = Callable[[float], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """A vcjob or PodGroup as a watch report names it: ``seconds`` from its creation to the report
    (a wait when it started running), ``phase`` the phase it was seen in."""

    kind: Literal["job", "podgroup"]
    namespace: str
    name: str
    queue: str
    phase: str
    seconds: float


Report = Callable[[Seen], None]

_RUNNING = "Running"
# Phases after which a wait can no longer end in Running.
_FINISHED_JOB = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
_FINISHED_POD = frozenset({"Succeeded", "Failed"})
# The ends Volcano's job controller counts (volcano_job_completed_phase_count, ..._failed_phase_count).
_COUNTED_ENDS = frozenset({"Completed", "Failed"})


def _section(obj: Obj, key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _uid(obj: Obj) -> str:
    # read_meta(obj).uid without reading the rest (called for every pod of every LIST).
    meta = obj.get("metadata")
    uid = meta.get("uid") if isinstance(meta, (dict, Mapping)) else None  # (dict first: the ABC is slower)
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

    def keep_uids(self, uids: set[str]) -> None:
        self._waiting &= uids


class _Listing:
    """A LIST page by page: each object seen as it arrives, the waiting sets trimmed at the end to what the
    LIST showed (only the UIDs are kept meanwhile, not the objects)."""

    def __init__(self, ts: Sequence[_Transitions], upsert: Callable[[Obj], None]) -> None:
        self._ts = ts
        self._upsert = upsert
        self._uids: set[str] = set()

    def page(self, objs: Sequence[Obj], /) -> None:
        for o in objs:
            self._upsert(o)
            self._uids.add(_uid(o))

    def done(self) -> None:
        for t in self._ts:
            t.keep_uids(self._uids)


class WatchMetrics:
    """Reports from the pods, vcjobs and PodGroups watches: ``bound`` (a pod of ours seen bound, with the
    seconds since its creation), ``waited`` (a vcjob or PodGroup seen starting to run), ``finished`` (a
    vcjob seen Completed or Failed) and ``gone`` (a vcjob or PodGroup deleted)."""

    def __init__(
        self,
        *,
        scheduler_names: frozenset[str],
        default_queue: str = "default",
        bound: Observe,
        waited: Report,
        finished: Report = lambda _seen: None,
        gone: Report = lambda _seen: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._bound = bound
        self._waited = waited
        self._finished = finished
        self._gone = gone
        self._default_queue = default_queue
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

        def has_node(pod: Obj) -> bool:
            return ours(pod) and bool(_section(pod, "spec").get("nodeName"))

        self._pods = _Transitions(unbound, has_node)
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
        self._job_ends = _Transitions(
            lambda job: job_phase(job) not in _FINISHED_JOB,
            lambda job: job_phase(job) in _COUNTED_ENDS,
        )
        self._job_phase = job_phase

    def _age(self, obj: Obj) -> float:
        created = epoch(read_meta(obj).creation_timestamp)
        return max(0.0, self._clock() - created) if created else 0.0

    def _seen(self, kind: Literal["job", "podgroup"], obj: Obj, phase: Any) -> Seen:
        meta = read_meta(obj)
        return Seen(
            kind=kind,
            namespace=meta.namespace,
            name=meta.name,
            queue=str(_section(obj, "spec").get("queue") or self._default_queue),
            phase=str(phase or ""),
            seconds=self._age(obj),
        )

    def handlers(self) -> dict[str, Handler]:
        """One handler per watch, to be tee'd with the cache's and the job controller's."""

        def pods(obj: Obj) -> None:
            if self._pods.seen(obj):
                self._bound(self._age(obj))

        def groups(obj: Obj) -> None:
            if self._groups.seen(obj):
                self._waited(self._seen("podgroup", obj, _RUNNING))

        def jobs(obj: Obj) -> None:
            if self._jobs.seen(obj):
                self._waited(self._seen("job", obj, _RUNNING))
            if self._job_ends.seen(obj):
                self._finished(self._seen("job", obj, self._job_phase(obj)))

        def handler(
            ts: Sequence[_Transitions], upsert: Callable[[Obj], None], kind: Literal["job", "podgroup"] | None
        ) -> Handler:
            def replace(objs: Sequence[Obj]) -> None:
                for o in objs:
                    upsert(o)
                for t in ts:
                    t.keep_only(objs)

            def remove(obj: Obj) -> None:
                for t in ts:
                    t.forget(obj)
                if kind is not None:
                    self._gone(self._seen(kind, obj, ""))

            def listing() -> Listing:
                return _Listing(ts, upsert)

            return Handler(replace=replace, upsert=upsert, remove=remove, listing=listing)

        return {
            "pods": handler((self._pods,), pods, None),
            "podgroups": handler((self._groups,), groups, "podgroup"),
            "jobs": handler((self._jobs, self._job_ends), jobs, "job"),
        }
