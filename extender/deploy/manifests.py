"""Everything ``kubectl apply -f -`` needs to run pumice next to a cluster's own scheduler.

Objects, in apply order: the Namespace; pumice's ServiceAccount, its least-privilege ClusterRole (built from
the table in :mod:`extender.deploy.rbac`) and binding, and its Role in its own namespace (its Lease and its
TLS Secrets, by name); the ClusterRoles that extend the built-in ``view``/``edit``/``admin`` roles to
pumice's kinds (:mod:`extender.deploy.tenant_rbac`); a second, stock kube-scheduler (ServiceAccount bound
to the built-in ``system:kube-scheduler`` and ``system:volume-scheduler`` ClusterRoles and to the
``extension-apiserver-authentication-reader`` Role in kube-system, a Role for its own lease) whose ConfigMap
points its extender at pumice's Service; pumice's Service and the two Deployments, each with a
PodDisruptionBudget that keeps one replica up; a NetworkPolicy; and, when the caller passes a builder for
them, the admission webhook configurations, last, once their Service exists. The builder is
:func:`admission.webhooks.webhook_configurations`, handed in by the composition root: this package never
imports admission (import-linter checks), and the webhook table stays the one source of what is served and
what is registered.

Certificates follow the certificate contract (see :mod:`extender.deploy.names`): no key or certificate is
rendered. pumice reads its TLS material from four Secrets of its namespace and creates the missing ones at
start-up (``--tls-secrets-prefix``), registering the webhook configurations' caBundle from the CA; every
replica ends up with the same material. Extender transport: mutual TLS unless the caller asks for plain
HTTP. pumice then serves the extender port with a certificate for its Service names and accepts only clients
whose certificate the same CA signed; kube-scheduler verifies pumice against that CA and presents its client
certificate (``tlsConfig`` with file paths into its mounted Secret). The NetworkPolicy stays as a second
fence.

Kubernetes version: everything is generated for one release (see :mod:`extender.api.versions`): the
scheduler config ``apiVersion`` it reads, a kube-scheduler image of the same minor release, and only the
webhooks and webhook fields its API server accepts (no pod webhooks without ``matchConditions``, no gating
webhook without scheduling gates). pumice re-registers its webhooks at start-up for the server it finds,
so the two agree.

Invariants: no rule grants ``*``; every object carries apiVersion, kind and metadata.name; names are fixed so
a re-apply updates in place; the scheduler's lease is ``pumice-kube-scheduler`` in our namespace, never the
cluster scheduler's ``kube-scheduler`` lease. Pure and deterministic: :func:`deploy_manifests` reads no
files, calls no API and draws no random numbers, so the same arguments give the same objects, and
re-applying an unchanged output restarts nothing; the webhook builder is an argument.

Here: the order of the objects, RBAC, the Service, the disruption budgets and the NetworkPolicy. The two
Deployments are in :mod:`extender.deploy.workloads`, the webhook configurations in
:mod:`extender.deploy.webhooks`, the fixed names and ports in :mod:`extender.deploy.names`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, cast

from extender.api import versions
from extender.api.labels import DEFAULT_SCHEDULER_NAME
from extender.api.versions import DEFAULT_VERSION, KubernetesVersion
from extender.deploy.names import (
    APP,
    CONFIG_FILE,
    DEFAULT_NAMESPACE,
    EXTENDER_CLIENT_TLS_DIR,
    EXTENDER_PORT,
    LEADER_ELECTION_LEASE,
    METRICS_PORT,
    MONITORING_NAMESPACE,
    MUTATING_WEBHOOK_CONFIGURATION,
    SCHEDULER_APP,
    SCHEDULER_CONFIG_MAP,
    TLS_CA_KEY,
    TLS_CERT_KEY,
    TLS_KEY_KEY,
    VALIDATING_WEBHOOK_CONFIGURATION,
    WEBHOOK_PORT,
    WEBHOOK_SERVICE_PORT,
    tls_secret_names,
)
from extender.deploy.rbac import namespace_rules, pumice_rules
from extender.deploy.scheduler_config import (
    LEASE_NAME,
    ExtenderTLS,
    scheduler_config,
    scheduler_config_yaml,
)
from extender.deploy.tenant_rbac import TENANT_ROLES, tenant_labels, tenant_rules
from extender.deploy.webhooks import WebhookBuilder, webhook_manifests
from extender.deploy.workloads import app_labels, object_meta, pumice_deployment, scheduler_deployment
from extender.deploy.yamltext import Json, Manifest

_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _rule(
    groups: Sequence[str], resources: Sequence[str], verbs: Sequence[str], names: Sequence[str] = ()
) -> Manifest:
    rule: Manifest = {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
    if names:
        rule["resourceNames"] = list(names)
    return rule


def _subject(name: str, namespace: str) -> Manifest:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def _binding(
    kind: str, name: str, namespace: str | None, role_kind: str, role: str, subject: Manifest
) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": object_meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [subject],
    }


def _role(kind: str, name: str, namespace: str | None, rules: list[Json]) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": object_meta(name, namespace),
        "rules": rules,
    }


def _service_account(name: str, namespace: str, labels: dict[str, Json]) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": object_meta(name, namespace, labels)}


def _tenant_role(role: str) -> Manifest:
    """A ClusterRole the built-in ``role`` aggregates: pumice's kinds for the users it is bound to."""
    labels: dict[str, Json] = {**tenant_labels(role), "app.kubernetes.io/part-of": APP}
    return _role("ClusterRole", f"{APP}-aggregate-to-{role}", None, tenant_rules(role)) | {
        "metadata": object_meta(f"{APP}-aggregate-to-{role}", None, labels)
    }


