"""Leaving out the groups behind alike ones (controllers.simulate.forecast_alike) changes no forecast: the
same starts and outlooks as a forecast whose cycles look at every group, on random small clusters."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.simulate import forecast_alike
from controllers.simulate.forecast import ForecastSettings
from controllers.simulate.forecast_cluster import ForecastCluster
from extender.core.model import GroupKey, Pod
from extender.core.parse import parse_pod, parse_podgroup
from extender.forecast.model import Forecast
from extender.plugins.registry import load_conf
from tests.core.builders import gang, node, pod, queue, required, term
from tests.simulate.test_forecast import MIN, Raw, busy_nodes, run, running, starts


def _waiting(name: str, size: int, cpu: str, q: str, minute: int, priority: int, short: int = 0) -> list[Raw]:
    """``short``: how many pods fewer than its ``minMember`` the gang has."""
    g, pods = gang(
        name,
        size,
        min_member=size + short,
        queue=q,
        cpu=cpu,
        created=f"2024-01-01T00:{minute:02}:00Z",
        priority=priority,
    )
    for p in pods:
        p["metadata"]["creationTimestamp"] = g["metadata"]["creationTimestamp"]
    return [g, *pods]


def _outlooks(f: Forecast) -> dict[GroupKey, str]:
    return {k: g.outlook.value for k, g in f.groups.items()}


@pytest.fixture
def left_out(monkeypatch: pytest.MonkeyPatch) -> list[frozenset[GroupKey]]:
    """What every cycle's ``past_their_room`` answered."""
    seen: list[frozenset[GroupKey]] = []
    plain = ForecastCluster.past_their_room

    def spy(self: ForecastCluster, looked_at: frozenset[GroupKey]) -> frozenset[GroupKey]:
        out = plain(self, looked_at)
        seen.append(out)
        return out

    monkeypatch.setattr(ForecastCluster, "past_their_room", spy)
    return seen


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_leaving_out_groups_behind_alike_ones_changes_nothing(seed: int) -> None:
    # Few kinds of gang (one or two pods of 2 or 4 cpus) in two queues, so many groups are alike.
    rnd = random.Random(seed)
    objects, runtimes = busy_nodes(rnd)
    for i in range(rnd.randint(6, 20)):
        size, cpu, q = rnd.choice((1, 2)), rnd.choice(("2", "4")), rnd.choice("ab")
        short = 1 if rnd.random() < 0.15 else 0  # now and then a gang that waits for a pod never made
        group = _waiting(f"w{i}", size, cpu, q, minute=i, priority=rnd.choice((0, 0, 10)), short=short)
        if size == 2 and rnd.random() < 0.3:  # now and then a gang of two kinds of pod: alike to none
            group[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = rnd.choice(("1", "6"))
        objects += group
        runtimes[f"w{i}"] = rnd.randint(1, 60) * MIN
    queues = [queue("a", weight=2), queue("b")]
    fast = run(objects, runtimes, queues=queues)
    every = run(objects, runtimes, queues=queues, settings=ForecastSettings(prefilter=False))
    assert starts(fast) == starts(every)
    assert _outlooks(fast) == _outlooks(every)


def test_a_line_of_alike_groups_is_cut_after_the_room(left_out: list[frozenset[GroupKey]]) -> None:
    # Two 8-cpu nodes, each running a job; eight gangs of one 8-cpu pod behind them. As each node frees,
    # the first gang in line takes it and the others could not: they are left out of that cycle.
    objects: list[Raw] = [node("n0", cpu="8"), node("n1", cpu="8")]
    objects += running("r0", "8", "n0") + running("r1", "8", "n1")
    runtimes = {"r0": 10 * MIN, "r1": 20 * MIN}
    for i in range(8):
        objects += _waiting(f"w{i}", 1, "8", "default", minute=i, priority=0)
        runtimes[f"w{i}"] = 30 * MIN
    fast = run(objects, runtimes)
    assert any(len(cut) >= 6 for cut in left_out)
    every = run(objects, runtimes, settings=ForecastSettings(prefilter=False))
    assert starts(fast) == starts(every)
    assert starts(fast)["w0"] == 10 * MIN and starts(fast)["w1"] == 20 * MIN


def test_it_applies_only_where_the_line_order_lasts_and_pods_have_no_inter_pod_rules() -> None:
    plain = parse_pod(pod("p"))
    assert forecast_alike.applies(load_conf(None), [plain])
    ruled = parse_pod(pod("q", anti_affinity=required(term("kubernetes.io/hostname", app="x"))))
    assert not forecast_alike.applies(load_conf(None), [plain, ruled])
    sla = "actions: allocate\ntiers:\n- plugins:\n  - name: sla\n  - name: gang\n  - name: predicates\n"
    assert not forecast_alike.applies(load_conf(sla), [plain])


def test_groups_of_more_than_one_kind_of_pod_are_alike_to_none() -> None:
    def pods(*cpus: str) -> list[Pod]:
        return [parse_pod(pod(f"p{i}", group="g", cpu=c)) for i, c in enumerate(cpus)]

    g = parse_podgroup(gang("g", 2)[0])
    same = forecast_alike.kind_of(g, pods("1", "1"), lambda _u: False, {})
    assert same is not None and same.need == 2
    assert forecast_alike.kind_of(g, pods("1", "2"), lambda _u: False, {}) is None


def _beyond_plain(
    line: list[GroupKey], alike: dict[GroupKey, forecast_alike.Alike], total: dict[str, int]
) -> list[GroupKey]:
    """``_beyond_the_room`` as first written: per group, the takes of every shape seen summed again."""
    taken: dict[object, dict[str, int]] = {}
    shapes: dict[object, forecast_alike.Alike] = {}
    out: list[GroupKey] = []
    for key in line:
        a = alike[key]
        used: dict[str, int] = {}
        for shape, took in taken.items():
            if forecast_alike._smaller(shapes[shape], a):
                for r, v in took.items():
                    used[r] = used.get(r, 0) + v
        if any(v > 0 and total.get(r, 0) - used.get(r, 0) < a.need * v for r, v in a.requests.items()):
            out.append(key)
        if a.room_only:
            shape = (tuple(sorted(a.requests.items())), a.need)
            shapes[shape] = a
            took = taken.setdefault(shape, {})
            for r, v in a.requests.items():
                took[r] = took.get(r, 0) + a.need * v
    return out


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32))
def test_sums_kept_per_shape_equal_sums_over_every_shape_seen(seed: int) -> None:
    """The shape-by-shape sums of ``_beyond_the_room`` cut the same groups as summing every shape seen
    before each group again (random lines of few shapes, zero amounts included)."""
    rnd = random.Random(seed)
    resources = ("cpu", "memory", "gpu")
    shapes = [
        (
            {r: rnd.choice((0, 1, 2, 4, 8)) for r in rnd.sample(resources, rnd.randint(1, 3))},
            rnd.randint(1, 4),
        )
        for _ in range(rnd.randint(1, 6))
    ]
    alike: dict[GroupKey, forecast_alike.Alike] = {}
    for i in range(rnd.randint(0, 60)):
        requests, need = rnd.choice(shapes)
        alike[GroupKey(f"ns/g{i}")] = forecast_alike.Alike(
            kind=forecast_alike.Kind((i,)), need=need, requests=requests, room_only=rnd.random() < 0.8
        )
    total = {r: rnd.randint(0, 80) for r in resources}
    line = list(alike)
    got = forecast_alike._beyond_the_room(line, alike, total)
    assert got == _beyond_plain(line, alike, total)
