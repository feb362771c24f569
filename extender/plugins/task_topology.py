"""task-topology: pack a job's roles that talk to each other onto the same nodes, spread the ones that
should not share, and place its roles in the order the job asks.

Mirrors Volcano's ``task-topology`` plugin. A job (its PodGroup; a vcjob's annotations are copied onto
its PodGroup by the job controller) says, by task (role) name:

- ``volcano.sh/task-topology-affinity: "ps,worker;chief"``: groups, ``;``-separated, of roles to pack
  together; a group of one role packs that role's pods together;
- ``volcano.sh/task-topology-anti-affinity: "worker"``: groups of roles to keep apart (a group of one:
  spread that role's pods);
- ``volcano.sh/task-topology-task-order: "ps,worker"``: the order roles are placed in.

A pod's role is its task name (``volcano.sh/task-spec``). Names are stripped of spaces and empty names
are skipped (``"ps,,worker;"`` is ``ps,worker``). An annotation that names a role the job has no pod of,
or a role twice in one group, makes the plugin ignore the job's annotations for the cycle: the reason is
kept in :attr:`TaskTopologyPlugin.ignored` (by group) and added to the job's reason when it is left
waiting; the job is scheduled as if it had none, never an error.

Each cycle (``open``), for every job with waiting pods and a topology, the pods of roles that take part
are sorted into *buckets*, Volcano's way: pods already on a node form one bucket per node; then each
waiting pod, in task order, joins the bucket it has the most affinity with (pods of affine roles in it
count +1, of anti-affine roles -1; a tie goes to the bucket asking least, counted as Volcano does:
millicores + MiB + 1000 per unit of other resources), or a new bucket when its best is negative. A
pod is then scored on a node (a PodScorer; the sum below times weight × 100 / the largest bucket):

    pods of its bucket on the node (bound, or placed in this cycle)
  - pods of the job on the node whose roles it is anti-affine with
  + waiting pods of its bucket
  - how many of the bucket's other waiting pods must be left out for the rest to fit the node's free room

so a bucket goes where it fits whole, its members follow the first one, and anti-affine pods avoid each
other's nodes. The pods the cycle places count at once: scores are computed from the session's plans at
each placement (the tentative ones of a gang included, an undone placement no longer counts).

Task order (a ``task_order`` key, after pod priority): a job's pods in buckets before the others, bigger
buckets first, older buckets first, and within a bucket by the task order, then by role kind
(self-anti-affinity, inter-affinity, self-affinity, inter-anti-affinity).

Deliberate differences from Volcano:

- the job's pods already on nodes count for anti-affinity (Volcano counts only the pods its session
  placed, so a restarted job's new workers could stack onto nodes its running workers hold);
- a task order alone orders the job's pods (Volcano applies it only to pods in buckets, so without an
  affinity the annotation does nothing);
- when a bucket does not fit a node whole, Volcano leaves out its other pods in map (random) order;
  pumice leaves out the last in line first, so the same snapshot scores the same;
- a job with a topology is scored pod by pod for all its pods (never batched): what a pod scores depends
  on where the pods before it went.

Enable with::

    - name: task-topology
      arguments:
        task-topology.weight: 10
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.api import labels as L
from extender.core.fit import Mask
from extender.core.model import GroupKey, Pod, PodUID
from extender.core.resources import Vector
from extender.core.snapshot import pod_group_key
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin, Rows, Scores
from extender.framework.result import Unschedulable
from extender.framework.session import Session

NAME: Final = "task-topology"
_MAX_NODE_SCORE: Final = 100.0
# Volcano's reqScore of a request: millicores, MiB, and other resources (counted here in whole units,
# in Volcano in milli-units) times 1000; pods do not count.
_REQ_SCALE: Final = {"cpu": 1.0, "memory": 1.0 / 2**20, "ephemeral-storage": 1.0 / 2**20, "pods": 0.0}

# How strongly a role's topology asks for a place early in its bucket (Volcano's affinityPriority).
_SELF_ANTI: Final = 4
_INTER_AFFINITY: Final = 3
_SELF_AFFINITY: Final = 2
_INTER_ANTI: Final = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTopology:
    """A job's task-topology annotations, parsed: groups of role names, and the task order."""

    affinity: tuple[tuple[str, ...], ...] = ()
    anti_affinity: tuple[tuple[str, ...], ...] = ()
    task_order: tuple[str, ...] = ()


