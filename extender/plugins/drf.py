"""drf: Dominant Resource Fairness between jobs and, with ``enableHierarchy``, between queues (HDRF).

A dominant share is the largest, over cpu, memory and extended resources (not the ``pods`` slot, as
Volcano's), of what is held divided by the cluster's allocatable; a resource no node offers counts as a
share of 1 once any of it is held (Volcano's ``helpers.Share``).

- job order: the job whose pods hold the smallest dominant share when the cycle opens goes first;
- preemptable: a running pod may be evicted for a pod of another job (of its queue, the preempt action's
  choice) when its job's share without it stays at least the preemptor job's share with the preemptor,
  within Volcano's 1e-6. A job's victims in one answer add up: each is judged with the ones before it gone.
  "Holds" means bound and not leaving (nor evicted this cycle), or planned;
- ``enableHierarchy: true``: queues are ordered by hierarchical DRF over the queue tree (below);
- ``enableNamespaceOrder: true``: namespace fair share (Volcano's namespace order, up to v1.7), below.

Namespace fair share. A namespace's share is the dominant share of what its pods of ours hold (bound and
not finished, or planned), kept current as the cycle places and evicts; its weight is the largest
``volcano.sh/namespace.weight`` any of its ResourceQuotas gives in ``spec.hard`` (1 without). Within a
queue, the jobs of the namespace with the lowest ``share / weight`` go first (the framework's namespace
order, see :mod:`extender.framework.lines`), so namespaces sharing a queue take turns by weight. In
``preempt``, a victim of another namespace is taken when the preemptor's namespace, with the preemptor,
stays below the victim's namespace without the victim (weighted), refused when it would be above it by more
than 1e-6, and judged by job share as above when the two are equal (Volcano's order of the two rules).
Volcano served namespaces before queues (a namespace first, then its fairest queue); pumice keeps queues
first, so queue shares and capabilities decide as everywhere else, and orders namespaces inside a queue.
Volcano turned it on by default and removed it in v1.8; here it is off unless set. Its cost is a walk over
the pods on nodes when the cycle opens.

The queue tree. A queue's place is its ``volcano.sh/hierarchy`` annotation ("root/sci/dev": the first
segment is the root, whatever its name) with ``volcano.sh/hierarchy-weights`` ("1/8/2", one per segment;
a missing, unreadable or below-1 weight counts 1), as Volcano's; without the annotation, its
``spec.parent`` chain up to the ``root`` queue (or a queue without a parent) with each queue's
``spec.weight``. Each queue hangs its own usage (held and planned, as ``ssn.queue_used``) as a leaf of
weight 1 under its node. Bottom up, as Volcano's HDRF: a node's usage is the sum of its children's, each
non-empty, unsaturated child first rescaled to the smallest such child's share (so siblings that use
different resources do not add up to a share none of them has), saturated children counted as they are;
a node is saturated when all its children are. A leaf is saturated when its queue has been given all its
waiting pods ask, or one of them asks for a resource the cluster has none of left. Two queues compare at
the first level where their paths part: an unsaturated node before a saturated one, then the lower
``share / weight`` first (Volcano's ``compareQueues``). Job order within a queue stays by job share.

Deliberate differences from Volcano:

- HDRF leaves are queues, not jobs. Volcano hangs every job under its queue's node and rescales jobs like
  queues, so a queue with one job that holds little looks poor however much its other jobs hold: a queue
  could buy more of the cluster by splitting its work into more jobs. Here a queue's standing is what it
  holds. A leaf is saturated when all its demand is met, where Volcano's job leaf is as soon as one
  resource is (wrong for a job whose tasks ask for different resources).
- A queue without the annotation takes its place from ``spec.parent``/``spec.weight``; Volcano puts
  such queues' jobs straight under the root and calls any two such queues equal.
- When two queues' paths tie all the way down the shorter one, the shorter goes first; Volcano calls
  them equal, which no sort key can say (it happens with a queue that has both jobs and child queues).
- A candidate that is refused does not count as gone for the next candidates of its job; Volcano's
  in-place subtraction counts it, refusing a smaller victim behind a refused bigger one.
- Volcano also answers ``reclaimable`` with HDRF; pumice does not yet (proportion and capacity do).

Enable with::

    - name: drf
      enablePreemptable: true   # optional, the default; false leaves job order only (Volcano's default)
      enableHierarchy: true     # optional: HDRF queue order; off unless set
      enableNamespaceOrder: true  # optional: namespace fair share within a queue; off unless set
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.api.labels import ROOT_QUEUE
from extender.core.model import GroupKey, Pod, PodGroup, PodPhase, Queue
from extender.core.quota import DEFAULT_NAMESPACE_WEIGHT, namespace_weight
from extender.core.resources import Vector
from extender.core.snapshot import Snapshot, pod_group_key
from extender.framework.plugin import Plugin
from extender.framework.session import Session

_FINISHED: Final = (PodPhase.SUCCEEDED, PodPhase.FAILED)

# Shares this close are equal (Volcano's shareDelta): float noise must not decide an eviction.
SHARE_DELTA: Final = 1e-6

Floats = npt.NDArray[np.float64]


class DrfPlugin(Plugin):
    name = "drf"
    # Job shares are those of what groups held when the cycle opened.
    static_job_order = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)
        self._shares: dict[GroupKey, float] = {}
        self._total: Floats = np.zeros(0)
        # Columns shares are taken over (all but the pods slot), those of them some node offers, the others.
        self.shared: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._offered: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._unoffered: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._tree: _Tree | None = None
        # Namespace fair share: what each namespace held when the cycle opened, and its weight.
        self._ns_held: dict[str, Vector] = {}
        self._ns_weight: dict[str, int] = {}

    @property
    def hierarchy(self) -> bool:
        # Off unless set, as Volcano's EnabledHierarchy (a switch, not an argument).
        return self.switches.get("enableHierarchy", False)

    @property
    def namespace_order_enabled(self) -> bool:
        # Off unless set: Volcano >= 1.8 has no namespace order, and confs written for it expect none.
        return self.switches.get("enableNamespaceOrder", False)

    def takes_part(self, hook: str) -> bool:
        # Without the hierarchy drf has no queue order: it must not cost the session its per-queue key cache.
        if hook == "queue_order" and not self.hierarchy:
            return False
        if hook == "namespace_order" and not self.namespace_order_enabled:
            return False
        return super().takes_part(hook)

    def open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        total = ssn.total.astype(np.float64)
        self.shared = shared = np.array([n != "pods" for n in snap.index.names], dtype=np.bool_)
        self._offered = shared & (total > 0)
        self._unoffered = shared & (total <= 0)
        self._total = np.where(total > 0, total, 1.0)
        self._shares = self._job_shares(snap)
        self._tree = _Tree(ssn, self) if self.hierarchy else None
        if self.namespace_order_enabled:
            self._ns_held, self._ns_weight = _namespaces(ssn)

    def _job_shares(self, snap: Snapshot) -> dict[GroupKey, float]:
        """Every group's :meth:`share` of what its pods on nodes hold, for all groups in a few array
        operations (a cycle over a busy cluster opens with thousands): the sums are of integers, and each
        share divides and compares the same floats :meth:`share` does, so the answers are the same."""
        keys = list(snap.members)
        rows: list[int] = []  # rows of ``snap.requests``, group after group
        of: list[int] = []  # per row: its group (non-decreasing)
        holders: list[int] = []  # the groups with a pod holding resources
        loose: list[tuple[int, Vector]] = []  # (group, vector) of pods without a row
        pods, request_row = snap.pods, snap.request_row
        for i, key in enumerate(keys):
            # (Pod.holds_resources written out: this runs over every pod of every group.)
            holding = [u for u in snap.members[key] if (p := pods[u]).node_name and p.phase not in _FINISHED]
            if not holding:
                continue
            holders.append(i)
            for u in holding:
                row = request_row.get(u)
                if row is None:
                    loose.append((i, snap.request(u)))
                else:
                    rows.append(row)
                    of.append(i)
        held: npt.NDArray[np.int64] = np.zeros((len(keys), len(snap.index)), dtype=np.int64)
        if rows:
            group = np.asarray(of)
            starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
            held[group[starts]] = np.add.reduceat(snap.requests[rows], starts, axis=0)
        for i, v in loose:
            held[i] += v
        part = (held[:, self._offered] / self._total[self._offered]).max(axis=1, initial=0.0)
        over = (part < 1.0) & (held[:, self._unoffered] > 0).any(axis=1)
        shares = np.where(over, 1.0, part)
        out = dict.fromkeys(keys, 0.0)  # (what nothing held comes to, without the arithmetic)
        for i, share in zip(holders, shares[holders].tolist(), strict=True):
            out[keys[i]] = share
        return out

    def share(self, held: npt.NDArray[Any]) -> float:
        """The dominant share of ``held`` (a resource vector) in this cycle's cluster."""
        part = float((held[self._offered] / self._total[self._offered]).max(initial=0.0))
        if part < 1.0 and (held[self._unoffered] > 0).any():
            return 1.0
        return part

    def job_order(self, ssn: Session, group: PodGroup) -> tuple[float]:
        return (self._shares.get(group.key, 0.0),)

    def namespace_holds(self, ssn: Session, namespace: str) -> Vector:
        """What ``namespace``'s pods of ours hold now: at the cycle's start, plus what it took since."""
        held = self._ns_held.get(namespace)
        delta = ssn.namespace_delta.get(namespace)
        if held is None:
            return np.zeros(len(self._total), dtype=np.int64) if delta is None else delta
        return held if delta is None else held + delta

    def weighted(self, namespace: str, held: Vector) -> float:
        """The dominant share of ``held`` divided by ``namespace``'s weight."""
        return self.share(held) / self._ns_weight.get(namespace, DEFAULT_NAMESPACE_WEIGHT)

    def namespace_order(self, ssn: Session, namespace: str) -> tuple[float]:
        return (self.weighted(namespace, self.namespace_holds(ssn, namespace)),)

    def queue_order(self, ssn: Session, queue: Queue) -> tuple[tuple[tuple[bool, float], ...]]:
        # One element however deep the queue sits: keys of the plugins after drf must stay aligned.
        return (() if self._tree is None else self._tree.key(ssn, queue.name),)

    def preemptable(self, ssn: Session, preemptor: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        key = pod_group_key(preemptor)
        if key not in ssn.snapshot.groups:
            return []  # no PodGroup, no share to weigh (Volcano: no victims)
        mine = self.share(_holding(ssn, key) + ssn.vector(preemptor.uid))
        by_ns = self.namespace_order_enabled
        ns_mine = 0.0
        if by_ns:
            ns = preemptor.namespace
            ns_mine = self.weighted(ns, self.namespace_holds(ssn, ns) + ssn.vector(preemptor.uid))
        running = ssn.running
        left: dict[GroupKey, Vector] = {}
        ns_left: dict[str, Vector] = {}
        victims: list[Pod] = []
        for c in candidates:
            r = running.by_uid.get(c.uid)
            if r is None:
                continue  # not a running pod of ours: no job to weigh
            v = running.vector(c)
            held = left.get(r.group)
            if held is None:
                held = left[r.group] = _holding(ssn, r.group)
            ns_after: Vector | None = None
            if by_ns and c.namespace != preemptor.namespace:
                # Namespaces first (Volcano's order): the richer namespace gives, the poorer keeps.
                ns_held = ns_left.get(c.namespace)
                ns_after = (self.namespace_holds(ssn, c.namespace) if ns_held is None else ns_held) - v
                ns_theirs = self.weighted(c.namespace, ns_after)
                if ns_mine - ns_theirs > SHARE_DELTA:
                    continue
                taken = ns_mine < ns_theirs and ns_theirs - ns_mine > SHARE_DELTA
            else:
                taken = False
            if not taken:
                theirs = self.share(held - v)
                taken = mine < theirs or abs(mine - theirs) <= SHARE_DELTA
            if taken:
                victims.append(c)
                left[r.group] = held - v
                if ns_after is not None:
                    ns_left[c.namespace] = ns_after
        return victims


def _namespaces(ssn: Session) -> tuple[dict[str, Vector], dict[str, int]]:
    """What each namespace's pods of ours hold as the cycle opens (bound and not finished, or planned:
    every pod on a node, not only the snapshot's), and each namespace's weight from its quotas."""
    snap = ssn.snapshot
    ours = [p for p, _ in snap.residents.all() if p.scheduler_name in snap.scheduler_names]
    held: dict[str, Vector] = {}
    if ours:
        matrix = snap.index.matrix([p.requests for p in ours])
        rows: dict[str, list[int]] = {}
        for i, p in enumerate(ours):
            rows.setdefault(p.namespace, []).append(i)
        held = {ns: matrix[r].sum(axis=0) for ns, r in rows.items()}
    weights = {ns: namespace_weight(quotas) for ns, quotas in snap.quotas.items()}
    return held, weights


def _holding(ssn: Session, key: GroupKey) -> Vector:
    """What group ``key`` holds now: running pods not being evicted, plus waiting pods with a plan."""
    running = ssn.running
    snap = ssn.snapshot
    out: Vector = np.zeros(len(snap.index), dtype=np.int64)
    for r in running.members.get(key, ()):
        if r.pod.uid not in ssn.evicting:
            out += running.vector(r.pod)
    planned = [u for u in snap.members.get(key, ()) if u in ssn.plans and snap.pods[u].waiting]
    if planned:
        out += snap.request_sum(planned)
    return out


class _Tree:
    """The HDRF tree of one cycle: its shape fixed at ``open``, its shares brought up to date when queue
    usage changes (the session replaces a queue's usage array on every change, so identity tells which
    leaves changed; only they and their ancestors are recomputed). Which resources are used up is read
    from the free capacity then (placements and evictions change both); when that changes, every leaf's
    saturation may, and the whole tree is recomputed."""

    def __init__(self, ssn: Session, drf: DrfPlugin) -> None:
        self._drf = drf
        snap = ssn.snapshot
        self._weight: list[float] = [1.0]  # node 0 is the root
        self._parent: list[int] = [0]
        self._children: list[list[int]] = [[]]
        index: dict[tuple[str, ...], int] = {}
        self._leaf: dict[str, int] = {}
        self._path: dict[str, tuple[int, ...]] = {}
        # In name order, so the first queue to name a node sets its weight, whatever the others say.
        for name in sorted(snap.queues):
            at, path = 0, []
            prefix: tuple[str, ...] = ()
            for segment, weight in _place(snap.queues, snap.queues[name]):
                prefix = (*prefix, segment)
                node = index.get(prefix)
                if node is None:
                    node = index[prefix] = self._add(at, weight)
                path.append(node)
                at = node
            self._leaf[name] = leaf = self._add(at, 1.0)
            # A queue at the root itself (the ``root`` queue) is compared by its own usage.
            self._path[name] = tuple(path) or (leaf,)
        # Children are created after their parents: the reverse creation order is bottom up. The root's
        # own share is in no key.
        self._bottom_up = [n for n in range(len(self._children) - 1, 0, -1) if self._children[n]]
        self._queues = tuple(self._leaf)
        # What each queue asks for: what it holds and plans, plus what its unplanned pods wait for.
        r = len(snap.index)
        demand = {q: np.zeros(r, dtype=np.int64) for q in self._queues}
        for q, held in snap.queue_held.items():
            if q in demand:
                demand[q] = demand[q] + held
        for key, uids in snap.members.items():
            q = snap.groups[key].queue
            if q in demand:
                waiting = [u for u in uids if snap.pods[u].waiting and u not in snap.plans]
                if waiting:
                    demand[q] = demand[q] + snap.request_sum(waiting)
        for q, v in snap.aside_waiting.items():
            if q in demand:
                # Only what still waits for a node: the planned part is in queue_held already.
                planned = snap.aside_planned.get(q)
                demand[q] = demand[q] + (v if planned is None else v - planned)
        self._demand = demand
        n = len(self._children)
        self._held: Floats = np.zeros((n, r))
        self._share = [0.0] * n
        self._saturated = [False] * n
        self._seen: tuple[Vector | None, ...] | None = None
        self._exhausted: npt.NDArray[np.bool_] | None = None
        self._keys: dict[str, tuple[tuple[bool, float], ...]] = {}

    def _add(self, parent: int, weight: float) -> int:
        self._weight.append(weight)
        self._parent.append(parent)
        self._children.append([])
        node = len(self._children) - 1
        self._children[parent].append(node)
        return node

    def key(self, ssn: Session, queue: str) -> tuple[tuple[bool, float], ...]:
        usage = tuple(map(ssn.queue_used.get, self._queues))
        if self._seen is None or not all(map(operator.is_, usage, self._seen)):
            self._update(ssn, usage)
        return self._keys.get(queue, ())

    def _update(self, ssn: Session, usage: tuple[Vector | None, ...]) -> None:
        drf = self._drf
        shared = drf.shared
        held, share, saturated = self._held, self._share, self._saturated
        # A resource the cluster has no room left of blocks whoever still asks for it.
        exhausted = (ssn.free.sum(axis=0) <= 0) & shared
        everything = self._exhausted is None or not np.array_equal(exhausted, self._exhausted)
        old = self._seen or (None,) * len(usage)
        dirty: set[int] = set()
        for q, used, before in zip(self._queues, usage, old, strict=True):
            if used is before and not everything:
                continue
            if used is None:
                used = np.zeros(len(shared), dtype=np.int64)
            leaf = self._leaf[q]
            held[leaf] = used
            share[leaf] = drf.share(used)
            want = (self._demand[q] > used) & shared
            saturated[leaf] = not want.any() or bool((want & exhausted).any())
            at = self._parent[leaf]
            while at and at not in dirty:
                dirty.add(at)
                at = self._parent[at]
        for node in self._bottom_up:
            if node not in dirty:
                continue
            kids = self._children[node]
            live = [k for k in kids if share[k] != 0]
            low = min(min((share[k] for k in live if not saturated[k]), default=1.0), 1.0)
            scale = np.array([1.0 if saturated[k] else low / share[k] for k in live])
            total = (held[live] * scale[:, None]).sum(axis=0)
            held[node] = total
            share[node] = drf.share(total)
            saturated[node] = all(saturated[k] for k in kids)
        weight = self._weight
        self._keys = {
            q: tuple((saturated[x], share[x] / weight[x]) for x in path) for q, path in self._path.items()
        }
        self._seen = usage
        self._exhausted = exhausted


def _place(queues: Mapping[str, Queue], q: Queue) -> list[tuple[str, float]]:
    """The path from the root to ``q``'s node: (segment, weight) per level below the root."""
    if q.hierarchy:
        segments = q.hierarchy.split("/")[1:]  # Volcano skips the first: the root
        weights = q.hierarchy_weights.split("/") if q.hierarchy_weights else []
        return [(s, _weight(weights[i + 1] if i + 1 < len(weights) else "")) for i, s in enumerate(segments)]
    if q.name == ROOT_QUEUE:
        return []
    chain = [(q.name, max(1.0, float(q.weight)))]
    seen = {q.name}
    at = q.parent
    while at and at != ROOT_QUEUE and at not in seen:
        seen.add(at)
        parent = queues.get(at)
        if parent is None:
            chain.append((at, 1.0))  # a parent that does not exist (yet): a node of its own
            break
        chain.append((at, max(1.0, float(parent.weight))))
        at = parent.parent
    return chain[::-1]


def _weight(text: str) -> float:
    try:
        w = float(text)
    except ValueError:
        return 1.0
    return w if math.isfinite(w) and w >= 1.0 else 1.0
