"""The shared scenarios (``tests/fixtures/scenarios``) in one core cycle: each gives the placements and
evictions its file expects. ``tests/simulate/test_snapshot_mode.py`` runs the same files in snapshot mode."""

from __future__ import annotations

import pytest

from tests.core.builders import placed, run
from tests.fixtures.scenarios import Scenario, load_scenarios, of_kind

SCENARIOS = load_scenarios()
KINDS = {"Node", "Pod", "PodGroup", "Queue", "PriorityClass"}


def test_the_shared_scenarios_are_there() -> None:
    assert len(SCENARIOS) >= 8
    assert all(s.description and "\n" not in s.description.strip() for s in SCENARIOS)


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_one_cycle_gives_the_expected_placements(s: Scenario) -> None:
    # The expectations name objects of the scenario, which holds only kinds the core cycle reads.
    assert {o["kind"] for o in s.objects} <= KINDS
    pods = {o["metadata"]["name"] for o in of_kind(s.objects, "Pod")}
    assert set(s.placements) | set(s.evictions or ()) <= pods
    assert set(s.placements.values()) <= {o["metadata"]["name"] for o in of_kind(s.objects, "Node")}

    result = run(
        nodes=of_kind(s.objects, "Node"),
        pods=of_kind(s.objects, "Pod"),
        groups=of_kind(s.objects, "PodGroup"),
        queues=of_kind(s.objects, "Queue") or None,
        priority_classes=of_kind(s.objects, "PriorityClass"),
        conf=s.conf,
    )
    assert placed(result) == s.placements
    if s.evictions is not None:
        assert sorted(map(str, result.evictions)) == s.evictions
