"""The forecast: the real scheduler run forward from a cluster's objects, and what it says of each group.

Scenarios are built as raw objects (tests.core.builders), loaded into a simulated cluster that settles
as ``pumice serve`` would, and forecast from its cache's models, as the forecaster does.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from controllers.simulate.cluster import SimCluster
from controllers.simulate.forecast import ForecastInput, ForecastSettings, forecast
from controllers.simulate.forecast_trace import Estimate, ForecastTraceRun, summarize
from controllers.simulate.trace import parse_trace
from extender.core.model import GroupKey
from extender.forecast.model import Forecast, Outlook
from extender.forecast.runtimes import Runtime
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, gang, node, queue

Raw = dict[str, Any]
MIN = 60.0


def running(name: str, cpu: str, on: str, q: str = "default") -> list[Raw]:
    g, pods = gang(name, 1, queue=q, cpu=cpu, phase="Running", node=on)
    pods[0]["status"]["phase"] = "Running"
    return [g, *pods]


def busy_nodes(rnd: random.Random, least: int = 2, most: int = 5) -> tuple[list[Raw], dict[str, float]]:
    """``least``–``most`` nodes of 8 cpus, each running a job of 4–8 cpus in queue a or b for 1–60 minutes
    (the random clusters of the alike-cut and failure-memory tests): the objects, and the runtimes by job."""
    nodes = rnd.randint(least, most)
    objects: list[Raw] = [node(f"n{i}", cpu="8") for i in range(nodes)]
    runtimes: dict[str, float] = {}
    for i in range(nodes):
        objects += running(f"r{i}", str(rnd.randint(4, 8)), f"n{i}", q=rnd.choice("ab"))
        runtimes[f"r{i}"] = rnd.randint(1, 60) * MIN
    return objects, runtimes


def waiting(name: str, size: int, cpu: str = "1", q: str = "default", minute: int = 0) -> list[Raw]:
    g, pods = gang(name, size, queue=q, cpu=cpu, created=f"2024-01-01T00:{minute:02}:00Z")
    for p in pods:
        p["metadata"]["creationTimestamp"] = g["metadata"]["creationTimestamp"]
    return [g, *pods]


def run(
    objects: Iterable[Raw],
    runtimes: Mapping[str, float | Runtime],
    *,
    queues: Iterable[Raw] = (),
    conf: str | None = None,
    settings: ForecastSettings | None = None,
    settle: bool = True,
) -> Forecast:
    """``settle``: let the cluster's scheduler cycle first (as the live one has, when a forecast is taken);
    without, the forecast's first cycle is the first."""
    cluster = SimCluster(load_conf(conf), now=NOW)
    for q in [queue("default"), *queues]:
        cluster.add(q)
    for o in objects:
        cluster.add(o)
    if settle:
        cluster.settle()
    inp = ForecastInput(
        models=cluster.cache.models(),
        now=NOW,
        runtimes={
            GroupKey(f"default/{k}"): v if isinstance(v, Runtime) else Runtime.declared(v)
            for k, v in runtimes.items()
        },
        started={GroupKey(f"default/{k}"): NOW for k in runtimes},
        aside=cluster.state.pending.settled_asides(),
        settled=cluster.state.pending.settled(),
    )
    return forecast(inp, load_conf(conf), settings or ForecastSettings())


def starts(f: Forecast) -> dict[str, float | None]:
    return {k.partition("/")[2]: None if g.start is None else g.start - NOW for k, g in f.groups.items()}


def test_three_gangs_behind_a_running_job() -> None:
    objects = [
        node("n", cpu="4"),
        *running("big", "4", "n"),
        *waiting("g1", 2, minute=1),
        *waiting("g2", 2, minute=2),
        *waiting("g3", 2, minute=3),
    ]
    f = run(objects, {"big": 10 * MIN, "g1": 5 * MIN, "g2": 8 * MIN, "g3": 5 * MIN})
    assert starts(f) == {"g1": 600.0, "g2": 600.0, "g3": 900.0}
    assert [f.groups[GroupKey(f"default/g{i}")].position.in_queue for i in (1, 2, 3)] == [1, 2, 3]  # type: ignore[union-attr]
    assert {g.outlook for g in f.groups.values()} == {Outlook.ESTIMATED}
    assert f.steps == 2


