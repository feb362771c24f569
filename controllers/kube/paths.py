"""Kubernetes REST paths: the table of the resources pumice reads or writes; the one place paths are built.

A path is the group's prefix (``/api/v1`` for the core group, ``/apis/<group>/<version>`` for the others),
then ``/namespaces/<namespace>`` for a namespaced resource, then ``/<plural>``; then ``/<name>`` for one
object and ``/<subresource>`` for one of its subresources. :class:`Resource` builds the three shapes from one
row of the table below; callers never write a path themselves (``tests/runtime/test_api_paths.py`` checks
every path against the exact string, and fails on a path literal anywhere else in the packages).

Invariants, checked when a path is built (ValueError: a bug in the caller, never a property of the data):

- scope: an object of a namespaced resource needs its namespace, a cluster-scoped resource takes none. The
  wrong shape would be answered 404, which most callers read as "already gone".
- only the subresources a resource has: Volcano's PodGroup has no ``status`` subresource (its status is
  written through the object, and a write to ``/status`` is refused); its Queue and Job have one.

Segments are used as given: names taken from objects the API server returned are valid path segments. Text
a user typed goes through :func:`segment` first (the CLI does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from extender.api import labels as L


@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """One row of the table: where a kind's objects live in the API."""

    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of the kind's objects (``v1``, ``scheduling.volcano.sh/v1beta1``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection(self, namespace: str | None = None) -> str:
        """Where objects are listed, watched and created: in one namespace, or (None) across all of them."""
        if namespace is None:
            return f"{self.prefix}/{self.plural}"
        if not self.namespaced:
            raise ValueError(f"{self.plural} are cluster-scoped: no namespace ({namespace!r}) in their path")
        return f"{self.prefix}/namespaces/{namespace}/{self.plural}"

    def item(self, name: str, *, namespace: str | None = None) -> str:
        """One object: GET, PATCH, PUT, DELETE."""
        if self.namespaced and namespace is None:
            raise ValueError(f"{self.plural} are namespaced: {name!r} needs its namespace")
        return f"{self.collection(namespace)}/{name}"

    def subresource(self, name: str, subresource: str, *, namespace: str | None = None) -> str:
        if subresource not in self.subresources:
            have = ", ".join(sorted(self.subresources)) or "none"
            raise ValueError(f"{self.plural} have no {subresource!r} subresource (they have: {have})")
        return f"{self.item(name, namespace=namespace)}/{subresource}"

    def status(self, name: str, *, namespace: str | None = None) -> str:
        """The status subresource: the only way to write status where the resource has one."""
        return self.subresource(name, "status", namespace=namespace)


_STATUS: Final = frozenset({"status"})

# --- the core group ---------------------------------------------------------------------------------------
NODES: Final = Resource(group="", version="v1", plural="nodes", namespaced=False, subresources=_STATUS)
PODS: Final = Resource(
    group="",
    version="v1",
    plural="pods",
    namespaced=True,
    subresources=frozenset({"binding", "eviction", "status"}),
)
SERVICES: Final = Resource(group="", version="v1", plural="services", namespaced=True)
CONFIG_MAPS: Final = Resource(group="", version="v1", plural="configmaps", namespaced=True)
SECRETS: Final = Resource(group="", version="v1", plural="secrets", namespaced=True)
# core/v1 Events: what ``pumice job view`` reads (kubectl's source); pumice itself writes events.k8s.io ones.
CORE_EVENTS: Final = Resource(group="", version="v1", plural="events", namespaced=True)

# --- other built-in groups --------------------------------------------------------------------------------
EVENTS: Final = Resource(group="events.k8s.io", version="v1", plural="events", namespaced=True)
PRIORITY_CLASSES: Final = Resource(
    group="scheduling.k8s.io", version="v1", plural="priorityclasses", namespaced=False
)
NETWORK_POLICIES: Final = Resource(
    group="networking.k8s.io", version="v1", plural="networkpolicies", namespaced=True
)
# Read only (watched): the resourcequota and pdb plugins.
RESOURCE_QUOTAS: Final = Resource(group="", version="v1", plural="resourcequotas", namespaced=True)
POD_DISRUPTION_BUDGETS: Final = Resource(
    group="policy", version="v1", plural="poddisruptionbudgets", namespaced=True
)
# The workloads whose pods get a PodGroup per owner (read only: controllers.reconcilers.workload_groups).
REPLICA_SETS: Final = Resource(group="apps", version="v1", plural="replicasets", namespaced=True)
STATEFUL_SETS: Final = Resource(group="apps", version="v1", plural="statefulsets", namespaced=True)
BATCH_JOBS: Final = Resource(group="batch", version="v1", plural="jobs", namespaced=True)
MUTATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    group="admissionregistration.k8s.io",
    version="v1",
    plural="mutatingwebhookconfigurations",
    namespaced=False,
)
VALIDATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    group="admissionregistration.k8s.io",
    version="v1",
    plural="validatingwebhookconfigurations",
    namespaced=False,
)

# Leader election: the Lease ``pumice serve`` replicas contend for (controllers.leader).
LEASES: Final = Resource(group="coordination.k8s.io", version="v1", plural="leases", namespaced=True)

# --- Volcano's groups (the CRDs in manifests/crds) --------------------------------------------------------
PODGROUPS: Final = Resource(
    group=L.SCHEDULING_GROUP, version=L.SCHEDULING_VERSION, plural="podgroups", namespaced=True
)
QUEUES: Final = Resource(
    group=L.SCHEDULING_GROUP,
    version=L.SCHEDULING_VERSION,
    plural="queues",
    namespaced=False,
    subresources=_STATUS,
)
JOBS: Final = Resource(
    group=L.BATCH_GROUP, version=L.BATCH_VERSION, plural="jobs", namespaced=True, subresources=_STATUS
)
COMMANDS: Final = Resource(group=L.BUS_GROUP, version=L.BUS_VERSION, plural="commands", namespaced=True)
CRONJOBS: Final = Resource(
    group=L.BATCH_GROUP, version=L.BATCH_VERSION, plural="cronjobs", namespaced=True, subresources=_STATUS
)
JOBFLOWS: Final = Resource(
    group=L.FLOW_GROUP, version="v1alpha1", plural="jobflows", namespaced=True, subresources=_STATUS
)
JOBTEMPLATES: Final = Resource(
    group=L.FLOW_GROUP, version="v1alpha1", plural="jobtemplates", namespaced=True, subresources=_STATUS
)
# Read only (watched): the network-topology-aware plugin's HyperNodes (cluster-scoped).
HYPERNODES: Final = Resource(
    group=L.TOPOLOGY_GROUP, version="v1alpha1", plural="hypernodes", namespaced=False
)
# Read only (watched): the numa-aware plugin's Numatopologies (cluster-scoped, one per node).
NUMATOPOLOGIES: Final = Resource(
    group=L.NODEINFO_GROUP, version="v1alpha1", plural="numatopologies", namespaced=False
)


def segment(text: str) -> str:
    """A name or namespace a user typed, quoted so a ``/`` or ``?`` in it cannot leave its path segment."""
    return quote(text, safe="")


def pod_binding(namespace: str, name: str) -> str:
    """Where a Binding is POSTed to place a pod on a node (what kube-scheduler's binder does)."""
    return PODS.subresource(name, "binding", namespace=namespace)


def pod_eviction(namespace: str, name: str) -> str:
    """Where an Eviction is POSTed: a delete that honours PodDisruptionBudgets."""
    return PODS.subresource(name, "eviction", namespace=namespace)
