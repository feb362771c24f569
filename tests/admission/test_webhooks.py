"""The webhook table, the configurations generated from it, and request routing."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from admission.dispatch import admit
from admission.review import AdmissionRequest
from admission.webhooks import (
    MUTATING_CONFIGURATION_NAME,
    VALIDATING_CONFIGURATION_NAME,
    WEBHOOKS,
    served_webhooks,
    webhook_configurations,
    webhook_for,
)
from tests.admission.builders import Raw, lookup, pod_obj, queue_obj

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_paths_are_volcanos() -> None:
    assert sorted(w.path for w in WEBHOOKS) == sorted(
        [
            *(
                f"/{kind}/{verb}"
                for kind in ("jobs", "pods", "queues", "podgroups")
                for verb in ("mutate", "validate")
            ),
            "/commands/validate",
            "/jobflows/validate",
            "/jobtemplates/validate",
            "/cronjobs/validate",
        ]
    )
    assert len({w.name for w in WEBHOOKS}) == len(WEBHOOKS)


def test_every_row_is_served() -> None:
    assert served_webhooks() == WEBHOOKS
    assert all(w.path.endswith("/mutate") == w.mutating for w in WEBHOOKS)


def test_job_and_command_webhooks_fail_closed() -> None:
    hooks = _hooks(webhook_configurations(ca_bundle=CA, url_base="https://h"))
    assert hooks["validate-job.pumice.dev"]["rules"] == [
        {
            "apiGroups": ["batch.volcano.sh"],
            "apiVersions": ["v1alpha1"],
            "resources": ["jobs"],
            "operations": ["CREATE", "UPDATE"],
            "scope": "Namespaced",
        }
    ]
    assert hooks["mutate-job.pumice.dev"]["rules"][0]["operations"] == ["CREATE"]
    assert hooks["validate-command.pumice.dev"]["rules"] == [
        {
            "apiGroups": ["bus.volcano.sh"],
            "apiVersions": ["v1alpha1"],
            "resources": ["commands"],
            "operations": ["CREATE", "UPDATE"],
            "scope": "Namespaced",
        }
    ]
    for name in ("mutate-job", "validate-job", "validate-command"):
        assert hooks[f"{name}.pumice.dev"]["failurePolicy"] == "Fail"
        assert "namespaceSelector" in hooks[f"{name}.pumice.dev"]


def _hooks(configs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {h["name"]: h for c in configs for h in c["webhooks"]}


def test_configurations_by_url() -> None:
    configs = webhook_configurations(
        ca_bundle=CA, url_base="https://127.0.0.1:8443/", path_prefix="/admission"
    )
    assert [(c["kind"], c["metadata"]["name"]) for c in configs] == [
        ("MutatingWebhookConfiguration", MUTATING_CONFIGURATION_NAME),
        ("ValidatingWebhookConfiguration", VALIDATING_CONFIGURATION_NAME),
    ]
    assert all(c["apiVersion"] == "admissionregistration.k8s.io/v1" for c in configs)
    hooks = _hooks(configs)
    assert set(hooks) == {w.name for w in served_webhooks()}
    for w in served_webhooks():
        h = hooks[w.name]
        assert h["clientConfig"] == {
            "caBundle": base64.b64encode(CA).decode(),
            "url": f"https://127.0.0.1:8443/admission{w.path}",
        }
        assert h["admissionReviewVersions"] == ["v1"]
        assert h["sideEffects"] == "None"
        assert 5 <= h["timeoutSeconds"] <= 10
        assert ("reinvocationPolicy" in h) == w.mutating
    assert [h["name"] for h in configs[0]["webhooks"]] == [
        "mutate-job.pumice.dev",
        "mutate-pod.pumice.dev",
        "mutate-queue.pumice.dev",
        "mutate-podgroup.pumice.dev",
    ]


def test_pod_webhooks_never_block_pod_creation() -> None:
    hooks = _hooks(webhook_configurations(ca_bundle=CA, url_base="https://h"))
    for name, operations in (
        ("mutate-pod.pumice.dev", ["CREATE"]),
        ("validate-pod.pumice.dev", ["CREATE", "UPDATE"]),
    ):
        h = hooks[name]
        assert h["failurePolicy"] == "Ignore"
        assert h["timeoutSeconds"] == 5
        assert h["rules"] == [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "operations": operations,
                "scope": "Namespaced",
            }
        ]


def test_every_validating_row_validates_create_and_update() -> None:
    """An update can break an object as surely as a create (a PodGroup patched to cpu 1e400)."""
    for w in WEBHOOKS:
        if w.mutating:
            assert w.operations == ("CREATE",), w.name
        else:
            assert w.operations[:2] == ("CREATE", "UPDATE"), w.name
    queue_ops = next(w.operations for w in WEBHOOKS if w.path == "/queues/validate")
    assert queue_ops == ("CREATE", "UPDATE", "DELETE")


def test_without_scheduling_gates_the_pod_mutate_webhook_is_not_registered() -> None:
    hooks = _hooks(webhook_configurations(ca_bundle=CA, url_base="https://h", scheduling_gates=False))
    assert "mutate-pod.pumice.dev" not in hooks
    assert {"validate-pod.pumice.dev", "mutate-queue.pumice.dev", "mutate-podgroup.pumice.dev"} <= set(hooks)


def test_pod_webhooks_see_only_our_pods_or_are_left_out() -> None:
    hooks = _hooks(
        webhook_configurations(ca_bundle=CA, url_base="https://h", scheduler_names=("volcano", "v2"))
    )
    for name in ("mutate-pod.pumice.dev", "validate-pod.pumice.dev"):
        assert hooks[name]["matchConditions"] == [
            {
                "name": "pumice-scheduler",
                "expression": "has(object.spec.schedulerName)"
                " && object.spec.schedulerName in ['v2', 'volcano']",
            }
        ]
    assert "matchConditions" not in hooks["validate-queue.pumice.dev"]
    old = _hooks(webhook_configurations(ca_bundle=CA, url_base="https://h", match_conditions=False))
    assert not {"mutate-pod.pumice.dev", "validate-pod.pumice.dev"} & set(old)
    assert {"validate-queue.pumice.dev", "validate-podgroup.pumice.dev"} <= set(old)


def test_queue_and_podgroup_webhooks_fail_closed() -> None:
    hooks = _hooks(webhook_configurations(ca_bundle=CA, url_base="https://h"))
    assert hooks["validate-queue.pumice.dev"]["rules"] == [
        {
            "apiGroups": ["scheduling.volcano.sh"],
            "apiVersions": ["v1beta1"],
            "resources": ["queues"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "scope": "Cluster",
        }
    ]
    assert "namespaceSelector" not in hooks["validate-queue.pumice.dev"]
    for name in ("mutate-queue", "validate-queue", "mutate-podgroup", "validate-podgroup"):
        assert hooks[f"{name}.pumice.dev"]["failurePolicy"] == "Fail"


def test_configurations_by_service() -> None:
    hooks = _hooks(webhook_configurations(ca_bundle=CA, service=("pumice-system", "pumice"), port=9443))
    h = hooks["validate-podgroup.pumice.dev"]
    assert h["clientConfig"]["service"] == {
        "namespace": "pumice-system",
        "name": "pumice",
        "path": "/podgroups/validate",
        "port": 9443,
    }
    assert "url" not in h["clientConfig"]
    assert h["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", "pumice-system"],
            }
        ]
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give exactly one of url_base and service"),
        ({"url_base": "https://h", "service": ("ns", "s")}, "give exactly one of url_base and service"),
        ({"url_base": "http://h"}, "url_base must start with https://"),
        (
            {"url_base": "https://h", "path_prefix": "admission"},
            "path_prefix must start and not end with '/'",
        ),
        ({"url_base": "https://h", "path_prefix": "/a/"}, "path_prefix must start and not end with '/'"),
        ({"url_base": "https://h", "ca_bundle": b" "}, "ca_bundle is empty"),
    ],
)
def test_configuration_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        webhook_configurations(**{"ca_bundle": CA, **kwargs})


def request(
    operation: str = "CREATE",
    *,
    obj: Raw | None = None,
    old: Raw | None = None,
    group: str = "scheduling.volcano.sh",
    resource: str = "queues",
    sub_resource: str = "",
    name: str = "",
) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u",
        operation=operation,
        group=group,
        version="v1",
        resource=resource,
        sub_resource=sub_resource,
        kind="",
        namespace="",
        name=name,
        object=obj,
        old_object=old,
        dry_run=False,
    )


def _hook(path: str) -> Any:
    w = webhook_for(path)
    assert w is not None
    return w


def test_admit_denies_a_resource_the_row_does_not_own() -> None:
    out = admit(_hook("/queues/validate"), request(group="", resource="pods", obj=pod_obj()), lookup())
    assert out["response"] == {
        "uid": "u",
        "allowed": False,
        "status": {
            "code": 400,
            "message": "request.resource: /queues/validate admits scheduling.volcano.sh/queues, not pods",
        },
    }


def test_admit_ignores_subresources_and_other_operations() -> None:
    bad = queue_obj(weight=0)
    w = _hook("/queues/validate")
    assert admit(w, request("UPDATE", obj=bad, old=bad, sub_resource="status"), lookup())["response"][
        "allowed"
    ]
    assert admit(w, request("CONNECT", obj=bad), lookup())["response"]["allowed"]
    assert admit(_hook("/queues/mutate"), request("UPDATE", obj=queue_obj(), old=queue_obj()), lookup())[
        "response"
    ] == {"uid": "u", "allowed": True}


def test_admit_delete_uses_the_name_when_old_object_is_missing() -> None:
    out = admit(_hook("/queues/validate"), request("DELETE", name="root"), lookup())
    assert out["response"]["status"] == {
        "code": 403,
        "message": "metadata.name: the root queue cannot be deleted",
    }


def test_admit_create_denial_is_400() -> None:
    out = admit(_hook("/queues/validate"), request(obj=queue_obj(weight=0)), lookup())
    assert out["response"]["status"]["code"] == 400


def test_unknown_path() -> None:
    assert webhook_for("/nope") is None
