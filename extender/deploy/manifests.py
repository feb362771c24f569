"""Everything ``kubectl apply -f -`` needs to run pumice next to a cluster's own scheduler.

Objects, in apply order: the Namespace; pumice's ServiceAccount, least-privilege ClusterRole and bindings, a
namespaced Role for its leader-election lease; a second, stock kube-scheduler (ServiceAccount bound to the
built-in ``system:kube-scheduler`` and ``system:volume-scheduler`` ClusterRoles and to the
``extension-apiserver-authentication-reader`` Role in kube-system, a Role for its own lease) whose ConfigMap
points its extender at pumice's Service; pumice's Service and Deployment; the scheduler's Deployment; a
NetworkPolicy; and, when ``admission.webhooks`` provides them, the admission webhook configurations, last,
once their Service exists.

Invariants: no rule grants ``*``; every object carries apiVersion, kind and metadata.name; names are fixed so
a re-apply updates in place; the scheduler's lease is ``pumice-kube-scheduler`` in our namespace, never the
cluster scheduler's ``kube-scheduler`` lease. Pure: building the list reads no files and calls no API.
"""

import copy
import hashlib
import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

from extender.api.labels import BATCH_GROUP, BUS_GROUP, DEFAULT_SCHEDULER_NAME, FLOW_GROUP, SCHEDULING_GROUP
from extender.deploy.scheduler_config import API_V1, LEASE_NAME, scheduler_config, scheduler_config_yaml
from extender.deploy.yamltext import Json, Manifest

DEFAULT_NAMESPACE: Final = "volcano-system"
DEFAULT_SCHEDULER_IMAGE: Final = "registry.k8s.io/kube-scheduler:v1.30.0"

APP: Final = "pumice"
SCHEDULER_APP: Final = "pumice-kube-scheduler"
SCHEDULER_CONFIG_MAP: Final = "pumice-scheduler-config"
CONFIG_DIR: Final = "/etc/pumice"
CONFIG_FILE: Final = "scheduler-config.yaml"
CONFIG_HASH_ANNOTATION: Final = "pumice.dev/scheduler-config-sha256"

EXTENDER_PORT: Final = 8888
WEBHOOK_PORT: Final = 8443
WEBHOOK_SERVICE_PORT: Final = 443
SCHEDULER_SECURE_PORT: Final = 10259  # kube-scheduler's default --secure-port (serves /healthz over HTTPS)
NON_ROOT_UID: Final = 65532

# The webhook configurations pumice owns; RBAC below lets it touch these and no others.
MUTATING_WEBHOOK_CONFIGURATION: Final = "pumice-mutating"
VALIDATING_WEBHOOK_CONFIGURATION: Final = "pumice-validating"

_READ: Final = ("get", "list", "watch")
_MANAGE: Final = ("get", "list", "watch", "create", "update", "patch", "delete")
_STATUS: Final = ("get", "update", "patch")

_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")

_PLACEHOLDER_CA: Final = b"pumice patches the real CA bundle in at startup"

WebhookBuilder = Callable[..., list[dict[str, Any]]]


def _labels(app: str, component: str) -> dict[str, Json]:
    return {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": APP,
    }


def _meta(name: str, namespace: str | None = None, labels: dict[str, Json] | None = None) -> Manifest:
    meta: Manifest = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def _rule(
    groups: Sequence[str], resources: Sequence[str], verbs: Sequence[str], names: Sequence[str] = ()
) -> Manifest:
    rule: Manifest = {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
    if names:
        rule["resourceNames"] = list(names)
    return rule


def pumice_rules(webhook_configuration_names: Sequence[str]) -> list[Json]:
    """The cluster-wide rules of pumice's ClusterRole (its lease lives in a namespaced Role)."""
    return [
        _rule([""], ["nodes"], _READ),
        # create: the Job reconciler makes a vcjob's pods; delete: preemption and job restarts.
        _rule([""], ["pods"], [*_READ, "create", "update", "patch", "delete"]),
        _rule([""], ["pods/binding"], ["create"]),
        _rule([""], ["pods/status"], ["patch", "update"]),
        _rule([""], ["pods/eviction"], ["create"]),
        _rule(["", "events.k8s.io"], ["events"], ["create", "patch"]),
        # What Volcano's job plugins (svc, ssh, env) create for a job.
        _rule([""], ["configmaps", "services", "secrets"], _MANAGE),
        _rule(["networking.k8s.io"], ["networkpolicies"], _MANAGE),
        _rule([SCHEDULING_GROUP], ["podgroups", "queues"], _MANAGE),
        _rule([SCHEDULING_GROUP], ["podgroups/status", "queues/status"], _STATUS),
        _rule([BATCH_GROUP], ["jobs"], _MANAGE),
        _rule([BATCH_GROUP], ["jobs/status"], _STATUS),
        # Owner references with blockOwnerDeletion need update on the owner's finalizers.
        _rule([BATCH_GROUP], ["jobs/finalizers"], ["update"]),
        _rule([BUS_GROUP], ["commands"], _MANAGE),
        _rule([FLOW_GROUP], ["jobflows", "jobtemplates"], _MANAGE),
        _rule([FLOW_GROUP], ["jobflows/status", "jobtemplates/status"], _STATUS),
        _rule(["scheduling.k8s.io"], ["priorityclasses"], _READ),
        # pumice patches its serving CA into its own webhook configurations at startup. create cannot be
        # limited by name (the object does not exist yet), so it gets its own rule.
        _rule(
            ["admissionregistration.k8s.io"],
            ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            [*_READ, "patch", "update"],
            webhook_configuration_names,
        ),
        _rule(
            ["admissionregistration.k8s.io"],
            ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            ["create"],
        ),
        # Startup checks that Volcano's CRDs are installed.
        _rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], ["get", "list"]),
    ]


