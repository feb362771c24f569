"""What a forecast starts from, taken on the event loop: :func:`forecast_input`.

The cache's objects as they are (:meth:`~controllers.state.cache.ClusterCache.models`: no parsing, no
copies of objects), the live scheduler's settled groups and what they weigh, and for every group of
pumice's its expected runtime (:func:`~extender.forecast.runtimes.group_runtime`: its annotation, else
what the book learned) and, running, when it started. Costs a pass over the pods, never a cycle.
"""

from __future__ import annotations

from controllers.scheduling.shared import SchedulingState
from controllers.simulate.forecast import ForecastInput
from controllers.state.cache import ClusterCache
from extender.core.model import GroupKey, Pod
from extender.core.snapshot import pod_group_key
from extender.forecast.runtimes import Runtime, RuntimeBook, group_runtime, group_start


def forecast_input(
    cache: ClusterCache, shared: SchedulingState, book: RuntimeBook, now: float
) -> ForecastInput:
    models = cache.models()
    pods: dict[GroupKey, list[Pod]] = {}
    for p in models.pods:
        if p.scheduler_name in models.scheduler_names:
            pods.setdefault(pod_group_key(p), []).append(p)
    groups = {g.key: g for g in models.podgroups}
    runtimes: dict[GroupKey, Runtime] = {}
    started: dict[GroupKey, float] = {}
    for key in pods.keys() | groups.keys():
        members = pods.get(key, [])
        g = groups.get(key)
        if g is not None:
            rt = group_runtime(g, members, book, now)
        else:  # a plain pod's group: only what its pod declares
            declared = [p.expected_runtime for p in members if p.expected_runtime is not None]
            rt = Runtime.declared(max(declared)) if declared else None
        if rt is not None:
            runtimes[key] = rt
        if any(p.holds_resources for p in members):
            start = group_start(g, members)
            if start is not None:
                started[key] = start
    return ForecastInput(
        models=models,
        now=now,
        runtimes=runtimes,
        started=started,
        aside=shared.pending.settled_asides(),
        settled=shared.pending.settled(),
    )
