"""Volcano Job admission (``batch.volcano.sh/v1alpha1`` ``jobs``, "vcjob"): defaults on CREATE, checks on
CREATE and UPDATE.

mutate: :func:`admission.job_defaults.mutate` (Volcano's ``mutate_job.go``).

validate, CREATE and UPDATE (after the dispatch's checks of the object's nesting depth and size,
:mod:`admission.dispatch`): every rule of the pure job core (:func:`extender.jobs.rules.spec_errors`: tasks,
counts and the replica limit, pod templates, policies, dependsOn, plugins, volumes), so an update cannot
store a job that a create would have refused, and the words are those the job controller uses for a job
that got past us.

CREATE only (Volcano's ``validateJobCreate``): the queue exists, is Open, is not ``root`` and is a leaf
(jobs run in leaf queues only). An absent queue means the default queue, as the mutating webhook would have
set. On UPDATE the queue is not re-checked: a queue closed after the job was admitted must not block
scaling it.

UPDATE only (Volcano's ``validateJobUpdate``, :func:`extender.jobs.update_rules.update_errors`): the same
number of tasks, and nothing else in ``spec`` changed except :data:`MUTABLE_FIELDS`. When the stored job
itself is beyond the nesting limit (it was written around this webhook) that comparison is skipped, so the
update that repairs it can pass. DELETE is not registered.
"""

from __future__ import annotations

from collections.abc import Mapping

from admission.job_defaults import mutate
from admission.lookup import Lookup
from admission.podgroups import queue_errors
from extender.api import labels as L
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.validation import FieldError, Obj, depth_errors, mapping
from extender.jobs.rules import spec_errors
from extender.jobs.update_rules import MUTABLE_FIELDS, update_errors

__all__ = ["MUTABLE_FIELDS", "mutate", "validate"]


def validate(new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS) -> list[FieldError]:
    """Why this Job write must be refused; empty when it may proceed."""
    errors = spec_errors(new, limits, creating=old is None)
    raw_spec = new.get("spec")
    if not isinstance(raw_spec, Mapping):
        return errors
    if old is None:
        queue = raw_spec.get("queue")
        if queue is None or isinstance(queue, str):  # any other type is already reported
            errors = _queue_errors(raw_spec, lookup) + errors
        return errors
    # The stored job was not checked by the dispatch; the comparison walks it.
    if not depth_errors(old, limits):
        errors += update_errors(raw_spec, mapping(old, "spec"))
    return errors


def _queue_errors(spec: Obj, lookup: Lookup) -> list[FieldError]:
    """The PodGroup rules (exists, Open), and Volcano's for jobs: not root, a leaf."""
    name = spec.get("queue") or lookup.default_queue
    errors = queue_errors(spec, lookup, what="jobs")
    if errors or not isinstance(name, str):
        return errors
    if name == L.ROOT_QUEUE:
        return [FieldError(field="spec.queue", message="the root queue cannot run jobs; choose a leaf queue")]
    children = sorted(q.name for q in lookup.queue_children(name) if q.name != name)
    if children:
        errors.append(
            FieldError(
                field="spec.queue",
                message=f"queue {name!r} is not a leaf queue (it has child queues {', '.join(children)}); "
                "jobs run in leaf queues only, choose one of its children",
            )
        )
    return errors