def _groups(text: str) -> tuple[tuple[str, ...], ...]:
    out = []
    for part in text.split(";"):
        names = tuple(n for n in (s.strip() for s in part.split(",")) if n)
        if names:
            out.append(names)
    return tuple(out)


def _check(key: str, groups: Sequence[Sequence[str]], tasks: Collection[str]) -> None:
    for names in groups:
        seen: set[str] = set()
        for n in names:
            if n not in tasks:
                known = ", ".join(sorted(tasks)) or "none"
                raise ValueError(f"{key}: task {n!r} is not a task of the job (its tasks: {known})")
            if n in seen:
                raise ValueError(f"{key}: task {n!r} is listed twice in one group")
            seen.add(n)


def parse_task_topology(annotations: Mapping[str, str], tasks: Collection[str]) -> TaskTopology | None:
    """The topology ``annotations`` (a PodGroup's) give a job whose pods have task names ``tasks``; None
    without any of the annotations. Raises ValueError naming the annotation and the task at fault."""
    if not any(k in annotations for k in L.TASK_TOPOLOGY_ANNOTATIONS):
        return None
    affinity = _groups(annotations.get(L.TASK_TOPOLOGY_AFFINITY, ""))
    anti = _groups(annotations.get(L.TASK_TOPOLOGY_ANTI_AFFINITY, ""))
    order_text = annotations.get(L.TASK_TOPOLOGY_TASK_ORDER, "").replace(";", ",")
    order = tuple(n for g in _groups(order_text) for n in g)
    _check(L.TASK_TOPOLOGY_AFFINITY, affinity, tasks)
    _check(L.TASK_TOPOLOGY_ANTI_AFFINITY, anti, tasks)
    _check(L.TASK_TOPOLOGY_TASK_ORDER, (order,), tasks)
    return TaskTopology(affinity=affinity, anti_affinity=anti, task_order=order)


class _Rules:
    """A topology as relations between roles (Volcano's JobManager matrices)."""

    def __init__(self, topo: TaskTopology) -> None:
        self.self_affinity: set[str] = set()
        self.self_anti: set[str] = set()
        self.inter_affinity: dict[str, set[str]] = {}
        self.inter_anti: dict[str, set[str]] = {}
        self.priority: dict[str, int] = {}
        for groups, own, inter, own_kind, inter_kind in (
            (topo.affinity, self.self_affinity, self.inter_affinity, _SELF_AFFINITY, _INTER_AFFINITY),
            (topo.anti_affinity, self.self_anti, self.inter_anti, _SELF_ANTI, _INTER_ANTI),
        ):
            for names in groups:
                if len(names) == 1:
                    own.add(names[0])
                    self._mark(names[0], own_kind)
                    continue
                for n in names:
                    inter.setdefault(n, set()).update(m for m in names if m != n)
                    self._mark(n, inter_kind)
        # The first role named is placed first: it gets the largest number.
        self.order = {n: len(topo.task_order) - i for i, n in enumerate(topo.task_order)}

    def _mark(self, task: str, kind: int) -> None:
        self.priority[task] = max(self.priority.get(task, 0), kind)

    def affinity(self, task: str, counts: Mapping[str, int]) -> int:
        """Pods (``counts`` by role) ``task`` is affine with, less those it is anti-affine with."""
        out = 0
        for other, n in counts.items():
            if other == task:
                out += n * ((task in self.self_affinity) - (task in self.self_anti))
            else:
                near = other in self.inter_affinity.get(task, ())
                out += n * (near - (other in self.inter_anti.get(task, ())))
        return out

    def anti_roles(self, task: str) -> set[str]:
        out = set(self.inter_anti.get(task, ()))
        if task in self.self_anti:
            out.add(task)
        return out