def _subject(name: str, namespace: str) -> Manifest:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def _binding(
    kind: str, name: str, namespace: str | None, role_kind: str, role: str, subject: Manifest
) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [subject],
    }


def _role(kind: str, name: str, namespace: str | None, rules: list[Json]) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(name, namespace),
        "rules": rules,
    }


def _service_account(name: str, namespace: str, labels: dict[str, Json]) -> Manifest:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace, labels)}


def _pod_security() -> Manifest:
    return {
        "runAsNonRoot": True,
        "runAsUser": NON_ROOT_UID,
        "runAsGroup": NON_ROOT_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _container_security() -> Manifest:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _pumice_deployment(namespace: str, image: str, scheduler_name: str, labels: dict[str, Json]) -> Manifest:
    container: Manifest = {
        "name": APP,
        "image": image,
        "command": [
            "pumice",
            "serve",
            "--extender-bind",
            f"0.0.0.0:{EXTENDER_PORT}",
            "--webhook-bind",
            f"0.0.0.0:{WEBHOOK_PORT}",
            "--scheduler-name",
            scheduler_name,
            # Re-register the webhook configurations at start-up for what this API server supports
            # (scheduling gates, matchConditions) and with a fresh CA.
            "--webhook-service",
            f"{namespace}/{APP}",
            "--cert-dir",
            "/tmp/pumice-certs",
        ],
        # Leader-election identity and the namespace of its lease and webhook Service.
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "ports": [
            {"name": "extender", "containerPort": EXTENDER_PORT, "protocol": "TCP"},
            {"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"},
        ],
        # Ready only once every informer has listed: before that, filter answers "cannot decide".
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "extender"},
            "periodSeconds": 5,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "extender"},
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
        "metadata": _meta(APP, namespace, labels),
        "spec": {
            # One replica: the plan lives in the leader; leader election covers the overlap of a rollout.
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": APP,
                    "securityContext": _pod_security(),
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def _scheduler_deployment(namespace: str, image: str, config_text: str, labels: dict[str, Json]) -> Manifest:
    probe: Manifest = {"httpGet": {"path": "/healthz", "port": SCHEDULER_SECURE_PORT, "scheme": "HTTPS"}}
    container: Manifest = {
        "name": "kube-scheduler",
        "image": image,
        "command": ["kube-scheduler", f"--config={CONFIG_DIR}/{CONFIG_FILE}", "--v=2"],
        "ports": [{"name": "https", "containerPort": SCHEDULER_SECURE_PORT, "protocol": "TCP"}],
        "readinessProbe": {**probe, "periodSeconds": 10},
        "livenessProbe": {**probe, "initialDelaySeconds": 15, "periodSeconds": 10, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": _container_security(),
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    # A changed config changes the pod template, so `kubectl apply` rolls the scheduler onto it.
    config_hash = hashlib.sha256(config_text.encode()).hexdigest()
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(SCHEDULER_APP, namespace, labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {CONFIG_HASH_ANNOTATION: config_hash}},
                "spec": {
                    "serviceAccountName": SCHEDULER_APP,
                    "securityContext": _pod_security(),
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": SCHEDULER_CONFIG_MAP}}],
                },
            },
        },
    }


def _network_policy(namespace: str, pumice: dict[str, Json], scheduler: dict[str, Json]) -> Manifest:
    """The extender port binds pods and answers without authentication: only our kube-scheduler may call it.

    The webhook port stays open (the API server is not a pod we can select); kubelet probes from the pod's own
    node are never blocked by a NetworkPolicy.
    """
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(APP, namespace, pumice),
        "spec": {
            "podSelector": {"matchLabels": pumice},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": scheduler}}],
                    "ports": [{"protocol": "TCP", "port": EXTENDER_PORT}],
                },
                {"ports": [{"protocol": "TCP", "port": WEBHOOK_PORT}]},
            ],
        },
    }


