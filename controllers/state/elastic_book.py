"""What each of pumice's PodGroups holds beyond its ``minResources``, kept from one cycle to the next:
:class:`ElasticBook`.

Enqueue's capability check (proportion's and capacity's ``jobEnqueueable``) counts, per queue, what
running groups hold past their minimum as room (Volcano's elastic resources; see
:meth:`extender.framework.promises.Promises.elastic`). Worked out from the snapshot, that is a walk over
every pod on a node, in every cycle whose enqueue meets a capability: the simulator's main cost with a
queue at its cap. A group's figure changes only when one of its pods, its PodGroup, one of its plans or
the set of nodes changes, so the cache keeps it per group and works out again only the groups told
(:meth:`touch`) since the last snapshot; every group, when the nodes changed.

The rule is the snapshot's (``Residents.all`` and ``_elastic_by_queue``), per group: a pod of ours that is
not finished nor being deleted counts if it is bound to a node the cache holds, or waits with a plan on
one; a group without a PodGroup counts nothing (an implicit group's minimum is its one pod's requests).
A PodGroup whose members include pods without a group name (an implicit key that a PodGroup also has)
is read differently by the snapshot depending on which pods are in it: the book then gives no figure
(``None``), and the cycle walks the pods as before.

The snapshot is given the sums per queue. Every amount summed is positive, so a queue's sum has an amount
in one of the snapshot's resource columns exactly when one of its groups does: the per-group walk's "a
group counts where it is past somewhere" gives the same queues and the same vectors.

Invariant: after :meth:`refresh`, each queue's sum is that of its groups' figures, each group's as the
snapshot's formula gives it (``tests/simulate/test_fast_paths.py`` compares the two in every cycle of
random traces).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from extender.core.model import GroupKey, Pod, PodGroup, PodUID

Past = tuple[str, dict[str, int]]  # (the group's queue, what it holds past its minimum, positive amounts)


class ElasticBook:
    def __init__(self) -> None:
        self._past: dict[GroupKey, Past] = {}
        self._by_queue: dict[str, dict[str, int]] = {}  # the sums of ``_past`` per queue (no zeros)
        self._dirty: set[GroupKey] = set()
        self._unsure: set[GroupKey] = set()
        self._nodes_version = -1

    def touch(self, key: GroupKey | None) -> None:
        """Something ``key``'s figure reads changed (a pod, its PodGroup, a plan)."""
        if key is not None:
            self._dirty.add(key)

    def touch_all(self, keys: Iterable[GroupKey | None]) -> None:
        for key in keys:
            self.touch(key)

    def refresh(
        self,
        members: Mapping[GroupKey, Collection[PodUID]],
        pods: Mapping[PodUID, Pod],
        podgroups: Mapping[GroupKey, PodGroup],
        plan_of: Callable[[PodUID], str | None],
        nodes: Collection[str],
        nodes_version: int,
    ) -> dict[str, dict[str, int]] | None:
        """The figures of the groups touched since the last call worked out again (every group's if
        ``nodes_version`` moved); a copy of their sums per queue, or None when some group's cannot be told
        here (see the module docstring)."""
        if nodes_version != self._nodes_version:
            self._nodes_version = nodes_version
            self._dirty = set(members) | set(self._past) | self._unsure
        for key in self._dirty:
            old = self._past.pop(key, None)
            if old is not None:
                self._add(old, -1)
            self._unsure.discard(key)
            g = podgroups.get(key)
            uids = members.get(key, ())
            if g is None or not uids:
                continue
            held: dict[str, int] = {}
            for uid in uids:
                p = pods[uid]
                if not p.group_name:
                    self._unsure.add(key)
                if p.terminal or p.deleting:
                    continue
                node = p.node_name or plan_of(uid)
                if node is None or node not in nodes:
                    continue
                for name, v in p.requests.items():
                    held[name] = held.get(name, 0) + v
            want = g.min_resources
            past = {n: v - want.get(n, 0) for n, v in held.items() if v > want.get(n, 0)}
            if past:
                self._past[key] = (g.queue, past)
                self._add(self._past[key], 1)
        self._dirty = set()
        return None if self._unsure else {q: dict(v) for q, v in self._by_queue.items()}

    def _add(self, past: Past, sign: int) -> None:
        queue, amounts = past
        total = self._by_queue.setdefault(queue, {})
        for name, v in amounts.items():
            left = total.get(name, 0) + sign * v
            if left:
                total[name] = left
            else:
                del total[name]
        if not total:
            del self._by_queue[queue]
