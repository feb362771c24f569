"""The port the scheduling code writes through: the :class:`Executor` Protocol, and :class:`BindError`.

Every write the scheduling room makes to the cluster is one call on this port: a Binding (the ``bind`` verb),
a plugin's decision annotations, the touch that moves a waiting pod back into kube-scheduler's active queue,
the lift of the gang gate, an eviction and the DisruptionTarget condition written before it, and the status
writer's PodGroup and Queue statuses. Nothing in ``controllers/scheduling`` but the real implementation
(:class:`~controllers.scheduling.kube_executor.KubeExecutor`) reaches the API client; the import-linter
contract "The scheduling code writes through the Executor port" holds that.

Implementations satisfy the Protocol structurally (none inherits from it): the real one, the simulator's
(``controllers/simulate/cluster.py``), the benchmarks' stubs and the tests' doubles. Arguments are passed
by position (positional-only here), so an implementation may name its parameters as it likes.

What every implementation keeps:
- writes are idempotent: a retried bind to the node the pod is already on succeeds; a 404 for an object that
  is gone is not an error;
- ``bind`` and ``annotate`` fail with :class:`BindError`, whose text kube-scheduler may be shown;
- ``evict`` answers why not (a PodDisruptionBudget) rather than raising for a refusal;
- any other exception means "not done": the caller drops what depended on the write (a gang's plans, a
  remembered status), so a later cycle or status pass does it again.

Fencing: since every write passes through this one seam, a "do I still lead?" check belongs here, as an
Executor that wraps another and refuses each call once leadership is lost, and nowhere in the loop, the
verbs or the writes.
"""

from __future__ import annotations

from typing import Any, Protocol


class BindError(Exception):
    """A bind (or the annotations it must carry) the API server refused; the text names the pod and the
    HTTP status, never the API server's own message."""


class Executor(Protocol):
    async def bind(self, namespace: str, name: str, uid: str, node: str, /) -> None:
        """Post the Binding of pod ``namespace/name`` (UID ``uid``) to ``node``."""
        ...

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str], /) -> None:
        """Write a plugin's decision on a pod before it binds (numa-aware's, deviceshare's)."""
        ...

    async def touch_planned(self, namespace: str, name: str, node: str, /) -> None:
        """Annotate a waiting pod with its planned node: the update moves it out of kube-scheduler's
        unschedulable queue at once."""
        ...

    async def lift_gate(self, namespace: str, name: str, /) -> None:
        """Remove pumice's gang scheduling gate from a pod, keeping any other controller's gates."""
        ...

    async def evict(self, namespace: str, name: str, uid: str, /) -> str | None:
        """Evict pod ``uid`` through the Eviction API: None when it is evicted or gone, else why not."""
        ...

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str, /) -> None:
        """Add the DisruptionTarget condition to a victim before it is evicted (``now``: RFC 3339)."""
        ...

    async def patch_status(
        self, path: str, status: dict[str, Any], /, *, subresource: bool, resource_version: str = ""
    ) -> None:
        """Write a PodGroup's or Queue's status at ``path``; with ``resource_version``, only onto that
        version of the object."""
        ...