def test_the_forecast_warns_of_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """Its running pods were bound in the live cluster, not through the simulated one's reservations: the
    live loop's warning of an unreserved bind is not the forecast's (it would log one per pod each time)."""
    objects = [node("n", cpu="4"), *running("big", "4", "n"), *waiting("g1", 2, minute=1)]
    with caplog.at_level(logging.WARNING):
        f = run(objects, {"big": 10 * MIN, "g1": 5 * MIN}, settle=False)
    assert starts(f) == {"g1": 600.0}
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def vcjob_group(name: str, minute: int, cpu: int = 4) -> Raw:
    """A vcjob's PodGroup before its pods exist (they are created once it is Inqueue): ``minResources``
    for two workers, its job's expected runtime on it."""
    g, _ = gang(name, 2, phase="Pending", created=f"2024-01-01T00:{minute:02}:00Z")
    g["metadata"]["creationTimestamp"] = f"2024-01-01T00:{minute:02}:00Z"
    g["metadata"]["annotations"] = {"pumice.dev/expected-runtime": "5m"}
    g["spec"]["minTaskMember"] = {"worker": 2}
    g["spec"]["minResources"] = {"cpu": str(cpu), "memory": "2Gi"}
    return g


def test_groups_without_pods_start_as_their_stand_ins_would() -> None:
    """The e2e scenario: vcjob groups with no pods yet, behind a running job, start one after the other
    (stand-in pods play theirs); a group too big for the cluster will not start."""
    objects = [
        node("n", cpu="4"),
        *running("big", "4", "n"),
        vcjob_group("g1", 1),
        vcjob_group("g2", 2),
        vcjob_group("g3", 3),
        vcjob_group("huge", 4, cpu=16),
    ]
    f = run(objects, {"big": 10 * MIN, "g1": 5 * MIN, "g2": 5 * MIN, "g3": 5 * MIN})
    assert starts(f) == {"g1": 600.0, "g2": 900.0, "g3": 1200.0, "huge": None}
    assert [f.groups[GroupKey(f"default/g{i}")].position.in_queue for i in (1, 2, 3)] == [1, 2, 3]  # type: ignore[union-attr]
    assert f.groups[GroupKey("default/huge")].outlook == Outlook.NEVER


def test_a_range_follows_the_chain_of_runtimes() -> None:
    objects = [
        node("n", cpu="2"),
        *running("a", "2", "n"),
        *waiting("b", 1, cpu="2"),
        *waiting("c", 1, cpu="2"),
    ]
    learned = Runtime(seconds=600, low=300, high=1200, basis="job name", samples=5)
    f = run(objects, {"a": learned, "b": learned})
    b, c = f.groups[GroupKey("default/b")], f.groups[GroupKey("default/c")]
    assert (b.start, b.earliest, b.latest) == (NOW + 600, NOW + 300, NOW + 1200)
    assert (c.start, c.earliest, c.latest) == (NOW + 1200, NOW + 600, NOW + 2400)


def test_unknown_and_never() -> None:
    objects = [
        node("n", cpu="4"),
        *running("mystery", "4", "n"),  # no runtime: nobody knows when it ends
        *waiting("after", 1),
        *waiting("huge", 1, cpu="16"),  # bigger than any node
        *waiting("shut", 1, q="closed"),
    ]
    f = run(objects, {}, queues=[queue("closed", state="Closed")])
    after, huge, shut = (f.groups[GroupKey(f"default/{n}")] for n in ("after", "huge", "shut"))
    assert after.outlook == Outlook.UNKNOWN and "default/mystery" in after.reason
    assert huge.outlook == Outlook.NEVER and "cpu" in huge.reason
    assert shut.outlook == Outlook.NEVER and "closed" in shut.reason.lower()
    assert shut.position is None


def test_a_group_that_fits_now_starts_now() -> None:
    f = run([node("n", cpu="4"), *waiting("now", 2)], {"now": MIN}, settle=False)
    assert f.groups[GroupKey("default/now")].outlook == Outlook.RUNNING
    assert starts(f) == {"now": 0.0}


