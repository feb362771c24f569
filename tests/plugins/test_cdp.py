"""cdp: ``volcano.sh/cooldown-time`` keeps a pod that was scheduled less than that long ago from being a
victim of preempt or reclaim. Cases from Volcano's cdp_test.go (expected outcomes), then ours."""

from __future__ import annotations

from typing import Any

import pytest

from extender.api import labels as L
from extender.core.model import PodUID
from extender.core.parse import parse_pod
from extender.core.timestamps import rfc3339
from extender.framework.evict import PREEMPTED, RECLAIMED
from extender.plugins.cdp import CdpPlugin
from tests.core.builders import NOW, Raw, conf_with, node, pod, podgroup, priority_class, queue, run
from tests.plugins.quota_objects import session_with


def cooling(raw: Raw, cooldown: str, scheduled_ago: float | None, via: str = "annotations") -> Raw:
    """``raw`` with a cooldown (as an annotation or a label) and, unless None, a PodScheduled condition
    that turned True ``scheduled_ago`` seconds before the tests' now."""
    meta = raw["metadata"]
    meta[via] = {**meta.get(via, {}), L.COOLDOWN_TIME_KEY: cooldown}
    if scheduled_ago is not None:
        raw["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(NOW - scheduled_ago)}
        ]
    return raw


def _running(name: str, group: str = "low", **kw: Any) -> Raw:
    return pod(name, group=group, node="n0", phase="Running", **kw)


# Volcano's Test_CooldownTimePlugin_podPreemptStableTime: (id, value, cooldown read).
READ = [("normal", "600s", 600.0), ("not-enabled", "600abcde", None), ("go-duration", "1h30m", 5400.0)]


@pytest.mark.parametrize(("value", "seconds"), [r[1:] for r in READ], ids=[r[0] for r in READ])
def test_cooldown_is_read_as_a_go_duration(value: str, seconds: float | None) -> None:
    assert parse_pod(cooling(_running("p"), value, 100)).cooldown == seconds


def test_the_label_wins_over_the_annotation() -> None:
    raw = cooling(cooling(_running("p"), "10s", 100), "20s", 100, via="labels")
    assert parse_pod(raw).cooldown == 20.0


def test_volcano_preemptable() -> None:
    """Volcano's TestPreemptableFn: task1 (600s, scheduled 100 s ago) is protected; task2 (unreadable
    cooldown) and task3 (scheduled 800 s ago) may go. pumice's cdp vetoes (see its docstring): the
    session's victim rule takes task1 out whichever hook asks."""
    pods = [
        cooling(_running("task1"), "600s", 100),
        cooling(_running("task2"), "600abcde", 100),
        cooling(_running("task3"), "600s", 800),
    ]
    ssn = session_with(
        [CdpPlugin({})], nodes=[node("n0")], pods=pods, groups=[podgroup("low", 1, phase="Running")]
    )
    candidates = [ssn.snapshot.pods[PodUID(n)] for n in ("task1", "task2", "task3")]
    assert [p.name for p in candidates if ssn.victim_reject(p) is None] == ["task2", "task3"]
    why = ssn.victim_reject(candidates[0])
    assert why == f"cooling down until {rfc3339(NOW + 500)} (volcano.sh/cooldown-time)"
    # The cycle asks to run again when task1's protection ends.
    assert ssn.result.retry_at == pytest.approx(NOW + 500)


@pytest.mark.parametrize(
    ("raw", "protected"),
    [
        (cooling(_running("young"), "600s", 100), True),
        (cooling(_running("old"), "600s", 600), False),  # exactly at the end: no longer protected
        (cooling(_running("no-condition"), "600s", None), False),
        (cooling(pod("not-running", group="low", node="n0", phase="Pending"), "600s", 100), False),
        (_running("no-cooldown"), False),
    ],
    ids=["young", "cooled", "no-condition", "not-running", "no-cooldown"],
)
def test_which_pods_cool_down(raw: Raw, protected: bool) -> None:
    ssn = session_with(
        [CdpPlugin({})], nodes=[node("n0")], pods=[raw], groups=[podgroup("low", 1, phase="Running")]
    )
    p = next(iter(ssn.snapshot.pods.values()))
    assert (CdpPlugin({}).victim(ssn, p) is not None) == protected


CLASSES = [priority_class("high", 1000), priority_class("low", 10)]


