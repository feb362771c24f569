"""The cycle's shortcuts change no simulation: the shipped examples (each with its confs) and random small
traces give the same report, job by job and pod by pod, with the shortcuts on and with the plain formulas
they replaced:

- enqueue's refusal per (queue, minResources) between two admissions (``actions._by_shape``);
- the queues' elastic resources summed as one matrix (``promises._elastic_by_queue``), and kept by the
  cache per group from one cycle to the next (``controllers.state.elastic_book``, read by
  ``promises._elastic_kept``; :func:`test_the_kept_elastic_figure_is_the_walked_one_in_every_cycle`
  compares the two in every cycle, not only through what they decide);
- the forecast's per-shape sums of room taken (``forecast_alike._beyond_the_room``), and its groups' kinds
  kept from cycle to cycle (``forecast_cluster.KEPT_KINDS``).

The plain formulas are the ones the unit tests hold the shortcuts to (``tests/core/test_elastic.py``,
``tests/simulate/test_forecast_alike.py``); here whole runs are compared, so any difference in a start, a
placement, a reason or a figure fails.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from controllers.simulate import forecast_alike, forecast_cluster
from controllers.simulate.engine import TraceRun
from controllers.simulate.forecast_trace import ForecastTraceRun
from controllers.simulate.report import trace_document
from controllers.simulate.trace import Trace, parse_trace
from extender.framework import actions, capped, promises
from extender.plugins.registry import SchedulerConf, load_conf
from tests.core.test_elastic import _plain as plain_elastic
from tests.simulate.test_forecast_alike import _beyond_plain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"
RECLAIM = EXAMPLES / "reclaim.conf"


@contextmanager
def _plain() -> Iterator[None]:
    """The shortcuts off: the plain formulas in their place."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(actions, "SHAPE_ONLY_ENQUEUE", frozenset())
        mp.setattr(promises, "_elastic_by_queue", plain_elastic)
        mp.setattr(promises, "KEPT_ELASTIC", False)
        mp.setattr(capped, "KEEP_CAPPED", False)
        mp.setattr(forecast_alike, "_beyond_the_room", _beyond_plain)
        mp.setattr(forecast_cluster, "KEPT_KINDS", False)
        yield


def _report(trace: Trace, conf: SchedulerConf) -> tuple[Any, ...]:
    """Everything a run reports: the document (figures, queues, series) and every job as recorded
    (starts, ends, placements with GPU cards, reasons); and every group's reason after each event time,
    message included (a report shows only the reasons of jobs still waiting at its end)."""
    run = TraceRun(trace, conf)
    reasons: list[Any] = []

    def look(t: float) -> None:
        now = run.cluster.scheduler.shared.reasons
        reasons.append((t, sorted((k, u.reason, u.message) for k, u in now.items())))

    run.progress = look
    result = run.run()
    return trace_document([("run", result)]), result.jobs, result.cycles, reasons


def _both_ways(
    trace: Trace, conf: SchedulerConf, run: Callable[[Trace, SchedulerConf], Any] = _report
) -> None:
    fast = run(trace, conf)
    with _plain():
        plain = run(trace, conf)
    assert fast == plain


def _scaled(name: str, jobs: int, capability: dict[str, dict[str, str]] | None = None) -> Trace:
    """An example with each generated stream cut to ``jobs`` jobs (its nodes, queues and shapes kept), and
    the queues named in ``capability`` given that capability instead of theirs."""
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    for g in doc.get("generate", ()):
        g["count"] = min(g["count"], jobs)
    for q in doc.get("queues", ()):
        if capability and q["name"] in capability:
            q["capability"] = capability[q["name"]]
    return parse_trace(doc)


def _conf(path: Path | str | None) -> SchedulerConf:
    if isinstance(path, str):
        return load_conf(CONFS[path])
    return load_conf(None if path is None else path.read_text())


# Confs of the random traces beside the default and reclaim.conf: proportion alone as enqueue's vote
# (the capped groups' conf, with and without overcommit's vote before it), drf with proportion, capacity
# and capacity's queue hierarchy (enqueue's other capability votes, which keep every group in cycles).
_TIERS = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
CONFS = {
    "proportion": _TIERS + "- plugins:\n  - name: proportion\n  - name: predicates\n  - name: nodeorder\n",
    "drf": _TIERS + "- plugins:\n  - name: drf\n  - name: proportion\n  - name: binpack\n",
    "capacity": _TIERS + "- plugins:\n  - name: overcommit\n  - name: capacity\n  - name: nodeorder\n",
    "hierarchy": _TIERS + "- plugins:\n  - name: capacity\n    enableHierarchy: true\n",
}


