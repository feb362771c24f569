"""Every check of a Volcano Job that needs nothing but the object itself: the job controller's and
admission's entry points. Pure: admission denies with these words, and the job controller reports them.

:func:`job_problems` is the controller's view: every problem of a stored job, one line each, exactly as
admission's denial spells it (``spec.tasks[1].name: duplicate task name 'w' ...``). It never raises,
whatever the object, and it is complete in two directions that the controller relies on: when it finds
nothing, :func:`extender.jobs.model.parse_job` reads the job and :func:`extender.jobs.reconcile.reconcile`
runs on it without raising (so it also checks the shapes that pod building and the job plugins edit, such
as a container's ``env`` being a list); and whenever ``parse_job`` refuses a job, it finds something.

:func:`spec_errors` is admission's view, the same checks without what only a stored object has (a name, a
status); :mod:`admission.jobs` adds the rules that read the cluster (the queue) and the update rules
(:func:`extender.jobs.update_rules.update_errors`). Each rule reads raw JSON, never raises and reports every
problem of its part, so one denial lists them all (Volcano's webhook stops at the first problem of some
kinds; we do not).

The rules of each part of a spec live beside this module, one module per part: the tasks and their numbers
(:mod:`~extender.jobs.task_rules`), pod templates (:mod:`~extender.jobs.template_rules`), lifecycle policies
(:mod:`~extender.jobs.policy_rules`), ``dependsOn`` (:mod:`~extender.jobs.dependency_rules`), plugins
(:mod:`~extender.jobs.plugin_rules`), volumes (:mod:`~extender.jobs.volume_rules`) and updates
(:mod:`~extender.jobs.update_rules`). What is not vcjob-specific (field errors, raw readers, the nesting
bound, names, quantities) is the core's validation kit (:mod:`extender.core.validation`,
:mod:`extender.core.names`, :mod:`extender.core.quantity_checks`), shared with every admitted kind.

Volcano sources matched (``pkg/webhooks/admission/jobs/validate``): ``admit_job.go`` (task counts, names,
pod name length, partition policy, network topology, NUMA topology policy, mpi master task, plugins, DAG of
``dependsOn``, the fields an update may change), ``util.go`` (lifecycle policies, volumes), and the checks
Volcano moved into its ValidatingAdmissionPolicy (``installer/.../policy/jobs-validating.yaml``):
replicas, minAvailable, maxRetry, ttlSecondsAfterFinished, unique DNS-1123 task names. Pod templates get a
sanity check rather than Kubernetes' full pod validation, which kube-apiserver applies anyway when the job's
pods are created. Ours on top: the :class:`~extender.api.limits.Limits` (replicas, nesting depth, quantity
range), and the ray plugin's head task and head Service name (Volcano accepts the job, then fails to create
its pods or the Service).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.api.limits import Limits
from extender.core.validation import (
    FieldError,
    Obj,
    depth_errors,
    int_field,
    is_int,
    mapping,
    shown,
    string_errors,
    string_map_errors,
)
from extender.jobs.dependency_rules import dependency_errors
from extender.jobs.plugin_rules import plugin_errors
from extender.jobs.policy_rules import policy_errors
from extender.jobs.task_rules import (
    count_errors,
    job_name_errors,
    pod_name_errors,
    scalar_errors,
    task_list,
    task_name_errors,
)
from extender.jobs.template_rules import template_errors
from extender.jobs.volume_rules import volume_errors


def job_problems(obj: Mapping[str, Any], limits: Limits) -> list[str]:
    """Every problem of a stored job, one line each (``field: what to do``); [] when the controller can
    run it. Never raises."""
    return [str(e) for e in job_errors(obj, limits)]


def job_errors(obj: object, limits: Limits) -> list[FieldError]:
    """:func:`job_problems` as field errors: :func:`spec_errors` plus what a stored job must have."""
    errors = depth_errors(obj, limits)
    if errors:
        return errors
    if not isinstance(obj, Mapping):
        return [FieldError(field="object", message=f"a Job must be a JSON object, got {shown(obj)}")]
    errors = spec_errors(obj, limits)
    name = mapping(obj, "metadata").get("name")
    if not isinstance(name, str) or not name:
        errors.insert(0, FieldError(field="metadata.name", message="required; a job needs a name"))
    return errors + status_errors(obj)


def spec_errors(job: Obj, limits: Limits, *, creating: bool = False) -> list[FieldError]:
    """Everything admission checks of a Job without the cluster, on CREATE (``creating``) and UPDATE. The
    caller has checked the nesting depth (:func:`depth_errors`): some checks compare nested values."""
    errors = metadata_errors(job)
    raw_spec = job.get("spec")
    if not isinstance(raw_spec, Mapping):
        if raw_spec is None:
            return [*errors, FieldError(field="spec.tasks", message="must list at least one task")]
        return [*errors, FieldError(field="spec", message="must be an object")]
    spec: Obj = raw_spec
    name = mapping(job, "metadata").get("name")
    name = name if isinstance(name, str) else ""
    tasks, task_errors = task_list(spec)
    errors += job_name_errors(name) + task_errors
    queue = spec.get("queue")
    if queue is not None and not isinstance(queue, str):
        errors.append(FieldError(field="spec.queue", message="must be a queue name"))
    errors += string_errors(spec, ("schedulerName", "priorityClassName"), "spec")
    errors += scalar_errors(spec, tasks)
    errors += task_name_errors(tasks)
    errors += pod_name_errors(name, tasks)
    errors += count_errors(spec, tasks, limits)
    for i, task in tasks:
        errors += template_errors(task, f"spec.tasks[{i}]", limits)
        errors += policy_errors(task.get("policies"), f"spec.tasks[{i}].policies")
    errors += dependency_errors(tasks)
    errors += policy_errors(spec.get("policies"), "spec.policies")
    errors += plugin_errors(spec, tasks, job_name=name)
    errors += volume_errors(spec.get("volumes"), creating=creating)
    return errors


# --- metadata and status ------------------------------------------------------------------------------------
def metadata_errors(job: Obj) -> list[FieldError]:
    """The metadata the controller reads has the types Kubernetes gives it."""
    raw = job.get("metadata")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field="metadata", message="must be an object")]
    errors = string_errors(
        raw, ("name", "namespace", "uid", "creationTimestamp", "resourceVersion"), "metadata"
    )
    generation = raw.get("generation")
    if generation is not None and not is_int(generation):
        errors.append(
            FieldError(field="metadata.generation", message=f"must be an integer, got {shown(generation)}")
        )
    return (
        errors
        + string_map_errors(raw, "labels", "metadata")
        + string_map_errors(raw, "annotations", "metadata")
    )


def status_errors(job: Obj) -> list[FieldError]:
    """The status the controller reads back has the shape it writes (Volcano's JobStatus)."""
    raw = job.get("status")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field="status", message="must be an object")]
    errors: list[FieldError] = []
    state = raw.get("state")
    if state is not None and not isinstance(state, Mapping):
        errors.append(FieldError(field="status.state", message="must be an object"))
    elif state is not None:
        errors += string_errors(state, ("phase", "reason", "message", "lastTransitionTime"), "status.state")
    for key in ("version", "retryCount"):
        errors += int_field(raw, key, "status", 0)[1]
    errors += string_errors(raw, ("runningDuration",), "status")
    errors += string_map_errors(raw, "controlledResources", "status")
    conditions = raw.get("conditions")
    if conditions is not None and not isinstance(conditions, list):
        errors.append(FieldError(field="status.conditions", message="must be a list of conditions"))
    return errors
