"""One reconcile of one JobFlow, pure: the flow, its templates, its jobs, their pods and probe results in;
a :class:`Plan` out (jobs to create and delete, the status to write, probes to run).

What it decides, as Volcano's jobflow controller does (``deployJob``, ``getAllJobStatus``, the state
package): for each entry in spec order without a job, create ``<flow>-<template>`` from the template (its
spec with the entry's ``patch.jobSpec`` merged in, :mod:`extender.flows.patch`) once every target is
satisfied (:mod:`extender.flows.probes`); then recompute the status (:mod:`extender.flows.state`). When the
flow has Succeeded and its ``jobRetainPolicy`` is ``delete``, its jobs are deleted. Nothing is created once
the flow is Failed or Succeeded, or while it is being deleted.

Crash safety: a job's name is a function of the flow and the entry, and "exists" is read from the jobs the
flow controls, so a restart (or a reconcile that raced the watch) can only try to create a job again, which
the API server refuses (409): never a duplicate. The status is recomputed from the jobs and the previous
status alone; its write carries the flow's resourceVersion. A job made from a template copies it at creation:
editing the template later changes no job already made.

A job of the right name that this flow does not control (a user's, or an earlier flow's of the same name)
is never adopted nor deleted: the entry waits, and an event says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extender.core.errors import InvalidObject
from extender.flows.model import (
    CREATED_BY_TEMPLATE,
    JOB_API_VERSION,
    FlowPhase,
    JobFlow,
    RetainPolicy,
    owner_reference,
    template_key,
)
from extender.flows.patch import apply_patch
from extender.flows.probes import PROBE_PERIOD, PodEndpoint, ProbeRequest, ProbeResult, evaluate
from extender.flows.state import FINAL, flow_status

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowWorld:
    flow: JobFlow
    # Template name -> the JobTemplate object (absent: not found).
    templates: Mapping[str, Obj]
    # Job name -> the vcjob, for jobs this flow controls (owner reference with its UID).
    jobs: Mapping[str, Obj]
    # Job names that exist but belong to someone else.
    foreign: frozenset[str] = frozenset()
    # Job name -> its pods' endpoints (for HTTP/TCP probes).
    pods: Mapping[str, Sequence[PodEndpoint]] = field(default_factory=dict)
    results: Mapping[ProbeRequest, ProbeResult] = field(default_factory=dict)
    now: float


@dataclass(slots=True)
class FlowPlan:
    create_jobs: list[dict[str, Any]] = field(default_factory=list)
    delete_jobs: list[str] = field(default_factory=list)
    status: dict[str, Any] | None = None
    probes: list[ProbeRequest] = field(default_factory=list)
    requeue_after: float | None = None
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)


def build_job(flow: JobFlow, entry_name: str, template: Obj, patch: Obj | None) -> dict[str, Any]:
    """The vcjob of one entry (raises :class:`InvalidObject` when the template or the patch is unusable)."""
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidObject(f"JobTemplate {entry_name}: spec: expected an object")
    key = template_key(flow.namespace, entry_name)
    return {
        "apiVersion": JOB_API_VERSION,
        "kind": "Job",
        "metadata": {
            "name": flow.job_name(entry_name),
            "namespace": flow.namespace,
            "labels": {CREATED_BY_TEMPLATE: key},
            "annotations": {CREATED_BY_TEMPLATE: key},
            "ownerReferences": [owner_reference(flow)],
        },
        "spec": apply_patch(spec, patch),
    }


def reconcile(w: FlowWorld) -> FlowPlan:
    flow, plan = w.flow, FlowPlan()
    if flow.deleting:
        return plan
    old_state = flow.status.get("state")
    raw_phase = old_state.get("phase") if isinstance(old_state, Mapping) else None
    phase = FlowPhase(raw_phase) if raw_phase in set(FlowPhase) else FlowPhase.PENDING

    if phase is FlowPhase.SUCCEED and flow.retain is RetainPolicy.DELETE:
        plan.delete_jobs = sorted(w.jobs)
        return plan

    jobs = dict(w.jobs)
    reports: list[dict[str, Any]] = []
    if phase not in FINAL:
        by_entry = {e.name: jobs.get(flow.job_name(e.name)) for e in flow.flows}
        for entry in flow.flows:
            name = flow.job_name(entry.name)
            if name in jobs:
                continue
            if name in w.foreign:
                plan.events.append(
                    (
                        "Warning",
                        "JobExists",
                        f"job {name} exists and is not controlled by this flow; "
                        f"entry {entry.name!r} waits until it is gone",
                    )
                )
                continue
            ev = evaluate(
                entry,
                {t: by_entry.get(t) for t in entry.targets},
                {t: w.pods.get(flow.job_name(t), ()) for t in entry.targets},
                w.results,
                w.now,
            )
            plan.probes.extend(ev.wanted)
            reports.extend({"name": entry.name, **r} for r in ev.report)
            if ev.report and not ev.ready:
                plan.requeue_after = PROBE_PERIOD
            if not ev.ready:
                continue
            template = w.templates.get(entry.name)
            if template is None:
                plan.events.append(
                    ("Warning", "TemplateNotFound", f"JobTemplate {flow.namespace}/{entry.name} not found")
                )
                continue
            try:
                job = build_job(flow, entry.name, template, entry.patch)
            except InvalidObject as e:
                plan.events.append(("Warning", "InvalidPatch", f"entry {entry.name!r}: {e}"))
                continue
            plan.create_jobs.append(job)
            plan.events.append(("Normal", "Created", f"created job {name}"))
            # Counted as Pending at once, so this status already lists it.
            jobs[name] = job
            by_entry[entry.name] = job

    status = flow_status(
        old=flow.status, jobs=list(jobs.values()), entries=len(flow.flows), now=w.now, probes=reports
    )
    if status != flow.status:
        plan.status = status
    return plan
