"""The two Deployments of a pumice install, pumice's and its kube-scheduler's, and the pieces they share.

Both run as a non-root user with a read-only root filesystem and no capabilities; Secret files are
mounted 0440 with the pod's fsGroup as their group. With mutual TLS (a CA hash given) each mounts its
pair of the extender's certificates and carries the CA's hash in its pod template, so a new pair rolls
both Deployments together. Pure: data in, manifests out (see :mod:`extender.deploy.manifests`).
"""

from __future__ import annotations

import hashlib

from extender.deploy.names import (
    APP,
    CONFIG_DIR,
    CONFIG_FILE,
    CONFIG_HASH_ANNOTATION,
    EXTENDER_CA_HASH_ANNOTATION,
    EXTENDER_CLIENT_TLS_DIR,
    EXTENDER_CLIENT_TLS_SECRET,
    EXTENDER_PORT,
    EXTENDER_TLS_DIR,
    EXTENDER_TLS_SECRET,
    METRICS_PORT,
    NON_ROOT_UID,
    SCHEDULER_APP,
    SCHEDULER_CONFIG_MAP,
    SCHEDULER_SECURE_PORT,
    SECRET_FILE_MODE,
    TLS_CA_KEY,
    TLS_CERT_KEY,
    TLS_KEY_KEY,
    WEBHOOK_PORT,
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


def pumice_deployment(
    namespace: str, image: str, scheduler_name: str, labels: dict[str, Json], ca_hash: str | None
) -> Manifest:
    """pumice itself. With ``ca_hash`` (mutual TLS) its extender port serves the mounted certificate and
    requires a client certificate, so the kubelet's probes (which present none) use the webhook port."""
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
        # (scheduling gates, matchConditions) and with a fresh CA. The RBAC table relies on this flag:
        # with it pumice creates or replaces its configurations and never patches them.
        "--webhook-service",
        f"{namespace}/{APP}",
        "--cert-dir",
        "/tmp/pumice-certs",
    ]
    mounts: list[Json] = [{"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[Json] = [{"name": "tmp", "emptyDir": {}}]
    probe_port: Manifest = {"port": "extender"}
    template_meta: Manifest = {"labels": labels}
    if ca_hash is not None:
        command += [
            "--extender-tls-cert-file",
            f"{EXTENDER_TLS_DIR}/{TLS_CERT_KEY}",
            "--extender-tls-key-file",
            f"{EXTENDER_TLS_DIR}/{TLS_KEY_KEY}",
            "--extender-client-ca-file",
            f"{EXTENDER_TLS_DIR}/{TLS_CA_KEY}",
        ]
        mounts.append({"name": "extender-tls", "mountPath": EXTENDER_TLS_DIR, "readOnly": True})
        volumes.append(_secret_volume("extender-tls", EXTENDER_TLS_SECRET))
        # The webhook listener serves the same /healthz and /readyz over TLS without client certificates.
        probe_port = {"port": "webhook", "scheme": "HTTPS"}
        template_meta["annotations"] = {EXTENDER_CA_HASH_ANNOTATION: ca_hash}
    container: Manifest = {
        "name": APP,
        "image": image,
        "command": command,
        # Its own Pod, for the Events a rejected --scheduler-conf reload writes
        # (controllers.reconcilers.conf_reload).
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "ports": [
            {"name": "extender", "containerPort": EXTENDER_PORT, "protocol": "TCP"},
            {"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        # Ready only once every informer has listed: before that, filter answers "cannot decide".
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
        "volumeMounts": mounts,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": object_meta(APP, namespace, labels),
        "spec": {
            # One replica, and never two at once: the plans and reservations live in this process and
            # there is no leader election, so a rolling update's overlap would let two of them bind.
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": template_meta,
                "spec": {
                    "serviceAccountName": APP,
                    "securityContext": _pod_security(),
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def scheduler_deployment(
    namespace: str, image: str, config_text: str, labels: dict[str, Json], ca_hash: str | None
) -> Manifest:
    probe: Manifest = {"httpGet": {"path": "/healthz", "port": SCHEDULER_SECURE_PORT, "scheme": "HTTPS"}}
    mounts: list[Json] = [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}]
    volumes: list[Json] = [{"name": "config", "configMap": {"name": SCHEDULER_CONFIG_MAP}}]
    # A changed config changes the pod template, so `kubectl apply` rolls the scheduler onto it.
    annotations: Manifest = {CONFIG_HASH_ANNOTATION: hashlib.sha256(config_text.encode()).hexdigest()}
    if ca_hash is not None:
        mounts.append({"name": "extender-client", "mountPath": EXTENDER_CLIENT_TLS_DIR, "readOnly": True})
        volumes.append(_secret_volume("extender-client", EXTENDER_CLIENT_TLS_SECRET))
        annotations[EXTENDER_CA_HASH_ANNOTATION] = ca_hash
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
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "serviceAccountName": SCHEDULER_APP,
                    "securityContext": _pod_security(),
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }
