"""A forecast's cycle looks at the head of each queue's line only and checks afterwards that no group left
out behind it could have found room (``controllers.simulate.forecast_prefix``): forecasts are the same as
with every group looked at (``PREFIX_CUT`` off), over random clusters where small gangs slip in behind
larger ones, with heads of one gang at first so that tails are cut, checked and looked at again often."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.simulate import forecast_prefix
from controllers.simulate.forecast_alike import Alike
from extender.core.model import GroupKey
from tests.core.builders import queue
from tests.simulate.test_forecast import MIN, Raw, busy_nodes, run, waiting
from tests.simulate.test_forecast_kinds import _view


def _counted(counts: Counter[str]) -> object:
    """``forecast_prefix.short`` that counts the checks made: tails cut, and tails that could have fit."""
    plain = forecast_prefix.short

    def counted(
        prefix: forecast_prefix.Prefix,
        alike: Mapping[GroupKey, Alike],
        rooms: Mapping[str, forecast_prefix.Free | None],
        copies: object,
    ) -> Sequence[str]:
        out = plain(prefix, alike, rooms, copies)  # type: ignore[arg-type]  # the callable passed through
        counts["tails"] += len(prefix.tail)
        counts["again"] += len(out)
        return out

    return counted


def _cluster(rnd: random.Random) -> tuple[list[Raw], dict[str, float]]:
    """Busy nodes, and gangs of one to three pods asking 1–8 cpus in two queues, in a random line."""
    objects, runtimes = busy_nodes(rnd, 2, 6)
    for i in range(rnd.randint(4, 24)):
        objects += waiting(f"w{i}", rnd.randint(1, 3), rnd.choice(("1", "2", "4", "8")), rnd.choice("ab"), i)
        runtimes[f"w{i}"] = rnd.randint(1, 60) * MIN
    return objects, runtimes


def _both(objects: list[Raw], runtimes: dict[str, float], counts: Counter[str]) -> None:
    queues = [queue("a", weight=2), queue("b")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(forecast_prefix, "FIRST_KEEP", 1)
        mp.setattr(forecast_prefix, "short", _counted(counts))
        cut = run(objects, runtimes, queues=queues)
        mp.setattr(forecast_prefix, "PREFIX_CUT", False)
        plain = run(objects, runtimes, queues=queues)
    assert _view(cut) == _view(plain)
    assert cut.steps == plain.steps


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_forecasts_with_the_heads_of_the_lines_are_those_with_every_group(seed: int) -> None:
    _both(*_cluster(random.Random(seed)), Counter())


def test_tails_are_cut_and_looked_at_again_when_they_could_have_fit() -> None:
    # Over a few clusters, both outcomes of the check occur (else the test above proves little).
    counts: Counter[str] = Counter()
    for seed in range(12):
        _both(*_cluster(random.Random(seed)), counts)
    assert counts["tails"] > counts["again"] > 0
