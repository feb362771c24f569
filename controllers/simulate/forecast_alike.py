"""Groups a forecast's cycle can leave out because alike groups ahead of them in line use the room first.

Two admitted groups are *alike* when the allocate action cannot tell them apart but by their place in
line: the same queue and namespace, the same gang (``minMember`` and ``minTaskMember``, what already counts
toward them, how many pods wait) and waiting pods all of one kind (task, requests, node constraints and
refusals, scoring, NUMA and GPU asks). Within one cycle, of the alike groups in line order:

- once one fails, every one after it fails too: between two turns free capacity only shrinks and queue
  usage only grows, and pods of one kind that fit a node's free room keep fitting a larger one (the
  argument ``gang_allocate`` makes within a gang, for its pods alike to one that failed); the number of
  such pods a gang can place is the sum over nodes of how many copies each takes, whatever the order;
- each one that starts takes at least ``need`` copies of its pod from the free room.

So at most ``copies // need`` of them start (``copies``: how many of their pod the free room holds, node
by node, as the cycle opens), and they are the first ones in line: the groups after those are certain to
fail, and a forecast leaves them out of the cycle as it leaves out groups that fit the free room in no
way (:mod:`controllers.simulate.forecast_cluster`).

The same holds, in a weaker form, across the kinds of one *family* (alike but for their requests and
gang counts; no ``minTaskMember``): a group ``s`` that needs no more pods than ``b``, none larger in any
resource, with as many pods waiting as it needs, fails only for want of room, and then ``b`` behind it
fails too. So ``b`` starts only if every such ``s`` ahead of it started, each taking its pods' requests
from the room: when the room summed over the nodes, less that, cannot hold ``b``'s gang, ``b`` is
certain to fail. No placement changes either way; the groups left out keep the reason of the cycle that
last looked at them.

When it applies (:func:`applies`): the line order must be the forecast's ``order`` (the positions the
forecast starts from), so every ``job_order`` plugin must give a waiting group the same key from cycle to
cycle (``priority``: its priority class; ``gang``: not running; ``drf``: the share of what it holds, which
does not change while it waits, on nodes that do not change) and no plugin may order namespaces (their
turns follow shares that move). No pod may have inter-pod rules (a pod's fit would then depend on its
labels and on who is placed), and a gang with sub-groups or a network topology is never alike to another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from extender.core.model import GroupKey, GroupPhase, Pod, PodGroup, PodPhase, PodUID
from extender.framework.hooks import build_hooks
from extender.plugins.registry import SchedulerConf

Shape = tuple[tuple[tuple[str, int], ...], int]  # a group's requests and need: all _smaller reads

# Job order plugins whose key for a waiting group stays the same from cycle to cycle (see above).
_LASTING_JOB_ORDER = frozenset({"priority", "gang", "drf"})


class Kind(tuple[object, ...]):
    """A kind: a tuple that works its hash out once. A forecast's cycle groups every group it looks at by
    kind and family (about a thousand at 1 000 pending jobs), most of them kept from the cycle before."""

    _hash: int

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash = tuple.__hash__(self)
            return self._hash


@dataclass(frozen=True, slots=True, kw_only=True)
class Alike:
    """What makes a group alike to others (``kind``), how many pods it still needs placed, and what each of
    its waiting pods requests."""

    kind: Kind
    need: int
    requests: Mapping[str, int]
    # Its kind but for the requests and the gang's counts (None: no ``minTaskMember``s and task topology
    # only), and whether as many pods wait as it needs (so it can fail only for want of room).
    family: Kind | None = None
    room_only: bool = False
    # Its requests and need as one hashable value (what _smaller reads), worked out once: a cycle groups
    # hundreds of kept kinds by it.
    shape: Shape = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", (tuple(sorted(self.requests.items())), self.need))


def applies(conf: SchedulerConf, pods: Iterable[Pod]) -> bool:
    """Whether alike groups may be left out under ``conf`` with these pods (see the module docstring)."""
    hooks = build_hooks(conf.tiers())
    if hooks.namespace_order or any(p.name not in _LASTING_JOB_ORDER for p in hooks.job_order):
        return False
    return all(p.affinity is None for p in pods)


def _counts(p: Pod, planned: bool) -> bool:
    """Whether ``p`` counts toward its gang (``extender.framework.gangs.counts_toward_gang``)."""
    running = bool(p.node_name) and not p.terminal and not p.deleting
    return p.phase == PodPhase.SUCCEEDED or running or planned


def kind_of(
    g: PodGroup,
    pods: Sequence[Pod],
    planned: Callable[[PodUID], bool],
    refused: Mapping[PodUID, frozenset[str]],
) -> Alike | None:
    """What makes ``g`` alike to another group; None when it is alike to none: not admitted, nothing
    needed, sub-groups, a network topology, or waiting pods of more than one kind."""
    if g.phase != GroupPhase.INQUEUE or g.sub_group_policy or g.network_topology is not None:
        return None
    waiting = [p for p in pods if p.waiting and not planned(p.uid)]
    if not waiting:
        return None
    counted = [p for p in pods if _counts(p, planned(p.uid))]
    need = g.min_member - len(counted)
    if need <= 0:
        return None
    pod_kinds = {
        (
            tuple(sorted(p.requests.items())),
            p.task,
            p.constraints,
            refused.get(p.uid, frozenset()),
            p.scoring,
            p.numa,
            p.gpu,
            p.gated,
            p.planned_node,
        )
        for p in waiting
    }
    if len(pod_kinds) != 1:
        return None
    by_task = tuple(sorted((t, sum(p.task == t for p in counted)) for t in g.min_task_member))
    kind = Kind(
        (
            g.queue,
            g.namespace,
            g.implicit,
            g.min_member,
            need,
            tuple(sorted(g.min_task_member.items())),
            by_task,
            tuple(sorted(g.task_topology.items())),
            len(waiting),
            *pod_kinds,
        )
    )
    (pod_kind,) = pod_kinds
    family = None
    if not g.min_task_member and not g.task_topology:
        family = Kind((g.queue, g.namespace, g.implicit, *pod_kind[1:]))
    return Alike(
        kind=kind,
        need=need,
        requests=waiting[0].requests,
        family=family,
        room_only=len(waiting) >= need,
    )


def past_their_room(
    alike: Mapping[GroupKey, Alike],
    copies: Callable[[Mapping[str, int]], int],
    total: Mapping[str, int],
    order: Mapping[GroupKey, int],
) -> set[GroupKey]:
    """Of the groups of ``alike`` (every group the cycle looks at that has a kind), those certain to fail
    (``order``: the line; a group without a place in it is never counted nor left out):

    - behind the first ``copies(requests) // need`` of their kind (how many pods of those requests the
      free room holds, node by node);
    - or whose gang the free room (``total``, summed over the nodes) less what the smaller groups of their
      family ahead of them take if they start (``need`` pods each) cannot hold.
    """
    by_kind: dict[Kind, list[GroupKey]] = {}
    by_family: dict[Kind, list[GroupKey]] = {}
    for key, a in alike.items():
        if key in order:
            by_kind.setdefault(a.kind, []).append(key)
            if a.family is not None:
                by_family.setdefault(a.family, []).append(key)
    out: set[GroupKey] = set()
    for line in by_kind.values():
        first = alike[line[0]]
        room = copies(first.requests) // first.need
        if len(line) > room:
            line.sort(key=order.__getitem__)
            out.update(line[room:])
    for line in by_family.values():
        line.sort(key=order.__getitem__)
        out.update(_beyond_the_room(line, alike, total))
    return out


def _smaller(a: Alike, b: Alike) -> bool:
    """Whether ``b`` (of ``a``'s family) fails whenever ``a`` does: ``a`` needs no more pods, none larger
    in any resource."""
    return a.need <= b.need and all(v <= b.requests.get(r, 0) for r, v in a.requests.items())


def _beyond_the_room(
    line: list[GroupKey], alike: Mapping[GroupKey, Alike], total: Mapping[str, int]
) -> list[GroupKey]:
    """The groups of one family, in line order, that the free room cannot hold once the smaller ones
    ahead of them have started. A smaller group ahead either fails, and then so does this one (it needs as
    many pods, each at least as large, of a room that only shrinks), or starts and takes its ``need`` pods'
    requests from the room; a group cut here still counts for those behind it (it fails: so do they).

    Computed as arrays over the line and the family's few shapes (requests and need): how many room-only
    groups of each shape are ahead of each group (a running count), those of the shapes no larger than
    its own summed with their pods' requests, against the room."""
    if not line:
        return []
    index: dict[Shape, int] = {}
    shapes: list[Alike] = []
    at = np.empty(len(line), dtype=np.intp)
    room_only = np.empty(len(line), dtype=np.int64)
    for i, key in enumerate(line):
        a = alike[key]
        shape = a.shape
        k = index.get(shape)
        if k is None:
            k = index[shape] = len(shapes)
            shapes.append(a)
        at[i] = k
        room_only[i] = a.room_only
    names = sorted({r for a in shapes for r in a.requests})
    req = np.array([[a.requests.get(r, 0) for r in names] for a in shapes], dtype=np.int64)
    need = np.array([a.need for a in shapes], dtype=np.int64)
    # smaller[b, a]: shape b is no larger than shape a (one of a fails whenever one of b ahead does).
    smaller = np.array([[_smaller(b, a) for a in shapes] for b in shapes], dtype=np.int64)
    ahead = np.zeros((len(line), len(shapes)), dtype=np.int64)
    ahead[np.arange(len(line)), at] = room_only
    ahead = np.cumsum(ahead, axis=0) - ahead  # room-only groups of each shape before each group
    used = (ahead * smaller[:, at].T) @ (need[:, None] * req)  # what those no larger take, per group
    room = np.array([total.get(r, 0) for r in names], dtype=np.int64)
    mine = req[at]
    short = (mine > 0) & (room - used < need[at, None] * mine)
    return [line[i] for i in np.flatnonzero(np.any(short, axis=1)).tolist()]
