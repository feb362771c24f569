"""Sharing the cluster: allocate by queue share, preempt within a queue, reclaim across queues.

Facts and expected outcomes follow Volcano's own scheduler tests (``pkg/scheduler/actions/{allocate,
preempt,reclaim}``) where they apply; where pumice differs on purpose the test says so.
"""

from __future__ import annotations

from typing import Any

from extender.core.model import GroupKey, PodUID
from extender.framework.evict import PREEMPTED, RECLAIMED, WAITING_FOR_VICTIMS
from tests.core.builders import (
    NOW,
    T0,
    VOLCANO_CI_CONF,
    Raw,
    conf_with,
    gang,
    node,
    placed,
    pod,
    podgroup,
    priority_class,
    queue,
    run,
)

FAIR_CONF = conf_with("priority", "gang", "predicates", "proportion", actions="enqueue, allocate")


def job(
    name: str, q: str, replicas: int, min_member: int = 1, cpu: str = "1", **kw: Any
) -> tuple[Raw, list[Raw]]:
    pg = podgroup(name, min_member, queue=q, phase="Inqueue", **kw)
    pods = [pod(f"{name}-{i}", group=name, cpu=cpu, memory="100Mi", queue=q) for i in range(replicas)]
    return pg, pods


def running(
    name: str, q: str, replicas: int, node_name: str, min_member: int = 1, cpu: str = "1", **kw: Any
) -> tuple[Raw, list[Raw]]:
    pg = podgroup(name, min_member, queue=q, phase="Running", **kw)
    pods = [
        pod(
            f"{name}-{i}",
            group=name,
            cpu=cpu,
            memory="100Mi",
            queue=q,
            node=node_name,
            phase="Running",
        )
        for i in range(replicas)
    ]
    return pg, pods


# --- allocate: every pending pod, queue by queue by share --------------------------------------------
def test_two_equal_queues_split_a_full_cluster_evenly() -> None:
    """The issue's case: two equal-weight queues, 4 x 1 cpu jobs with minAvailable 1, a 4-cpu cluster."""
    a, pa = job("a", "qa", 4)
    b, pb = job("b", "qb", 4)
    for conf in (FAIR_CONF, VOLCANO_CI_CONF, None):
        result = run([node("n0", cpu="4")], pa + pb, [a, b], [queue("qa"), queue("qb")], conf=conf)
        assert (len(placed(result, "a-")), len(placed(result, "b-"))) == (2, 2), conf


def test_weights_split_by_weight() -> None:
    a, pa = job("a", "qa", 8)
    b, pb = job("b", "qb", 8)
    result = run([node("n0", cpu="8")], pa + pb, [a, b], [queue("qa"), queue("qb", weight=3)], conf=FAIR_CONF)
    assert (len(placed(result, "a-")), len(placed(result, "b-"))) == (2, 6)


def test_a_queue_alone_takes_the_whole_cluster() -> None:
    a, pa = job("a", "qa", 6)
    result = run([node("n0", cpu="4")], pa, [a], [queue("qa"), queue("qb")], conf=FAIR_CONF)
    assert len(placed(result, "a-")) == 4


def test_queue_priority_is_served_first() -> None:
    """spec.priority orders queues before shares (one pod each fits, two ask)."""
    a, pa = job("a", "qa", 1, cpu="2")
    b, pb = job("b", "qb", 1, cpu="2")
    queues = [queue("qa"), queue("qb", priority=10)]
    result = run([node("n0", cpu="2")], pa + pb, [a, b], queues, conf=FAIR_CONF)
    assert placed(result) == {"b-0": "n0"}


def test_guarantee_raises_the_deserved_share() -> None:
    a, pa = job("a", "qa", 8)
    b, pb = job("b", "qb", 8)
    queues = [queue("qa", guarantee={"cpu": "6"}), queue("qb")]
    result = run([node("n0", cpu="8")], pa + pb, [a, b], queues, conf=FAIR_CONF)
    assert (len(placed(result, "a-")), len(placed(result, "b-"))) == (6, 2)


