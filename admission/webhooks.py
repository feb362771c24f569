"""The one table of pumice's admission webhooks, and the webhook configurations generated from it.

Each row says where kube-apiserver calls (Volcano's paths, so a Volcano user recognises them), for which
resource and operations, whether it mutates or validates, how a failure of pumice is treated, and which pure
functions answer: a kind's ``validate`` (and ``validate_delete``) hold only that kind's rules, as the
dispatch (:func:`admission.dispatch.admit`) does what every kind shares before calling them (the row's
``scope``, the object's depth and size bounds, the stored object of an UPDATE with ``forgive_stored``, the
denial). The server mounts exactly the served rows; :func:`webhook_configurations` registers exactly the
same rows, so what is served and what is registered cannot drift apart.

Every validating row takes CREATE and UPDATE (queues also DELETE): an update can break an object as surely
as a create (``kubectl patch podgroup x -p '{"spec":{"minResources":{"cpu":"1e400"}}}'``), and the
scheduler and the job controller read whatever was stored. Mutating rows default new objects: CREATE only.

Failure policy: job, Command, queue and PodGroup webhooks ``Fail`` (a write that skipped validation could
corrupt the hierarchy or leave a job the controller cannot run); pod webhooks ``Ignore`` with the narrowest
rule (pods, matched to our schedulers by ``matchConditions``) and a short timeout, so an outage of pumice
never blocks pod creation cluster-wide. (The ``pods`` resource does not match the ``pods/status`` and
``pods/binding`` subresources, so kubelet and kube-scheduler writes never come here.)
Namespaced rules skip ``kube-system`` and pumice's own namespace, as Volcano's chart does.

A row listed with no function is reserved: neither served nor registered until its function is set here.
``/commands/validate`` is ours: Volcano has no Command webhook (see :mod:`admission.commands`).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from admission import commands, cronjobs, flows, jobs, podgroups, pods, queues
from admission.base import DeleteValidator, Mutator, Scope, Validator
from extender.api import labels as L

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
FailurePolicy = Literal["Fail", "Ignore"]

MUTATING_CONFIGURATION_NAME: Final = "pumice-mutating"
VALIDATING_CONFIGURATION_NAME: Final = "pumice-validating"
_ADMISSION_REGISTRATION: Final = "admissionregistration.k8s.io/v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Webhook:
    """One webhook: where and for what kube-apiserver calls it, and the pure functions that answer."""

    name: str
    path: str
    group: str
    version: str
    resource: str
    namespaced: bool
    operations: tuple[Operation, ...]
    mutating: bool
    failure_policy: FailurePolicy
    timeout_seconds: int
    validate: Validator | None = None
    # The rules of a DELETE (the row lists DELETE); without, every delete is allowed.
    validate_delete: DeleteValidator | None = None
    mutate: Mutator | None = None
    # A validating row judges only the objects in its scope and allows any other before reading it (a
    # mutator checks its own: nothing is read before it is called).
    scope: Scope | None = None
    # An UPDATE is refused only for problems the stored object did not already have.
    forgive_stored: bool = False

    @property
    def served(self) -> bool:
        return (self.mutate if self.mutating else self.validate) is not None


WEBHOOKS: Final[tuple[Webhook, ...]] = (
    Webhook(
        name="mutate-job.pumice.dev",
        path="/jobs/mutate",
        group=L.BATCH_GROUP,
        version="v1alpha1",
        resource="jobs",
        namespaced=True,
        operations=("CREATE",),
        mutating=True,
        failure_policy="Fail",
        timeout_seconds=10,
        mutate=jobs.mutate,
    ),
    Webhook(
        name="validate-job.pumice.dev",
        path="/jobs/validate",
        group=L.BATCH_GROUP,
        version="v1alpha1",
        resource="jobs",
        namespaced=True,
        operations=("CREATE", "UPDATE"),
        mutating=False,
        failure_policy="Fail",
        timeout_seconds=10,
        validate=jobs.validate,
    ),
    Webhook(
        name="validate-command.pumice.dev",
        path="/commands/validate",
        group=L.BUS_GROUP,
        version=L.BUS_VERSION,
        resource="commands",
        namespaced=True,
        operations=("CREATE", "UPDATE"),
        mutating=False,
        failure_policy="Fail",
        timeout_seconds=10,
        validate=commands.validate,
    ),
    Webhook(
        name="validate-jobflow.pumice.dev",
        path="/jobflows/validate",
        group=L.FLOW_GROUP,
        version="v1alpha1",
        resource="jobflows",
        namespaced=True,
        operations=("CREATE", "UPDATE"),
        mutating=False,
        failure_policy="Fail",
        timeout_seconds=10,
        validate=flows.validate_jobflow,
    ),
    Webhook(
        name="validate-jobtemplate.pumice.dev",
        path="/jobtemplates/validate",
        group=L.FLOW_GROUP,
        version="v1alpha1",
        resource="jobtemplates",
        namespaced=True,
        operations=("CREATE", "UPDATE"),
        mutating=False,
        failure_policy="Fail",
        timeout_seconds=10,
        validate=flows.validate_jobtemplate,
    ),
    Webhook(
        name="validate-cronjob.pumice.dev",
        path="/cronjobs/validate",
        group=L.BATCH_GROUP,
        version="v1alpha1",
        resource="cronjobs",
        namespaced=True,
        operations=("CREATE", "UPDATE"),
        mutating=False,
        failure_policy="Fail",
        timeout_seconds=10,
        validate=cronjobs.validate,
    ),
    Webhook(
        name="mutate-pod.pumice.dev",
        path="/pods/mutate",
        group="",
        version="v1",
        resource="pods",
        namespaced=True,
        operations=("CREATE",),
        mutating=True,
        failure_policy="Ignore",
        timeout_seconds=5,
        mutate=pods.mutate,
    ),
    Webhook(
        name="validate-pod.pumice.dev",
        path="/pods/validate",
        group="",
        version="v1",
        resource="pods",
        namespaced=True,
        operations=("CREATE", "UPDATE"),
        mutating=False,
        failure_policy="Ignore",
        timeout_seconds=5,
        validate=pods.validate,
        scope=pods.is_ours,
        # The scheduler's own writes (the gang gate, its annotations) pass on a pod stored while the
        # webhook was unreachable (Ignore): the pod is no worse for them.
        forgive_stored=True,
    ),
    Webhook(
        name="mutate-queue.pumice.dev",
        path="/queues/mutate",
        group=L.SCHEDULING_GROUP,
        version=L.SCHEDULING_VERSION,
        resource="queues",
        namespaced=False,
        operations=("CREATE",),
        mutating=True,
        failure_policy="Fail",
        timeout_seconds=10,
        mutate=queues.mutate,
    ),
    Webhook(
        name="validate-queue.pumice.dev",
        path="/queues/validate",
        group=L.SCHEDULING_GROUP,
        version=L.SCHEDULING_VERSION,
        resource="queues",
        namespaced=False,
        operations=("CREATE", "UPDATE", "DELETE"),
        mutating=False,
        failure_policy="Fail",
        timeout_seconds=10,
        validate=queues.validate,
        validate_delete=queues.validate_delete,
    ),
    Webhook(
        name="mutate-podgroup.pumice.dev",
        path="/podgroups/mutate",
        group=L.SCHEDULING_GROUP,
        version=L.SCHEDULING_VERSION,
        resource="podgroups",
        namespaced=True,
        operations=("CREATE",),
        mutating=True,
        failure_policy="Fail",
        timeout_seconds=10,
        mutate=podgroups.mutate,
    ),
    Webhook(
        name="validate-podgroup.pumice.dev",
        path="/podgroups/validate",
        group=L.SCHEDULING_GROUP,
        version=L.SCHEDULING_VERSION,
        resource="podgroups",
        namespaced=True,
        operations=("CREATE", "UPDATE"),
        mutating=False,
        failure_policy="Fail",
        timeout_seconds=10,
        validate=podgroups.validate,
    ),
)


def served_webhooks() -> tuple[Webhook, ...]:
    return tuple(w for w in WEBHOOKS if w.served)


def _client_config(
    w: Webhook,
    ca_bundle: bytes,
    url_base: str | None,
    service: tuple[str, str] | None,
    port: int,
    prefix: str,
) -> dict[str, Any]:
    cfg: dict[str, Any] = {"caBundle": base64.b64encode(ca_bundle).decode("ascii")}
    if url_base is not None:
        cfg["url"] = url_base.rstrip("/") + prefix + w.path
    elif service is not None:
        namespace, name = service
        cfg["service"] = {"namespace": namespace, "name": name, "path": prefix + w.path, "port": port}
    return cfg


def _entry(
    w: Webhook,
    client_config: dict[str, Any],
    excluded: Sequence[str],
    match_pods_of: Sequence[str] | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": w.name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config,
        "rules": [
            {
                "apiGroups": [w.group],
                "apiVersions": [w.version],
                "resources": [w.resource],
                "operations": list(w.operations),
                "scope": "Namespaced" if w.namespaced else "Cluster",
            }
        ],
        "failurePolicy": w.failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": w.timeout_seconds,
        "objectSelector": {},
    }
    if w.namespaced:
        entry["namespaceSelector"] = {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(excluded)}
            ]
        }
    if w.mutating:
        entry["reinvocationPolicy"] = "Never"
    if match_pods_of is not None and w.resource == "pods":
        # Only pods of our schedulers reach us: an objectSelector cannot say this, a CEL condition can.
        names = ", ".join(f"'{n}'" for n in sorted(match_pods_of))
        entry["matchConditions"] = [
            {
                "name": "pumice-scheduler",
                "expression": f"has(object.spec.schedulerName) && object.spec.schedulerName in [{names}]",
            }
        ]
    return entry


def webhook_configurations(
    *,
    ca_bundle: bytes,
    url_base: str | None = None,
    service: tuple[str, str] | None = None,
    port: int = 443,
    path_prefix: str = "",
    exclude_namespaces: Sequence[str] = ("kube-system",),
    scheduling_gates: bool = True,
    match_conditions: bool = True,
    scheduler_names: Sequence[str] = (L.DEFAULT_SCHEDULER_NAME,),
) -> list[dict[str, Any]]:
    """The ``pumice-mutating`` and ``pumice-validating`` configurations for every served webhook.

    Pod webhooks are narrowed to pods of ``scheduler_names`` with a ``matchConditions`` CEL expression,
    which API servers have from 1.28 on. Where that is missing (``match_conditions=False``) the pod
    webhooks would see every pod created in the cluster, a TLS round trip each, so they are left out;
    so is ``/pods/mutate`` without scheduling gates (before 1.27), as gating gang pods is its only job.

    ``ca_bundle`` is the PEM of the CA that signed the serving certificate. Give exactly one of ``url_base``
    (``https://host:port``, for pumice outside the cluster) and ``service`` (``(namespace, name)`` of the
    Service in front of pumice, with its ``port``). ``path_prefix`` is where the admission app is mounted
    (``""`` at the root). Namespaced rules skip ``exclude_namespaces`` and the service's namespace.
    """
    if (url_base is None) == (service is None):
        raise ValueError("give exactly one of url_base and service")
    if url_base is not None and not url_base.startswith("https://"):
        raise ValueError(
            f"url_base must start with https:// (kube-apiserver calls webhooks over TLS): {url_base}"
        )
    if path_prefix and (not path_prefix.startswith("/") or path_prefix.endswith("/")):
        raise ValueError(f"path_prefix must start and not end with '/': {path_prefix!r}")
    if not ca_bundle.strip():
        raise ValueError("ca_bundle is empty")
    excluded = list(dict.fromkeys([*exclude_namespaces, *([service[0]] if service else [])]))
    configs: list[dict[str, Any]] = []
    for mutating, kind, name in (
        (True, "MutatingWebhookConfiguration", MUTATING_CONFIGURATION_NAME),
        (False, "ValidatingWebhookConfiguration", VALIDATING_CONFIGURATION_NAME),
    ):
        hooks = [
            _entry(
                w,
                _client_config(w, ca_bundle, url_base, service, port, path_prefix),
                excluded,
                scheduler_names if match_conditions else None,
            )
            for w in served_webhooks()
            if w.mutating == mutating
            and (w.resource != "pods" or match_conditions)
            and (scheduling_gates or w.path != "/pods/mutate")
        ]
        configs.append(
            {
                "apiVersion": _ADMISSION_REGISTRATION,
                "kind": kind,
                "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "pumice"}},
                "webhooks": hooks,
            }
        )
    return configs


def webhook_for(path: str) -> Webhook | None:
    return next((w for w in WEBHOOKS if w.path == path), None)
