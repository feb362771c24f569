"""What the reconcilers read of a pod beyond its metadata, read once when the store takes the pod.

The store of watched objects keeps pods for the job controller (a vcjob's pods), the flow controller (the
pods of a flow's probe targets) and the workload-group controller. Of a pod's body they read only:

- the job controller: :func:`extender.jobs.pods.view_pod` (task, index, job version, phase, exit code,
  eviction, restarts, readiness, creation and finish times);
- the flow controller: ``status.podIP``, ``status.phase`` and the ``volcano.sh/task-spec`` annotation;
- the workload-group controller: the spec (requests, priority class) and the metadata of the pods its
  index places, which the store keeps whole for that reason (see :mod:`controllers.state.indexes`).

So a pod is held as its metadata view and these :class:`PodFacts`, not as the raw object (a raw pod
decodes to ~20 KB of dicts; 100 000 of them were most of the process's memory). Invariant: every reader
gets what it got from the raw object; a pod that ``view_pod`` cannot read raises the same error when the
job controller asks for its view (the job's problem, as before), never when the store takes it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controllers.state.meta import read_meta
from extender.api import labels as L
from extender.jobs.pods import PodView, view_pod


@dataclass(frozen=True, slots=True)
class PodFacts:
    """The job controller's view of the pod (or what reading it raised) and the flow controller's
    endpoint fields."""

    viewed: PodView | Exception
    ip: str
    phase: str
    task: str

    def view(self) -> PodView:
        """:func:`view_pod` of the pod, raising what it raised."""
        if isinstance(self.viewed, Exception):
            raise self.viewed.with_traceback(None)
        return self.viewed


def pod_facts(obj: Mapping[str, Any], annotations: Mapping[str, str] | None = None) -> PodFacts:
    """The facts of raw pod ``obj`` (``annotations``: its metadata view's, when already read)."""
    try:
        viewed: PodView | Exception = view_pod(obj)
    except Exception as e:  # raised again when the view is asked for (see the module docstring)
        viewed = e
    status = obj.get("status")
    status = status if isinstance(status, Mapping) else {}
    if annotations is None:
        annotations = read_meta(obj).annotations
    return PodFacts(
        viewed=viewed,
        ip=str(status.get("podIP") or ""),
        phase=sys.intern(str(status.get("phase") or "Pending")),
        task=sys.intern(annotations.get(L.TASK_SPEC_ANNOTATION, "")),
    )
