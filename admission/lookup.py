"""What admission rules may ask about the cluster: the :class:`Lookup` protocol.

The process's cluster cache implements it; rules only read through it, so they stay pure and testable.
Answers may lag the API server by one watch event, as Volcano's listers do; rules must not assume more.
:class:`StaticLookup` is a plain in-memory implementation for tests and for callers without a cache.

The port is written on admission's side: a queue or PodGroup is what a rule reads of it
(:class:`QueueView`, :class:`PodGroupView`), which the cache's :class:`extender.core.model.Queue` and
``PodGroup`` satisfy as they are. Admission thereby needs nothing of the scheduler's model (nor numpy, which
that model's GPU types bring).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from extender.api import labels as L

# Volcano's Queue state that accepts new work (QueueState ``Open``; the cache's
# :class:`extender.core.model.QueueState` is a string enum, so its members compare equal to these strings).
QUEUE_OPEN: Final = "Open"


class QueueView(Protocol):
    """What admission reads of a queue. Amounts are accounted integers (:mod:`extender.core.quantity`)."""

    @property
    def name(self) -> str: ...
    @property
    def parent(self) -> str:
        """``spec.parent``; empty for a child of ``root`` (and for ``root``)."""
        ...

    @property
    def state(self) -> str:
        """Volcano's queue state: ``Open``, ``Closed``, ``Closing`` or ``Unknown``."""
        ...

    @property
    def capability(self) -> Mapping[str, int]: ...
    @property
    def deserved(self) -> Mapping[str, int]: ...
    @property
    def guarantee(self) -> Mapping[str, int]: ...


class PodGroupView(Protocol):
    """What admission reads of a PodGroup."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def queue(self) -> str: ...


class LookupUnavailable(Exception):
    """The cluster view cannot answer yet (cache not synced): the server answers 503 so kube-apiserver
    applies the webhook's failurePolicy instead of trusting a guess."""


class Lookup(Protocol):
    """Read-only cluster facts an admission rule needs."""

    @property
    def scheduler_names(self) -> frozenset[str]:
        """Pods whose ``spec.schedulerName`` is one of these are ours (Volcano's ``--scheduler-name``)."""
        ...

    @property
    def default_queue(self) -> str:
        """The queue a PodGroup without ``spec.queue`` goes to."""
        ...

    @property
    def scheduling_gates(self) -> bool:
        """The API server supports ``spec.schedulingGates`` (Kubernetes >= 1.27)."""
        ...

    def queue(self, name: str) -> QueueView | None: ...

    def queue_children(self, name: str) -> Sequence[QueueView]:
        """Queues whose ``spec.parent`` is ``name`` (for ``root`` also those with no parent)."""
        ...

    def podgroup(self, namespace: str, name: str) -> PodGroupView | None: ...

    def queue_has_podgroups(self, name: str) -> bool: ...

    def job_template_exists(self, namespace: str, name: str) -> bool:
        """A JobTemplate (``flow.volcano.sh``) ``namespace/name`` exists (a JobFlow may name it)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticLookup:
    """A fixed cluster view: the queues and podgroups given, nothing else."""

    queues: Sequence[QueueView] = ()
    podgroups: Sequence[PodGroupView] = ()
    scheduler_names: frozenset[str] = frozenset({L.DEFAULT_SCHEDULER_NAME})
    default_queue: str = L.DEFAULT_QUEUE
    scheduling_gates: bool = False
    job_templates: frozenset[tuple[str, str]] = frozenset()  # (namespace, name)
    _queues: dict[str, QueueView] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_queues", {q.name: q for q in self.queues})

    def queue(self, name: str) -> QueueView | None:
        return self._queues.get(name)

    def queue_children(self, name: str) -> Sequence[QueueView]:
        return [q for q in self.queues if _parent(q) == name and q.name != name]

    def podgroup(self, namespace: str, name: str) -> PodGroupView | None:
        return next((p for p in self.podgroups if p.namespace == namespace and p.name == name), None)

    def queue_has_podgroups(self, name: str) -> bool:
        return any(p.queue == name for p in self.podgroups)

    def job_template_exists(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.job_templates


def _parent(q: QueueView) -> str:
    if q.parent:
        return q.parent
    return "" if q.name == L.ROOT_QUEUE else L.ROOT_QUEUE
