"""Stand-in pods for waiting PodGroups whose pods do not exist yet: :func:`with_standins`.

Volcano's job controller (and ours) creates a vcjob's pods only once its PodGroup is Inqueue, so the
groups a forecast cares most about, those not admitted yet, often have no pods in the cache. In the
forecast's simulated cluster nobody would create them (there is no job controller there): such a group
would be admitted and never start. So before the forecast runs, each waiting group gets the pods it lacks
up to ``minMember``, each asking an equal share of its ``minResources`` (the remainder on the first), named
after its ``minTaskMember`` tasks in order, with the group's priority class and expected runtime.

What is lost: a job's pods that differ in size are played by equal ones, and their node rules (selectors,
affinity, tolerations) are not known; the forecast's error, ``docs/src/forecast.md`` says so. Pure.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator

from controllers.state.models import ClusterModels
from extender.core.model import GroupPhase, Pod, PodGroup, PodUID
from extender.core.snapshot import pod_group_key

_WAITING = frozenset({GroupPhase.PENDING, GroupPhase.INQUEUE})


def with_standins(models: ClusterModels) -> ClusterModels:
    """``models`` with stand-in pods for the waiting groups that lack some (see the module docstring)."""
    ours = models.scheduler_names
    have = Counter(pod_group_key(p) for p in models.pods if p.scheduler_name in ours and not p.terminal)
    scheduler = min(ours) if ours else "volcano"
    priorities = {pc.name: pc.value for pc in models.priority_classes}
    extra = [
        pod
        for g in models.podgroups
        if g.phase in _WAITING and not g.implicit and g.min_resources and have[g.key] < g.min_member
        for pod in _standins(g, have[g.key], scheduler, priorities.get(g.priority_class, 0))
    ]
    if not extra:
        return models
    return dataclasses.replace(models, pods=(*models.pods, *extra))


def _standins(g: PodGroup, existing: int, scheduler: str, priority: int) -> Iterator[Pod]:
    n = g.min_member
    share = {k: v // n for k, v in g.min_resources.items() if k != "pods"}
    rest = {k: g.min_resources[k] - share[k] * n for k in share}
    tasks = [t for t, count in g.min_task_member.items() for _ in range(count)]
    for i in range(existing, n):
        requests = {k: v + (rest[k] if i == 0 else 0) for k, v in share.items()}
        requests["pods"] = 1
        yield Pod(
            uid=PodUID(f"forecast-standin/{g.namespace}/{g.name}/{i}"),
            namespace=g.namespace,
            name=f"{g.name}-standin-{i}",
            scheduler_name=scheduler,
            requests={k: v for k, v in requests.items() if v},
            group_name=g.name,
            task=tasks[i] if i < len(tasks) else "",
            priority=priority,
            priority_class=g.priority_class,
            created=g.created,
            expected_runtime=g.expected_runtime,
        )
