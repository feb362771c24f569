"""network-topology-aware: a gang with ``networkTopology`` is placed whole inside one HyperNode.

Mirrors Volcano's ``network-topology-aware`` plugin with its allocate action's HyperNode gradients. A
PodGroup's ``spec.networkTopology`` (a vcjob's is copied onto its PodGroup; other workloads use the
``volcano.sh/network-topology-mode`` and ``volcano.sh/network-topology-highest-tier`` annotations, which
their PodGroup inherits) asks for it:

- ``mode: hard`` with ``highestTierAllowed: N`` (or ``highestTierName``, the tier whose HyperNodes carry
  that ``tierName``): the gang minimum goes inside one HyperNode of tier N or lower, the lowest tier
  first; if none can hold it, the group waits and its PodGroup says which tier was tried and what was
  short, e.g. ``network topology hard, highestTierAllowed 1: no tier-1 hypernode has room for 4 pods of
  cpu 8 (best leaf-a: 3)``. Neither set: any tier (still one HyperNode);
- ``mode: soft``: the lowest tier that holds it, any tier; when none does, the gang is placed over the
  whole cluster as without the rule.

Within a tier, HyperNodes are tried fullest first (HyperNode-level binpack: the share of their
allocatable in use, averaged over the resources the gang asks for), so a small gang fills a leaf that is
already in use and whole leaves stay free for large gangs. Before a HyperNode is tried, two necessary
conditions on its free capacity are checked at once for every HyperNode (enough copies of each distinct
pod request on its nodes, and the gang's total request within its free total): a HyperNode failing them
could not hold the gang anyway, so skipping it changes no outcome, only what trying would cost. The
rest are tried one after the other, each in a statement discarded on failure; the first that holds the
gang wins (Volcano dry-runs every HyperNode of a tier and keeps the best by its scores; our order is that
score, fixed before the tries). Pods of the group already placed or running pin it: only HyperNodes
holding all of them are candidates (Volcano's allocated HyperNode).

HyperNodes come from the HyperNode objects (:mod:`extender.core.hypernodes`) and, for a cluster without
them, from node labels named by the ``hypernode.discovery.labels`` argument (comma-separated, lowest tier
first: ``leaf,spine`` makes every value of ``leaf`` a tier-1 HyperNode and every value of ``spine`` a
tier-2 one). Objects and labels may be combined; an object wins over a discovered one of the same name.

Extra pods past the gang minimum (elastic jobs) of a hard gang stay inside the largest HyperNode within
the limit that holds the pods already placed. Preempt and reclaim look for a hard gang's victims inside
one HyperNode at a time, every HyperNode within the limit in the same order (``GangDomains.within``).

A ``subGroupPolicy`` entry's own ``networkTopology`` is served the same way for each of its sub-groups
(``sub_group_domains``): the HyperNodes within its limit that could hold the sub-group's pods beside those
of it already placed, fullest first, tried inside the gang's own HyperNode (see
:mod:`extender.framework.subgroup_allocate`). ``weight``, ``hypernode.binpack.*`` and
``hypernode.gradient.evict.max-hypernodes`` are accepted for compatibility with Volcano confs and not used
(the order within a tier is the fill above, and how many HyperNodes are tried for victims is fixed).

Enable with::

    - name: network-topology-aware
      arguments:
        hypernode.discovery.labels: "topology.example.com/leaf,topology.example.com/spine"  # optional
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.core.hypernodes import EMPTY_TREE, Tree
from extender.core.model import NetworkTopology, Pod, PodGroup
from extender.core.resources import describe
from extender.framework.arguments import ArgumentTable
from extender.framework.gangs import gang_need, gang_whole, ordered_waiting
from extender.framework.plugin import GangDomains, Plugin, Rows
from extender.framework.session import Session

NAME: Final = "network-topology-aware"


ARGUMENTS: Final = ArgumentTable(
    {
        # Volcano's scoring and eviction knobs, accepted and not used (see above).
        "weight": (int, 1),
        "hypernode.binpack.cpu": (int, 1),
        "hypernode.binpack.memory": (int, 1),
        "hypernode.binpack.resources": (str, ""),
        "hypernode.binpack.normal-pod.enable": (bool, True),
        "hypernode.binpack.normal-pod.fading": (float, 0.8),
        "hypernode.gradient.evict.max-hypernodes": (int, 0),
        # pumice's own: HyperNodes from node labels, lowest tier first.
        "hypernode.discovery.labels": (str, ""),
    },
    prefixes={"hypernode.binpack.resources.": int},
)


class NetworkTopologyAwarePlugin(Plugin):
    name = NAME
    argument_table = ARGUMENTS

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.labels: tuple[str, ...] = tuple(
            x.strip() for x in args["hypernode.discovery.labels"].split(",") if x.strip()
        )
        self.tree: Tree = EMPTY_TREE

    def open(self, ssn: Session) -> None:
        # Memoized on the snapshot's HyperNode set per node table: free unless nodes or HyperNodes changed.
        self.tree = ssn.snapshot.hypernodes.tree(ssn.snapshot.nodes, self.labels)

    def gang_domains(self, ssn: Session, group: PodGroup) -> GangDomains | None:
        nt = group.network_topology
        if nt is None:
            return None
        tree = self.tree
        if not nt.hard and not tree.domains:
            return None  # soft with no topology: the usual placement
        snap = ssn.snapshot
        members = [snap.pods[u] for u in snap.members.get(group.key, ())]
        need, task_need = gang_need(ssn, group, members)
        if gang_whole(ssn, group, members):
            return self._fence(ssn, members, self._limit(nt, tree)[0]) if nt.hard else None
        waiting = ordered_waiting(ssn, members, task_need)
        count = max(need, sum(task_need.values()))
        if len(waiting) < count:
            return None  # pods are missing: the usual path says so, whatever the domains
        return self._domains(ssn, nt, waiting[:count], members)

    def sub_group_domains(
        self, ssn: Session, topology: NetworkTopology, pods: Sequence[Pod], members: Sequence[Pod]
    ) -> GangDomains | None:
        if not topology.hard and not self.tree.domains:
            return None
        return self._domains(ssn, topology, pods, members, after=True)

    def _domains(
        self,
        ssn: Session,
        nt: NetworkTopology,
        pods: Sequence[Pod],
        members: Sequence[Pod],
        after: bool = False,
    ) -> GangDomains:
        """The HyperNodes within ``nt``'s limit that may hold ``pods`` beside ``members`` already placed,
        in the order to try them, with the refusal when none can. Within a tier, fullest first: by the
        fill a HyperNode has now, or (``after``, for a sub-group) would have with ``pods`` in it, as
        Volcano's HyperNode binpack score reads it (so a one-node HyperNode is filled before a half-empty
        larger one)."""
        tree = self.tree
        snap = ssn.snapshot
        limit, label = self._limit(nt, tree)
        head = f"network topology {label}"
        count = len(pods)
        if limit is None:
            return GangDomains((), False, f"{head}: no HyperNode has that tierName")
        allowed = [i for i, d in enumerate(tree.domains) if d.tier <= limit]
        if not allowed:
            return GangDomains(
                (),
                not nt.hard,
                f"{head}: no HyperNode of tier {limit} or lower exists "
                "(create HyperNode objects or set hypernode.discovery.labels)",
            )

        # Per distinct request: how many copies each node's free capacity takes, summed per domain.
        shapes: dict[bytes, tuple[npt.NDArray[np.int64], int]] = {}
        for p in pods:
            v = ssn.vector(p.uid)
            k = v.tobytes()
            shapes[k] = (v, shapes[k][1] + 1 if k in shapes else 1)
        free = np.maximum(ssn.free, 0)
        ok = np.ones(len(tree.domains), dtype=np.bool_)
        nothing = (np.zeros(free.shape[1], dtype=np.int64), 0)  # no pod to fit: only the pins count
        dominant, dominant_n = max(shapes.values(), key=lambda vn: vn[1], default=nothing)
        dominant_copies: npt.NDArray[np.int64] | None = None
        total = np.zeros(free.shape[1], dtype=np.int64)
        for v, n in shapes.values():
            total += n * v
            asked = np.flatnonzero(v > 0)
            if len(asked) == 0:
                continue
            copies = (free[:, asked] // v[asked]).min(axis=1)
            per_domain = tree.sums(copies)
            ok &= per_domain >= n
            if v is dominant:
                dominant_copies = per_domain
        free_sum = tree.sums(free)
        ok &= (free_sum >= total).all(axis=1)
        placed = self._placed_rows(ssn, members)
        if len(placed):
            holds = np.array([bool(np.isin(placed, d.rows).all()) for d in tree.domains], dtype=np.bool_)
            ok &= holds
        else:
            holds = np.ones(len(tree.domains), dtype=np.bool_)

        # HyperNode binpack: fullest first, over the resources the gang asks for.
        cols = np.flatnonzero((total > 0) & (np.asarray(snap.index.names) != "pods"))
        alloc_sum = tree.sums(snap.alloc[:, cols]).astype(np.float64)
        used = alloc_sum - free_sum[:, cols] + (total[cols] if after else 0)
        fill = (
            (used / np.where(alloc_sum > 0, alloc_sum, 1.0)).mean(axis=1) if len(cols) else np.zeros(len(ok))
        )
        rank = {i: (tree.domains[i].tier, -fill[i], i) for i in allowed}
        order = sorted((i for i in allowed if ok[i]), key=rank.__getitem__)
        candidates: list[tuple[str, Rows]] = [(tree.domains[i].name, tree.domains[i].rows) for i in order]
        # Preempt and reclaim make room: every HyperNode within the limit may do, in the same order.
        within = [
            (tree.domains[i].name, tree.domains[i].rows)
            for i in sorted((i for i in allowed if holds[i]), key=rank.__getitem__)
        ]
        if candidates:
            refusal = f"{head}: no HyperNode of tier {limit} or lower can hold its {count} pods"
        else:
            tiers = {tree.domains[i].tier for i in allowed}
            where = (
                f"tier-{min(tiers)} HyperNode" if len(tiers) == 1 else f"HyperNode of tier {limit} or lower"
            )
            best = ""
            if dominant_copies is not None:
                counts = dominant_copies.tolist()
                i = max(allowed, key=lambda i: (counts[i], -i))
                best = f" (best {tree.domains[i].name}: {counts[i]})"
            what = (
                describe({k: v for k, v in snap.index.to_map(dominant).items() if k != "pods"}) or "nothing"
            )
            pinned = f" beside its {len(placed)} placed pods" if len(placed) else ""
            shape = (
                f"{count} pods of {what}" if len(shapes) == 1 else f"{count} pods ({dominant_n} of {what})"
            )
            refusal = f"{head}: no {where} has room for {shape}{pinned}{best}"
        return GangDomains(candidates, not nt.hard, refusal, within)

    @staticmethod
    def _limit(nt: NetworkTopology, tree: Tree) -> tuple[int | None, str]:
        """The highest tier the gang may span (None: its ``highestTierName`` names no tier), and how the
        rule reads in a reason."""
        top = max(tree.tiers, default=0)
        if not nt.hard:
            return top, "soft"
        if nt.highest_tier_name:
            named = tree.tier_named(nt.highest_tier_name)
            where = "" if named is None else f" (tier {named})"
            return named, f"hard, highestTierName {nt.highest_tier_name}{where}"
        if nt.highest_tier is not None:
            return nt.highest_tier, f"hard, highestTierAllowed {nt.highest_tier}"
        return top, "hard"

    def _fence(self, ssn: Session, members: list[Pod], limit: int | None) -> GangDomains | None:
        """For a hard gang already whole: the largest HyperNode within the limit holding every placed
        pod, where its extra pods must stay (None when its pods already span more than that)."""
        placed = self._placed_rows(ssn, members)
        if limit is None or not len(placed):
            return None
        inside = [d for d in self.tree.domains if d.tier <= limit and bool(np.isin(placed, d.rows).all())]
        if not inside:
            return None
        d = max(inside, key=lambda d: (d.tier, len(d.rows)))
        return GangDomains(((d.name, d.rows),), False, "")

    @staticmethod
    def _placed_rows(ssn: Session, members: Sequence[Pod]) -> Rows:
        """Rows of the group's pods already on a node or planned: a HyperNode must hold them too."""
        pos = ssn.snapshot.node_pos
        rows: set[int] = set()
        for p in members:
            node = p.node_name if p.node_name and not p.terminal else ssn.plans.get(p.uid)
            if node is not None and node in pos:
                rows.add(pos[node])
        return np.asarray(sorted(rows), dtype=np.intp)
