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
way (:mod:`controllers.simulate.forecast_cluster`). No placement changes; the groups left out keep the
reason of the cycle that last looked at them.

When it applies (:func:`applies`): the line order must be the forecast's ``order`` (the positions the
forecast starts from), so every ``job_order`` plugin must give a waiting group the same key from cycle to
cycle (``priority``: its priority class; ``gang``: not running; ``drf``: the share of what it holds, which
does not change while it waits, on nodes that do not change) and no plugin may order namespaces (their
turns follow shares that move). No pod may have inter-pod rules (a pod's fit would then depend on its
labels and on who is placed), and a gang with sub-groups or a network topology is never alike to another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from extender.core.model import GroupKey, GroupPhase, Pod, PodGroup, PodPhase, PodUID
from extender.framework.hooks import build_hooks
from extender.plugins.registry import SchedulerConf

# Job order plugins whose key for a waiting group stays the same from cycle to cycle (see above).
_LASTING_JOB_ORDER = frozenset({"priority", "gang", "drf"})

Kind = tuple[object, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Alike:
    """What makes a group alike to others (``kind``), how many pods it still needs placed, and what each of
    its waiting pods requests."""

    kind: Kind
    need: int
    requests: Mapping[str, int]


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
            p.task,
            tuple(sorted(p.requests.items())),
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
    kind = (
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
    return Alike(kind=kind, need=need, requests=waiting[0].requests)


def past_their_room(
    alike: Mapping[GroupKey, Alike], copies: Callable[[Mapping[str, int]], int], order: Mapping[GroupKey, int]
) -> set[GroupKey]:
    """Of the groups of ``alike`` (every group the cycle looks at that has a kind), those behind the first
    ``copies(requests) // need`` of their kind in line (``order``; a group without a place in it is never
    counted nor left out): how many pods of those requests the free room holds, node by node."""
    by_kind: dict[Kind, list[GroupKey]] = {}
    for key, a in alike.items():
        if key in order:
            by_kind.setdefault(a.kind, []).append(key)
    out: set[GroupKey] = set()
    for line in by_kind.values():
        first = alike[line[0]]
        room = copies(first.requests) // first.need
        if len(line) > room:
            line.sort(key=order.__getitem__)
            out.update(line[room:])
    return out
