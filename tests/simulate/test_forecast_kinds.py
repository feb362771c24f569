"""The forecast keeps each group's kind (controllers.simulate.forecast_alike) from cycle to cycle and works
it out again only for the groups the cache says changed (``forecast_cluster.KEPT_KINDS``): the kept kinds
are the ones worked out afresh in every cycle, and forecasts are the same with the kinds kept or not."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.simulate import forecast_alike, forecast_cluster
from controllers.simulate.cluster import SimCluster
from controllers.simulate.forecast_cluster import ForecastCluster
from extender.core.model import GroupKey, PodUID
from extender.forecast.model import Forecast
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, gang, node, queue
from tests.simulate.test_forecast import MIN, Raw, busy_nodes, run, running


def _fresh(cluster: ForecastCluster, key: GroupKey) -> forecast_alike.Alike | None:
    g = cluster.cache.group(key)
    assert g is not None
    pods = [p for u in cluster.cache.members(key) if (p := cluster.cache.pod(u)) is not None]
    return forecast_alike.kind_of(g, pods, cluster.ledger.is_planned, cluster.scheduler.shared.refused)


def _checked(seen: list[int]) -> object:
    """``past_their_room`` that, after each call, holds every kind kept for a group it looked at to the
    one worked out afresh."""
    plain = ForecastCluster.past_their_room

    def checked(self: ForecastCluster, looked_at: Iterable[GroupKey]) -> frozenset[GroupKey]:
        looked_at = list(looked_at)
        out = plain(self, looked_at)
        for key in looked_at:
            if key in self._kinds:
                assert self._kinds[key][1] == _fresh(self, key), key
                seen[0] += 1
        return out

    return checked


def _waiting(name: str, size: int, cpu: str, q: str, minute: int, pods: int) -> list[Raw]:
    g, made = gang(name, size, queue=q, cpu=cpu, created=f"2024-01-01T00:{minute:02}:00Z")
    for p in made:
        p["metadata"]["creationTimestamp"] = g["metadata"]["creationTimestamp"]
    return [g, *made[:pods]]


def _view(f: Forecast) -> dict[GroupKey, tuple[object, ...]]:
    return {k: (g.outlook, g.start, g.earliest, g.latest, g.reason, g.position) for k, g in f.groups.items()}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_kept_kinds_are_the_fresh_ones_and_forecasts_the_same(seed: int) -> None:
    # Few kinds of gang in two queues, so many groups are alike; now and then one short of pods.
    rnd = random.Random(seed)
    objects, runtimes = busy_nodes(rnd)
    for i in range(rnd.randint(6, 20)):
        size, cpu = rnd.choice((1, 2)), rnd.choice(("2", "4"))
        pods = size - 1 if size == 2 and rnd.random() < 0.15 else size
        objects += _waiting(f"w{i}", size, cpu, rnd.choice("ab"), minute=i, pods=pods)
        runtimes[f"w{i}"] = rnd.randint(1, 60) * MIN
    queues = [queue("a", weight=2), queue("b")]
    seen = [0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ForecastCluster, "past_their_room", _checked(seen))
        kept = run(objects, runtimes, queues=queues)
        mp.setattr(forecast_cluster, "KEPT_KINDS", False)
        fresh = run(objects, runtimes, queues=queues)
    assert _view(kept) == _view(fresh)
    assert seen[0] > 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_kept_kinds_are_the_fresh_ones_as_pods_go_and_cycles_bind(seed: int) -> None:
    # Random changes between two looks: a waiting pod deleted (its PodGroup the same object), a running
    # job ended, a cycle (binds, phases). After each, every kind kept is the one worked out afresh.
    rnd = random.Random(seed)
    conf = load_conf(None)
    sim = SimCluster(conf, now=NOW)
    nodes = rnd.randint(1, 4)
    for o in [queue("default"), queue("a"), *(node(f"n{i}", cpu="8") for i in range(nodes))]:
        sim.add(o)
    for i in range(nodes):
        for o in running(f"r{i}", str(rnd.randint(4, 8)), f"n{i}", q=rnd.choice(("a", "default"))):
            sim.add(o)
    for i in range(rnd.randint(2, 12)):
        size = rnd.randint(1, 3)
        for o in _waiting(f"w{i}", size, rnd.choice(("1", "2")), rnd.choice(("a", "default")), i, size):
            sim.add(o)
    sim.settle()
    cluster = ForecastCluster(conf, sim.cache.models(), now=NOW)
    keys = sorted(k for k in (GroupKey(f"default/w{i}") for i in range(20)) if cluster.cache.group(k))
    cluster.order = {k: i for i, k in enumerate(keys)}
    for _ in range(rnd.randint(1, 6)):
        cluster.past_their_room(keys)
        for key in keys:
            if key in cluster._kinds and cluster.cache.group(key) is not None:
                assert cluster._kinds[key][1] == _fresh(cluster, key), key
        change = rnd.random()
        if change < 0.5:
            pods = (cluster.cache.pod(u) for k in keys for u in sorted(cluster.cache.members(k)))
            waiting = [p.uid for p in pods if p is not None and not p.node_name]
            if waiting:
                cluster.delete_pod(PodUID(rnd.choice(waiting)))
        elif change < 0.8:
            ended = GroupKey(f"default/r{rnd.randrange(nodes)}")
            for u in sorted(cluster.cache.members(ended)):
                cluster.delete_pod(PodUID(u))
            cluster.delete_podgroup(ended)
            cluster.state.pending.room_freed()
            cluster.step(force=True)
        else:
            cluster.step(force=True)


def test_a_pod_gone_from_a_group_changes_its_kind_though_the_podgroup_stays() -> None:
    # A gang of two with both pods waiting is alike to other such gangs; once one of its pods is gone
    # (its PodGroup the same object), it waits for a pod never made: worked out again, it is another kind.
    conf = load_conf(None)
    sim = SimCluster(conf, now=NOW)
    for o in [queue("default"), node("n0", cpu="8"), *running("r0", "8", "n0")]:
        sim.add(o)
    for i in range(3):
        for o in _waiting(f"w{i}", 2, "2", "default", minute=i, pods=2):
            sim.add(o)
    sim.settle()
    cluster = ForecastCluster(conf, sim.cache.models(), now=NOW)
    keys = [GroupKey(f"default/w{i}") for i in range(3)]
    cluster.order = {k: i for i, k in enumerate(keys)}
    cluster.past_their_room(keys)
    before = cluster._kinds[keys[0]][1]
    group = cluster.cache.group(keys[0])
    cluster.delete_pod(PodUID(sorted(cluster.cache.members(keys[0]))[0]))
    assert cluster.cache.group(keys[0]) is group
    cluster.past_their_room(keys)
    after = cluster._kinds[keys[0]][1]
    assert after == _fresh(cluster, keys[0]) and after != before
