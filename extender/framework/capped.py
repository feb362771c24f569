"""Groups refused admission at their queue's capability: re-voted by enqueue without their pods.

A group that enqueue refused (``NotAdmitted``) is left out of cycles, as the totals it weighs on its queue
(:class:`~extender.core.snapshot.Aside`), until something changes that could let it in; room freed
anywhere brings every such group back, pods and all, and the cycle asks the votes again. A queue at its
``capability`` (Volcano's realCapability) keeps refusing while its own usage stays, whatever room frees
elsewhere: in a busy cluster its backlog then costs each cycle its pods in the snapshot, in the plugins'
open and in the asides, only to be refused again.

Such a group is *capped* when proportion is sure to refuse it in the coming cycle, and nothing but the
enqueue vote reads it: a cache then leaves its pods out as before and hands the cycle its PodGroup alone
(``Snapshot.revote``); enqueue asks the votes for it in job order among the others, so it gets exactly
the reason (overcommit's, when that one refuses first) and the place in line the plain path gives it.
Sure to refuse: for some resource of the queue's capability, what the queue holds plus the group's
``minResources`` less the queue's elastic part passes the capability. Proportion's check sums the same
with what admitted groups are promised (never negative, and only growing while enqueue runs) against
a capability never above the queue's own: it refuses too, at every point of the cycle's enqueue.

Nothing but the vote reads it: the conf's actions and plugins read other groups only as an Aside's totals
(``cycle.placed_safe``), and the enqueue votes are proportion's and overcommit's alone with no permit
(both read of a group its queue and ``minResources``); the group is Pending with no pod holding a node
(drf orders it by a share of nothing) and its priority is its PriorityClass's or 0 (what priority reads
without its pods); its queue exists, is open and in no parent loop.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from extender.framework.cycle import CycleConf, placed_safe
from extender.framework.hooks import Hooks

# Off: every group refused admission comes back whole when room frees (the tests compare both ways).
KEEP_CAPPED = True
_VOTERS: Final = frozenset({"proportion", "overcommit"})


def capped_conf(conf: CycleConf) -> bool:
    """Whether ``conf`` lets a cache hand capped groups to the cycle without their pods."""
    hooks: Hooks = conf.hooks()
    voters = {p.name for tier in hooks.enqueue for p in tier}
    return (
        KEEP_CAPPED
        and placed_safe(conf.action_names, [p.name for p in hooks.plugins])
        and "proportion" in voters
        and voters <= _VOTERS
        and not any(hooks.enqueue_permit)
    )


def surely_over(
    capability: Mapping[str, int],
    want: Mapping[str, int],
    held: Mapping[str, int],
    elastic: Mapping[str, int],
    names: Collection[str],
) -> bool:
    """Whether proportion refuses a group asking ``want`` of a queue holding ``held`` with ``elastic``
    past its groups' minimums, whatever that queue is promised (see the module docstring); ``names``:
    the resource columns of the cycle's snapshot."""
    return any(
        name in names and held.get(name, 0) + want.get(name, 0) - elastic.get(name, 0) > cap
        for name, cap in capability.items()
    )