@pytest.mark.parametrize("conf", [None, RECLAIM], ids=["default", "reclaim"])
@pytest.mark.parametrize(
    ("example", "jobs", "capability"),
    [
        ("two-teams.yaml", 40, None),
        ("busy-queue.yaml", 150, None),
        ("gpu-fleet.yaml", 600, None),
        # The interns queue capped at 64 GPUs instead of 512, so 400 jobs already leave a backlog of
        # refused groups (what enqueue's shortcut answers by shape); the full example does so at ~3 000.
        ("gpu-fleet.yaml", 400, {"interns": {"nvidia.com/gpu": "64"}}),
    ],
    ids=["two-teams", "busy-queue", "gpu-fleet", "gpu-fleet-capped"],
)
def test_the_examples_report_the_same(
    example: str, jobs: int, capability: dict[str, dict[str, str]] | None, conf: Path | None
) -> None:
    _both_ways(_scaled(example, jobs, capability), _conf(conf))


@pytest.mark.parametrize("conf", sorted(EXAMPLES.glob("gpu-share-*.conf")), ids=lambda p: p.stem)
def test_the_gpu_sharing_example_reports_the_same_under_each_of_its_confs(conf: Path) -> None:
    _both_ways(_scaled("gpu-share.yaml", 24), _conf(conf))


def test_the_forecast_accuracy_report_is_the_same() -> None:
    def accuracy(trace: Trace, conf: SchedulerConf) -> Any:
        run = ForecastTraceRun(trace, conf)
        jobs = run.run().jobs
        return jobs, dataclasses.replace(run.accuracy(), cpu_mean=0.0, cpu_max=0.0)  # CPU: not a result

    _both_ways(_scaled("two-teams.yaml", 40), _conf(None), accuracy)


def _random_trace(seed: int) -> Trace:
    """A few nodes, queues with small capabilities (so enqueue refuses, and refuses alike groups), and
    jobs of a handful of shapes, some elastic (minAvailable below replicas: what elastic counts)."""
    rnd = random.Random(seed)
    queues = [
        {"name": "a", "weight": rnd.randint(1, 3), "capability": {"cpu": str(rnd.randint(4, 16))}},
        {"name": "b", "weight": rnd.randint(1, 3)},
        {"name": "c", "weight": 1, "capability": {"cpu": str(rnd.randint(2, 8)), "memory": "16Gi"}},
    ]
    shapes = [
        (rnd.randint(1, 4), rnd.choice(("1", "2", "500m")), rnd.choice(("1Gi", "2Gi"))) for _ in range(3)
    ]
    jobs = []
    for i in range(rnd.randint(5, 30)):
        replicas, cpu, mem = rnd.choice(shapes)
        job: dict[str, Any] = {
            "name": f"j{i}",
            "submit": rnd.choice((0, 0, rnd.randint(0, 3600))),
            "queue": rnd.choice(("a", "a", "b", "c")),
            "duration": rnd.randint(60, 3600),
            "tasks": [{"name": "w", "replicas": replicas, "requests": {"cpu": cpu, "memory": mem}}],
        }
        if replicas > 1 and rnd.random() < 0.3:
            job["minAvailable"] = rnd.randint(1, replicas - 1)
        if rnd.random() < 0.1:
            job["priorityClassName"] = "high"
        jobs.append(job)
    return parse_trace(
        {
            "nodes": [
                {"name": "n", "count": rnd.randint(1, 4), "allocatable": {"cpu": "8", "memory": "16Gi"}}
            ],
            "queues": queues,
            "priorityClasses": [{"name": "high", "value": 100}],
            "jobs": jobs,
        }
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([None, RECLAIM, *CONFS]))
@example(99844, RECLAIM)  # a victim of a settled group, chosen with its gang: it crashed the exact search
def test_random_traces_report_the_same(seed: int, conf: Path | str | None) -> None:
    _both_ways(_random_trace(seed), _conf(conf))


def _same_elastic(kept: dict[str, Any], walked: dict[str, Any]) -> bool:
    return kept.keys() == walked.keys() and all((kept[q] == walked[q]).all() for q in kept)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([None, RECLAIM]))
def test_the_kept_elastic_figure_is_the_walked_one_in_every_cycle(seed: int, conf: Path | None) -> None:
    asked = 0
    kept_elastic = promises._elastic_kept

    def checked(ssn: Any) -> dict[str, Any]:
        nonlocal asked
        asked += 1
        kept, walked = kept_elastic(ssn), plain_elastic(ssn)
        assert _same_elastic(kept, walked), (kept, walked)
        return kept

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(promises, "_elastic_kept", checked)
        _report(_random_trace(seed), _conf(conf))
        if seed % 4 == 0:  # the example with a queue at its cap: groups elastic and refused alike
            _report(_scaled("gpu-fleet.yaml", 150, {"interns": {"nvidia.com/gpu": "16"}}), _conf(conf))
            assert asked
