"""The allocate action's memory of failed gangs (extender.framework.gang_failures) changes no forecast: the
same starts, ranges, outlooks and reasons as forecasts whose cycles try every gang, on random small
clusters with many alike gangs behind running jobs."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.simulate.forecast import ForecastSettings
from extender.forecast.model import Forecast
from extender.framework import gang_failures
from tests.core.builders import gang, node, queue
from tests.simulate.test_forecast import MIN, Raw, busy_nodes, run, running


def _waiting(name: str, size: int, cpu: str, q: str, minute: int, least: int) -> list[Raw]:
    """``least``: its ``minMember`` (more than ``size``: a gang that waits for pods never made)."""
    g, pods = gang(name, size, min_member=least, queue=q, cpu=cpu, created=f"2024-01-01T00:{minute:02}:00Z")
    for p in pods:
        p["metadata"]["creationTimestamp"] = g["metadata"]["creationTimestamp"]
    return [g, *pods]


def _seen(f: Forecast) -> dict[str, tuple[object, ...]]:
    return {
        k: (g.outlook.value, g.start, g.earliest, g.latest, g.reason, g.position) for k, g in f.groups.items()
    }


def _forecast(seed: int, prefilter: bool) -> Forecast:
    rnd = random.Random(seed)
    objects, runtimes = busy_nodes(rnd, 1, 4)
    for i in range(rnd.randint(4, 20)):
        size, cpu, q = rnd.choice((1, 2, 3)), rnd.choice(("2", "4", "9")), rnd.choice("ab")
        least = size + 1 if rnd.random() < 0.1 else rnd.randint(1, size)
        objects += _waiting(f"w{i}", size, cpu, q, minute=i, least=least)
        if rnd.random() < 0.8:
            runtimes[f"w{i}"] = rnd.randint(1, 60) * MIN
    queues = [queue("a", weight=2), queue("b", capability={"cpu": "6"})]
    return run(objects, runtimes, queues=queues, settings=ForecastSettings(prefilter=prefilter))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.booleans())
def test_forecasts_with_and_without_the_memory_are_the_same(seed: int, prefilter: bool) -> None:
    remembered = _forecast(seed, prefilter)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(gang_failures, "applies", lambda _ssn: False)
        tried = _forecast(seed, prefilter)
    assert _seen(remembered) == _seen(tried)


def test_the_memory_answers_in_a_forecast(recalled: list[bool]) -> None:
    """One 8-cpu node busy for an hour and eight gangs of a 9-cpu pod that never fit, one of 4 cpus:
    the 9-cpu gangs after the first are failed from memory (with the prefilter off they are looked at)."""
    objects: list[Raw] = [node("n0", cpu="8"), *running("r0", "8", "n0")]
    runtimes: dict[str, float] = {"r0": 60 * MIN, "small": 10 * MIN}
    for i in range(8):
        objects += _waiting(f"big{i}", 1, "9", "default", minute=i, least=1)
    objects += _waiting("small", 1, "4", "default", minute=9, least=1)
    f = run(objects, runtimes, settings=ForecastSettings(prefilter=False))
    assert any(recalled)
    assert {k.partition("/")[2]: g.outlook.value for k, g in f.groups.items()}["small"] == "Estimated"
