"""Command admission (``bus.volcano.sh/v1alpha1`` ``commands``, CREATE and UPDATE).

A Command is a one-shot request (``vcctl job suspend``, ``vcctl queue close``): the controller owning the
target acts on it and deletes it. Volcano has no webhook for Commands, so a typo in one is silently ignored
(its controllers pick Commands by ``target.apiVersion`` and ``target.kind`` and skip an unknown action).
We refuse instead, naming the field: ``target`` names its object (``kind``, ``name``) with the
apiVersion the owning controller looks for (Job: ``batch.volcano.sh/v1alpha1``, Queue:
``scheduling.volcano.sh/v1beta1``); ``action`` is one a job understands
(:data:`extender.jobs.model.COMMAND_ACTIONS`) for a Job, ``OpenQueue`` or ``CloseQueue`` for a Queue; a
Queue target exists. (A Job target is not looked up: jobs are not in the admission lookup, and the job
controller drops a Command whose job is gone.) An UPDATE is checked as a create: a Command is read once,
whenever that is. The object's nesting depth and size are the dispatch's (:mod:`admission.dispatch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from admission.lookup import Lookup
from extender.api import labels as L
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.validation import FieldError, Obj, shown
from extender.jobs.model import COMMAND_ACTIONS

QUEUE_ACTIONS: Final = ("CloseQueue", "OpenQueue")
JOB_ACTIONS: Final = tuple(sorted(a.value for a in COMMAND_ACTIONS))
_TARGETS: Final = {
    L.JOB_KIND: (f"{L.BATCH_GROUP}/{L.BATCH_VERSION}", JOB_ACTIONS),
    "Queue": (f"{L.SCHEDULING_GROUP}/{L.SCHEDULING_VERSION}", QUEUE_ACTIONS),
}


def validate(new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS) -> list[FieldError]:
    """Why this Command must not be written; empty when it may."""
    errors: list[FieldError] = []
    target = new.get("target")
    if not isinstance(target, Mapping):
        kinds = " or ".join(sorted(_TARGETS))
        return [
            FieldError(
                field="target",
                message=f"required; the {kinds} to act on (apiVersion, kind, name, uid)",
            )
        ]
    kind, name, api_version = target.get("kind"), target.get("name"), target.get("apiVersion")
    if not isinstance(name, str) or not name:
        errors.append(FieldError(field="target.name", message="required; the name of the object to act on"))
    if not isinstance(kind, str) or kind not in _TARGETS:
        errors.append(
            FieldError(
                field="target.kind",
                message=f"must be {' or '.join(sorted(_TARGETS))}, got {shown(kind)}",
            )
        )
        return errors
    want_version, actions = _TARGETS[kind]
    if api_version != want_version:
        errors.append(
            FieldError(
                field="target.apiVersion",
                message=f"must be {want_version} for a {kind} target, got {shown(api_version)}",
            )
        )
    action = new.get("action")
    if not isinstance(action, str) or action not in actions:
        got = "none" if action in (None, "") else shown(action)
        errors.append(
            FieldError(
                field="action",
                message=f"must be one of {', '.join(actions)} for a {kind} target, got {got}",
            )
        )
    if kind == "Queue" and isinstance(name, str) and name and lookup.queue(name) is None:
        errors.append(FieldError(field="target.name", message=f"queue {name!r} does not exist"))
    return errors
