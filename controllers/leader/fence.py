"""Fencing: the one check every leader-only write passes, so a replica that lost its lease (partitioned,
paused, out-renewed) writes nothing once its renew deadline has passed, before another replica can lead.

Two seams, as the code writes through two:

- :class:`FencedExecutor` wraps the scheduling room's :class:`~controllers.scheduling.executor.Executor`:
  every bind, decision annotation, touch, gate lift, eviction, DisruptionTarget condition and PodGroup or
  Queue status goes through it. A bind or annotation a deposed leader would make fails as a
  :class:`~controllers.scheduling.executor.BindError` (kube-scheduler forgets the pod and asks again, and
  is forwarded to the leader then); every other write fails as
  :class:`~controllers.leader.leadership.NotLeading`, which the callers read as "not done".
- :func:`fenced_client` gives the reconcilers (jobs, flows, cron, workload groups, queue commands), the
  Event recorder and the start-up writes a :class:`~controllers.kube.client.KubeClient` whose every write
  checks first; its reads are not fenced (a standby reads what it likes).

The check is :meth:`~controllers.leader.leadership.Leadership.check`: the local clock against the last
successful renew plus the renew deadline. It is made before a request is sent; a request already on its way
when the deadline passes has the lease duration's margin over the renew deadline to land.
"""

from __future__ import annotations

from typing import Any

from controllers.kube.client import KubeClient
from controllers.leader.leadership import Leadership, NotLeading
from controllers.scheduling.executor import BindError, Executor


class FencedExecutor:
    """An :class:`~controllers.scheduling.executor.Executor` that refuses every write unless this process
    leads; satisfies the Protocol structurally, as every executor does."""

    def __init__(self, inner: Executor, leadership: Leadership) -> None:
        self.inner = inner
        self.leadership = leadership
        self.refused = 0

    def _check(self) -> None:
        try:
            self.leadership.check()
        except NotLeading:
            self.refused += 1
            raise

    def _check_bind(self, namespace: str, name: str) -> None:
        try:
            self._check()
        except NotLeading:
            raise BindError(
                f"pod {namespace}/{name}: this pumice replica no longer leads; ask again"
            ) from None

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        self._check_bind(namespace, name)
        await self.inner.bind(namespace, name, uid, node)

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        self._check_bind(namespace, name)
        await self.inner.annotate(namespace, name, annotations)

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        self._check()
        await self.inner.touch_planned(namespace, name, node)

    async def lift_gate(self, namespace: str, name: str) -> None:
        self._check()
        await self.inner.lift_gate(namespace, name)

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        self._check()
        return await self.inner.evict(namespace, name, uid)

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        self._check()
        await self.inner.mark_disrupted(namespace, name, reason, message, now)

    async def patch_status(
        self, path: str, status: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        self._check()
        await self.inner.patch_status(
            path, status, subresource=subresource, resource_version=resource_version
        )


def fenced_client(client: KubeClient, leadership: Leadership) -> KubeClient:
    """``client`` on the same connections, with every write checked against ``leadership`` first."""

    def guard(_method: str, _path: str) -> None:
        leadership.check()

    return client.guarded(guard)