def test_extras_wait_for_jobs_submitted_together() -> None:
    """An event-driven cycle that sees a's pods before b's must not hand a the cluster: a's pods past its
    minimum wait ``fairWindow`` (2 s) after its PodGroup was created, then share by weight."""
    created = T0
    a, pa = job("a", "qa", 4, created=created)
    b, _ = job("b", "qb", 4, created=created)
    nodes, queues = [node("n0", cpu="4")], [queue("qa"), queue("qb")]
    from extender.core.timestamps import epoch

    early = run(nodes, pa, [a, b], queues, conf=FAIR_CONF, now=epoch(created) + 0.5)
    assert len(placed(early, "a-")) == 1
    assert early.retry_at == epoch(created) + 2.0
    # Then b's pods exist: a's minimum is running, b's is placed and the extras share.
    a_running = [
        dict(p, spec=dict(p["spec"], nodeName="n0")) if p["metadata"]["name"] == "a-0" else p for p in pa
    ]
    b2, pb = job("b", "qb", 4, created=created)
    later = run(nodes, a_running + pb, [a, b2], queues, conf=FAIR_CONF, now=epoch(created) + 2.5)
    assert len(placed(later, "a-")) == 1 and len(placed(later, "b-")) == 2


def test_gang_minimum_before_other_groups_extras_across_queues() -> None:
    """b's gang of 3 is placed though a's queue has the lower share and elastic pods waiting."""
    a, pa = job("a", "qa", 4, min_member=1)
    b, pb = job("b", "qb", 3, min_member=3)
    result = run([node("n0", cpu="4")], pa + pb, [a, b], [queue("qa"), queue("qb")], conf=FAIR_CONF)
    assert len(placed(result, "b-")) == 3 and len(placed(result, "a-")) == 1


# --- preempt --------------------------------------------------------------------------------------------
PREEMPT_CONF = conf_with(
    "priority", "gang", "conformance", "predicates", "proportion", actions="enqueue, allocate, preempt"
)
CLASSES = [priority_class("high", 1000), priority_class("low", 10)]


def _run_preempt(pods: list[Raw], groups: list[Raw], conf: str = PREEMPT_CONF, **kw: Any) -> Any:
    return run(
        [node("n0", cpu="4")], pods, groups, kw.pop("queues", None), conf=conf, priority_classes=CLASSES, **kw
    )


def test_high_priority_job_preempts_a_low_priority_one_in_its_queue() -> None:
    low, lp = running("low", "default", 4, "n0", priority_class="low")
    high, hp = job("high", "default", 2, min_member=2, priority_class="high")
    result = _run_preempt(lp + hp, [low, high])
    assert len(result.evictions) == 2
    assert {e.reason for e in result.evictions.values()} == {PREEMPTED}
    assert all(e.by == "default/high" for e in result.evictions.values())
    assert placed(result, "high-") == {"high-0": "n0", "high-1": "n0"}
    # The placements wait for the victims, and the group says so.
    assert set(result.pipelined) == {PodUID("high-0"), PodUID("high-1")}
    assert result.pipelined[PodUID("high-0")] == frozenset(result.evictions)
    assert result.unschedulable["default/high"].reason == WAITING_FOR_VICTIMS
    assert "preempted by default/high (priority 1000)" in next(iter(result.evictions.values())).message


def test_preemption_takes_a_gang_whole_or_not_at_all() -> None:
    """low runs 4 pods with minMember 4: taking 2 would break it, so all 4 go (Volcano's gang plugin would
    refuse any victim, and the high-priority job would wait forever)."""
    low, lp = running("low", "default", 4, "n0", min_member=4, priority_class="low")
    high, hp = job("high", "default", 2, min_member=2, priority_class="high")
    result = _run_preempt(lp + hp, [low, high])
    assert set(result.evictions) == {PodUID(f"low-{i}") for i in range(4)}


def test_preemption_takes_spare_members_before_breaking_a_gang() -> None:
    low, lp = running("low", "default", 4, "n0", min_member=2, priority_class="low")
    high, hp = job("high", "default", 2, min_member=2, priority_class="high")
    result = _run_preempt(lp + hp, [low, high])
    assert len(result.evictions) == 2


def test_equal_priority_does_not_preempt() -> None:
    low, lp = running("a", "default", 4, "n0", priority_class="low")
    other, op = job("b", "default", 2, min_member=2, priority_class="low")
    result = _run_preempt(lp + op, [low, other])
    assert result.evictions == {} and result.placements == {}


def test_preempt_stays_within_the_queue() -> None:
    low, lp = running("low", "qb", 4, "n0", priority_class="low")
    high, hp = job("high", "qa", 2, min_member=2, priority_class="high")
    result = _run_preempt(lp + hp, [low, high], queues=[queue("qa"), queue("qb")])
    assert result.evictions == {}


def test_system_pods_are_never_victims() -> None:
    low, lp = running("low", "default", 4, "n0", priority_class="low")
    lp = [dict(p, metadata=dict(p["metadata"], namespace="kube-system")) for p in lp]
    low["metadata"]["namespace"] = "kube-system"
    high, hp = job("high", "default", 2, min_member=2, priority_class="high")
    result = _run_preempt(lp + hp, [low, high])
    assert result.evictions == {}


