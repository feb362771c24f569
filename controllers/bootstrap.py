"""Start-up writes: the built-in queues, our webhook configurations, and API-server feature discovery."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import Any

from controllers.cache import ClusterCache
from controllers.kube.client import ApiError, KubeClient
from extender.api import labels as L
from extender.api.versions import (
    OLDEST_SUPPORTED,
    Features,
    KubernetesVersion,
    features,
    version_from_info,
)
from extender.settings import ServeSettings

log = logging.getLogger(__name__)

_QUEUES = f"/apis/{L.SCHEDULING_GROUP}/{L.SCHEDULING_VERSION}/queues"
_ADMISSION = "/apis/admissionregistration.k8s.io/v1"


# What the API server offers that changes how we integrate: the one rule in extender.api.versions.
ServerFeatures = Features


async def server_version(client: KubeClient) -> KubernetesVersion:
    """The API server's release from its ``/version``; ApiError or ValueError when it cannot be read."""
    return version_from_info(await client.get("/version"))


async def server_features(client: KubeClient) -> Features:
    """:func:`extender.api.versions.features` of the API server; those of the oldest supported release
    (no gates, no matchConditions) when its version cannot be read, so nothing is registered that an old
    server would refuse."""
    try:
        version = await server_version(client)
    except (ApiError, ValueError) as e:
        log.warning("cannot read server version; assuming an old server", extra={"error": str(e)})
        return features(OLDEST_SUPPORTED)
    log.info("server version", extra={"version": str(version)})
    return features(version)


async def ensure_queues(client: KubeClient, cache: ClusterCache) -> None:
    """Create ``root`` and the default queue when missing (Volcano does the same at start-up)."""
    for name in (L.ROOT_QUEUE, cache.default_queue):
        if name in cache.queues:
            continue
        spec: dict[str, Any] = {"weight": 1, "reclaimable": name != L.ROOT_QUEUE}
        if name != L.ROOT_QUEUE:
            spec["parent"] = L.ROOT_QUEUE
        body = {
            "apiVersion": f"{L.SCHEDULING_GROUP}/{L.SCHEDULING_VERSION}",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
        }
        try:
            await client.post(_QUEUES, body)
            log.info("created queue", extra={"queue": name})
        except ApiError as e:
            if e.status != 409:
                raise


async def register_webhooks(
    client: KubeClient,
    settings: ServeSettings,
    ca_pem: bytes,
    configurations: Callable[..., list[dict[str, Any]]],
    *,
    features: Features,
) -> None:
    """Create or replace our webhook configurations (``--webhook-url-base``/``--webhook-service``), or,
    when neither is given, patch our CA into the ones a deployment created."""
    if settings.webhook_url_base or settings.webhook_service:
        docs = configurations(
            ca_bundle=ca_pem,
            url_base=settings.webhook_url_base,
            service=settings.webhook_service,
            scheduling_gates=features.scheduling_gates,
            match_conditions=features.match_conditions,
            scheduler_names=sorted(settings.scheduler_names),
        )
        for doc in docs:
            kind = (
                "mutatingwebhookconfigurations"
                if doc["kind"].startswith("Mutating")
                else "validatingwebhookconfigurations"
            )
            name = doc["metadata"]["name"]
            try:
                cur = await client.get(f"{_ADMISSION}/{kind}/{name}")
                doc["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                await client.request("PUT", f"{_ADMISSION}/{kind}/{name}", body=doc)
            except ApiError as e:
                if e.status != 404:
                    raise
                await client.post(f"{_ADMISSION}/{kind}", doc)
            log.info("registered webhooks", extra={"configuration": name})
        return
    bundle = base64.b64encode(ca_pem).decode()
    for kind, name in (
        ("mutatingwebhookconfigurations", "pumice-mutating"),
        ("validatingwebhookconfigurations", "pumice-validating"),
    ):
        try:
            cur = await client.get(f"{_ADMISSION}/{kind}/{name}")
        except ApiError as e:
            if e.status == 404:
                log.warning(
                    "webhook configuration missing; admission disabled", extra={"configuration": name}
                )
                continue
            raise
        ops = [
            {
                "op": "replace" if "caBundle" in (w.get("clientConfig") or {}) else "add",
                "path": f"/webhooks/{i}/clientConfig/caBundle",
                "value": bundle,
            }
            for i, w in enumerate(cur.get("webhooks") or [])
        ]
        if ops:
            await client.json_patch(f"{_ADMISSION}/{kind}/{name}", ops)
            log.info("patched caBundle", extra={"configuration": name})
