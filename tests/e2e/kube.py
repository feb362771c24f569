"""Async helpers for e2e tests: an API client from a kubeconfig, fake Nodes, namespaces, raw JSON calls.

The raw helpers (``request``, ``list_objects``, ``watch_events``) speak plain JSON dicts over the
kubernetes-asyncio ApiClient's session: no model (de)serialisation, so they work for any resource,
built-in or CRD (PodGroups, Queues, vcjobs), and are cheap enough for the throughput benchmark.

Fake Nodes are real Node objects with a Ready condition and capacity but no kubelet behind them:
status is ignored on create, so ``create_fake_nodes`` creates, then patches the ``status`` subresource.
Nothing refreshes their heartbeat; without a node-lifecycle controller nobody notices.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

FAKE_NODE_LABEL = "pumice.e2e/fake-node"
GPU_RESOURCE = "nvidia.com/gpu"

T = TypeVar("T")

_JSON_TYPES = dict.fromkeys((200, 201, 202), "object")


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def new_api_client(kubeconfig_path: Path | str) -> client.ApiClient:
    """An ApiClient for the given kubeconfig; the caller closes it (``async with`` or ``await close()``)."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig_path), client_configuration=configuration)
    return client.ApiClient(configuration=configuration)


# -- raw JSON access --------------------------------------------------------------------------------