def test_min_runtime_protects_young_pods() -> None:
    conf = PREEMPT_CONF + "configurations:\n- name: preempt\n  arguments: {minRuntime: 2h}\n"
    low, lp = running("low", "default", 4, "n0", priority_class="low")
    high, hp = job("high", "default", 2, min_member=2, priority_class="high")
    assert _run_preempt(lp + hp, [low, high], conf=conf).evictions == {}  # an hour old
    assert len(_run_preempt(lp + hp, [low, high], conf=conf, now=NOW + 2 * 3600).evictions) == 2


def test_pods_already_leaving_need_no_victim() -> None:
    """Room a deleting pod will free counts (Volcano's FutureIdle): the preemptor waits for it alone."""
    low, lp = running("low", "default", 4, "n0", priority_class="low")
    lp[0]["metadata"]["deletionTimestamp"] = T0
    lp[1]["metadata"]["deletionTimestamp"] = T0
    high, hp = job("high", "default", 2, min_member=2, priority_class="high")
    result = _run_preempt(lp + hp, [low, high])
    assert result.evictions == {}
    assert result.pipelined[PodUID("high-0")] == frozenset({PodUID("low-0"), PodUID("low-1")})


# --- reclaim --------------------------------------------------------------------------------------------
RECLAIM_CONF = conf_with(
    "priority", "gang", "conformance", "predicates", "proportion", actions="enqueue, allocate, reclaim"
)


def test_a_starved_queue_reclaims_its_share() -> None:
    """qb borrowed the whole cluster while qa asked nothing; qa's job arrives: qb gives back 2, no more."""
    b, pb = running("b", "qb", 4, "n0")
    a, pa = job("a", "qa", 4)
    result = run([node("n0", cpu="4")], pb + pa, [b, a], [queue("qa"), queue("qb")], conf=RECLAIM_CONF)
    assert len(result.evictions) == 2
    assert {e.reason for e in result.evictions.values()} == {RECLAIMED}
    assert len(placed(result, "a-")) == 2


def test_reclaim_is_stable_once_shares_are_even() -> None:
    """After reclaim, each queue holds its deserved share: nobody evicts anyone (no ping-pong)."""
    b, pb = running("b", "qb", 2, "n0")
    b_wait = [pod(f"b-{i}", group="b", cpu="1", memory="100Mi", queue="qb") for i in range(2, 4)]
    a, pa = running("a", "qa", 2, "n0")
    a_wait = [pod(f"a-{i}", group="a", cpu="1", memory="100Mi", queue="qa") for i in range(2, 4)]
    result = run(
        [node("n0", cpu="4")],
        pb + b_wait + pa + a_wait,
        [b, a],
        [queue("qa"), queue("qb")],
        conf=VOLCANO_CI_CONF,
    )
    assert result.evictions == {} and result.placements == {}


def test_a_queue_that_is_not_reclaimable_keeps_what_it_holds() -> None:
    b, pb = running("b", "qb", 4, "n0")
    a, pa = job("a", "qa", 4)
    queues = [queue("qa"), queue("qb", reclaimable=False)]
    result = run([node("n0", cpu="4")], pb + pa, [b, a], queues, conf=RECLAIM_CONF)
    assert result.evictions == {}


def test_reclaim_takes_a_gang_whole() -> None:
    b, pb = running("b", "qb", 4, "n0", min_member=4)
    a, pa = job("a", "qa", 2, min_member=2)
    result = run([node("n0", cpu="4")], pb + pa, [b, a], [queue("qa"), queue("qb")], conf=RECLAIM_CONF)
    # Taking qb's gang whole would push qb below its deserved share (2): proportion refuses.
    assert result.evictions == {}


# --- the starvation guard (EASY backfill) -------------------------------------------------------------
def _guarded(after: str = "10m") -> str:
    return FAIR_CONF + f"configurations:\n- name: allocate\n  arguments: {{reserveAfter: {after}}}\n"


def _with_runtime(raw: Raw, runtime: str) -> Raw:
    raw["metadata"].setdefault("annotations", {})["pumice.dev/expected-runtime"] = runtime
    return raw


