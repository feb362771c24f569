"""The fixed names, ports and paths of a pumice deployment: one table for the manifests, the Helm chart
and the flags of ``pumice manifests``.

Names are fixed so a re-apply updates in place; the TLS Secrets are the certificate contract's (pumice
fills them at start-up, or cert-manager does), and the directory is where kube-scheduler finds its client
pair. Plain constants: importing this module costs nothing.
"""

from __future__ import annotations

from typing import Final

from extender.api import versions
from extender.api.versions import DEFAULT_VERSION

DEFAULT_NAMESPACE: Final = "volcano-system"
DEFAULT_SCHEDULER_IMAGE: Final = versions.scheduler_image(DEFAULT_VERSION)

APP: Final = "pumice"
SCHEDULER_APP: Final = "pumice-kube-scheduler"
SCHEDULER_CONFIG_MAP: Final = "pumice-scheduler-config"
CONFIG_DIR: Final = "/etc/pumice"
CONFIG_FILE: Final = "scheduler-config.yaml"
CONFIG_HASH_ANNOTATION: Final = "pumice.dev/scheduler-config-sha256"

# The certificate contract: no key is made at render time. pumice (``serve --tls-secrets-prefix``) keeps its
# TLS material in four kubernetes.io/tls Secrets of its namespace (tls.crt, tls.key, ca.crt), creating the
# ones that are missing, or cert-manager issues them; the manifests only name them.
TLS_SECRETS_PREFIX: Final = APP
CA_SECRET_SUFFIX: Final = "-ca"
WEBHOOK_TLS_SECRET_SUFFIX: Final = "-webhook-tls"
EXTENDER_TLS_SECRET_SUFFIX: Final = "-extender-tls"
SCHEDULER_TLS_SECRET_SUFFIX: Final = "-kube-scheduler-tls"
# Where kube-scheduler mounts its client pair (and the CA that signed pumice's extender certificate).
EXTENDER_CLIENT_TLS_DIR: Final = "/etc/pumice-extender-client"
TLS_CERT_KEY: Final = "tls.crt"
TLS_KEY_KEY: Final = "tls.key"
TLS_CA_KEY: Final = "ca.crt"
# Owner and group may read (the pod's fsGroup owns the files); the rest of the world may not.
SECRET_FILE_MODE: Final = 0o440


def tls_secret_names(prefix: str = TLS_SECRETS_PREFIX) -> tuple[str, str, str, str]:
    """The contract's four Secrets, in the order pumice makes them: the CA, the webhooks' serving pair, the
    extender's serving pair, kube-scheduler's client pair."""
    return (
        prefix + CA_SECRET_SUFFIX,
        prefix + WEBHOOK_TLS_SECRET_SUFFIX,
        prefix + EXTENDER_TLS_SECRET_SUFFIX,
        prefix + SCHEDULER_TLS_SECRET_SUFFIX,
    )


def scheduler_tls_secret(prefix: str = TLS_SECRETS_PREFIX) -> str:
    """The Secret kube-scheduler mounts: its client certificate for the extender's mutual TLS."""
    return prefix + SCHEDULER_TLS_SECRET_SUFFIX


# pumice's leader-election Lease (``serve --leader-elect-resource-name``'s default), in its own namespace.
LEADER_ELECTION_LEASE: Final = APP
# Replicas of each Deployment: one leads (pumice's Lease; kube-scheduler's own), the other stands by warm.
REPLICAS: Final = 2
# SIGTERM turns /readyz 503 while pumice keeps serving a few seconds and hands its Lease over: time enough.
TERMINATION_GRACE_SECONDS: Final = 30

EXTENDER_PORT: Final = 8888
METRICS_PORT: Final = 9090  # plain HTTP /metrics for Prometheus (pumice serve --metrics-bind)
# Prometheus' namespace: the NetworkPolicy admits it to the metrics port (kube-prometheus' convention).
MONITORING_NAMESPACE: Final = "monitoring"
WEBHOOK_PORT: Final = 8443
WEBHOOK_SERVICE_PORT: Final = 443
SCHEDULER_SECURE_PORT: Final = 10259  # kube-scheduler's default --secure-port (serves /healthz over HTTPS)
NON_ROOT_UID: Final = 65532

# The webhook configurations pumice owns; its RBAC lets it read and replace these and no others.
MUTATING_WEBHOOK_CONFIGURATION: Final = "pumice-mutating"
VALIDATING_WEBHOOK_CONFIGURATION: Final = "pumice-validating"
