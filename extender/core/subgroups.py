"""A PodGroup's sub-groups (Volcano's ``spec.subGroupPolicy``): which pods form them and when they count.

Volcano's semantics (``pkg/scheduler/api/sub_job_info.go`` and ``job_info.go``, current master), kept here
as pure functions over the model:

- a pod belongs to the first policy, in the order written, whose ``labelSelector`` matches its labels
  (no selector: every pod) and for whose every ``matchLabelKeys`` key it has a label with a non-empty
  value; its sub-group is that policy's and those values (``worker``, ``volcano.sh/partition-id=1``). A
  policy without ``matchLabelKeys`` takes no pod, as in Volcano. Pods no policy takes form the group's
  default sub-group, which has no size or count of its own to meet;
- a sub-group is *whole* (Volcano's ready SubJob) when ``subGroupSize`` of its pods count toward the gang
  (bound and staying, succeeded, or planned in this cycle);
- a gang with sub-groups needs, besides ``minMember`` and ``minTaskMember``, for each policy at least
  ``minSubGroups`` whole sub-groups (Volcano's CheckSubJobReady); a policy whose pods form fewer
  sub-groups than that cannot be met until more pods exist (Volcano's CheckSubJobValid);
- a running member may be evicted alone only when its sub-group is already short of its size, or its
  policy keeps ``minSubGroups`` whole sub-groups without it (Volcano's eviction bundles,
  ``actions/utils/bundle.go``).

Sub-groups are ordered as the scheduler tries them: by policy, then by the first label value read as a
number (Volcano's MatchIndex: the partition id of a vcjob's pods), then by the values as written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from extender.core.errors import InvalidObject
from extender.core.fields import Obj
from extender.core.fields import list_field as _list
from extender.core.fields import list_item as _item
from extender.core.hypernodes import parse_network_topology
from extender.core.model import Pod, PodGroup, SubGroupPolicy
from extender.core.parse_affinity import label_selector
from extender.core.selector import selector_matches

# A sub-group: the index of its policy in ``spec.subGroupPolicy`` and its pods' values of the policy's
# ``matchLabelKeys``.
SubGroupKey = tuple[int, tuple[str, ...]]

# Sort key of a sub-group whose first value is not a number (after every numbered one).
_NOT_A_NUMBER: Final = 1 << 62


def parse_sub_group_policy(spec: Obj) -> tuple[SubGroupPolicy, ...]:
    """``spec.subGroupPolicy`` of a PodGroup (empty when absent). Raises :class:`InvalidObject` naming the
    field it cannot read (the PodGroup webhook refuses such an object first)."""
    out: list[SubGroupPolicy] = []
    for i, raw in enumerate(_list(spec, "subGroupPolicy", "spec")):
        where = f"spec.subGroupPolicy[{i}]"
        policy = _item(raw, where)
        keys = _list(policy, "matchLabelKeys", where)
        if not all(isinstance(k, str) for k in keys):
            raise InvalidObject(f"{where}.matchLabelKeys: must be label keys")
        try:
            topology = parse_network_topology(policy, {})
        except InvalidObject as e:
            raise InvalidObject(str(e).replace("spec.", f"{where}.", 1)) from None
        out.append(
            SubGroupPolicy(
                name=str(policy.get("name") or ""),
                selector=label_selector(policy.get("labelSelector"), f"{where}.labelSelector"),
                match_label_keys=tuple(keys),
                size=_count(policy, "subGroupSize", where, 1, 1),
                min_groups=_count(policy, "minSubGroups", where, 0, 0),
                network_topology=topology,
            )
        )
    return tuple(out)


def _count(policy: Obj, key: str, where: str, default: int, least: int) -> int:
    value = policy.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidObject(f"{where}.{key}: must be a whole number >= {least}, got {value!r}")
    return value


def sub_group_of(g: PodGroup, pod: Pod) -> SubGroupKey | None:
    """The sub-group ``pod`` belongs to, None for the group's default sub-group."""
    for i, policy in enumerate(g.sub_group_policy):
        if not policy.match_label_keys:
            continue
        if policy.selector is not None and not selector_matches(policy.selector, pod.labels):
            continue
        values = tuple(pod.labels.get(k, "") for k in policy.match_label_keys)
        if all(values):
            return (i, values)
    return None