def _disruption_budget(name: str, namespace: str, labels: dict[str, Json]) -> Manifest:
    """A voluntary disruption (a node drain) takes one replica at a time: one always serves."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": object_meta(name, namespace, labels),
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
    }


def _network_policy(namespace: str, pumice: dict[str, Json], scheduler: dict[str, Json]) -> Manifest:
    """The extender port binds pods: only our kube-scheduler may reach it, whether or not it also has to
    present a client certificate (plain HTTP answers anyone who can connect).

    The webhook port stays open (the API server is not a pod we can select); kubelet probes from the pod's own
    node are never blocked by a NetworkPolicy. The metrics port admits the monitoring namespace's pods.
    """
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": object_meta(APP, namespace, pumice),
        "spec": {
            "podSelector": {"matchLabels": pumice},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": scheduler}}],
                    "ports": [{"protocol": "TCP", "port": EXTENDER_PORT}],
                },
                {"ports": [{"protocol": "TCP", "port": WEBHOOK_PORT}]},
                {
                    "from": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}
                            }
                        }
                    ],
                    "ports": [{"protocol": "TCP", "port": METRICS_PORT}],
                },
            ],
        },
    }


def extender_host(namespace: str) -> str:
    """The name kube-scheduler dials for pumice's extender, one of the serving certificate's names."""
    return f"{APP}.{namespace}.svc"


def _check_namespace(namespace: str) -> None:
    if not _DNS_LABEL.fullmatch(namespace):
        raise ValueError(
            f"namespace {namespace!r} is not a DNS label (lowercase alphanumerics and '-', <= 63)"
        )


def deploy_manifests(
    *,
    namespace: str = DEFAULT_NAMESPACE,
    image: str,
    mutual_tls: bool,
    webhook_configurations: WebhookBuilder | None,
    kubernetes_version: KubernetesVersion = DEFAULT_VERSION,
    scheduler_image: str | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    api_version: str | None = None,
    network_policy: bool = True,
) -> list[Manifest]:
    """Every object that runs pumice and its kube-scheduler in ``namespace``, in ``kubectl apply`` order.

    ``mutual_tls`` makes kube-scheduler and pumice talk mutual TLS, with the certificates of the contract's
    Secrets; False keeps the extender on plain HTTP. It has no default, so no caller gets plain HTTP by
    omission. ``webhook_configurations`` builds the admission webhook configurations (see
    :func:`webhook_manifests`); None leaves them out. No default either, so none goes missing by omission.
    ``kubernetes_version`` is the cluster's release: it picks the webhooks (see :func:`webhook_manifests`),
    ``scheduler_image`` (default: the upstream kube-scheduler of that release) and ``api_version``, the
    KubeSchedulerConfiguration version that image reads (default: the newest one that release reads). An
    explicit ``api_version`` the default image would not read is refused; with an explicit image it is the
    caller's word. Raises ValueError for arguments the config rejects and releases older than 1.22.
    """
    _check_namespace(namespace)
    readable = versions.scheduler_config_api_versions(versions.check_supported(kubernetes_version))
    if api_version is None:
        api_version = readable[0]
    if scheduler_image is None:
        scheduler_image = versions.scheduler_image(kubernetes_version)
        if api_version not in readable:
            raise ValueError(
                f"api_version {api_version} is not supported by kube-scheduler {kubernetes_version}: it "
                f"reads {' or '.join(readable)} (give scheduler_image to run another kube-scheduler)"
            )
    if not image or not scheduler_image:
        raise ValueError("image and scheduler_image must not be empty")
    pumice_labels = app_labels(APP, "scheduler-extender")
    scheduler_labels = app_labels(SCHEDULER_APP, "kube-scheduler")
    tls = None
    if mutual_tls:
        tls = ExtenderTLS(
            ca_file=f"{EXTENDER_CLIENT_TLS_DIR}/{TLS_CA_KEY}",
            cert_file=f"{EXTENDER_CLIENT_TLS_DIR}/{TLS_CERT_KEY}",
            key_file=f"{EXTENDER_CLIENT_TLS_DIR}/{TLS_KEY_KEY}",
        )
    config_text = scheduler_config_yaml(
        scheduler_config(
            extender_url=f"{'https' if mutual_tls else 'http'}://{extender_host(namespace)}:{EXTENDER_PORT}",
            api_version=api_version,
            kubeconfig=None,
            scheduler_name=scheduler_name,
            leader_elect=True,
            lease_namespace=namespace,
            tls=tls,
        )
    )
    webhooks: list[Manifest] = []
    if webhook_configurations is not None:
        webhooks = webhook_manifests(
            webhook_configurations,
            service=(namespace, APP),
            kubernetes_version=kubernetes_version,
            scheduler_names=[scheduler_name],
        )
    webhook_names = sorted(
        {MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION}
        | {str(config["metadata"]["name"]) for config in cast(list[dict[str, Any]], webhooks)}
    )
    pumice_sa = _subject(APP, namespace)
    scheduler_sa = _subject(SCHEDULER_APP, namespace)

    objects: list[Manifest] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": object_meta(namespace, labels=app_labels(APP, "namespace")),
        },
        # pumice
        _service_account(APP, namespace, pumice_labels),
        _role("ClusterRole", APP, None, pumice_rules(webhook_names)),
        _binding("ClusterRoleBinding", APP, None, "ClusterRole", APP, pumice_sa),
        _role(
            "Role",
            APP,
            namespace,
            namespace_rules(tls_secrets=tls_secret_names(), lease=LEADER_ELECTION_LEASE),
        ),
        _binding("RoleBinding", APP, namespace, "Role", APP, pumice_sa),
        # its users: pumice's kinds in the built-in view, edit and admin roles
        *(_tenant_role(role) for role in TENANT_ROLES),
        # the second kube-scheduler
        _service_account(SCHEDULER_APP, namespace, scheduler_labels),
        _binding(
            "ClusterRoleBinding",
            f"{SCHEDULER_APP}-as-kube-scheduler",
            None,
            "ClusterRole",
            "system:kube-scheduler",
            scheduler_sa,
        ),
        _binding(
            "ClusterRoleBinding",
            f"{SCHEDULER_APP}-as-volume-scheduler",
            None,
            "ClusterRole",
            "system:volume-scheduler",
            scheduler_sa,
        ),
        # Delegated authentication of its secure port reads this ConfigMap in kube-system.
        _binding(
            "RoleBinding",
            f"{SCHEDULER_APP}-extension-apiserver-authentication-reader",
            "kube-system",
            "Role",
            "extension-apiserver-authentication-reader",
            scheduler_sa,
        ),
        # system:kube-scheduler only covers the lease named "kube-scheduler"; ours is LEASE_NAME here.
        _role(
            "Role",
            f"{SCHEDULER_APP}-leader-election",
            namespace,
            [
                _rule(["coordination.k8s.io"], ["leases"], ["create"]),
                _rule(["coordination.k8s.io"], ["leases"], ["get", "update", "patch"], [LEASE_NAME]),
            ],
        ),
        _binding(
            "RoleBinding",
            f"{SCHEDULER_APP}-leader-election",
            namespace,
            "Role",
            f"{SCHEDULER_APP}-leader-election",
            scheduler_sa,
        ),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": object_meta(SCHEDULER_CONFIG_MAP, namespace, scheduler_labels),
            "data": {CONFIG_FILE: config_text},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": object_meta(APP, namespace, pumice_labels),
            "spec": {
                "selector": pumice_labels,
                "ports": [
                    {"name": "extender", "port": EXTENDER_PORT, "targetPort": "extender", "protocol": "TCP"},
                    {
                        "name": "webhook",
                        "port": WEBHOOK_SERVICE_PORT,
                        "targetPort": "webhook",
                        "protocol": "TCP",
                    },
                    {"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"},
                ],
            },
        },
        pumice_deployment(namespace, image, scheduler_name, pumice_labels, mutual_tls=mutual_tls),
        scheduler_deployment(
            namespace, scheduler_image, config_text, scheduler_labels, mutual_tls=mutual_tls
        ),
        _disruption_budget(APP, namespace, pumice_labels),
        _disruption_budget(SCHEDULER_APP, namespace, scheduler_labels),
    ]
    if network_policy:
        objects.append(_network_policy(namespace, pumice_labels, scheduler_labels))
    # Last, so the Service they call already exists when the API server starts using them.
    objects.extend(webhooks)
    return objects
