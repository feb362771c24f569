"""Runtimes learned from Volcano Jobs seen completed: the jobs watch's handler that feeds the book.

A vcjob's ``status.conditions`` keep its phase changes with their times (the job controller appends one
per change): a job seen ``Completed`` ran from its last ``Running`` condition to its ``Completed`` one.
Read from the object alone, so a job that completed while pumice was down, or before it started, is
learned from the LIST as well (the book counts each job once, by UID). Jobs that failed or were aborted
are not: a cut-short run says little about how long the next one takes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controllers.kube.informer import Handler
from controllers.state.meta import read_meta
from extender.core.timestamps import epoch
from extender.forecast.runtimes import Finished, RuntimeBook

Obj = dict[str, Any]


def finished_job(job: Obj, default_queue: str) -> Finished | None:
    """The run of a Completed vcjob, or None (not completed, or its conditions do not tell)."""
    status = job.get("status")
    if not isinstance(status, Mapping):
        return None
    state = status.get("state")
    if not isinstance(state, Mapping) or state.get("phase") != "Completed":
        return None
    conditions = status.get("conditions")
    running = ended = 0.0
    for c in conditions if isinstance(conditions, list) else ():
        if not isinstance(c, Mapping):
            continue
        at = epoch(str(c.get("lastTransitionTime") or ""))
        if c.get("status") == "Running" and at:
            running, ended = at, 0.0
        elif c.get("status") == "Completed" and at and running:
            ended = at
    if not running or not ended or ended <= running:
        return None
    meta = read_meta(job)
    spec = job.get("spec")
    queue = spec.get("queue") if isinstance(spec, Mapping) else None
    return Finished(
        uid=meta.uid,
        queue=str(queue or default_queue),
        namespace=meta.namespace,
        name=meta.name,
        seconds=ended - running,
        at=ended,
    )


def runtime_handler(book: RuntimeBook, default_queue: str) -> Handler:
    """The handler for the jobs watch (tee'd with the others) that counts every completed vcjob seen."""

    def upsert(job: Obj) -> None:
        run = finished_job(job, default_queue)
        if run is not None:
            book.observe(run)

    def count(jobs: Sequence[Obj]) -> None:
        for job in jobs:
            upsert(job)

    return Handler(replace=count, upsert=upsert, remove=lambda _: None, listing=lambda: _Counting(count))


class _Counting:
    """A LIST of the jobs, page by page: each page's completed jobs counted as it arrives. Without it the
    informer would keep every page for ``replace`` (11 000 vcjobs decoded at once, ~70 MiB) while the other
    handlers of the watch take pages; a job seen again is counted once, so a LIST cut short undoes nothing."""

    def __init__(self, count: Callable[[Sequence[Obj]], None]) -> None:
        self._count = count

    def page(self, objs: Sequence[Obj], /) -> None:
        self._count(objs)

    def done(self) -> None:
        return None
