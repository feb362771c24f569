"""Which plugin answers which hook: the per-conf tables the session dispatches through.

:func:`build_hooks` reads the tiers of a conf (plugin instances, their switches set) once and returns a
:class:`Hooks`: for every extension point of :class:`~extender.framework.plugin.Plugin`, the plugins that
take part in it, in tier order, and the flags the session's caches and batches rest on (every scorer
row-local, every capacity check additive, ...). A Hooks depends on the plugin instances and nothing else:
not on a snapshot, not on anything a cycle changes, so one is good for as long as its plugins are (the
registry builds fresh plugins for every cycle, :func:`extender.framework.cycle.run_cycle` builds their
Hooks with them).

Invariants:

- a plugin takes part in a hook when it implements it (overrides the base, whose answer is always "no
  opinion") and its conf entry leaves the hook switched on (:meth:`Plugin.takes_part`, Volcano's
  ``enableJobOrder: false`` and the like). Leaving out those that do not implement a hook changes no
  answer: the base's answer is the one every tier rule skips;
- order within a field is tier order, then the order of plugins within a tier, as the conf lists them:
  the tier rules (:mod:`extender.framework.plugin`) read it that way. The hooks whose rule looks at tiers
  (``enqueue`` with ``enqueue_permit``, ``preemptable``, ``reclaimable``) keep one tuple per tier;
- the flags are the conjunction of the plugins' promises over the plugins taking part in the hook, so a
  flag is true exactly when every plugin that answers keeps the promise (all of none is true).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, cast, runtime_checkable

from extender.core import fit
from extender.core.model import Pod
from extender.framework.plugin import Plugin, Scores
from extender.framework.row_scores import RowScorer

if TYPE_CHECKING:
    from extender.framework.session import Session

Plugins = tuple[Plugin, ...]
Tiered = tuple[Plugins, ...]


@runtime_checkable
class PodScorer(Protocol):
    """A ``node_score`` plugin that also scores by who the pod is (its preferences, its labels against
    other pods), not only by its request. Such scores are computed afresh for each placement over its
    candidate nodes (kube-scheduler normalises over the nodes that passed its filters) and never cached.
    Return None when the pod gives the plugin nothing to prefer, which must be the cheap common case.

    Whether it returns None must depend only on the pod's ``affinity``, ``constraints``, ``scoring`` and
    group and on whether inter-pod rules concern it (``ssn.pod_rules(pod)``), never on the candidates: the
    allocate action asks once for a run of a gang's pods alike in these and, on None, places the whole
    run as a batch."""

    def pod_score(self, ssn: Session, pod: Pod, candidates: fit.Mask) -> Scores | None: ...


def implements(plugin: Plugin, hook: str) -> bool:
    """Whether ``plugin`` implements ``hook`` (the base's has no opinion)."""
    return getattr(type(plugin), hook) is not getattr(Plugin, hook)


@dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """The plugins taking part in each hook, in tier order, and what they promise together."""

    tiers: Tiered
    plugins: Plugins  # every plugin, in tier order: opened and closed once a cycle

    # Order hooks: keys concatenated in this order.
    job_order: Plugins
    task_order: Plugins
    queue_order: Plugins
    namespace_order: Plugins
    # Vote hooks: the first rejection (in this order) rejects.
    allocatable: Plugins
    overused: Plugins
    preemptive: Plugins
    victim: Plugins
    # Tier-ruled hooks, one tuple per tier of the conf (empty where no plugin of the tier takes part).
    enqueue: Tiered
    enqueue_permit: Tiered
    preemptable: Tiered
    reclaimable: Tiered
    # Scores: summed in this order; those that also score per pod; the per-queue scores.
    node_score: Plugins
    pod_score: tuple[PodScorer, ...]
    # The node_score plugins that also score one row alone (RowScorer), in the same order.
    row_score: tuple[RowScorer, ...]
    queue_node_score: Plugins
    # Node predicates, intersected.
    node_mask: Plugins
    node_fit: Plugins
    node_limit: Plugins
    pod_fit: Plugins
    # Listeners told of every tentative placement, eviction and undo.
    placed: Plugins
    # The first answer decides.
    gang_domains: Plugins
    sub_group_domains: Plugins

    # Every node_score plugin sets Plugin.row_local_scores: scores may be cached per request vector and
    # refreshed per changed row, and a run of identical pods may be scored on hypothetical rows.
    row_local_scores: bool
    # Every allocatable plugin sets Plugin.additive_allocatable: one check stands for a run of pods.
    additive_allocatable: bool
    # Every queue_order plugin sets Plugin.local_queue_order: a queue's key is kept while its usage is.
    local_queue_order: bool
    # Every job_order plugin sets Plugin.static_job_order: a group's key is computed once a cycle.
    static_job_order: bool
    # Every pod_fit plugin sets Plugin.fit_follows_evictions: preempt and reclaim look for victims on the
    # nodes pod_fit refuses as they are, and ask it again once the victims are gone.
    pod_fit_follows_evictions: bool

    @property
    def batchable(self) -> bool:
        """Whether a run of a gang's identical pods may be placed as one batch (see
        :func:`extender.framework.place.place_run`): hypothetical rows scored, one capacity check."""
        return self.row_local_scores and self.additive_allocatable


# The hooks whose plugins are listed in tier order, and those kept one tuple per tier.
_FLAT: Final = (
    "job_order",
    "task_order",
    "queue_order",
    "namespace_order",
    "allocatable",
    "overused",
    "preemptive",
    "victim",
    "node_score",
    "queue_node_score",
    "node_mask",
    "node_fit",
    "node_limit",
    "pod_fit",
    "placed",
    "gang_domains",
    "sub_group_domains",
)
_TIERED: Final = ("enqueue", "enqueue_permit", "preemptable", "reclaimable")


@dataclass(frozen=True, slots=True)
class HookLayout:
    """Which plugins take part in each hook, by position (tier, place in the tier), and the flags: all a
    :class:`Hooks` is made of besides the instances. It depends on the plugins' classes and their conf
    entries only (:meth:`Plugin.takes_part` reads nothing else), so a conf computes it once and every
    cycle's fresh plugins are dealt into it (:func:`hooks_from`)."""

    # Positions in the plugins listed tier after tier (a cycle's fresh plugins are dealt by them).
    flat: Mapping[str, tuple[int, ...]]
    tiered: Mapping[str, tuple[tuple[int, ...], ...]]
    pod_score: tuple[int, ...]
    row_score: tuple[int, ...]
    row_local_scores: bool
    additive_allocatable: bool
    local_queue_order: bool
    static_job_order: bool
    pod_fit_follows_evictions: bool


def _takes(p: Plugin, hook: str) -> bool:
    return p.takes_part(hook) and implements(p, hook)


def hook_layout(tiers: Sequence[Sequence[Plugin]]) -> HookLayout:
    """The layout of ``tiers`` (see the module docstring for who takes part in what)."""
    placed = list(enumerate(p for tier in tiers for p in tier))

    def part(hook: str) -> list[Plugin]:
        return [p for _, p in placed if _takes(p, hook)]

    node_score = part("node_score")
    return HookLayout(
        flat={h: tuple(at for at, p in placed if _takes(p, h)) for h in _FLAT},
        tiered={
            h: tuple(tuple(i for i, p in enumerate(tier) if _takes(p, h)) for tier in tiers) for h in _TIERED
        },
        pod_score=tuple(at for at, p in placed if _takes(p, "node_score") and isinstance(p, PodScorer)),
        # (A runtime Protocol check walks the protocol's members: once per conf, not every cycle.)
        row_score=tuple(at for at, p in placed if _takes(p, "node_score") and isinstance(p, RowScorer)),
        row_local_scores=all(p.row_local_scores for p in node_score),
        additive_allocatable=all(p.additive_allocatable for p in part("allocatable")),
        local_queue_order=all(p.local_queue_order for p in part("queue_order")),
        static_job_order=all(p.static_job_order for p in part("job_order")),
        pod_fit_follows_evictions=all(p.fit_follows_evictions for p in part("pod_fit")),
    )


def hooks_from(layout: HookLayout, tiers: Sequence[Sequence[Plugin]]) -> Hooks:
    """The Hooks of ``tiers``: fresh plugins of the conf ``layout`` was computed for. (Every cycle deals
    its fresh plugins so: list comprehensions over positions, no generator per hook.)"""
    frozen = tuple([tuple(tier) for tier in tiers])
    plugins = tuple([p for tier in frozen for p in tier])

    def pick(at: tuple[int, ...]) -> Plugins:
        return tuple([plugins[i] for i in at])

    def tiered(hook: str) -> Tiered:
        at = layout.tiered[hook]
        return tuple([tuple([tier[i] for i in rows]) for tier, rows in zip(frozen, at, strict=True)])

    flat = layout.flat
    return Hooks(
        tiers=frozen,
        plugins=plugins,
        job_order=pick(flat["job_order"]),
        task_order=pick(flat["task_order"]),
        queue_order=pick(flat["queue_order"]),
        namespace_order=pick(flat["namespace_order"]),
        allocatable=pick(flat["allocatable"]),
        overused=pick(flat["overused"]),
        preemptive=pick(flat["preemptive"]),
        victim=pick(flat["victim"]),
        enqueue=tiered("enqueue"),
        enqueue_permit=tiered("enqueue_permit"),
        preemptable=tiered("preemptable"),
        reclaimable=tiered("reclaimable"),
        node_score=pick(flat["node_score"]),
        pod_score=cast(tuple[PodScorer, ...], pick(layout.pod_score)),
        row_score=cast(tuple[RowScorer, ...], pick(layout.row_score)),
        queue_node_score=pick(flat["queue_node_score"]),
        node_mask=pick(flat["node_mask"]),
        node_fit=pick(flat["node_fit"]),
        node_limit=pick(flat["node_limit"]),
        pod_fit=pick(flat["pod_fit"]),
        placed=pick(flat["placed"]),
        gang_domains=pick(flat["gang_domains"]),
        sub_group_domains=pick(flat["sub_group_domains"]),
        row_local_scores=layout.row_local_scores,
        additive_allocatable=layout.additive_allocatable,
        local_queue_order=layout.local_queue_order,
        static_job_order=layout.static_job_order,
        pod_fit_follows_evictions=layout.pod_fit_follows_evictions,
    )


def build_hooks(tiers: Sequence[Sequence[Plugin]]) -> Hooks:
    """The hook tables of the plugins of ``tiers`` (see the module docstring)."""
    return hooks_from(hook_layout(tiers), tiers)