def _query(params: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    out = []
    for key, value in (params or {}).items():
        if value is None:
            continue
        out.append((key, str(value).lower() if isinstance(value, bool) else str(value)))
    return out


async def request(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    params: Mapping[str, Any] | None = None,
    content_type: str = "application/json",
    request_timeout: float | None = 30.0,
) -> Any:
    """One API call with a JSON body, returning the decoded JSON; raises ``ApiException`` on non-2xx.

    For PATCH pass ``content_type`` ``application/merge-patch+json``,
    ``application/strategic-merge-patch+json`` or ``application/json-patch+json``.
    """
    return await api.call_api(
        path,
        method,
        query_params=_query(params),
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        response_types_map=_JSON_TYPES,
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        _request_timeout=request_timeout,
    )


def collection_path(group_version: str, plural: str, namespace: str | None = None) -> str:
    """``v1``/``pods`` -> ``/api/v1/pods``; ``batch.volcano.sh/v1alpha1``/``jobs`` -> ``/apis/...``."""
    root = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    if namespace is not None:
        return f"{root}/namespaces/{quote(namespace)}/{plural}"
    return f"{root}/{plural}"


async def list_objects(api: client.ApiClient, path: str, **params: Any) -> dict[str, Any]:
    """A LIST as a dict (``items``, ``metadata.resourceVersion``); params are query args."""
    result: dict[str, Any] = await request(api, "GET", path, params=params)
    return result


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (HTTP 410 Gone): re-list and watch again."""


async def watch_events(
    api: client.ApiClient,
    path: str,
    *,
    resource_version: str,
    timeout_seconds: int = 300,
    **params: Any,
) -> AsyncGenerator[dict[str, Any], None]:
    """Yield raw watch events (``{"type", "object"}``) until the server closes the stream.

    BOOKMARK events are yielded too (their object carries only the resourceVersion); ERROR 410 raises
    ``WatchExpired``, any other ERROR raises ``ApiException``.
    """
    query = {
        "watch": True,
        "resourceVersion": resource_version,
        "allowWatchBookmarks": True,
        "timeoutSeconds": timeout_seconds,
        **params,
    }
    response = await api.call_api(
        path,
        "GET",
        query_params=_query(query),
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=timeout_seconds + 30,
    )
    try:
        if response.status != 200:
            body = await response.read()
            if response.status == 410:
                raise WatchExpired(body.decode(errors="replace"))
            raise ApiException(status=response.status, reason=body.decode(errors="replace"))
        while True:
            line = await response.content.readline()
            if not line:
                return
            event = json.loads(line)
            if event.get("type") == "ERROR":
                status = event.get("object") or {}
                if status.get("code") == 410:
                    raise WatchExpired(status.get("message", "resourceVersion too old"))
                raise ApiException(status=status.get("code", 500), reason=status.get("message"))
            yield event
    finally:
        response.release()
        response.close()


# -- waiting ----------------------------------------------------------------------------------------


async def wait_for(
    predicate: Callable[[], Awaitable[T | None]],
    within: float = 30.0,
    *,
    interval: float = 0.1,
    message: str | Callable[[], str] | None = None,
) -> T:
    """Poll ``predicate`` (async; a plain function works too) until it returns a truthy value; return it.

    ``ApiException`` 404 counts as "not yet". After ``within`` seconds raises ``TimeoutError`` with
    ``message`` (a string or a callable evaluated then), the last value and the last exception.
    """
    deadline = time.monotonic() + within
    last: Any = None
    last_error: BaseException | None = None
    while True:
        try:
            value: Any = predicate()
            if inspect.isawaitable(value):
                value = await value
            last, last_error = value, None
            if value:
                return cast(T, value)
        except ApiException as err:
            if err.status != 404:
                raise
            last_error = err
        if time.monotonic() >= deadline:
            what = (
                message() if callable(message) else (message or getattr(predicate, "__name__", "condition"))
            )
            raise TimeoutError(
                f"timed out after {within:.1f}s waiting for {what}; "
                f"last value {last!r}, last error {last_error!r}"
            )
        await asyncio.sleep(interval)


# -- nodes ------------------------------------------------------------------------------------------


def node_manifest(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                FAKE_NODE_LABEL: "true",
                **(labels or {}),
            },
        },
        "spec": {"taints": list(taints or []), "unschedulable": unschedulable},
    }


def node_status(
    *,
    index: int,
    cpu: str,
    memory: str,
    pods: int,
    gpus: int,
    extra_resources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "100Gi"}
    if gpus:
        capacity[GPU_RESOURCE] = str(gpus)
    capacity.update(extra_resources or {})
    now = now_rfc3339()
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "phase": "Running",
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "fake kubelet is posting ready status",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            },
            *(
                {
                    "type": kind,
                    "status": "False",
                    "reason": f"KubeletHas{reason}",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
                for kind, reason in (
                    ("MemoryPressure", "SufficientMemory"),
                    ("DiskPressure", "NoDiskPressure"),
                    ("PIDPressure", "SufficientPID"),
                )
            ),
        ],
        "addresses": [
            {"type": "InternalIP", "address": f"10.1.{index // 250}.{index % 250 + 1}"},
        ],
        "nodeInfo": {
            "architecture": "amd64",
            "operatingSystem": "linux",
            "kubeletVersion": "v1.24.0-fake",
            "kubeProxyVersion": "v1.24.0-fake",
            "containerRuntimeVersion": "fake://1.0",
            "osImage": "fake",
            "kernelVersion": "fake",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


async def create_fake_nodes(
    api: client.ApiClient,
    n: int,
    *,
    prefix: str = "node",
    cpu: str = "8",
    memory: str = "32Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    gpus: int = 0,
    taints: Sequence[Mapping[str, str]] | None = None,
    extra_resources: Mapping[str, str] | None = None,
    start: int = 0,
    concurrency: int = 16,
) -> list[str]:
    """Create Ready Nodes ``{prefix}-{start}..{prefix}-{start+n-1}`` with capacity = allocatable.

    Every node carries ``kubernetes.io/hostname`` and ``pumice.e2e/fake-node=true`` plus ``labels``;
    ``gpus`` adds ``nvidia.com/gpu``; ``extra_resources`` adds any other extended resource.
    """
    names = [f"{prefix}-{i}" for i in range(start, start + n)]
    semaphore = asyncio.Semaphore(concurrency)

    async def one(index: int, name: str) -> None:
        async with semaphore:
            await request(
                api, "POST", "/api/v1/nodes", body=node_manifest(name, labels=labels, taints=taints)
            )
            status = node_status(
                index=index, cpu=cpu, memory=memory, pods=pods, gpus=gpus, extra_resources=extra_resources
            )
            await request(
                api,
                "PATCH",
                f"/api/v1/nodes/{name}/status",
                body={"status": status},
                content_type="application/merge-patch+json",
            )

    async with asyncio.TaskGroup() as group:
        for index, name in zip(range(start, start + n), names, strict=True):
            group.create_task(one(index, name))
    return names


async def delete_nodes(api: client.ApiClient, names: Sequence[str]) -> None:
    for name in names:
        try:
            await request(api, "DELETE", f"/api/v1/nodes/{name}")
        except ApiException as err:
            if err.status != 404:
                raise


# -- namespaces and pods ----------------------------------------------------------------------------


async def create_namespace(
    api: client.ApiClient, name: str, *, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
    result: dict[str, Any] = await request(api, "POST", "/api/v1/namespaces", body=body)
    return result


async def _namespaced_collections(api: client.ApiClient) -> list[str]:
    """Collection paths (``{ns}`` placeholder) of the namespaced resources that support deletecollection."""
    paths: list[str] = []
    groups: list[str] = ["v1"]
    group_list = await request(api, "GET", "/apis")
    for group in group_list.get("groups", []):
        preferred = group.get("preferredVersion") or group["versions"][0]
        groups.append(preferred["groupVersion"])
    for group_version in groups:
        try:
            resources = await request(api, "GET", collection_path(group_version, "").rstrip("/"))
        except ApiException as err:
            if err.status in (404, 503):  # an aggregated API that is not serving
                continue
            raise
        for resource in resources.get("resources", []):
            if (
                resource.get("namespaced")
                and "/" not in resource["name"]
                and "deletecollection" in resource.get("verbs", [])
            ):
                paths.append(collection_path(group_version, resource["name"], "{ns}"))
    return paths


async def delete_when_admitted(api: client.ApiClient, path: str, within: float = 20.0) -> None:
    """Delete the object at ``path`` (a Queue), retrying while pumice's webhook refuses it ("still has
    PodGroups / child queues"): pumice's cache learns from its watch that they went, a moment later. The
    webhook refuses a DELETE with 403 (admission.dispatch), which the API server passes on; any other 403
    (RBAC) carries no "admission webhook" and is raised."""

    async def deleted() -> bool:
        try:
            await request(api, "DELETE", path)
        except ApiException as err:
            if err.status == 404:
                return True
            if err.status in (400, 403) and "admission webhook" in str(err.body):
                return False
            raise
        return True

    await wait_for(deleted, within, interval=0.3, message=f"deleting {path}")


async def delete_namespace(api: client.ApiClient, name: str, *, finalizer_grace: float = 10.0) -> None:
    """Do the namespace controller's job: mark the namespace deleted, empty it, then finalize it.

    As in a real cluster the namespace is deleted first: once it is Terminating the API server's
    NamespaceLifecycle admission refuses new objects in it, so a controller still at work (pumice's job
    controller re-creating a job's pods, kube-scheduler or pumice writing Events) cannot refill it. Pods go
    first with grace 0 (bound pods would otherwise wait for a kubelet to confirm); a collection found
    non-empty is swept again; objects with finalizers nobody removes are stripped of them after
    ``finalizer_grace`` seconds. A namespace that still holds objects then fails with their names.
    """
    try:
        await request(api, "DELETE", f"/api/v1/namespaces/{name}")
    except ApiException as err:
        if err.status != 404:
            raise
    paths = [p.replace(quote("{ns}"), quote(name)) for p in await _namespaced_collections(api)]
    pods_path = collection_path("v1", "pods", name)
    ordered = [pods_path] + [p for p in paths if p != pods_path]

    async def sweep(path: str) -> None:
        try:
            await request(api, "DELETE", path, params={"gracePeriodSeconds": 0})
        except ApiException as err:
            if err.status not in (404, 405):
                raise

    for path in ordered:
        await sweep(path)

    async def leftovers() -> list[str]:
        left = []
        for path in ordered:
            for item in (await list_objects(api, path)).get("items", []):
                meta = item.get("metadata", {})
                finalizers = meta.get("finalizers") or []
                left.append(
                    f"{path.rsplit('/', 1)[-1]}/{meta.get('name')}"
                    + (f" (finalizers {finalizers})" if finalizers else "")
                )
        return left

    async def empty() -> bool:
        emptied = True
        for path in ordered:
            if (await list_objects(api, path, limit=1)).get("items"):
                emptied = False
                await sweep(path)
        return emptied

    try:
        await wait_for(empty, finalizer_grace, interval=0.2, message=f"namespace {name} to be emptied")
    except TimeoutError:
        for path in ordered:
            for item in (await list_objects(api, path)).get("items", []):
                if item["metadata"].get("finalizers"):
                    item_path = f"{path}/{item['metadata']['name']}"
                    try:
                        await request(
                            api,
                            "PATCH",
                            item_path,
                            body={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json",
                        )
                    except ApiException as err:
                        if err.status != 404:
                            raise
        try:
            await wait_for(empty, 10.0, interval=0.2, message=f"namespace {name} to be emptied")
        except TimeoutError as err:
            raise TimeoutError(f"{err}; still there: {', '.join(await leftovers())[:2000]}") from None
    try:
        namespace = await request(api, "GET", f"/api/v1/namespaces/{name}")
        namespace["spec"]["finalizers"] = []
        await request(api, "PUT", f"/api/v1/namespaces/{name}/finalize", body=namespace)
    except ApiException as err:
        if err.status != 404:
            raise


def pod_manifest(
    name: str,
    *,
    cpu: str | None = "100m",
    memory: str | None = "64Mi",
    gpus: int = 0,
    scheduler_name: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    priority_class: str | None = None,
    restart_policy: str = "Never",
    containers: int = 1,
) -> dict[str, Any]:
    """A minimal pod; every container requests (= limits for GPUs) the given resources."""
    requests: dict[str, str] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    limits: dict[str, str] = {}
    if gpus:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE] = str(gpus)
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": f"c{i}",
                "image": "registry.k8s.io/pause:3.7",
                "resources": {"requests": dict(requests), "limits": dict(limits)},
            }
            for i in range(containers)
        ],
    }
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})},
        "spec": spec,
    }


async def create_pod(api: client.ApiClient, namespace: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await request(
        api, "POST", collection_path("v1", "pods", namespace), body=dict(manifest)
    )
    return result


async def get_pod(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = await request(api, "GET", f"{collection_path('v1', 'pods', namespace)}/{name}")
    return result


def pod_condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions: list[Mapping[str, Any]] = pod.get("status", {}).get("conditions") or []
    for condition in conditions:
        if condition.get("type") == kind:
            return condition
    return None