def _low_and_high(cooldowns: list[float | None], q: str = "default") -> tuple[list[Raw], list[Raw]]:
    """``low`` runs one 1-cpu pod per entry on a 4-cpu node (a cooldown of 600 s scheduled ``entry``
    seconds ago, None for none); ``high`` waits with two 1-cpu pods."""
    low = podgroup("low", 1, queue=q, phase="Running", priority_class="low")
    lp = []
    for i, ago in enumerate(cooldowns):
        raw = pod(f"low-{i}", group="low", node="n0", phase="Running", memory="100Mi", queue=q)
        lp.append(raw if ago is None else cooling(raw, "600s", ago))
    high = podgroup("high", 2, phase="Inqueue", priority_class="high")
    hp = [pod(f"high-{i}", group="high", memory="100Mi") for i in range(2)]
    return [low, high], lp + hp


@pytest.mark.parametrize(
    ("plugins", "evicted"),
    [
        (("priority", "gang", "cdp"), {"low-2", "low-3"}),
        (("priority", "gang"), {"low-0", "low-1"}),  # without cdp the first candidates go
    ],
    ids=["cdp", "without-cdp"],
)
def test_preempt_passes_over_cooling_pods(plugins: tuple[str, ...], evicted: set[str]) -> None:
    groups, pods = _low_and_high([10, 20, 900, None])
    conf = conf_with(*plugins, actions="enqueue, allocate, preempt")
    result = run([node("n0", cpu="4")], pods, groups, conf=conf, priority_classes=CLASSES)
    assert {str(u) for u in result.evictions} == evicted
    assert {e.reason for e in result.evictions.values()} == {PREEMPTED}


def test_preempt_waits_while_every_victim_cools() -> None:
    groups, pods = _low_and_high([10, 20, 30, 40])
    conf = conf_with("priority", "gang", "cdp", actions="enqueue, allocate, preempt")
    result = run([node("n0", cpu="4")], pods, groups, conf=conf, priority_classes=CLASSES)
    assert not result.evictions and not result.placements
    # It looks again when the first protection ends (600 s after the oldest was scheduled).
    assert result.retry_at == pytest.approx(NOW + 560)


def test_reclaim_passes_over_cooling_pods() -> None:
    """qb borrowed the whole cluster; qa's job reclaims two pods, not the cooling ones."""
    b = podgroup("b", 1, queue="qb", phase="Running")
    pb = [pod(f"b-{i}", group="b", node="n0", phase="Running", memory="100Mi", queue="qb") for i in range(4)]
    pb[0] = cooling(pb[0], "600s", 10)
    pb[1] = cooling(pb[1], "600s", 10)
    a = podgroup("a", 1, queue="qa", phase="Inqueue")
    pa = [pod(f"a-{i}", group="a", memory="100Mi", queue="qa") for i in range(4)]
    conf = conf_with("priority", "gang", "cdp", "proportion", actions="enqueue, allocate, reclaim")
    result = run([node("n0", cpu="4")], pb + pa, [b, a], [queue("qa"), queue("qb")], conf=conf)
    assert {str(u) for u in result.evictions} == {"b-2", "b-3"}
    assert {e.reason for e in result.evictions.values()} == {RECLAIMED}


def test_kube_scheduler_preemption_respects_the_cooldown() -> None:
    """The extender's preempt verb asks the same veto: a cooling pod's node is refused."""
    from extender.framework.hooks import build_hooks
    from extender.framework.session import Session
    from extender.framework.victims import refuse_victims
    from extender.plugins.registry import load_conf
    from tests.plugins.quota_objects import snapshot_with

    groups, pods = _low_and_high([10, 900])
    snap = snapshot_with(nodes=[node("n0", cpu="4")], pods=pods, groups=groups)
    conf = load_conf(conf_with("cdp"))
    young = {"n0": [PodUID("low-0")]}
    old = {"n0": [PodUID("low-1")]}
    assert "cooling down" in refuse_victims(Session(snap, build_hooks(conf.tiers()), now=NOW), young)["n0"]
    assert refuse_victims(Session(snap, build_hooks(conf.tiers()), now=NOW), old) == {}
    # Ten minutes on, the young pod has cooled too.
    assert refuse_victims(Session(snap, build_hooks(conf.tiers()), now=NOW + 600), young) == {}
