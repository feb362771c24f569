"""bootstrap.register_webhooks replacing pumice's webhook configurations at start-up keeps the selectors the
deployment set on them (the chart's webhooks.namespaceSelector/objectSelector, an administrator's edit), and
leaves alone configurations that already say what it would write."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from admission.webhooks import webhook_configurations
from controllers.kube import paths
from controllers.reconcilers.bootstrap import covers, register_webhooks
from extender.api.versions import Features, KubernetesVersion, features
from extender.process.settings import ServeSettings
from extender.serve_args import add_serve_parser, serve_settings
from tests.fakeapi import FakeApiServer, serving

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
TENANTS = {"matchLabels": {"pumice.io/batch": "true"}}
OBJECTS = {"matchExpressions": [{"key": "skip-pumice", "operator": "DoesNotExist"}]}


def serve(*argv: str) -> ServeSettings:
    parser = argparse.ArgumentParser(prog="pumice")
    add_serve_parser(parser.add_subparsers(dest="command"))
    return serve_settings(parser.parse_args(["serve", *argv]), parser)


def feats() -> Features:
    return features(KubernetesVersion(1, 28))


def docs() -> list[dict[str, Any]]:
    return webhook_configurations(ca_bundle=CA, service=("pumice-system", "pumice"))


def where(doc: dict[str, Any]) -> str:
    resource = (
        paths.MUTATING_WEBHOOK_CONFIGURATIONS
        if doc["kind"].startswith("Mutating")
        else paths.VALIDATING_WEBHOOK_CONFIGURATIONS
    )
    return resource.item(doc["metadata"]["name"])


@pytest.fixture(autouse=True)
def outside_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("POD_NAMESPACE", "POD_NAME", "POD_IP"):
        monkeypatch.delenv(name, raising=False)


async def test_a_replaced_configuration_keeps_the_selectors_the_deployment_set() -> None:
    fake = FakeApiServer()
    installed = docs()
    for doc in installed:  # as the chart renders them with both selectors in its values
        for webhook in doc["webhooks"]:
            del webhook["clientConfig"]["caBundle"]  # the chart renders none
            webhook["objectSelector"] = OBJECTS
            if "namespaceSelector" in webhook:
                webhook["namespaceSelector"] = TENANTS
    for doc in installed:
        fake.seed(where(doc), doc)
    settings = serve("--webhook-service", "pumice-system/pumice", "--leader-elect=false")
    async with serving(fake) as client:
        await register_webhooks(client, settings, CA, webhook_configurations, features=feats())
    for doc in installed:
        hooks = fake.objects[where(doc)]["webhooks"]
        assert hooks and all(h["clientConfig"].get("caBundle") for h in hooks)  # the CA did change
        assert all(h["objectSelector"] == OBJECTS for h in hooks)
        namespaced = [h for h in hooks if "namespaceSelector" in h]
        assert namespaced and all(h["namespaceSelector"] == TENANTS for h in namespaced)


async def test_a_new_configuration_gets_pumice_s_own_selectors() -> None:
    fake = FakeApiServer()
    settings = serve("--webhook-service", "pumice-system/pumice", "--leader-elect=false")
    async with serving(fake) as client:
        await register_webhooks(client, settings, CA, webhook_configurations, features=feats())
    stored = fake.objects[paths.VALIDATING_WEBHOOK_CONFIGURATIONS.item("pumice-validating")]
    own = {h["name"]: h for d in docs() for h in d["webhooks"]}
    for hook in stored["webhooks"]:
        assert hook["objectSelector"] == own[hook["name"]]["objectSelector"]
        assert hook.get("namespaceSelector") == own[hook["name"]].get("namespaceSelector")


async def test_configurations_registered_as_wanted_are_not_written_again() -> None:
    fake = FakeApiServer()
    settings = serve("--webhook-service", "pumice-system/pumice", "--leader-elect=false")
    async with serving(fake) as client:
        await register_webhooks(client, settings, CA, webhook_configurations, features=feats())
        for doc in docs():  # as kube-apiserver returns them: with its defaults filled in
            for hook in fake.objects[where(doc)]["webhooks"]:
                hook.setdefault("matchPolicy", "Equivalent")
                hook.setdefault("timeoutSeconds", 10)
        written = len(fake.calls("PUT")) + len(fake.calls("POST"))
        await register_webhooks(client, settings, CA, webhook_configurations, features=feats())
        assert len(fake.calls("PUT")) + len(fake.calls("POST")) == written  # a new leader writes nothing
        await register_webhooks(client, settings, CA + b"\n", webhook_configurations, features=feats())
        assert len(fake.calls("PUT")) == 2  # a new CA: both configurations replaced


def test_covers_reads_defaults_as_extra_and_lists_element_by_element() -> None:
    assert covers({"a": 1, "b": {"c": [1, {"d": 2, "e": 3}]}}, {"b": {"c": [1, {"d": 2}]}})
    assert not covers({"b": {"c": [1, {"d": 2}]}}, {"b": {"c": [1, {"d": 3}]}})
    assert not covers({"c": [1, 2, 3]}, {"c": [1, 2]})
    assert not covers({}, {"a": None})
