"""The order hooks' keys: which job, pod, queue and namespace go first, and the caches that keep them.

Keys are the plugins' answers concatenated in tier order (see :mod:`extender.framework.plugin`) and
compared lexicographically, so the first plugin that tells two apart decides, as Volcano's JobOrderFn,
TaskOrderFn, QueueOrderFn and NamespaceOrderFn do. Job keys end with a deterministic tie-break (creation
time, then namespace/name; Volcano breaks ties by creation, then UID), queue keys with the queue's name.

Caches, each exact by a plugin promise (``Hooks``' flags) and switched off by ``cache_keys=False`` for the
tests that compare:

- a job's key is computed once a cycle when every ``job_order`` plugin is static (``static_job_order``);
- a queue's key is kept while that queue's usage array is the same object (usage arrays are replaced on
  every change, never modified in place) when every ``queue_order`` plugin reads only its own queue's
  usage (``local_queue_order``);
- task and namespace keys are asked afresh (task keys are asked once per pod as a group's pods are lined
  up; namespace keys may change with every placement).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from extender.core.model import GroupKey, Pod, PodGroup, Queue
from extender.core.resources import Vector
from extender.framework.hooks import Hooks

if TYPE_CHECKING:
    from extender.framework.session import Session


class OrderKeys:
    """The session's order keys (the Session's methods of the same names call these)."""

    def __init__(self, ssn: Session, hooks: Hooks, *, cache_keys: bool) -> None:
        self._ssn = ssn
        self._job_orderers = hooks.job_order
        self._task_orderers = hooks.task_order
        self._queue_orderers = hooks.queue_order
        self._namespacers = hooks.namespace_order
        # Whether queue keys read nothing but their own queue's usage; then, per queue, its key and the
        # usage array it was computed from.
        self.local_queue_order = cache_keys and hooks.local_queue_order
        self._queue_keys: dict[str, tuple[Vector | None, tuple[Any, ...]]] = {}
        # Job keys, once per group, when every plugin's key is fixed for the cycle.
        self._static_job_order = cache_keys and hooks.static_job_order
        self._job_keys: dict[GroupKey, tuple[Any, ...]] = {}

    def job_key(self, g: PodGroup) -> tuple[Any, ...]:
        """The ``job_order`` plugins' keys for ``g``, then creation time and namespace/name."""
        if self._static_job_order:
            cached = self._job_keys.get(g.key)
            if cached is not None:
                return cached
        key: list[Any] = []
        for p in self._job_orderers:
            k = p.job_order(self._ssn, g)
            if k is not None:
                key.extend(k)
        # Deterministic tie-break: creation time, then namespace/name (Volcano: creation, then UID).
        out = (*key, g.created, g.namespace, g.name)
        if self._static_job_order:
            self._job_keys[g.key] = out
        return out

    def task_key(self, p: Pod) -> tuple[Any, ...]:
        """The ``task_order`` plugins' keys for ``p``, concatenated (empty when none orders pods)."""
        key: list[Any] = []
        for plugin in self._task_orderers:
            k = plugin.task_order(self._ssn, p)
            if k is not None:
                key.extend(k)
        return tuple(key)

    def queue_key(self, q: Queue) -> tuple[Any, ...]:
        """The ``queue_order`` plugins' keys for ``q``, then its name."""
        used = self._ssn.queue_used.get(q.name)
        if self.local_queue_order:
            cached = self._queue_keys.get(q.name)
            if cached is not None and cached[0] is used:
                return cached[1]
        key: list[Any] = []
        for p in self._queue_orderers:
            k = p.queue_order(self._ssn, q)
            if k is not None:
                key.extend(k)
        out = (*key, q.name)
        if self.local_queue_order:
            self._queue_keys[q.name] = (used, out)
        return out

    def namespace_key(self, namespace: str) -> tuple[Any, ...]:
        """The plugins' keys for ``namespace``, concatenated (empty when no plugin orders namespaces)."""
        key: list[Any] = []
        for p in self._namespacers:
            k = p.namespace_order(self._ssn, namespace)
            if k is not None:
                key.extend(k)
        return tuple(key)
