"""The fixed names, ports and paths of a pumice deployment: one table for the manifests, the Helm chart
and the flags of ``pumice manifests``.

Names are fixed so a re-apply updates in place; the Secrets and directories are where pumice and its
kube-scheduler find the extender's TLS material. Plain constants: importing this module costs nothing.
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
# The CA of the extender's certificates, in both pod templates: a new pair rolls both Deployments.
EXTENDER_CA_HASH_ANNOTATION: Final = "pumice.dev/extender-ca-sha256"

# Extender mutual TLS: pumice's serving pair and the client CA it trusts; kube-scheduler's client pair and
# the CA it trusts. Both Secrets use the kubernetes.io/tls keys (tls.crt, tls.key) plus ca.crt.
EXTENDER_TLS_SECRET: Final = "pumice-extender-tls"
EXTENDER_CLIENT_TLS_SECRET: Final = "pumice-kube-scheduler-extender-client"
EXTENDER_TLS_DIR: Final = "/etc/pumice-extender-tls"
EXTENDER_CLIENT_TLS_DIR: Final = "/etc/pumice-extender-client"
TLS_CERT_KEY: Final = "tls.crt"
TLS_KEY_KEY: Final = "tls.key"
TLS_CA_KEY: Final = "ca.crt"
# Owner and group may read (the pod's fsGroup owns the files); the rest of the world may not.
SECRET_FILE_MODE: Final = 0o440

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
