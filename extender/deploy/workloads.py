"""The two Deployments of a pumice install, pumice's and its kube-scheduler's, and the pieces they share.

Both run as a non-root user with a read-only root filesystem and no capabilities; Secret files are
mounted 0440 with the pod's fsGroup as their group. Both run :data:`~extender.deploy.names.REPLICAS`
leader-elected replicas spread over nodes (a preference: ``ScheduleAnyway``, so a one-node cluster still
runs both). pumice rolls with ``maxUnavailable: 0``: a new replica is ready before an old one stops, so
admission (served by every replica) never pauses and a standby is always warm.

TLS follows the certificate contract: pumice is told where its Secrets are (``--tls-secrets-prefix``) and
the Service names its certificates must carry; no key or certificate is in a manifest, so rendering is
deterministic and re-applying an unchanged render restarts nothing. With mutual TLS, kube-scheduler mounts
its client pair from the contract's Secret (the kubelet starts the container once the Secret exists).
Pure: data in, manifests out (see :mod:`extender.deploy.manifests`).
"""

from __future__ import annotations

import hashlib

from extender.deploy.names import (
    APP,
    CONFIG_DIR,
    CONFIG_FILE,
    CONFIG_HASH_ANNOTATION,
    EXTENDER_CLIENT_TLS_DIR,
    EXTENDER_PORT,
    METRICS_PORT,
    NON_ROOT_UID,
    REPLICAS,
    SCHEDULER_APP,
    SCHEDULER_CONFIG_MAP,
    SCHEDULER_SECURE_PORT,
    SECRET_FILE_MODE,
    TERMINATION_GRACE_SECONDS,
    TLS_SECRETS_PREFIX,
    WEBHOOK_PORT,
    scheduler_tls_secret,
)
from extender.deploy.yamltext import Json, Manifest


def app_labels(app: str, component: str) -> dict[str, Json]:
    return {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": APP,
    }


def object_meta(name: str, namespace: str | None = None, labels: dict[str, Json] | None = None) -> Manifest:
    meta: Manifest = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def _pod_security() -> Manifest:
    return {
        "runAsNonRoot": True,
        "runAsUser": NON_ROOT_UID,
        "runAsGroup": NON_ROOT_UID,
        # Group owner of mounted Secret files, so they can be 0440 rather than world-readable.
        "fsGroup": NON_ROOT_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _container_security() -> Manifest:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _secret_volume(name: str, secret: str) -> Manifest:
    return {"name": name, "secret": {"secretName": secret, "defaultMode": SECRET_FILE_MODE}}


def _spread(labels: dict[str, Json]) -> list[Json]:
    """One replica per node where the scheduler can: a node's loss then costs a standby, not both."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": labels},
        }
    ]


def _field_env(name: str, path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def pumice_deployment(
    namespace: str, image: str, scheduler_name: str, labels: dict[str, Json], *, mutual_tls: bool
) -> Manifest:
    """pumice itself. Its certificates come from the contract's Secrets (``--tls-secrets-prefix``): the
    webhooks' always, the extender's with ``mutual_tls`` (``--extender-service`` names the Service its
    certificate must carry; without it the extender stays plain HTTP). With mutual TLS the extender port
    wants a client certificate, which the kubelet's probes do not have, so they use the webhook port."""
    service = f"{namespace}/{APP}"
    command: list[Json] = [
        "pumice",
        "serve",
        "--extender-bind",
        f"0.0.0.0:{EXTENDER_PORT}",
        "--webhook-bind",
        f"0.0.0.0:{WEBHOOK_PORT}",
        "--metrics-bind",
        f"0.0.0.0:{METRICS_PORT}",
        "--scheduler-name",
        scheduler_name,
        # Re-register the webhook configurations at start-up for what this API server supports
        # (scheduling gates, matchConditions) and with the CA of the Secrets. The RBAC table relies on this
        # flag: with it pumice creates or replaces its configurations and never patches them.
        "--webhook-service",
        service,
    ]
    if mutual_tls:
        command += ["--extender-service", service]
    command += ["--tls-secrets-prefix", TLS_SECRETS_PREFIX, "--cert-dir", "/tmp/pumice-certs"]
    probe_port: Manifest = {"port": "webhook", "scheme": "HTTPS"} if mutual_tls else {"port": "extender"}
    container: Manifest = {
        "name": APP,
        "image": image,
        "command": command,
        # Its own Pod and namespace: the leader-election identity and Lease namespace, where the TLS Secrets
        # are, and the Pod the Events of a rejected --scheduler-conf reload are about.
        "env": [
            _field_env("POD_NAME", "metadata.name"),
            _field_env("POD_NAMESPACE", "metadata.namespace"),
            _field_env("POD_IP", "status.podIP"),
        ],
        "ports": [
            {"name": "extender", "containerPort": EXTENDER_PORT, "protocol": "TCP"},
            {"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        # Ready only once every informer has listed (before that, filter answers "cannot decide") and
        # not after SIGTERM, so the Service stops sending while the replica drains.
        "readinessProbe": {
            "httpGet": {"path": "/readyz", **probe_port},
            "periodSeconds": 5,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", **probe_port},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "failureThreshold": 6,
        },
        # No CPU limit: throttling a scheduler shows up as extender timeouts in kube-scheduler.
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
        "securityContext": _container_security(),
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(APP, namespace, labels),
        "spec": {
            "replicas": REPLICAS,
            # A new replica is ready before an old one goes: admission never pauses, a standby stays warm.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": APP,
                    "securityContext": _pod_security(),
                    # No preStop sleep: pumice drains on SIGTERM itself (readiness 503, serving on, the
                    # Lease released at once), and a sleep would only delay the handover.
                    "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
                    "topologySpreadConstraints": _spread(labels),
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def scheduler_deployment(
    namespace: str, image: str, config_text: str, labels: dict[str, Json], *, mutual_tls: bool
) -> Manifest:
    """The second, stock kube-scheduler: leader-elected replicas on their own Lease (in the config). With
    ``mutual_tls`` it mounts its client pair from the contract's Secret."""
    probe: Manifest = {"httpGet": {"path": "/healthz", "port": SCHEDULER_SECURE_PORT, "scheme": "HTTPS"}}
    mounts: list[Json] = [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}]
    volumes: list[Json] = [{"name": "config", "configMap": {"name": SCHEDULER_CONFIG_MAP}}]
    if mutual_tls:
        mounts.append({"name": "extender-client", "mountPath": EXTENDER_CLIENT_TLS_DIR, "readOnly": True})
        volumes.append(_secret_volume("extender-client", scheduler_tls_secret()))
    # A changed config changes the pod template, so `kubectl apply` rolls the scheduler onto it.
    annotations: Manifest = {CONFIG_HASH_ANNOTATION: hashlib.sha256(config_text.encode()).hexdigest()}
    container: Manifest = {
        "name": "kube-scheduler",
        "image": image,
        "command": ["kube-scheduler", f"--config={CONFIG_DIR}/{CONFIG_FILE}", "--v=2"],
        "ports": [{"name": "https", "containerPort": SCHEDULER_SECURE_PORT, "protocol": "TCP"}],
        "readinessProbe": {**probe, "periodSeconds": 10},
        "livenessProbe": {**probe, "initialDelaySeconds": 15, "periodSeconds": 10, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": _container_security(),
        "volumeMounts": mounts,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(SCHEDULER_APP, namespace, labels),
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "serviceAccountName": SCHEDULER_APP,
                    "securityContext": _pod_security(),
                    "topologySpreadConstraints": _spread(labels),
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }
