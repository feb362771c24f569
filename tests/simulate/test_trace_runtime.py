"""A trace job's declared runtime reaches its pods as ``pumice.dev/expected-runtime``, as users declare it on
a cluster: the starvation guard reads it from them (which small jobs may run on nodes held for a large
one), and the forecast is told it. A noisy run changes how long jobs run, never what they declare."""

from __future__ import annotations

from typing import Any

import yaml

from controllers.simulate.engine import TraceRun, vcjob
from controllers.simulate.forecast_trace import noisy
from controllers.simulate.trace import parse_trace
from extender.api import labels as L
from extender.plugins.registry import load_conf

# n-0 is busy 3 h, n-1 1 h, n-2 20 min; ``big`` needs two whole nodes. The guard holds the two that free
# first (n-1, n-2) until about 1 h. ``small`` (20 min, submitted at 11 min) can run on n-2 from 20 min
# and be done before then, if it says so.
TRACE = """
nodes: [{name: n, count: 3, allocatable: {cpu: "8", memory: 32Gi}}]
queues: [{name: a, weight: 1}]
jobs:
  - {name: long, submit: 0, queue: a, duration: 3h, tasks: [{name: w, replicas: 1, requests: {cpu: 8}}]}
  - {name: mid, submit: 0, queue: a, duration: 1h, tasks: [{name: w, replicas: 1, requests: {cpu: 8}}]}
  - {name: short, submit: 0, queue: a, duration: 20m, tasks: [{name: w, replicas: 1, requests: {cpu: 8}}]}
  - {name: big, submit: 60, queue: a, duration: 1h, tasks: [{name: w, replicas: 2, requests: {cpu: 8}}]}
  - {name: small, submit: 11m, queue: a, duration: 20m, SAYS
     tasks: [{name: w, replicas: 1, requests: {cpu: 4}}]}
"""

GUARD = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
configurations:
- {name: allocate, arguments: {reserveAfter: 10m}}
"""


def trace(says: str = "") -> Any:
    return parse_trace(yaml.safe_load(TRACE.replace("SAYS", says)))


def starts(says: str) -> dict[str, float | None]:
    result = TraceRun(trace(says), load_conf(GUARD)).run()
    return {j.name.split("/")[-1]: j.start for j in result.jobs}


def test_the_declared_runtime_defaults_to_the_duration_and_none_says_nothing() -> None:
    by_name = {j.name: j.expected_runtime for j in trace().jobs}
    assert by_name == {"long": 10800.0, "mid": 3600.0, "short": 1200.0, "big": 3600.0, "small": 1200.0}
    assert {j.name: j.expected_runtime for j in trace("expectedRuntime: none,").jobs}["small"] is None
    assert {j.name: j.expected_runtime for j in trace("expectedRuntime: 5m,").jobs}["small"] == 300.0


def test_the_pods_say_what_the_job_declares_and_noise_does_not_change_it() -> None:
    jobs = noisy(trace(), 0.3).jobs
    assert [j.duration for j in jobs] != [j.duration for j in trace().jobs]  # the noise moved the runs
    for j in jobs:
        template = vcjob(j)["spec"]["tasks"][0]["template"]
        said = template["metadata"]["annotations"][L.EXPECTED_RUNTIME_ANNOTATION]
        assert said == f"{j.expected_runtime:.3f}s"
    assert "metadata" not in vcjob(trace("expectedRuntime: none,").jobs[-1])["spec"]["tasks"][0]["template"]


def test_the_starvation_guard_lets_a_job_that_says_it_ends_in_time_run_on_held_nodes() -> None:
    said = starts("")
    assert said["big"] == 3600.0  # the held nodes, as soon as mid ends
    assert said["small"] == 1200.0  # on n-2 from 20 min, done by 40 min: before the hold ends
    silent = starts("expectedRuntime: none,")
    assert silent["big"] == 3600.0
    assert silent["small"] == 7200.0  # it may run forever, so it waits for room beside big
