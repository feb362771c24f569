"""Everything ``kubectl apply -f -`` needs to run pumice next to a cluster's own scheduler.

Objects, in apply order: the Namespace; pumice's ServiceAccount, its least-privilege ClusterRole (built from
the table in :mod:`extender.deploy.rbac`) and binding; a second, stock kube-scheduler (ServiceAccount bound to
the built-in ``system:kube-scheduler`` and ``system:volume-scheduler`` ClusterRoles and to the
``extension-apiserver-authentication-reader`` Role in kube-system, a Role for its own lease) whose ConfigMap
points its extender at pumice's Service; with mutual TLS, the two Secrets holding the extender's serving
certificate and kube-scheduler's client certificate; pumice's Service and Deployment; the scheduler's
Deployment; a NetworkPolicy; and, when the caller passes a builder for them, the admission webhook
configurations, last, once their Service exists. The builder is
:func:`admission.webhooks.webhook_configurations`, handed in by the composition root: this package never
imports admission (import-linter checks), and the webhook table stays the one source of what is served and
what is registered.

Extender transport: mutual TLS unless the caller asks for plain HTTP. pumice serves the extender port with
a certificate for its Service names and accepts only clients whose certificate the same private CA signed;
kube-scheduler verifies pumice against that CA and presents its client certificate (``tlsConfig`` with file
paths into its mounted Secret). The NetworkPolicy stays as a second fence. The material comes from
:func:`generate_extender_tls`, the one step here that is not pure (fresh keys each call): every render makes
a new CA, so re-applying ``deploy`` output replaces both Secrets, and a hash of the CA in both pod templates
rolls both Deployments onto the new pair together (each reads its files only at start-up).

Kubernetes version: everything is generated for one release (see :mod:`extender.api.versions`): the
scheduler config ``apiVersion`` it reads, a kube-scheduler image of the same minor release, and only the
webhooks and webhook fields its API server accepts (no pod webhooks without ``matchConditions``, no gating
webhook without scheduling gates). pumice re-registers its webhooks at start-up for the server it finds,
so the two agree.

Invariants: no rule grants ``*``; every object carries apiVersion, kind and metadata.name; names are fixed so
a re-apply updates in place; the scheduler's lease is ``pumice-kube-scheduler`` in our namespace, never the
cluster scheduler's ``kube-scheduler`` lease. Pure: :func:`deploy_manifests` reads no files, calls no API and
draws no random numbers; the TLS material and the webhook builder are arguments.

Here: the order of the objects, RBAC, Secrets, the Service and the NetworkPolicy, and the extender's TLS
material. The two Deployments are in :mod:`extender.deploy.workloads`, the webhook configurations in
:mod:`extender.deploy.webhooks`, the fixed names and ports in :mod:`extender.deploy.names`.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from typing import Any, Final, cast

from cryptography import x509

from extender.api import versions
from extender.api.labels import DEFAULT_SCHEDULER_NAME
from extender.api.versions import DEFAULT_VERSION, KubernetesVersion
from extender.deploy.names import (
    APP,
    CONFIG_FILE,
    DEFAULT_NAMESPACE,
    EXTENDER_CLIENT_TLS_DIR,
    EXTENDER_CLIENT_TLS_SECRET,
    EXTENDER_PORT,
    EXTENDER_TLS_SECRET,
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
)
from extender.deploy.rbac import pumice_rules
from extender.deploy.scheduler_config import (
    LEASE_NAME,
    ExtenderTLS,
    scheduler_config,
    scheduler_config_yaml,
)
from extender.deploy.webhooks import WebhookBuilder, webhook_manifests
from extender.deploy.workloads import app_labels, object_meta, pumice_deployment, scheduler_deployment
from extender.deploy.yamltext import Json, Manifest
from extender.process.tls import MutualTLSBundle, generate_mtls_bundle, service_dns_names

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


def _tls_secret(
    name: str, namespace: str, labels: dict[str, Json], cert: bytes, key: bytes, ca: bytes
) -> Manifest:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_meta(name, namespace, labels),
        "type": "kubernetes.io/tls",
        "data": {TLS_CERT_KEY: b64(cert), TLS_KEY_KEY: b64(key), TLS_CA_KEY: b64(ca)},
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


def generate_extender_tls(namespace: str, *, now: dt.datetime | None = None) -> MutualTLSBundle:
    """Fresh extender TLS material for pumice's Service in ``namespace``: a new CA, a serving certificate
    for the Service's names and kube-scheduler's client certificate. Not pure: new keys on every call, so
    every ``deploy`` render (and so every re-apply) replaces the certificates and rolls both Deployments."""
    _check_namespace(namespace)
    return generate_mtls_bundle(dns_names=service_dns_names(APP, namespace), now=now)


def _check_serves(bundle: MutualTLSBundle, namespace: str) -> None:
    """Refuse material made for another namespace: kube-scheduler would fail every call on the name."""
    cert = x509.load_pem_x509_certificate(bundle.server_cert)
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = x509.SubjectAlternativeName([])
    if extender_host(namespace) not in sans.get_values_for_type(x509.DNSName):
        raise ValueError(
            f"extender_tls: the serving certificate does not name {extender_host(namespace)} "
            "(generate it with generate_extender_tls for this namespace)"
        )


def deploy_manifests(
    *,
    namespace: str = DEFAULT_NAMESPACE,
    image: str,
    extender_tls: MutualTLSBundle | None,
    webhook_configurations: WebhookBuilder | None,
    kubernetes_version: KubernetesVersion = DEFAULT_VERSION,
    scheduler_image: str | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    api_version: str | None = None,
    network_policy: bool = True,
) -> list[Manifest]:
    """Every object that runs pumice and its kube-scheduler in ``namespace``, in ``kubectl apply`` order.

    ``extender_tls`` (from :func:`generate_extender_tls`) makes kube-scheduler and pumice talk mutual TLS;
    None keeps the extender on plain HTTP. It has no default, so no caller gets plain HTTP by omission.
    ``webhook_configurations`` builds the admission webhook configurations (see :func:`webhook_manifests`);
    None leaves them out. No default either, so none goes missing by omission.
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
    ca_hash: str | None = None
    tls_objects: list[Manifest] = []
    scheme, tls = "http", None
    if extender_tls is not None:
        _check_serves(extender_tls, namespace)
        ca_hash = hashlib.sha256(extender_tls.ca_cert).hexdigest()
        scheme = "https"
        tls = ExtenderTLS(
            ca_file=f"{EXTENDER_CLIENT_TLS_DIR}/{TLS_CA_KEY}",
            cert_file=f"{EXTENDER_CLIENT_TLS_DIR}/{TLS_CERT_KEY}",
            key_file=f"{EXTENDER_CLIENT_TLS_DIR}/{TLS_KEY_KEY}",
        )
        tls_objects = [
            # pumice's serving pair, and the CA its clients' certificates must chain to.
            _tls_secret(
                EXTENDER_TLS_SECRET,
                namespace,
                pumice_labels,
                extender_tls.server_cert,
                extender_tls.server_key,
                extender_tls.ca_cert,
            ),
            # kube-scheduler's client pair, and the CA pumice's serving certificate must chain to.
            _tls_secret(
                EXTENDER_CLIENT_TLS_SECRET,
                namespace,
                scheduler_labels,
                extender_tls.client_cert,
                extender_tls.client_key,
                extender_tls.ca_cert,
            ),
        ]
    config_text = scheduler_config_yaml(
        scheduler_config(
            extender_url=f"{scheme}://{extender_host(namespace)}:{EXTENDER_PORT}",
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
        *tls_objects,
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
        pumice_deployment(namespace, image, scheduler_name, pumice_labels, ca_hash),
        scheduler_deployment(namespace, scheduler_image, config_text, scheduler_labels, ca_hash),
    ]
    if network_policy:
        objects.append(_network_policy(namespace, pumice_labels, scheduler_labels))
    # Last, so the Service they call already exists when the API server starts using them.
    objects.extend(webhooks)
    return objects