def test_a_starving_large_job_gets_nodes_held_while_small_jobs_backfill_around_it() -> None:
    """Two 4-cpu nodes; n0 runs a 2-cpu pod ending in 30 min, n1 a full one with no estimate. The large
    job (4 cpu) has waited an hour: n0 is held for it. A small job that says it ends in 10 min may use
    n0; one that does not say may not (it would delay the large job), and its reason names the
    reservation."""
    nodes = [node("n0", cpu="4"), node("n1", cpu="4")]
    busy = [
        _with_runtime(
            pod("r0", cpu="2", node="n0", phase="Running"), "90m"
        ),  # created an hour ago: 30 min left
        pod("r1", cpu="3", node="n1", phase="Running"),
    ]
    big, big_pods = job("big", "default", 1, cpu="4")
    quick, quick_pods = job("quick", "default", 1, cpu="1", created="2024-01-01T00:59:00Z")
    slow, slow_pods = job("slow", "default", 1, cpu="1", created="2024-01-01T00:59:00Z")
    _with_runtime(quick_pods[0], "10m")
    # n1 is the only node for slow once n0 is held: fill n1 so the test shows where slow may not go.
    filler = pod("r2", cpu="1", node="n1", phase="Running")
    pods = [*busy, filler, *big_pods, *quick_pods, *slow_pods]
    result = run(nodes, pods, [big, quick, slow], conf=_guarded())
    assert placed(result) == {"quick-0": "n0"}
    assert "reserved for starving job default/big" in result.unschedulable[GroupKey("default/big")].message
    assert "reserved for starving job default/big" in result.unschedulable[GroupKey("default/slow")].message
    # The group holding the reservation is looked at every cycle (never set aside as settled).
    assert "default/big" not in result.aside and "default/slow" in result.aside
    # Without the guard slow takes n0's last cpu.
    plain = run(nodes, pods, [big, quick, slow], conf=FAIR_CONF)
    assert placed(plain) == {"quick-0": "n0", "slow-0": "n0"}


def test_no_reservation_before_the_threshold() -> None:
    nodes = [node("n0", cpu="4")]
    busy = [pod("r0", cpu="3", node="n0", phase="Running")]
    big, big_pods = job("big", "default", 1, cpu="4")
    small, small_pods = job("small", "default", 1, cpu="1")
    result = run(nodes, busy + big_pods + small_pods, [big, small], conf=_guarded("2h"))
    assert placed(result) == {"small-0": "n0"}


def test_preempt_and_reclaim_leave_extras_to_the_fair_window_too() -> None:
    """Found end to end: with Volcano's CI conf, reclaim placed a's extra pods on free room at once,
    before b's pods existed, and evicted them when they appeared."""
    from extender.core.timestamps import epoch

    a, pa = job("a", "qa", 4)
    b, _ = job("b", "qb", 4)
    early = run(
        [node("n0", cpu="4")],
        pa,
        [a, b],
        [queue("qa"), queue("qb")],
        conf=VOLCANO_CI_CONF,
        now=epoch(T0) + 0.5,
    )
    assert len(placed(early, "a-")) == 1 and early.evictions == {}


def test_a_cycle_without_nodes_does_not_fail() -> None:
    pg, pods = gang("g", 4)
    for conf in (None, VOLCANO_CI_CONF):
        result = run([], pods, [pg], conf=conf)
        assert result.placements == {}


# --- queue state ------------------------------------------------------------------------------------------
def test_a_closing_queue_takes_nothing_new_and_closes_when_its_work_is_gone() -> None:
    from extender.core.status import queue_status
    from tests.core.builders import snapshot

    r, rp = running("r", "q", 1, "n0")
    w, wp = job("w", "q", 1)
    queues = [queue("q", state="Closing")]
    result = run([node("n0")], rp + wp, [r, w], queues, conf=FAIR_CONF)
    assert (
        result.placements == {}
        and "queue q is Closing" in result.unschedulable[GroupKey("default/w")].message
    )
    busy = snapshot([node("n0")], rp, [r], queues)
    assert queue_status(busy, "q", {"state": "Closing"})["state"] == "Closing"
    idle = snapshot([node("n0")], [], [], queues)
    assert queue_status(idle, "q", {"state": "Closing"})["state"] == "Closed"


def test_a_replacement_of_an_evicted_gang_member_waits_for_the_whole_gang() -> None:
    """Found end to end: low (minMember 4) was evicted whole; its job re-created one pod while three
    victims were still terminating, and that pod was placed alone, counting the leaving ones as its gang."""
    low, lp = running("low", "default", 3, "n0", min_member=4)
    for p in lp:
        p["metadata"]["deletionTimestamp"] = T0
    again = pod("low-3", group="low", cpu="1", memory="100Mi")
    result = run([node("n0", cpu="8")], [*lp, again], [low], conf=FAIR_CONF)
    assert result.placements == {}
    assert result.unschedulable[GroupKey("default/low")].message == "gang 1/4: waiting for 3 more pods"