def _load_webhook_builder() -> WebhookBuilder | None:
    """``admission.webhooks.webhook_configurations`` if that module provides it, else None.

    Looked up at call time so deploy output works before (and without) the admission package; an ImportError
    raised *inside* that module is a bug and propagates.
    """
    try:
        module = importlib.import_module("admission.webhooks")
    except ModuleNotFoundError as exc:
        if exc.name in ("admission", "admission.webhooks"):
            return None
        raise
    builder = getattr(module, "webhook_configurations", None)
    return cast(WebhookBuilder, builder) if callable(builder) else None


def webhook_manifests(
    *,
    ca_bundle: bytes = b"",
    url_base: str | None = None,
    service: tuple[str, str] | None = None,
    port: int = WEBHOOK_SERVICE_PORT,
) -> list[Manifest] | None:
    """The admission webhook configurations from ``admission.webhooks``, or None when it is not available.

    With an empty ``ca_bundle`` the ``caBundle`` field is left out rather than written empty: pumice generates
    its serving certificate and patches ``caBundle`` into these objects at startup, and ``kubectl apply`` only
    resets fields it manages, so re-applying this output never wipes the CA pumice patched in. Until pumice
    has started, calls to these webhooks fail TLS verification and their failurePolicy decides.
    """
    builder = _load_webhook_builder()
    if builder is None:
        return None
    # The builder rightly refuses an empty bundle; hand it a stand-in that is stripped again below.
    configs = copy.deepcopy(
        builder(ca_bundle=ca_bundle or _PLACEHOLDER_CA, url_base=url_base, service=service, port=port)
    )
    if not ca_bundle:
        for config in configs:
            for webhook in config.get("webhooks") or []:
                client_config = webhook.get("clientConfig")
                if isinstance(client_config, dict):
                    client_config.pop("caBundle", None)
    return cast(list[Manifest], configs)


def deploy_manifests(
    *,
    namespace: str = DEFAULT_NAMESPACE,
    image: str,
    scheduler_image: str = DEFAULT_SCHEDULER_IMAGE,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    api_version: str = API_V1,
    network_policy: bool = True,
    include_webhooks: bool = True,
) -> list[Manifest]:
    """Every object that runs pumice and its kube-scheduler in ``namespace``, in ``kubectl apply`` order.

    ``api_version`` is the KubeSchedulerConfiguration version ``scheduler_image`` understands (v1 from 1.25
    on; v1beta2/v1beta3 for 1.22-1.28). Raises ValueError for arguments the config rejects.
    """
    if not _DNS_LABEL.fullmatch(namespace):
        raise ValueError(
            f"namespace {namespace!r} is not a DNS label (lowercase alphanumerics and '-', <= 63)"
        )
    if not image or not scheduler_image:
        raise ValueError("image and scheduler_image must not be empty")
    pumice_labels = _labels(APP, "scheduler-extender")
    scheduler_labels = _labels(SCHEDULER_APP, "kube-scheduler")
    config_text = scheduler_config_yaml(
        scheduler_config(
            extender_url=f"http://{APP}.{namespace}.svc:{EXTENDER_PORT}",
            api_version=api_version,
            kubeconfig=None,
            scheduler_name=scheduler_name,
            leader_elect=True,
            lease_namespace=namespace,
        )
    )
    webhooks = (webhook_manifests(service=(namespace, APP)) or []) if include_webhooks else []
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
            "metadata": _meta(namespace, labels=_labels(APP, "namespace")),
        },
        # pumice
        _service_account(APP, namespace, pumice_labels),
        _role("ClusterRole", APP, None, pumice_rules(webhook_names)),
        _binding("ClusterRoleBinding", APP, None, "ClusterRole", APP, pumice_sa),
        _role(
            "Role",
            f"{APP}-leader-election",
            namespace,
            [
                _rule(
                    ["coordination.k8s.io"], ["leases"], ["get", "list", "watch", "create", "update", "patch"]
                )
            ],
        ),
        _binding(
            "RoleBinding", f"{APP}-leader-election", namespace, "Role", f"{APP}-leader-election", pumice_sa
        ),
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
            "metadata": _meta(SCHEDULER_CONFIG_MAP, namespace, scheduler_labels),
            "data": {CONFIG_FILE: config_text},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(APP, namespace, pumice_labels),
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
                ],
            },
        },
        _pumice_deployment(namespace, image, scheduler_name, pumice_labels),
        _scheduler_deployment(namespace, scheduler_image, config_text, scheduler_labels),
    ]
    if network_policy:
        objects.append(_network_policy(namespace, pumice_labels, scheduler_labels))
    # Last, so the Service they call already exists when the API server starts using them.
    objects.extend(webhooks)
    return objects
