"""The gang rule for kube-scheduler's preemption: which proposed victim sets pumice accepts.

kube-scheduler's own preemption (for pods that are not pumice's) proposes, per node, the pods it would
evict. Evicting one member of a running gang below ``minMember`` breaks the whole gang, so pumice keeps
a node only when, after its victims leave, every gang of pumice's still has ``minMember`` pods allocated
or succeeded, keeps the ``minSubGroups`` whole sub-groups of each ``subGroupPolicy`` it holds, and no
plugin vetoes a victim (conformance: system-critical pods, and so on). Victims pumice does not know are not
its to judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from extender.core import subgroups
from extender.core.gang import MemberCounts
from extender.core.model import GroupKey, PodGroup, PodUID
from extender.framework.session import Session


def _sub_groups_broken(ssn: Session, g: PodGroup, victims: set[PodUID]) -> str | None:
    """Why evicting ``victims`` would take ``g`` below a policy's ``minSubGroups`` whole sub-groups that it
    holds now, or None (no sub-groups, or none lost that it needs)."""
    if not g.sub_group_policy:
        return None
    snap = ssn.snapshot
    pods = [snap.pods[u] for u in snap.members.get(g.key, ())]
    running = [p for p in pods if p.holds_resources and not p.deleting]
    groups = subgroups.split(g, running)
    before = subgroups.whole_counts(g, groups, lambda _: True)
    after = subgroups.whole_counts(
        g, subgroups.split(g, [p for p in running if p.uid not in victims]), lambda _: True
    )
    for i, policy in enumerate(g.sub_group_policy):
        if after[i] < min(policy.min_groups, before[i]):
            kept = f"{after[i]} of minSubGroups {policy.min_groups}"
            return f"subGroupPolicy {policy.name} would keep {kept} sub-groups whole"
    return None


def refuse_victims(ssn: Session, victims: Mapping[str, Sequence[PodUID]]) -> dict[str, str]:
    """Per node whose victim set pumice refuses, why. Nodes not named are accepted."""
    snap = ssn.snapshot
    out: dict[str, str] = {}
    for node, uids in victims.items():
        lost: dict[GroupKey, int] = {}
        for uid in uids:
            pod = snap.pods.get(uid)
            if pod is None:
                continue
            veto = ssn.victim_reject(pod)
            if veto is not None:
                out[node] = f"pod {pod.key} must not be evicted: {veto}"
                break
            key = snap.group_of(uid)
            if key is not None and key in snap.groups and uid in snap.members.get(key, ()):
                lost[key] = lost.get(key, 0) + 1
        if node in out:
            continue
        for key, n in sorted(lost.items()):
            counts = MemberCounts.of(snap.pods[u] for u in snap.members.get(key, ()))
            left = counts.allocated + counts.succeeded - n
            if left < snap.groups[key].min_member:
                out[node] = f"gang {key} would keep {left} of minMember {snap.groups[key].min_member}"
                break
            short = _sub_groups_broken(ssn, snap.groups[key], set(uids))
            if short is not None:
                out[node] = f"gang {key}: {short}"
                break
    return out