@dataclass(slots=True)
class _Bucket:
    index: int
    pending: list[PodUID] = field(default_factory=list)  # waiting pods as the cycle opened, in line order
    roles: dict[str, int] = field(default_factory=dict)
    on_node: dict[int, int] = field(default_factory=dict)  # node row -> its pods bound there at open
    weight: float = 0.0  # Volcano's reqScore of the pending pods


@dataclass(slots=True)
class _Job:
    rules: _Rules
    task_of: dict[PodUID, str]
    buckets: list[_Bucket] = field(default_factory=list)
    bucket_of: dict[PodUID, int] = field(default_factory=dict)
    # Role -> node row -> the job's pods of that role on it when the cycle opened.
    bound: dict[str, dict[int, int]] = field(default_factory=dict)
    largest: int = 0


ARGUMENTS: Final = ArgumentTable({"task-topology.weight": (int, 1)})


class TaskTopologyPlugin(Plugin):
    name = NAME
    argument_table = ARGUMENTS
    row_local_scores = True  # node_score has no opinion: every score of its own is per pod

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.weight: int = args["task-topology.weight"]
        self._jobs: dict[GroupKey, _Job] = {}
        # Why a job's annotations were ignored this cycle, by group.
        self.ignored: dict[GroupKey, str] = {}

    def open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        self._jobs = {}
        self.ignored = {}
        names = snap.index.names
        # Volcano's reqScore weighs 1 millicore, 1 MiB and 1/1000 of any other unit alike.
        scale = np.array([_REQ_SCALE.get(n, 1000.0) for n in names], dtype=np.float64)
        for key, g in snap.groups.items():
            if not g.task_topology:
                continue
            members = [snap.pods[u] for u in snap.members.get(key, ())]
            if not any(p.waiting and p.uid not in ssn.plans for p in members):
                continue
            try:
                topo = parse_task_topology(g.task_topology, {p.task for p in members if p.task})
            except ValueError as e:
                self.ignored[key] = f"task-topology ignored: {e}"
                continue
            if topo is not None:
                self._jobs[key] = self._build(ssn, _Rules(topo), members, scale)

    def _build(
        self, ssn: Session, rules: _Rules, members: Sequence[Pod], scale: npt.NDArray[np.float64]
    ) -> _Job:
        """Sort the job's pods into buckets (Volcano's ConstructBucket)."""
        pos = ssn.snapshot.node_pos
        job = _Job(rules=rules, task_of={p.uid: p.task for p in members if p.task})
        placed: list[tuple[str, int, Pod]] = []
        waiting: list[Pod] = []
        for p in members:
            node = p.node_name if p.holds_resources else ssn.plans.get(p.uid, "")
            row = pos.get(node) if node else None
            if row is not None and p.task:
                by_row = job.bound.setdefault(p.task, {})
                by_row[row] = by_row.get(row, 0) + 1
            if p.task not in rules.priority:
                continue  # a role without topology: out of every bucket
            if row is not None:
                placed.append((node, row, p))
            elif p.waiting and p.uid not in ssn.plans:
                waiting.append(p)
        placed.sort(key=lambda t: (t[0], t[2].name))
        waiting.sort(key=lambda p: (-rules.order.get(p.task, 0), -rules.priority[p.task], p.name))
        by_node: dict[int, _Bucket] = {}
        for _, row, p in placed:
            b = by_node.get(row)
            if b is None:
                b = by_node[row] = self._new(job)
            b.roles[p.task] = b.roles.get(p.task, 0) + 1
            b.on_node[row] = b.on_node.get(row, 0) + 1
            job.largest = max(job.largest, len(b.pending) + sum(b.on_node.values()))
        for p in waiting:
            best: _Bucket | None = None
            most = 0
            for b in job.buckets:
                a = rules.affinity(p.task, b.roles)
                if best is None or a > most or (a == most and b.weight < best.weight):
                    best, most = b, a
            if best is None or most < 0:
                best = self._new(job)
            best.roles[p.task] = best.roles.get(p.task, 0) + 1
            best.pending.append(p.uid)
            best.weight += float(ssn.vector(p.uid) @ scale)
            job.bucket_of[p.uid] = best.index
            job.largest = max(job.largest, len(best.pending) + sum(best.on_node.values()))
        return job

    @staticmethod
    def _new(job: _Job) -> _Bucket:
        b = _Bucket(index=len(job.buckets))
        job.buckets.append(b)
        return b

    def close(self, ssn: Session) -> None:
        """A job left waiting whose annotations were ignored says so in its reason too."""
        for key, why in self.ignored.items():
            was = ssn.result.unschedulable.get(key)
            if was is not None:
                ssn.result.unschedulable[key] = Unschedulable(was.reason, f"{was.message}; {why}")

    def task_order(self, ssn: Session, pod: Pod) -> tuple[Any, ...] | None:
        job = self._jobs.get(pod_group_key(pod))
        if job is None:
            return None
        index = job.bucket_of.get(pod.uid)
        order = job.rules.order.get(pod.task, 0)
        if index is None:
            return (1, 0, 0, -order, 0)
        b = job.buckets[index]
        return (0, -len(b.pending), index, -order, -job.rules.priority.get(pod.task, 0))

    def node_score(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None = None
    ) -> Scores | None:
        return None

    def pod_score(self, ssn: Session, pod: Pod, candidates: Mask) -> Scores | None:
        job = self._jobs.get(pod_group_key(pod))
        if job is None or not self.weight:
            return None
        n = len(ssn.snapshot.nodes)
        index = job.bucket_of.get(pod.uid)
        if index is None:
            # Zeros, not None: whether a pod is scored must depend on its group only (see PodScorer).
            return np.zeros(n, dtype=np.float64)
        b = job.buckets[index]
        score = np.zeros(n, dtype=np.float64)
        for row, c in b.on_node.items():
            score[row] += c
        plans = ssn.plans
        pos = ssn.snapshot.node_pos
        anti = job.rules.anti_roles(pod.task)
        for role in anti:
            for row, c in job.bound.get(role, {}).items():
                score[row] -= c
        # The cycle's placements of the job's pods waiting at open: in the bucket they count for it, of an
        # anti-affine role against the node.
        left: list[PodUID] = []
        for other in b.pending:
            node = plans.get(other)
            if node is None:
                left.append(other)
            elif (at := pos.get(node)) is not None:
                score[at] += 1
        if anti:
            for other_b in job.buckets:
                for other in other_b.pending:
                    node = plans.get(other)
                    at = None if node is None else pos.get(node)
                    if at is not None and job.task_of.get(other) in anti:
                        score[at] -= 1
        score += len(left)
        others = [u for u in reversed(left) if u != pod.uid]
        if others:
            score -= self._left_out(ssn, pod.uid, others)
        score *= self.weight * _MAX_NODE_SCORE / max(job.largest, 1)
        return score

    @staticmethod
    def _left_out(ssn: Session, uid: PodUID, others: Sequence[PodUID]) -> npt.NDArray[np.float64]:
        """Per node, how many of ``others`` (the bucket's other waiting pods, in the order they are left
        out) must be left out for the rest and pod ``uid`` to fit its free room (all of them at most)."""
        reqs = np.array([ssn.vector(u) for u in others], dtype=np.int64)
        total = ssn.vector(uid) + reqs.sum(axis=0)
        # remains[k]: what the bucket asks once k of the others are left out; non-increasing per column.
        taken = np.vstack([np.zeros((1, reqs.shape[1]), dtype=np.int64), np.cumsum(reqs, axis=0)])
        remains = total - taken
        k = len(others)
        need = np.zeros(len(ssn.free), dtype=np.int64)
        for col in np.flatnonzero(total > 0).tolist():
            ascending = remains[::-1, col]
            fits = np.searchsorted(ascending, ssn.free[:, col], side="right")  # entries <= free
            np.maximum(need, k + 1 - fits, out=need)
        np.minimum(need, k, out=need)
        return need.astype(np.float64)
