"""Start-up writes: the built-in queues, our webhook configurations, and API-server feature discovery."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import Any

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.kube.version import server_version
from controllers.state.cache import ClusterCache
from extender.api import labels as L
from extender.api.versions import OLDEST_SUPPORTED, Features, features
from extender.process.settings import ServeSettings

log = logging.getLogger(__name__)


# What the API server offers that changes how we integrate: the one rule in extender.api.versions.
ServerFeatures = Features


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
        if cache.queue(name) is not None:
            continue
        spec: dict[str, Any] = {"weight": 1, "reclaimable": name != L.ROOT_QUEUE}
        if name != L.ROOT_QUEUE:
            spec["parent"] = L.ROOT_QUEUE
        body = {
            "apiVersion": paths.QUEUES.api_version,
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
        }
        try:
            await client.post(paths.QUEUES.collection(), body)
            log.info("created queue", extra={"queue": name})
        except ApiError as e:
            if e.status != 409:
                raise


# Which objects a webhook sees is the deployment's choice (the chart's webhooks.namespaceSelector and
# objectSelector, or an administrator's edit): a restart must not undo it.
KEPT_SELECTORS = ("namespaceSelector", "objectSelector")


def keep_selectors(doc: dict[str, Any], current: dict[str, Any]) -> None:
    """Give each webhook of ``doc`` the selectors the same-named webhook of ``current`` (the configuration
    registered now) has, so replacing the configuration keeps them."""
    registered = {w.get("name"): w for w in current.get("webhooks") or []}
    for webhook in doc.get("webhooks") or []:
        old = registered.get(webhook.get("name"))
        for key in KEPT_SELECTORS:
            if old is not None and key in old:
                webhook[key] = old[key]


def covers(current: object, wanted: object) -> bool:
    """Whether ``current`` (as the API server returns it: defaults filled in) already says everything
    ``wanted`` says: every key of a mapping with a covering value, lists element by element."""
    if isinstance(wanted, dict):
        return isinstance(current, dict) and all(
            k in current and covers(current[k], v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(current, list)
            and len(current) == len(wanted)
            and all(covers(c, w) for c, w in zip(current, wanted, strict=True))
        )
    return current == wanted


async def register_webhooks(
    client: KubeClient,
    settings: ServeSettings,
    ca_pem: bytes,
    configurations: Callable[..., list[dict[str, Any]]],
    *,
    features: Features,
) -> None:
    """Create or replace our webhook configurations (``--webhook-url-base``/``--webhook-service``; a
    replaced one keeps its webhooks' selectors, see :func:`keep_selectors`), or, when neither is given,
    patch our CA into the ones a deployment created."""
    if settings.webhooks.url_base or settings.webhooks.service:
        docs = configurations(
            ca_bundle=ca_pem,
            url_base=settings.webhooks.url_base,
            service=settings.webhooks.service,
            scheduling_gates=features.scheduling_gates,
            match_conditions=features.match_conditions,
            scheduler_names=sorted(settings.scheduling.scheduler_names),
        )
        for doc in docs:
            resource = (
                paths.MUTATING_WEBHOOK_CONFIGURATIONS
                if doc["kind"].startswith("Mutating")
                else paths.VALIDATING_WEBHOOK_CONFIGURATIONS
            )
            name = doc["metadata"]["name"]
            path = resource.item(str(name))
            try:
                cur = await client.get(path)
                doc["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                keep_selectors(doc, cur)
                if covers(cur.get("webhooks"), doc["webhooks"]) and covers(cur["metadata"], doc["metadata"]):
                    # Registered as wanted already (every new leader and restarted replica gets here):
                    # rewriting it would make kube-apiserver rebuild its webhook clients for nothing,
                    # which stalled creates for about a second after each failover.
                    log.info("webhooks already registered", extra={"configuration": name})
                    continue
                await client.request("PUT", path, body=doc)
            except ApiError as e:
                if e.status != 404:
                    raise
                await client.post(resource.collection(), doc)
            log.info("registered webhooks", extra={"configuration": name})
        return
    bundle = base64.b64encode(ca_pem).decode()
    for resource, name in (
        (paths.MUTATING_WEBHOOK_CONFIGURATIONS, "pumice-mutating"),
        (paths.VALIDATING_WEBHOOK_CONFIGURATIONS, "pumice-validating"),
    ):
        path = resource.item(name)
        try:
            cur = await client.get(path)
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
            await client.json_patch(path, ops)
            log.info("patched caBundle", extra={"configuration": name})
