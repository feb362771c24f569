"""A fake kubelet for every fake Node: runs bound pods (on paper) and confirms their deletion.

It watches pods with ``spec.nodeName!=`` (LIST, then WATCH from the list's resourceVersion, re-listing on
410) and, like a kubelet's status manager, keeps per-pod work serialised: events land in a work queue keyed
by namespace/name that never hands the same key to two workers at once and coalesces bursts to the latest
object. For each pod it

- patches a ``Pending`` pod's status to ``Running`` (conditions, ``startTime``, running container statuses)
  once; pods on nodes rejected by ``node_filter`` are left alone;
- deletes a pod that carries a ``deletionTimestamp`` with grace 0 and a UID precondition, as a kubelet does
  once containers stopped;
- on request (``succeed``/``fail``) moves a pod to ``Succeeded``/``Failed`` with terminated container
  statuses and exit codes. A pod made terminal is never flipped back to Running.

``start()`` returns after the first LIST was handled; ``stop()`` cancels everything and re-raises a crash
of the watch loop, so a broken kubelet fails the test that used it instead of hanging it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.kube import WatchExpired, list_objects, now_rfc3339, request, watch_events

log = logging.getLogger(__name__)

PODS = "/api/v1/pods"
BOUND = "spec.nodeName!="
SMP = "application/strategic-merge-patch+json"

Key = tuple[str, str]


def _key(pod: Mapping[str, Any]) -> Key:
    return (pod["metadata"]["namespace"], pod["metadata"]["name"])


def _pod_ip(uid: str) -> str:
    n = int(uid.replace("-", "")[:6], 16)
    return f"10.244.{(n >> 8) % 250}.{n % 250 + 1}"


class FakeKubelet:
    def __init__(
        self,
        api: client.ApiClient,
        *,
        node_filter: Callable[[str], bool] | None = None,
        workers: int = 8,
        auto_run: bool = True,
    ) -> None:
        """``node_filter(node_name)`` limits which nodes this kubelet serves (default: all).

        ``auto_run=False`` leaves bound pods Pending (for tests of what happens before containers start);
        ``run(namespace, name)`` then starts one explicitly.
        """
        self._api = api
        self._node_filter = node_filter or (lambda _: True)
        self._workers = workers
        self.auto_run = auto_run
        self._latest: dict[Key, dict[str, Any]] = {}
        self._queue: asyncio.Queue[Key] = asyncio.Queue()
        self._queued: set[Key] = set()
        self._active: set[Key] = set()
        self._terminal_uids: set[str] = set()
        self._started_uids: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._synced = asyncio.Event()
        self._failure: BaseException | None = None
        #: (namespace, name) of pods this kubelet has patched to Running, in order
        self.started: list[Key] = []
        #: (namespace, name) of pods whose deletion this kubelet confirmed
        self.deleted: list[Key] = []

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self, sync_timeout: float = 30.0) -> None:
        self._tasks.append(asyncio.create_task(self._watch_loop(), name="fake-kubelet-watch"))
        for i in range(self._workers):
            self._tasks.append(asyncio.create_task(self._worker(), name=f"fake-kubelet-worker-{i}"))
        synced = asyncio.create_task(self._synced.wait())
        done, _ = await asyncio.wait(
            {synced, *self._tasks}, timeout=sync_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if synced not in done:
            synced.cancel()
            await self.stop()  # raises the crash, if a task died
            raise TimeoutError("fake kubelet: the first LIST of pods did not complete")

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                self._failure = self._failure or result
        if self._failure is not None:
            raise RuntimeError("fake kubelet crashed") from self._failure

    async def __aenter__(self) -> FakeKubelet:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def check(self) -> None:
        """Raise if a background task crashed (tests may call this in their wait predicates)."""
        if self._failure is not None:
            raise RuntimeError("fake kubelet crashed") from self._failure

    # -- test controls -----------------------------------------------------------------------------

    async def run(self, namespace: str, name: str) -> dict[str, Any]:
        """Mark a bound pod Running now (also when ``auto_run`` is off)."""
        pod = await self._get(namespace, name)
        return await self._set_running(pod)

    async def succeed(self, namespace: str, name: str, exit_code: int = 0) -> dict[str, Any]:
        """Terminate every container of a bound pod with ``exit_code`` and set phase Succeeded."""
        return await self._terminate(namespace, name, "Succeeded", exit_code, "Completed", "")

    async def fail(
        self,
        namespace: str,
        name: str,
        exit_code: int = 1,
        *,
        reason: str = "Error",
        message: str = "",
        exit_codes: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """Terminate a bound pod's containers (``exit_codes`` by container name) and set phase Failed."""
        return await self._terminate(namespace, name, "Failed", exit_code, reason, message, exit_codes)

    # -- watch -------------------------------------------------------------------------------------

    async def _watch_loop(self) -> None:
        try:
            while True:
                listing = await list_objects(self._api, PODS, fieldSelector=BOUND)
                version = listing["metadata"]["resourceVersion"]
                for pod in listing.get("items", []):
                    self._enqueue(pod)
                self._synced.set()
                try:
                    while True:
                        async for event in watch_events(
                            self._api, PODS, resource_version=version, fieldSelector=BOUND
                        ):
                            obj = event["object"]
                            version = obj["metadata"]["resourceVersion"]
                            if event["type"] in ("ADDED", "MODIFIED"):
                                self._enqueue(obj)
                            elif event["type"] == "DELETED":
                                self._forget(obj)
                except WatchExpired:
                    log.info("fake kubelet: watch expired, re-listing")
        except asyncio.CancelledError:
            raise
        except BaseException as err:
            self._failure = err
            raise

    def _enqueue(self, pod: dict[str, Any]) -> None:
        key = _key(pod)
        self._latest[key] = pod
        if key not in self._queued and key not in self._active:
            self._queued.add(key)
            self._queue.put_nowait(key)
        elif key in self._active:
            self._queued.add(key)  # re-queued by the worker when it finishes

    def _forget(self, pod: Mapping[str, Any]) -> None:
        key = _key(pod)
        latest = self._latest.get(key)
        if latest is not None and latest["metadata"]["uid"] == pod["metadata"]["uid"]:
            del self._latest[key]
        self._terminal_uids.discard(pod["metadata"]["uid"])
        self._started_uids.discard(pod["metadata"]["uid"])

    async def _worker(self) -> None:
        try:
            while True:
                key = await self._queue.get()
                self._queued.discard(key)
                self._active.add(key)
                try:
                    pod = self._latest.get(key)
                    if pod is not None:
                        await self._sync(pod)
                finally:
                    self._active.discard(key)
                    if key in self._queued:
                        self._queue.put_nowait(key)
        except asyncio.CancelledError:
            raise
        except BaseException as err:
            self._failure = err
            raise

    async def _sync(self, pod: dict[str, Any]) -> None:
        node = pod["spec"].get("nodeName")
        if not node or not self._node_filter(node):
            return
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            await self._confirm_deletion(pod)
            return
        phase = pod.get("status", {}).get("phase", "Pending")
        uid = meta["uid"]
        if (
            self.auto_run
            and phase == "Pending"
            and uid not in self._terminal_uids
            and uid not in self._started_uids
        ):
            await self._set_running(pod)

    # -- status writes -----------------------------------------------------------------------------

    async def _get(self, namespace: str, name: str) -> dict[str, Any]:
        pod: dict[str, Any] = await request(self._api, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        if not pod["spec"].get("nodeName"):
            raise RuntimeError(f"fake kubelet: pod {namespace}/{name} is not bound to a node")
        return pod

    async def _patch_status(self, pod: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any] | None:
        meta = pod["metadata"]
        try:
            result: dict[str, Any] = await request(
                self._api,
                "PATCH",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                # The UID in the patch is a precondition: a recreated pod of the same name is left alone.
                body={"metadata": {"uid": meta["uid"]}, "status": status},
                content_type=SMP,
            )
        except ApiException as err:
            # 404: deleted meanwhile; 409/422: the UID no longer matches (a new pod took the name).
            if err.status in (404, 409, 422):
                return None
            raise
        return result

    async def _set_running(self, pod: dict[str, Any]) -> dict[str, Any]:
        meta, spec = pod["metadata"], pod["spec"]
        uid = meta["uid"]
        self._started_uids.add(uid)
        now = now_rfc3339()
        start_time = pod.get("status", {}).get("startTime") or now
        host_ip = "10.1.0.1"
        status = {
            "phase": "Running",
            "hostIP": host_ip,
            "podIP": _pod_ip(uid),
            "podIPs": [{"ip": _pod_ip(uid)}],
            "startTime": start_time,
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "initContainerStatuses": [
                {
                    **self._container_base(container, uid),
                    "ready": True,
                    "started": False,
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": now,
                            "finishedAt": now,
                        }
                    },
                }
                for container in spec.get("initContainers") or []
            ],
            "containerStatuses": [
                {
                    **self._container_base(container, uid),
                    "ready": True,
                    "started": True,
                    "state": {"running": {"startedAt": now}},
                }
                for container in spec["containers"]
            ],
        }
        result = await self._patch_status(pod, status)
        if result is not None:
            self.started.append(_key(pod))
        return result or pod

    async def _terminate(
        self,
        namespace: str,
        name: str,
        phase: str,
        exit_code: int,
        reason: str,
        message: str,
        exit_codes: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        pod = await self._get(namespace, name)
        uid = pod["metadata"]["uid"]
        self._terminal_uids.add(uid)
        now = now_rfc3339()
        started_at = pod.get("status", {}).get("startTime") or now
        statuses = []
        for container in pod["spec"]["containers"]:
            code = (exit_codes or {}).get(container["name"], exit_code)
            statuses.append(
                {
                    **self._container_base(container, uid),
                    "ready": False,
                    "started": False,
                    "state": {
                        "terminated": {
                            "exitCode": code,
                            "reason": "Completed" if code == 0 else reason,
                            "message": message,
                            "startedAt": started_at,
                            "finishedAt": now,
                            "containerID": f"fake://{uid}/{container['name']}",
                        }
                    },
                }
            )
        condition_reason = "PodCompleted"
        status = {
            "phase": phase,
            "reason": None if phase == "Succeeded" else reason,
            "message": message or None,
            "startTime": started_at,
            "conditions": [
                {"type": kind, "status": "False", "reason": condition_reason, "lastTransitionTime": now}
                for kind in ("Ready", "ContainersReady")
            ],
            "containerStatuses": statuses,
        }
        result = await self._patch_status(pod, status)
        if result is None:
            raise RuntimeError(f"fake kubelet: pod {namespace}/{name} vanished before it could terminate")
        return result

    @staticmethod
    def _container_base(container: Mapping[str, Any], uid: str) -> dict[str, Any]:
        return {
            "name": container["name"],
            "image": container.get("image", ""),
            "imageID": f"fake://{container.get('image', '')}",
            "containerID": f"fake://{uid}/{container['name']}",
            "restartCount": 0,
        }

    async def _confirm_deletion(self, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            await request(
                self._api,
                "DELETE",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                body={
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "gracePeriodSeconds": 0,
                    "preconditions": {"uid": meta["uid"]},
                },
            )
        except ApiException as err:
            if err.status not in (404, 409):  # gone already, or a new pod took the name
                raise
            return
        self.deleted.append(_key(pod))