def order(key: SubGroupKey) -> tuple[int, int, tuple[str, ...]]:
    """Where sub-group ``key`` comes among its group's (see the module docstring)."""
    first = key[1][0] if key[1] else ""
    return (key[0], int(first) if first.isdigit() else _NOT_A_NUMBER, key[1])


def split(g: PodGroup, pods: Iterable[Pod]) -> dict[SubGroupKey | None, list[Pod]]:
    """``pods`` by sub-group (None: the default one), sub-groups in :func:`order`, pods as given."""
    out: dict[SubGroupKey | None, list[Pod]] = {}
    for p in pods:
        out.setdefault(sub_group_of(g, p), []).append(p)
    keys = sorted((k for k in out if k is not None), key=order)
    return {**{k: out[k] for k in keys}, **({None: out[None]} if None in out else {})}


def describe(g: PodGroup, key: SubGroupKey) -> str:
    """A sub-group as a user reads it: ``sub-group t0[volcano.sh/partition-id=1]``."""
    policy = g.sub_group_policy[key[0]]
    values = ",".join(f"{k}={v}" for k, v in zip(policy.match_label_keys, key[1], strict=True))
    return f"sub-group {policy.name or f'#{key[0]}'}[{values}]"


def whole_counts(
    g: PodGroup, groups: Mapping[SubGroupKey | None, Sequence[Pod]], counts: Callable[[Pod], bool]
) -> list[int]:
    """Per policy, how many of its sub-groups are whole (``counts`` tells which pods count)."""
    out = [0] * len(g.sub_group_policy)
    for key, pods in groups.items():
        if key is not None and sum(map(counts, pods)) >= g.sub_group_policy[key[0]].size:
            out[key[0]] += 1
    return out


def shortfall(
    g: PodGroup, groups: Mapping[SubGroupKey | None, Sequence[Pod]], counts: Callable[[Pod], bool]
) -> list[str]:
    """Why the sub-groups keep the gang from being whole: per policy short of ``minSubGroups``, e.g.
    ``subGroupPolicy worker: 1 of minSubGroups 2 sub-groups whole``; empty when none is."""
    whole = whole_counts(g, groups, counts)
    return [
        f"subGroupPolicy {p.name}: {whole[i]} of minSubGroups {p.min_groups} sub-groups whole"
        for i, p in enumerate(g.sub_group_policy)
        if whole[i] < p.min_groups
    ]


def too_few(g: PodGroup, groups: Mapping[SubGroupKey | None, Sequence[Pod]]) -> list[str]:
    """Policies whose pods form fewer sub-groups (of at least ``subGroupSize`` pods) than ``minSubGroups``:
    the gang waits for pods to exist, e.g. ``subGroupPolicy worker: 1 of minSubGroups 2 sub-groups have
    2 pods``."""
    out: list[str] = []
    for i, p in enumerate(g.sub_group_policy):
        formed = sum(1 for k, pods in groups.items() if k is not None and k[0] == i and len(pods) >= p.size)
        if formed < p.min_groups:
            out.append(
                f"subGroupPolicy {p.name}: {formed} of minSubGroups {p.min_groups} sub-groups have "
                f"{p.size} pod{'s' if p.size != 1 else ''}"
            )
    return out


def may_lose(g: PodGroup, present: Sequence[Pod], pod: Pod) -> bool:
    """Whether running ``pod`` (one of ``present``, the members still running) may be evicted on its own
    as far as sub-groups go: its sub-group is already short of its size (losing another pod costs
    nothing more), or its policy keeps ``minSubGroups`` whole sub-groups without that one."""
    key = sub_group_of(g, pod)
    if key is None:
        return True
    groups = split(g, (p for p in present if p.uid != pod.uid))
    policy = g.sub_group_policy[key[0]]
    if len(groups.get(key, ())) + 1 < policy.size:
        return True  # already short: no whole sub-group is lost
    whole = whole_counts(g, groups, lambda _: True)[key[0]]
    return whole >= policy.min_groups
