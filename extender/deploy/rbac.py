"""pumice's ClusterRole and namespace Role, written as tables of the API calls pumice's own code makes.

Every row of :data:`GRANTS` names an (apiGroup, resource, verbs) that pumice's ServiceAccount needs, the code
that makes those calls and why. The ClusterRole is built from this table and from nothing else, so a grant
without a caller cannot slip in; ``tests/contract/test_rbac.py`` checks that every row's code still exists
and still mentions the resource it is granted, so a caller that goes away shows up as a failing test rather
than as a grant nobody uses; and that every resource of :mod:`controllers.kube.paths` the ServiceAccount's
code builds a path for has a row.

Code is named ``module:qualname``. The first name is where the call is made (or, for informers, the table of
watched paths); further names are the helpers the call goes through or the constant that holds its path.
Callers build their paths with :mod:`controllers.kube.paths`, so "mentions" ignores case and underscores
(``paths.NETWORK_POLICIES`` mentions ``networkpolicies``, ``paths.pod_binding`` mentions ``binding``).

Scope: what ``pumice serve`` does when started the way ``pumice manifests deploy`` starts it. In particular
``--webhook-service`` is always given, so pumice creates or replaces (``update``) its own webhook
configurations and never takes the CA-only ``patch`` path of
:func:`controllers.reconcilers.bootstrap.register_webhooks`.
The pumice CLI (``pumice job``, ``pumice queue``) runs with the user's credentials and needs nothing here.

Deliberately not granted, because no code uses them: core-group events (pumice writes ``events.k8s.io``
ones), CustomResourceDefinitions, writes to JobTemplates,
PodGroup ``/status`` (Volcano's PodGroup has no status subresource: its status is patched through the
object), ``list``/``watch``/``patch`` on webhook configurations, and any ``update`` or ``delete`` of the
objects the job plugins create (Services, ConfigMaps, Secrets, NetworkPolicies are created once; only a
ConfigMap's data is patched).

The second table, :data:`NAMESPACE_GRANTS`, is what pumice needs in its own namespace only, for a flag its
Deployment passes: its leader-election Lease (``--leader-elect``, on by default) and the certificate
contract's four TLS Secrets (``--tls-secrets-prefix``). It becomes a Role there, limited by name wherever
Kubernetes allows: ``create`` cannot be (the object does not exist yet), and ``list``/``watch`` limited by
name are allowed only to a request with a ``metadata.name`` field selector, which is how the runtime reads
them. Rows name the flag, not the code: the code behind those flags is the runtime's, and
``tests/contract/test_rbac.py`` checks that it builds its paths for these resources once the flag exists.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from extender.api.labels import BATCH_GROUP, BUS_GROUP, FLOW_GROUP, SCHEDULING_GROUP
from extender.deploy.yamltext import Json, Manifest

# Kubernetes' own verb order, so every rule reads the same way.
VERB_ORDER: Final = ("get", "list", "watch", "create", "update", "patch", "delete")

# list and watch: the informers' LIST-then-WATCH; get: their fallback when a LIST does not decode (each
# object fetched alone, so one unreadable object cannot hide the others).
_INFORMERS: Final = (
    "extender.wiring:INFORMERS",
    "controllers.kube.informer:Informer._list",
    "controllers.kube.informer:Informer.run",
    "controllers.kube.informer:Informer._list_one_by_one",
)
_WATCHED: Final = ("get", "list", "watch")
_PLUGIN_OBJECTS: Final = (
    "controllers.reconcilers.job_writes:JobWrites._apply",
    "controllers.reconcilers.job_writes:_PLUGIN_RESOURCES",
)
_STATUS_WRITES: Final = (
    "controllers.reconcilers.status:StatusWriter._pending_writes",
    "controllers.scheduling.kube_executor:KubeExecutor.patch_status",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """Verbs on one resource, the code that calls them, and why.

    ``evidence`` is what that code must mention for the grant to be believed; by default the resource and
    subresource (``pods/binding``: both ``pods`` and ``binding``). ``own_webhooks`` limits the grant to
    pumice's own webhook configurations by name (``resourceNames``).
    """

    group: str
    resource: str
    verbs: tuple[str, ...]
    code: tuple[str, ...]
    why: str
    evidence: tuple[str, ...] = ()
    own_webhooks: bool = False

    def fragments(self) -> tuple[str, ...]:
        """The strings the code named in this row must mention."""
        if self.evidence:
            return self.evidence
        resource, _, subresource = self.resource.partition("/")
        return (resource, subresource) if subresource else (resource,)


GRANTS: Final[tuple[Grant, ...]] = (
    # --- the watches every cache is built from ------------------------------------------------------------
    Grant(
        group="",
        resource="nodes",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="the cluster cache: each node's allocatable, labels and taints",
    ),
    Grant(
        group="",
        resource="pods",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="the cluster cache (what runs where) and the job controller (a job's pods)",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="podgroups",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="gangs: minMember, queue, phase",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="queues",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="queue weights, capabilities and state for the shares",
    ),
    Grant(
        group="scheduling.k8s.io",
        resource="priorityclasses",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="a PodGroup's priorityClassName resolves to a priority",
    ),
    Grant(
        group="",
        resource="resourcequotas",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="resourcequota plugin: a PodGroup over its namespace quota stays Pending; drf namespace weights",
    ),
    Grant(
        group="policy",
        resource="poddisruptionbudgets",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="the pdb plugin: preempt and reclaim plan no eviction a PodDisruptionBudget would refuse",
    ),
    Grant(
        group="topology.volcano.sh",
        resource="hypernodes",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="network-topology-aware plugin: the HyperNode tiers a gang with networkTopology is placed in",
    ),
    Grant(
        group="nodeinfo.volcano.sh",
        resource="numatopologies",
        verbs=_WATCHED,
        code=_INFORMERS,
        why="numa-aware plugin: each node's NUMA cells and free cpus, for pods with a numa-topology-policy",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="jobs",
        verbs=_WATCHED,
        code=(*_INFORMERS, "controllers.reconcilers.jobs:JOBS_PATH"),
        why="the vcjob controller's input",
    ),
    Grant(
        group=BUS_GROUP,
        resource="commands",
        verbs=_WATCHED,
        code=(*_INFORMERS, "controllers.reconcilers.jobs:COMMANDS_PATH"),
        why="vcjob actions and OpenQueue/CloseQueue requests (vcctl, pumice job/queue)",
    ),
    # --- scheduling -----------------------------------------------------------------------------------------
    Grant(
        group="",
        resource="pods",
        verbs=("get",),
        code=(
            "controllers.scheduling.kube_executor:KubeExecutor.bind",
            "controllers.scheduling.kube_executor:KubeExecutor.lift_gate",
        ),
        why="bind: after a 409, whether the pod is already on the planned node; lift_gate: the pod's "
        "current scheduling gates, so only pumice's own gate is removed",
    ),
    Grant(
        group="",
        resource="pods",
        verbs=("patch",),
        code=(
            "controllers.scheduling.kube_executor:KubeExecutor.touch_planned",
            "controllers.scheduling.kube_executor:KubeExecutor.lift_gate",
        ),
        why="annotate a waiting pod with its planned node (moves it out of kube-scheduler's unschedulable "
        "queue); remove pumice's scheduling gate once the gang is admitted",
    ),
    Grant(
        group="",
        resource="pods/binding",
        verbs=("create",),
        code=("controllers.scheduling.kube_executor:KubeExecutor.bind",),
        why="the extender's /bind verb, used when the scheduler config delegates binding "
        "(scheduler-config --bind-verb, e.g. a kube-scheduler the user runs against this pumice)",
    ),
    Grant(
        group="",
        resource="pods/eviction",
        verbs=("create",),
        code=(
            "controllers.scheduling.kube_executor:KubeExecutor.evict",
            "controllers.kube.paths:pod_eviction",
        ),
        why="preempt and reclaim: a victim leaves through the Eviction API, which honours "
        "PodDisruptionBudgets",
    ),
    Grant(
        group="",
        resource="pods/status",
        verbs=("patch",),
        code=("controllers.scheduling.kube_executor:KubeExecutor.mark_disrupted",),
        why="the DisruptionTarget condition on a victim, saying who takes its place and why (as "
        "kube-scheduler's preemption writes it)",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="podgroups",
        verbs=("patch",),
        code=_STATUS_WRITES,
        why="PodGroup status (phase, conditions, counts); written through the object, as Volcano's PodGroup "
        "has no status subresource",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="queues/status",
        verbs=("patch",),
        code=_STATUS_WRITES,
        why="Queue status (state, allocated, pending/running counts)",
    ),
    # --- start-up -------------------------------------------------------------------------------------------
    Grant(
        group=SCHEDULING_GROUP,
        resource="queues",
        verbs=("create",),
        code=("controllers.reconcilers.bootstrap:ensure_queues",),
        why="the root and default queues, when missing (as Volcano does at start-up)",
    ),
    Grant(
        group="admissionregistration.k8s.io",
        resource="mutatingwebhookconfigurations",
        verbs=("get", "update"),
        code=("controllers.reconcilers.bootstrap:register_webhooks",),
        why="replace pumice's own configuration with this API server's features and a fresh caBundle",
        own_webhooks=True,
    ),
    Grant(
        group="admissionregistration.k8s.io",
        resource="validatingwebhookconfigurations",
        verbs=("get", "update"),
        code=("controllers.reconcilers.bootstrap:register_webhooks",),
        why="replace pumice's own configuration with this API server's features and a fresh caBundle",
        own_webhooks=True,
    ),
    # create cannot be limited by name: the object does not exist yet.
    Grant(
        group="admissionregistration.k8s.io",
        resource="mutatingwebhookconfigurations",
        verbs=("create",),
        code=("controllers.reconcilers.bootstrap:register_webhooks",),
        why="create pumice's configuration when a re-apply or a user removed it",
    ),
    Grant(
        group="admissionregistration.k8s.io",
        resource="validatingwebhookconfigurations",
        verbs=("create",),
        code=("controllers.reconcilers.bootstrap:register_webhooks",),
        why="create pumice's configuration when a re-apply or a user removed it",
    ),
    # --- the vcjob controller -------------------------------------------------------------------------------
    Grant(
        group=BATCH_GROUP,
        resource="jobs/status",
        verbs=("patch",),
        code=("controllers.reconcilers.job_writes:JobWrites.status",),
        why="a job's phase, conditions and task counts (resourceVersion-guarded); InvalidSpec for a job "
        "pumice cannot run as written",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="jobs",
        verbs=("get",),
        code=("controllers.reconcilers.jobs:JobController._confirmed_gone",),
        why="a job missing from a LIST is cleaned up only once a GET says 404",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="jobs",
        verbs=("delete",),
        code=("controllers.reconcilers.job_writes:JobWrites.rest",),
        why="ttlSecondsAfterFinished: a finished job is deleted when its TTL expires",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="jobs/finalizers",
        verbs=("update",),
        code=("extender.jobs.plugins.base:owner_reference",),
        evidence=("blockOwnerDeletion",),
        why="everything a job owns carries an owner reference with blockOwnerDeletion; where the "
        "OwnerReferencesPermissionEnforcement admission plugin runs, setting it needs update on the "
        "owner's finalizers",
    ),
    Grant(
        group=FLOW_GROUP,
        resource="jobflows",
        verbs=_WATCHED,
        code=(*_INFORMERS, "controllers.reconcilers.flows:JOBFLOWS_PATH"),
        why="the JobFlow controller's input",
    ),
    Grant(
        group=FLOW_GROUP,
        resource="jobtemplates",
        verbs=_WATCHED,
        code=(*_INFORMERS, "controllers.reconcilers.flows:JOBTEMPLATES_PATH"),
        why="the specs the JobFlow controller makes its jobs from",
    ),
    Grant(
        group=FLOW_GROUP,
        resource="jobflows/status",
        verbs=("patch",),
        code=("controllers.reconcilers.flows:FlowController.perform",),
        why="a flow's phase, its jobs by phase, their histories and probe results (resourceVersion-guarded)",
    ),
    Grant(
        group=FLOW_GROUP,
        resource="jobflows/finalizers",
        verbs=("update",),
        code=("extender.flows.model:owner_reference",),
        evidence=("blockOwnerDeletion",),
        why="a flow's jobs carry an owner reference to it with blockOwnerDeletion",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="jobs",
        verbs=("create", "delete"),
        code=(
            "controllers.reconcilers.flows:FlowController.perform",
            "controllers.reconcilers.flows:FlowController._delete_job",
            "controllers.reconcilers.cronjobs:CronJobController.perform",
            "controllers.reconcilers.cronjobs:CronJobController._delete_job",
        ),
        why="a flow's jobs (deleted after success with jobRetainPolicy delete, or with the flow); a "
        "CronJob's runs (deleted beyond the history limits, or replaced under concurrencyPolicy Replace)",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="cronjobs",
        verbs=_WATCHED,
        code=(*_INFORMERS, "controllers.reconcilers.cronjobs:CRONJOBS_PATH"),
        why="the CronJob controller's input",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="cronjobs/status",
        verbs=("patch",),
        code=("controllers.reconcilers.cronjobs:CronJobController.perform",),
        why="a CronJob's active runs, last schedule and last success times (resourceVersion-guarded)",
    ),
    Grant(
        group=BATCH_GROUP,
        resource="cronjobs/finalizers",
        verbs=("update",),
        code=("extender.flows.cron:build_job",),
        evidence=("blockOwnerDeletion",),
        why="a CronJob's runs carry an owner reference to it with blockOwnerDeletion",
    ),
    Grant(
        group="",
        resource="pods",
        verbs=("create",),
        code=(
            "controllers.reconcilers.job_writes:JobWrites.rest",
            "controllers.reconcilers.job_writes:JobWrites._create",
        ),
        why="a job's task pods",
    ),
    Grant(
        group="",
        resource="pods",
        verbs=("delete",),
        code=(
            "controllers.reconcilers.job_writes:JobWrites.rest",
            "controllers.reconcilers.job_writes:JobWrites.cleanup",
        ),
        why="pods of a restarted, scaled-down or finished job, and of a job that was deleted",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="podgroups",
        verbs=("create", "patch"),
        code=("controllers.reconcilers.job_writes:JobWrites.rest",),
        why="a job's PodGroup, and its minMember/minResources when the job changes",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="podgroups",
        verbs=("delete",),
        code=("controllers.reconcilers.job_writes:JobWrites.cleanup",),
        why="the PodGroup of a deleted job",
    ),
    Grant(
        group=BUS_GROUP,
        resource="commands",
        verbs=("delete",),
        code=(
            "controllers.reconcilers.job_writes:JobWrites.rest",
            "controllers.reconcilers.queue_commands:QueueCommandController.sync",
        ),
        why="a Command is deleted once carried out",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="queues/status",
        verbs=("patch",),
        code=("controllers.reconcilers.queue_commands:QueueCommandController.sync",),
        why="OpenQueue/CloseQueue set a queue's status.state",
    ),
    Grant(
        group="events.k8s.io",
        resource="events",
        verbs=("create", "patch"),
        code=("controllers.events:EventRecorder._write",),
        why="Events on a job a user should see (invalid spec, failing sync); a repeat patches the first "
        "Event's series instead of creating another",
    ),
    # --- what the job plugins create (svc, ssh): created once, never updated or deleted ---------------------
    Grant(
        group="",
        resource="services",
        verbs=("create",),
        code=_PLUGIN_OBJECTS,
        why="svc plugin: the job's headless Service",
    ),
    Grant(
        group="",
        resource="configmaps",
        verbs=("create", "patch"),
        code=_PLUGIN_OBJECTS,
        why="svc plugin: the host lists; patched when replicas change",
    ),
    Grant(
        group="",
        resource="secrets",
        verbs=("create",),
        code=_PLUGIN_OBJECTS,
        why="ssh plugin: the job's <job>-ssh key pair",
    ),
    Grant(
        group="",
        resource="secrets",
        verbs=("get",),
        code=("controllers.reconcilers.job_ssh:ssh_key",),
        why="ssh plugin: reuse the key pair in <job>-ssh after a restart",
    ),
    Grant(
        group="networking.k8s.io",
        resource="networkpolicies",
        verbs=("create",),
        code=_PLUGIN_OBJECTS,
        why="svc plugin: the NetworkPolicy that opens the job's pods to each other",
    ),
    # --- the workload PodGroup controller ----------------------------------------------------------------
    *(
        Grant(
            group=group,
            resource=resource,
            verbs=("get",),
            code=(
                "controllers.reconcilers.workload_groups:WorkloadGroupController._get_owner",
                "controllers.reconcilers.workload_groups:_OWNER_RESOURCES",
            ),
            why="a workload's group-min-member / group-min-resources annotations size its PodGroup",
        )
        for group, resource in (("apps", "replicasets"), ("apps", "statefulsets"), ("batch", "jobs"))
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="podgroups",
        verbs=("create", "patch"),
        code=(
            "controllers.reconcilers.workload_groups:WorkloadGroupController.sync",
            "controllers.reconcilers.workload_groups:WorkloadGroupController._create",
        ),
        why="workloads: the podgroup-<owner uid> group of a ReplicaSet, StatefulSet or Job, kept sized",
    ),
    Grant(
        group=SCHEDULING_GROUP,
        resource="podgroups",
        verbs=("delete",),
        code=("controllers.reconcilers.workload_groups:WorkloadGroupController._scaled_to_zero",),
        why="workloads: the group of a ReplicaSet or StatefulSet scaled to zero, as Volcano deletes it",
    ),
    Grant(
        group="",
        resource="pods",
        verbs=("patch",),
        code=("controllers.reconcilers.workload_groups:WorkloadGroupController.sync",),
        why="workloads: annotate a workload's pod with its group (scheduling.k8s.io/group-name)",
    ),
)


def _rule(group: str, resource: str, verbs: Sequence[str], names: Sequence[str]) -> Manifest:
    rule: Manifest = {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}
    if names:
        rule["resourceNames"] = list(names)
    return rule


def pumice_rules(webhook_configuration_names: Sequence[str]) -> list[Json]:
    """The rules of pumice's ClusterRole, from :data:`GRANTS`: one per resource (and name limit), verbs in
    Kubernetes' order. ``webhook_configuration_names`` are the configurations pumice may read and replace."""
    names = list(webhook_configuration_names)
    if not names:
        raise ValueError("webhook_configuration_names must not be empty (an empty list grants every name)")
    verbs: dict[tuple[str, str, bool], set[str]] = {}
    for grant in GRANTS:
        verbs.setdefault((grant.group, grant.resource, grant.own_webhooks), set()).update(grant.verbs)
    return [
        # An unknown verb is a typo in the table: .index raises rather than drop it.
        _rule(group, resource, sorted(granted, key=VERB_ORDER.index), names if named else ())
        for (group, resource, named), granted in verbs.items()
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceGrant:
    """Verbs on one resource in pumice's own namespace, for the ``pumice serve`` flag that makes the calls.

    ``limited_to`` says which objects: ``tls-secrets`` (the contract's four Secrets), ``lease`` (pumice's
    leader-election Lease) or ``""`` for any (``create``, which cannot be limited by name).
    """

    group: str
    resource: str
    verbs: tuple[str, ...]
    flag: str
    why: str
    limited_to: Literal["", "tls-secrets", "lease"] = ""


NAMESPACE_GRANTS: Final[tuple[NamespaceGrant, ...]] = (
    NamespaceGrant(
        group="coordination.k8s.io",
        resource="leases",
        verbs=("create",),
        flag="--leader-elect",
        why="the first replica to start creates the Lease",
    ),
    NamespaceGrant(
        group="coordination.k8s.io",
        resource="leases",
        verbs=("get", "watch", "update"),
        flag="--leader-elect",
        limited_to="lease",
        why="read who leads, watch it (a field-selected watch on its name) so a standby takes over at once "
        "when it is released; renew, take over or release the Lease",
    ),
    NamespaceGrant(
        group="",
        resource="secrets",
        verbs=("create",),
        flag="--tls-secrets-prefix",
        why="the first replica creates the CA and the certificates that are missing (another that loses "
        "the race reads the winner's)",
    ),
    NamespaceGrant(
        group="",
        resource="secrets",
        verbs=("get", "list", "watch", "update"),
        flag="--tls-secrets-prefix",
        limited_to="tls-secrets",
        why="read the TLS material, watch it (one field-selected watch per name) to reload a renewed "
        "certificate without a restart, and replace a certificate pumice issued when it renews it",
    ),
)


def namespace_rules(*, tls_secrets: Sequence[str], lease: str) -> list[Json]:
    """The rules of pumice's Role in its namespace, from :data:`NAMESPACE_GRANTS`: ``tls_secrets`` are the
    contract's four Secret names, ``lease`` the leader-election Lease's name."""
    names: dict[str, list[str]] = {"": [], "tls-secrets": list(tls_secrets), "lease": [lease]}
    if not names["tls-secrets"] or not all(names["tls-secrets"]) or not lease:
        raise ValueError("Secret and Lease names must not be empty (an empty list grants every name)")
    return [
        _rule(g.group, g.resource, sorted(g.verbs, key=VERB_ORDER.index), names[g.limited_to])
        for g in NAMESPACE_GRANTS
    ]


def granted_triples() -> frozenset[tuple[str, str, str]]:
    """Every (apiGroup, resource, verb) the table grants."""
    return frozenset((g.group, g.resource, v) for g in GRANTS for v in g.verbs)
