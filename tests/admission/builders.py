"""Keyword builders for raw objects as kube-apiserver sends them to admission webhooks."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from admission.dispatch import judge
from admission.lookup import StaticLookup
from admission.webhooks import webhook_for
from extender.core.model import PodGroup, Queue, QueueState
from extender.core.validation import FieldError

Raw = dict[str, Any]


def judged(path: str) -> Callable[..., list[FieldError]]:
    """What the validating row at ``path`` answers: the dispatch's checks (scope, bounds, a DELETE, the
    stored object), then the kind's rules; called ``(new, old, lookup, limits)``, ``new`` None on DELETE."""
    w = webhook_for(path)
    assert w is not None and not w.mutating
    return functools.partial(judge, w)


def queue_obj(
    name: str = "q1",
    *,
    annotations: dict[str, str] | None = None,
    state: str | None = None,
    spec: Raw | None = None,
    **fields: Any,
) -> Raw:
    """A Queue; ``fields`` go into ``spec`` (``guarantee=`` takes the resource map itself)."""
    body: Raw = dict(spec or {})
    for k, v in fields.items():
        body[k] = {"resource": v} if k == "guarantee" else v
    obj: Raw = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": body,
    }
    if annotations:
        obj["metadata"]["annotations"] = annotations
    if state is not None:
        obj["status"] = {"state": state}
    return obj


def podgroup_obj(name: str = "pg1", namespace: str = "ns", **spec: Any) -> Raw:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def pod_obj(
    name: str = "p1",
    *,
    scheduler: str = "volcano",
    annotations: dict[str, str] | None = None,
    group: str | None = None,
    **spec: Any,
) -> Raw:
    ann = dict(annotations or {})
    if group is not None:
        ann["scheduling.k8s.io/group-name"] = group
    meta: Raw = {"name": name, "namespace": "ns"}
    if ann:
        meta["annotations"] = ann
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def lookup(*objects: Queue | PodGroup, gates: bool = False, default_queue: str = "default") -> StaticLookup:
    """A cluster with the given queues and podgroups; ``root`` and ``default`` always exist."""
    queues = [o for o in objects if isinstance(o, Queue)]
    names = {q.name for q in queues}
    queues += [Queue(name=n) for n in ("root", "default") if n not in names]
    return StaticLookup(
        queues=queues,
        podgroups=[o for o in objects if isinstance(o, PodGroup)],
        scheduling_gates=gates,
        default_queue=default_queue,
    )


CLOSED = QueueState.CLOSED


def apply_patch(obj: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A minimal RFC 6902 ``add`` (the only op our webhooks emit) on a copy, to check a patch does what
    it says."""
    out: dict[str, Any] = copy.deepcopy(dict(obj))
    for op in ops:
        assert op["op"] == "add"
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target: Any = out
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if isinstance(target, list):
            target.append(op["value"]) if last == "-" else target.insert(int(last), op["value"])
        else:
            target[last] = op["value"]
    return out
