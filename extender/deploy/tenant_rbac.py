"""ClusterRoles that extend Kubernetes' built-in ``view``, ``edit`` and ``admin`` roles to pumice's kinds.

Kubernetes' user-facing roles are aggregated: the clusterrole-aggregation controller adds to ``view``,
``edit`` and ``admin`` the rules of every ClusterRole labelled
``rbac.authorization.k8s.io/aggregate-to-<role>: "true"``. With these three installed, a user an
administrator bound to ``edit`` in a namespace (a RoleBinding) submits vcjobs, CronJobs, JobFlows,
JobTemplates, PodGroups and Commands there, and one bound to ``view`` cluster-wide (a ClusterRoleBinding)
also reads Queues and HyperNodes, as with Volcano's kinds in a cluster that runs Volcano.

The built-in roles nest (``view`` is aggregated into ``edit``, ``edit`` into ``admin``), so the read rules
reach all three and ``admin`` needs no rules ``edit`` lacks; it gets the same write rules all the same, so it
holds them whichever roles a cluster aggregates. Writes are for namespaced kinds only: Queues and
HyperNodes are cluster-wide policy, an administrator's (as Kubernetes' ``admin`` role writes no
cluster-scoped object), and status subresources are pumice's to write. Pure data.
"""

from __future__ import annotations

from typing import Final

from extender.api.labels import BATCH_GROUP, BUS_GROUP, FLOW_GROUP, SCHEDULING_GROUP
from extender.deploy.yamltext import Json, Manifest

AGGREGATE_LABEL: Final = "rbac.authorization.k8s.io/aggregate-to-{role}"
TENANT_ROLES: Final = ("admin", "edit", "view")
TOPOLOGY_GROUP: Final = "topology.volcano.sh"

# (apiGroup, namespaced kinds users submit, cluster-scoped kinds they may read, kinds with a status
# subresource); plurals as the CRDs spell them.
_WRITABLE: Final = (
    (BATCH_GROUP, ("jobs", "cronjobs")),
    (SCHEDULING_GROUP, ("podgroups",)),
    (FLOW_GROUP, ("jobflows", "jobtemplates")),
    (BUS_GROUP, ("commands",)),
)
_READ_ONLY: Final = ((SCHEDULING_GROUP, ("queues",)), (TOPOLOGY_GROUP, ("hypernodes",)))
_STATUS: Final = frozenset(
    {"jobs", "cronjobs", "jobflows", "jobtemplates", "queues", "hypernodes"}
)  # kinds whose CRD has a status subresource
_READ: Final = ("get", "list", "watch")
_WRITE: Final = ("create", "update", "patch", "delete")


def _rule(group: str, resources: list[str], verbs: tuple[str, ...]) -> Manifest:
    return {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}


def tenant_rules(role: str) -> list[Json]:
    """The rules aggregated into the built-in ``role`` (one of :data:`TENANT_ROLES`)."""
    if role not in TENANT_ROLES:
        raise ValueError(f"unknown role {role!r}: one of {', '.join(TENANT_ROLES)}")
    if role != "view":
        return [_rule(group, list(kinds), _WRITE) for group, kinds in _WRITABLE]
    rules: list[Json] = []
    for group, kinds in (*_WRITABLE, *_READ_ONLY):
        status = [f"{k}/status" for k in kinds if k in _STATUS]
        rules.append(_rule(group, [*kinds, *status], _READ))
    return rules


def tenant_labels(role: str) -> dict[str, Json]:
    """The aggregation label that adds a ClusterRole's rules to the built-in ``role``."""
    return {AGGREGATE_LABEL.format(role=role): "true"}
