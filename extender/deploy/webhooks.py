"""The admission webhook configurations as ``pumice manifests`` prints them, for one Kubernetes release.

What they contain is :func:`admission.webhooks.webhook_configurations`' (the one table of what is served and
what is registered), handed in as a :class:`WebhookBuilder` by the composition root: this package never
imports admission (import-linter checks). Here only what a release accepts is asked for, and an empty CA
bundle is left out rather than written empty.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Final, Protocol, cast

from extender.api import versions
from extender.api.labels import DEFAULT_SCHEDULER_NAME
from extender.api.versions import DEFAULT_VERSION, KubernetesVersion
from extender.deploy.names import WEBHOOK_SERVICE_PORT
from extender.deploy.yamltext import Manifest

_PLACEHOLDER_CA: Final = b"pumice patches the real CA bundle in at startup"


class WebhookBuilder(Protocol):
    """What builds the webhook configurations (:func:`admission.webhooks.webhook_configurations`): the
    keywords this module passes, nothing more."""

    def __call__(
        self,
        *,
        ca_bundle: bytes,
        url_base: str | None,
        service: tuple[str, str] | None,
        port: int,
        scheduling_gates: bool,
        match_conditions: bool,
        scheduler_names: Sequence[str],
    ) -> list[dict[str, Any]]: ...


def webhook_manifests(
    builder: WebhookBuilder,
    *,
    ca_bundle: bytes = b"",
    url_base: str | None = None,
    service: tuple[str, str] | None = None,
    port: int = WEBHOOK_SERVICE_PORT,
    kubernetes_version: KubernetesVersion = DEFAULT_VERSION,
    scheduler_names: Sequence[str] = (DEFAULT_SCHEDULER_NAME,),
) -> list[Manifest]:
    """The admission webhook configurations ``builder`` makes, ready to apply.

    Only what an API server of ``kubernetes_version`` accepts: pod webhooks need ``matchConditions`` (to
    see only pods of ``scheduler_names``) and the gating one also needs scheduling gates; without them the
    builder leaves those webhooks out.

    With an empty ``ca_bundle`` the ``caBundle`` field is left out rather than written empty: pumice generates
    its serving certificate and patches ``caBundle`` into these objects at startup, and ``kubectl apply`` only
    resets fields it manages, so re-applying this output never wipes the CA pumice patched in. Until pumice
    has started, calls to these webhooks fail TLS verification and their failurePolicy decides.
    """
    # The builder rightly refuses an empty bundle; hand it a stand-in that is stripped again below.
    features = versions.features(kubernetes_version)
    configs = copy.deepcopy(
        builder(
            ca_bundle=ca_bundle or _PLACEHOLDER_CA,
            url_base=url_base,
            service=service,
            port=port,
            scheduling_gates=features.scheduling_gates,
            match_conditions=features.match_conditions,
            scheduler_names=list(scheduler_names),
        )
    )
    if not ca_bundle:
        for config in configs:
            for webhook in config.get("webhooks") or []:
                client_config = webhook.get("clientConfig")
                if isinstance(client_config, dict):
                    client_config.pop("caBundle", None)
    return cast(list[Manifest], configs)
