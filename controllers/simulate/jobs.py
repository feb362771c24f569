"""Volcano Jobs in a simulation: the PodGroup and pods the job controller would create for one.

The job controller's own pure parts make them: :func:`extender.jobs.model.parse_job`,
:func:`extender.jobs.reconcile.podgroup_spec` (``minMember``, ``minTaskMember``, ``minResources``) and
:func:`extender.jobs.pods.build_pod` (names, annotations, labels). What a running cluster adds on top is
added here: UIDs, creation timestamps, and ``spec.priority`` from the priority class (the API server's
priority admission plugin). Job plugins (svc, ssh, env) do not change scheduling and are not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.jobs.model import Job, parse_job, podgroup_name
from extender.jobs.pods import build_pod
from extender.jobs.reconcile import podgroup_spec

Obj = dict[str, Any]


def job_podgroup(job: Job, created: str) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": podgroup_name(job),
            "namespace": job.namespace,
            "uid": f"pg-{job.uid}",
            "creationTimestamp": created,
            "annotations": {},
        },
        "spec": podgroup_spec(job),
        "status": {"phase": "Pending"},
    }


def job_pod(job: Job, task: str, index: int, *, uid: str, created: str, priorities: Mapping[str, int]) -> Obj:
    spec = job.task(task)
    if spec is None:
        raise ValueError(f"job {job.key} has no task {task!r}")
    pod = build_pod(job, spec, index, ())
    pod["metadata"]["uid"] = uid
    pod["metadata"]["creationTimestamp"] = created
    pc = pod["spec"].get("priorityClassName")
    if pc and "priority" not in pod["spec"]:
        pod["spec"]["priority"] = priorities.get(pc, 0)
    pod["status"] = {"phase": "Pending"}
    return pod


def expand(raw: Obj, *, created: str, priorities: Mapping[str, int]) -> tuple[Job, Obj, list[Obj]]:
    """A vcjob's model, PodGroup and every replica's pod (first incarnation)."""
    job = parse_job(raw)
    pods = [
        job_pod(job, t.name, i, uid=f"{job.uid}-{t.name}-{i}", created=created, priorities=priorities)
        for t in job.tasks
        for i in range(t.replicas)
    ]
    return job, job_podgroup(job, created), pods
