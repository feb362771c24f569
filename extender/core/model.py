"""The scheduler's view of cluster objects: frozen, already-parsed, integer resources.

Objects enter the model once, when the cache receives them (see :mod:`extender.core.parse`); nothing in
the core reads raw Kubernetes dicts after that. Group keys are ``namespace/name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, NewType

from extender.core.gpus import GpuHold, GpuRequest, NodeGpus

GroupKey = NewType("GroupKey", str)
PodUID = NewType("PodUID", str)


def group_key(namespace: str, name: str) -> GroupKey:
    return GroupKey(f"{namespace}/{name}")


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


_POD_PHASES: Final[dict[object, PodPhase]] = {p.value: p for p in PodPhase}
# (A module constant: an enum member read through its class costs more, in Python 3.11, than the test.)
_FINISHED: Final = (PodPhase.SUCCEEDED, PodPhase.FAILED)


def pod_phase(raw: object) -> PodPhase:
    """A pod's ``status.phase`` as read: absent or empty is Pending, one that names no phase Unknown
    (``PodPhase(raw or "Pending")`` with ValueError read as Unknown, looked up in a dict: read per pod)."""
    try:
        return _POD_PHASES.get(raw or "Pending", PodPhase.UNKNOWN)
    except TypeError:  # (unhashable: a list or an object; PodPhase() finds no member equal to one either)
        return PodPhase.UNKNOWN


class GroupPhase(StrEnum):
    """Volcano's PodGroup phases."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:  # empty key with Exists tolerates everything
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Requirement:
    """One NodeSelectorRequirement (``field`` is True for matchFields, which only knows metadata.name)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    field: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeConstraints:
    """Everything about a pod that decides which nodes it may use, apart from resources.

    Hashable, so a planner can compute the node mask once per distinct constraint set (all pods of one
    gang task usually share it).
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    # Required node affinity: OR over terms, AND within a term; None means no affinity constraint.
    affinity_terms: tuple[tuple[Requirement, ...], ...] | None = None
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSelector:
    """A metav1.LabelSelector: every ``match_labels`` pair and every expression (In, NotIn, Exists,
    DoesNotExist) must hold. The empty selector matches every pod; where Kubernetes treats a *missing*
    selector as matching nothing, the model holds None instead of a selector."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PodAffinityTerm:
    """One PodAffinityTerm, its namespaces resolved against the pod that declares it.

    ``namespaces`` are the term's explicit namespaces, or the declaring pod's own namespace when the term
    names neither namespaces nor a namespaceSelector (Kubernetes' default). ``namespace_selector`` None
    means "no selector"; the empty selector means every namespace.
    """

    topology_key: str
    selector: LabelSelector | None
    namespaces: frozenset[str] = frozenset()
    namespace_selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True, kw_only=True)
class SpreadConstraint:
    """One topologySpreadConstraint; ``selector`` already carries the pod's ``matchLabelKeys`` values."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    hard: bool  # whenUnsatisfiable: DoNotSchedule (else ScheduleAnyway)
    min_domains: int = 1
    honor_node_affinity: bool = True  # nodeAffinityPolicy (default Honor)
    honor_taints: bool = False  # nodeTaintsPolicy (default Ignore)


@dataclass(frozen=True, slots=True, kw_only=True)
class PreferredNodeTerm:
    """One preferredDuringScheduling node affinity term (AND of its requirements)."""

    weight: int
    requirements: tuple[Requirement, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Affinity:
    """What a pod says about other pods, and its soft node preferences: inter-pod (anti-)affinity,
    topology spread and preferred node affinity. A pod with none of these has ``Pod.affinity`` None,
    which is what keeps such pods on the fast path.

    Hashable, so a planner can tell pods with the same rules apart from the rest.
    """

    required: tuple[PodAffinityTerm, ...] = ()
    required_anti: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti: tuple[WeightedPodAffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    preferred_nodes: tuple[PreferredNodeTerm, ...] = ()

    @property
    def has_pod_terms(self) -> bool:
        """Whether it has inter-pod terms another pod can match (what makes a placed pod matter to others)."""
        return bool(self.required or self.required_anti or self.preferred or self.preferred_anti)

    @property
    def looks_at_pods(self) -> bool:
        """Whether placing this pod depends on other pods (inter-pod terms or topology spread)."""
        return self.has_pod_terms or bool(self.spread)

    @property
    def hard_spread(self) -> tuple[SpreadConstraint, ...]:
        return tuple(c for c in self.spread if c.hard)

    @property
    def soft_spread(self) -> tuple[SpreadConstraint, ...]:
        return tuple(c for c in self.spread if not c.hard)


@dataclass(frozen=True, slots=True, kw_only=True)
class PodScoring:
    """A pod's own resource-strategy-fit scoring: ``volcano.sh/resource-strategy-scoring-type`` (``type``,
    as written) and the weights of ``volcano.sh/resource-strategy-weight``; ``problem`` says why the
    weights could not be read (the plugin then scores the pod 0 everywhere, as Volcano does)."""

    type: str
    weights: tuple[tuple[str, int], ...] = ()
    problem: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NumaRequest:
    """A Guaranteed pod's ``volcano.sh/numa-topology-policy`` (as written: best-effort, restricted,
    single-numa-node) and the whole cpus each of its containers asks (0 for a container asking a
    fraction: the kubelet's static cpu manager gives it no exclusive cpus); read by numa-aware."""

    policy: str
    cpus: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    created: str = ""
    # Its GPU cards (gpushare capacity, the vGPU register annotation), None for a node without (most).
    gpus: NodeGpus | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Pod:
    uid: PodUID
    namespace: str
    name: str
    scheduler_name: str
    requests: Mapping[str, int]
    group_name: str | None = None
    queue_name: str | None = None
    task: str = ""
    node_name: str = ""
    phase: PodPhase = PodPhase.PENDING
    priority: int = 0
    constraints: NodeConstraints = NodeConstraints()
    created: str = ""
    deleting: bool = False
    gated: bool = False
    planned_node: str = ""
    # Seconds it is expected to run (pumice.dev/expected-runtime), if its owner said.
    expected_runtime: float | None = None
    # Seconds it may not be a victim after it was scheduled (``volcano.sh/cooldown-time``, the cdp plugin),
    # and when it was (its PodScheduled condition turned True; 0 when not known).
    cooldown: float | None = None
    scheduled_at: float = 0.0
    # kube-scheduler's last attempt failed (PodScheduled False): it holds the pod in its unschedulable queue
    # or backoff until an update to the pod (a touch) or a periodic flush moves it.
    scheduler_refused: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    # None when the pod has no inter-pod, spread or preferred node rules (the common case).
    affinity: Affinity | None = None
    # Its own scoring strategy for resource-strategy-fit, None without the annotation (the common case).
    scoring: PodScoring | None = None
    # Its NUMA policy and exclusive cpus (numa-aware), None unless Guaranteed with a policy other than none.
    numa: NumaRequest | None = None
    # What it asks of GPU cards (deviceshare) and the cards its annotations give it; None without.
    gpu: GpuRequest | None = None
    gpu_hold: GpuHold | None = None
    # Whether preempt and reclaim may choose it as a victim: Volcano's ``volcano.sh/preemptable``, the
    # annotation read first, then the label; absent is true, a value Go cannot read as a bool is false.
    preemptable: bool = True
    # ``spec.preemptionPolicy`` as written ("Never": it evicts nobody) and ``spec.priorityClassName``
    # (whose class's policy counts when the pod names none; the API server copies it at creation).
    preemption_policy: str = ""
    priority_class: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in _FINISHED

    @property
    def holds_resources(self) -> bool:
        """Bound and not finished: counts against its node's allocatable."""
        return bool(self.node_name) and not self.terminal

    @property
    def waiting(self) -> bool:
        """Unbound, alive and not being deleted: a candidate for placement."""
        return not self.node_name and not self.terminal and not self.deleting


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""
    transition_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkTopology:
    """A gang's network topology rule (Volcano's ``networkTopology``): place it whole inside one HyperNode
    of tier at most ``highest_tier`` (or of the tier named ``highest_tier_name``; neither: any tier);
    ``hard`` never crosses that limit, soft only prefers the lowest tier that holds it."""

    hard: bool = True
    highest_tier: int | None = None
    highest_tier_name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubGroupPolicy:
    """One entry of a PodGroup's ``spec.subGroupPolicy`` (Volcano's SubGroupPolicySpec): the pods its
    ``selector`` takes (None: every pod) fall into sub-groups by their values of ``match_label_keys``;
    a sub-group runs only when ``size`` (``subGroupSize``) of its pods do, inside its own
    ``network_topology``, and the gang needs ``min_groups`` (``minSubGroups``) such sub-groups. See
    :mod:`extender.core.subgroups`."""

    name: str
    selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    size: int = 1
    min_groups: int = 0
    network_topology: NetworkTopology | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PodGroup:
    namespace: str
    name: str
    uid: str = ""
    min_member: int = 1
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    queue: str = "default"
    priority_class: str = ""
    min_resources: Mapping[str, int] = field(default_factory=dict)
    phase: GroupPhase = GroupPhase.PENDING
    conditions: tuple[Condition, ...] = ()
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    created: str = ""
    # True for the one-member group a plain pod gets; it has no PodGroup object in the API server.
    implicit: bool = False
    # Seconds the job may wait before the sla plugin admits it first (its annotation), None without one.
    sla_waiting_time: float | None = None
    # Its task-topology annotations (``volcano.sh/task-topology-affinity``, ``-anti-affinity``,
    # ``-task-order``) as written, key -> value; the task-topology plugin parses them (empty: none).
    task_topology: Mapping[str, str] = field(default_factory=dict)
    # ``spec.networkTopology`` (or Volcano's network-topology annotations), None without one.
    network_topology: NetworkTopology | None = None
    # ``spec.subGroupPolicy`` in order (empty: the gang has no sub-groups, the common case).
    sub_group_policy: tuple[SubGroupPolicy, ...] = ()
    # Seconds its job is expected to run (its ``pumice.dev/expected-runtime`` annotation), if said: what a
    # forecast knows of a job whose pods do not exist yet (a vcjob's are created once it is Inqueue).
    expected_runtime: float | None = None

    @property
    def key(self) -> GroupKey:
        return group_key(self.namespace, self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeGroupAffinity:
    """A Queue's ``spec.affinity``: node group names (``volcano.sh/nodegroup-name`` values) its pods must
    (required) or should (preferred) use, and must or should not (anti); read by the nodegroup plugin."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Queue:
    name: str
    weight: int = 1
    capability: Mapping[str, int] = field(default_factory=dict)
    deserved: Mapping[str, int] = field(default_factory=dict)
    guarantee: Mapping[str, int] = field(default_factory=dict)
    parent: str = ""
    reclaimable: bool = True
    priority: int = 0
    state: QueueState = QueueState.OPEN
    created: str = ""
    # Volcano's HDRF tree position (drf ``enableHierarchy``): its ``volcano.sh/hierarchy`` annotation
    # ("root/sci/dev") and ``volcano.sh/hierarchy-weights`` ("1/8/2"), as written; read by the drf plugin.
    hierarchy: str = ""
    hierarchy_weights: str = ""
    # Its ``spec.affinity`` (None when absent), and its ``volcano.sh/nodegroup-resource-limits`` annotation
    # as written (the nodegroup plugin parses it, and refuses the queue's pods with why when it is bad).
    node_group_affinity: NodeGroupAffinity | None = None
    node_group_limits: str = ""

    @property
    def open(self) -> bool:
        return self.state == QueueState.OPEN


@dataclass(frozen=True, slots=True, kw_only=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    # ``preemptionPolicy`` as written: "Never" keeps the pods of this class from evicting anyone.
    preemption_policy: str = ""
