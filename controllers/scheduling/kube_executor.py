"""The real :class:`~controllers.scheduling.executor.Executor`: the scheduling room's writes, performed
against the API server.

Every write here is idempotent: binding a pod to the node it is already on succeeds, patches are
merge patches of the desired state, and a 404 for an object that is gone is not an error. The API
server's own error text stays in this module's log; what a caller gets back (a :class:`BindError`'s text,
an eviction's refusal) is safe to hand to kube-scheduler.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.scheduling.executor import BindError
from extender.api import labels as L

log = logging.getLogger(__name__)


class KubeExecutor:
    """Satisfies :class:`~controllers.scheduling.executor.Executor` structurally, as every other
    executor does."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self.client.post(paths.pod_binding(namespace, name), body)
        except ApiError as e:
            if e.status == 409:
                # Already bound: fine if it is bound where we wanted (a retried bind).
                pod = await self.client.get(paths.PODS.item(name, namespace=namespace))
                if (pod.get("spec") or {}).get("nodeName") == node:
                    return
            # The API server's text stays in our log: it can carry what a caller must not learn (a UID).
            log.warning(
                "binding refused by the API server", extra={"pod": f"{namespace}/{name}", "error": str(e)}
            )
            raise BindError(
                f"binding pod {namespace}/{name} to {node} failed: HTTP {e.status} {e.reason}".rstrip()
            ) from None

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """Write a plugin's decision on a pod before it binds (numa-aware's topology decision); a refusal
        fails the bind."""
        try:
            await self.client.merge_patch(
                paths.PODS.item(name, namespace=namespace), {"metadata": {"annotations": annotations}}
            )
        except ApiError as e:
            raise BindError(
                f"annotating pod {namespace}/{name} failed: HTTP {e.status} {e.reason}".rstrip()
            ) from None

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        """Annotate a waiting pod with its planned node. The update moves the pod out of kube-scheduler's
        unschedulable queue at once, instead of after its periodic flush."""
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        patch = {"metadata": {"annotations": {L.PLANNED_NODE_ANNOTATION: node, L.TOUCHED_AT_ANNOTATION: now}}}
        await self._patch(paths.PODS.item(name, namespace=namespace), patch)

    async def lift_gate(self, namespace: str, name: str) -> None:
        """Remove our scheduling gate, keeping any other controller's gates. A merge patch replaces the
        whole list, so read it first and send the resourceVersion; a concurrent change (our own write of
        the plan's decision annotations, spawned with this touch) fails the patch with 409: read it again
        and retry, since no later cycle touches a pod that is already planned."""
        path = paths.PODS.item(name, namespace=namespace)
        for attempt in range(5):
            try:
                pod = await self.client.get(path)
            except ApiError as e:
                if e.status == 404:
                    return
                raise
            gates = (pod.get("spec") or {}).get("schedulingGates") or []
            rest = [g for g in gates if g.get("name") != L.GANG_SCHEDULING_GATE]
            if len(rest) == len(gates):
                return
            rv = (pod.get("metadata") or {}).get("resourceVersion")
            try:
                await self._patch(
                    path, {"metadata": {"resourceVersion": rv}, "spec": {"schedulingGates": rest or None}}
                )
                return
            except ApiError as e:
                if e.status != 409 or attempt == 4:
                    raise

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        """Evict a pod through the Eviction API (PodDisruptionBudgets are honoured there); None when it
        is evicted or already gone, else why not (a budget refuses: HTTP 429)."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            # Never the pod of the same name created after this one.
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        try:
            await self.client.post(paths.pod_eviction(namespace, name), body)
        except ApiError as e:
            if e.status in (404, 409):  # gone, or a newer pod of that name: nothing of ours to evict
                return None
            return f"HTTP {e.status} {e.reason}".rstrip()
        return None

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        """Add the DisruptionTarget condition to a victim before it is evicted (JSON patch: appending
        keeps the kubelet's own conditions, which a merge patch of the list would replace)."""
        cond = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
        }
        path = paths.PODS.status(name, namespace=namespace)
        try:
            await self.client.json_patch(path, [{"op": "add", "path": "/status/conditions/-", "value": cond}])
        except ApiError as e:
            if e.status == 404:
                return
            if e.status != 422:
                raise
            # No conditions list yet (a pod no kubelet has reported on).
            await self.client.json_patch(path, [{"op": "add", "path": "/status/conditions", "value": [cond]}])

    async def patch_status(
        self, path: str, status: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        """Volcano's Queue has a status subresource; its PodGroup does not (status is written through
        the object itself, and sent to /status it would be refused). With ``resource_version`` the write
        only lands on the version it was computed from (409 otherwise): a status derived from a stale
        copy must not undo a newer write, such as a user closing a queue."""
        body: dict[str, Any] = {"status": status}
        if resource_version:
            body["metadata"] = {"resourceVersion": resource_version}
        await self._patch(f"{path}/status" if subresource else path, body)

    async def _patch(self, path: str, body: dict[str, Any]) -> None:
        try:
            await self.client.merge_patch(path, body)
        except ApiError as e:
            if e.status != 404:
                raise