@pytest.mark.parametrize("seed", range(4))
def test_leaving_out_groups_that_cannot_fit_changes_nothing(seed: int) -> None:
    rnd = random.Random(seed)
    objects: list[Raw] = [node(f"n{i}", cpu="8") for i in range(4)]
    runtimes: dict[str, float] = {}
    for i in range(4):
        objects += running(f"r{i}", str(rnd.randint(4, 8)), f"n{i}", q=rnd.choice("ab"))
        runtimes[f"r{i}"] = rnd.randint(1, 60) * MIN
    for i in range(12):
        objects += waiting(
            f"w{i}", rnd.randint(1, 3), cpu=str(rnd.randint(1, 6)), q=rnd.choice("ab"), minute=i
        )
        runtimes[f"w{i}"] = rnd.randint(1, 60) * MIN
    queues = [queue("a", weight=2), queue("b")]
    fast = run(objects, runtimes, queues=queues)
    every = run(objects, runtimes, queues=queues, settings=ForecastSettings(prefilter=False))
    assert starts(fast) == starts(every)
    assert fast.steps <= every.steps


TRACE = """
nodes: [{name: n, count: 4, allocatable: {cpu: "8", memory: 32Gi}}]
queues: [{name: a, weight: 2}, {name: b, weight: 1}]
generate:
  - {count: 40, seed: 3, every: 1s, queues: {a: 1, b: 1},
     shapes: [{duration: [5m, 1h], tasks: [{name: w, replicas: [1, 3], requests: {cpu: "2", memory: 1Gi}}]}]}
"""


def test_with_exact_runtimes_and_nothing_arriving_later_the_forecast_is_exact() -> None:
    """Every job arrives in the first minute; at each submission the forecast of that job's start is the
    start it then gets, to the second."""
    import yaml

    trace = parse_trace(yaml.safe_load(TRACE))
    run_ = ForecastTraceRun(trace, load_conf(None))
    run_.run()
    acc = run_.accuracy()
    assert acc.jobs == 40 and acc.waited > 20 and acc.unknown == acc.never == 0
    late = [e for e in acc.estimates if e.submit >= 39 and e.outlook != "Running"]
    assert late and all(abs((e.estimated or 0) - (e.actual or 0)) < 1.0 for e in late)


def test_a_job_expected_to_start_at_once_that_started_later_counts_as_waiting() -> None:
    """What happened decides which jobs waited, not the estimate: a job shown ``Running`` (expected to start
    at once, behind a job past its expected runtime) that started ten minutes later waited, and its error
    counts; a job that had started when it was estimated counts only among all jobs."""
    rows = [
        Estimate(job="a", queue="q", submit=0.0, outlook="Running", estimated=0.0, actual=600.0),
        Estimate(job="b", queue="q", submit=0.0, outlook="Estimated", estimated=300.0, actual=300.0),
        Estimate(job="c", queue="q", submit=0.0, outlook="Running", estimated=0.0, actual=0.0, at_once=True),
    ]
    acc = summarize(rows, noise=0.3, cpu=[])
    assert acc.waited == 2 and acc.error_p50 == 300.0
    assert acc.acceptance == 0.5  # the errors over max(wait, 10 min): 600/600 and 0/600
    assert acc.acceptance_all == 0.0  # ... and with c's, none


OVERRUN = """
nodes: [{name: n, count: 1, allocatable: {cpu: "8", memory: 32Gi}}]
queues: [{name: a, weight: 1}]
jobs:
  - {name: first, submit: 0, queue: a, duration: 900, expectedRuntime: 600,
     tasks: [{name: w, replicas: 1, requests: {cpu: 8}}]}
  - {name: second, submit: 700, queue: a, duration: 60, tasks: [{name: w, replicas: 1, requests: {cpu: 8}}]}
"""


def test_a_job_behind_one_past_its_declared_runtime_is_measured_as_waiting() -> None:
    """``first`` is declared to run 10 minutes and runs 15. ``second``, submitted at 700 s, is shown
    ``Running`` (the room of a job past its expected runtime counts as free now) and starts at 900 s: it
    waited 200 s, and the error is 200 s."""
    import yaml

    run_ = ForecastTraceRun(parse_trace(yaml.safe_load(OVERRUN)), load_conf(None))
    run_.run()
    acc = run_.accuracy()
    second = next(e for e in acc.estimates if e.job.endswith("/second"))
    shown = (second.outlook, second.estimated, second.actual, second.at_once)
    assert shown == ("Running", 700.0, 900.0, False)
    assert acc.waited == 1 and acc.error_p50 == 200.0
