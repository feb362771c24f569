"""What a leadership term keeps in memory only, and how a new term rebuilds from the cluster: plans go with
the term, binds stay; pods kube-scheduler holds as unschedulable are found again from their PodScheduled
condition; an admission decided in memory but never written goes back to what the API server shows; every
reconciler looks at every object again."""

from __future__ import annotations

from typing import Any

from controllers.scheduling.scheduler import build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import cluster_state
from controllers.state.indexes import watched_objects
from controllers.state.ledger import State
from controllers.state.store import ObjectStore, Subscription
from extender.api import wire
from extender.core.model import GroupPhase, PodUID, group_key
from extender.plugins.registry import load_conf
from tests.controllers.test_scheduler import RecordingExecutor, node, pod, podgroup, scheduler, settle


def refused(raw: dict[str, Any]) -> dict[str, Any]:
    raw["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]
    return raw


async def test_a_term_that_ends_drops_its_plans_and_keeps_its_binds() -> None:
    s, _ = scheduler(node("n1", "8"))
    s.shared.cache.upsert_podgroup(podgroup("g", 2))
    for i in range(2):
        s.shared.cache.upsert_pod(pod(f"g-{i}", "g"))
    s.shared.cache.upsert_pod(pod("solo"))
    s.loop.cycle()
    await settle(s)
    assert len(s.shared.ledger.plans()) == 3 and s.shared.decided == 1
    args: wire.ExtenderBindingArgs = {"PodName": "solo", "PodNamespace": "ns", "PodUID": "solo", "Node": "n1"}
    assert await s.verbs.bind(args) == ""
    s.shared.rejected.add(PodUID("g-0"))
    s.shared.end_term()
    assert s.shared.ledger.plans() == {}
    kept = s.shared.ledger.get(PodUID("solo"))
    assert kept is not None and kept.state is State.ASSUMED  # a bind that happened is no plan
    assert s.shared.ledger.on_node("n1") == {"cpu": 1000, "pods": 1}
    assert not s.shared.rejected and not s.shared.reasons and s.shared.decided == 0
    # The next term plans the gang again, from scratch, around what is bound.
    s.loop.new_term()
    s.shared.begin_term()
    s.loop.cycle()
    assert sorted(s.shared.ledger.plans()) == ["g-0", "g-1"]


async def test_a_new_term_touches_the_pods_kube_scheduler_failed_while_nobody_led() -> None:
    s, ex = scheduler(node("n1", "8"))
    s.shared.cache.upsert_pod(refused(pod("waited")))
    s.shared.cache.upsert_pod(pod("fresh"))
    s.loop.cycle()  # the previous term's view of the pods: changed ones are looked at as they come
    await settle(s)
    s.shared.end_term()
    ex.touched.clear()
    s.shared.begin_term()
    assert s.shared.rejected == {PodUID("waited")}
    s.loop.new_term()
    s.loop.cycle()
    await settle(s)
    assert ex.touched == [("waited", "n1")]  # back into kube-scheduler's active queue; "fresh" needs none


async def test_an_admission_never_written_goes_back_to_what_the_api_server_shows() -> None:
    s, _ = scheduler(node("n1", "8"))
    cache = s.shared.cache
    cache.upsert_podgroup(podgroup("g", 1))
    key = group_key("ns", "g")
    assert cache.set_group_phase(key, GroupPhase.INQUEUE)
    # A watch event that still shows Pending does not undo an admission in memory (the status write is on
    # its way) ...
    cache.upsert_podgroup({**podgroup("g", 1), "status": {"phase": "Pending"}})
    assert cache.group(key).phase is GroupPhase.INQUEUE  # type: ignore[union-attr]
    # ... but the term that decided it ended: the next leader decides again.
    cache.forget_admissions()
    assert cache.group(key).phase is GroupPhase.PENDING  # type: ignore[union-attr]


def test_a_new_term_has_every_reconciler_look_at_every_object_again() -> None:
    store: ObjectStore = watched_objects(frozenset({"volcano"}))
    told: list[str] = []
    store.subscribe(
        Subscription(kinds=frozenset({"jobs", "cronjobs"}), changed=lambda c: None, listed=told.append)
    )
    store.resync()
    assert told == []  # nothing listed yet: nothing to look at again
    store.handlers()["jobs"].replace([])
    told.clear()
    store.resync()
    assert told == ["jobs"]


async def test_a_touch_kube_scheduler_never_took_is_made_again() -> None:
    """kube-scheduler's try after a touch can fail where the loop cannot see it (a replica that did not
    know the new leader yet answered it): the same failure writes no new condition on the pod, so the pod
    would wait in kube-scheduler's unschedulable queue for its periodic flush. Touched again instead."""
    now = [1000.0]
    state = cluster_state(frozenset({"volcano"}))
    state.cache.replace_nodes([node("n1", "8")])
    state.cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    ex = RecordingExecutor()
    s = build_scheduler(state, load_conf(), ex, settings=LoopSettings(retouch=15.0), clock=lambda: now[0])
    s.shared.cache.upsert_pod(refused(pod("waited")))
    s.loop.cycle()
    await settle(s)
    assert ex.touched == [("waited", "n1")]
    now[0] += 10
    s.loop.new_term()  # something to cycle for
    s.loop.cycle()
    await settle(s)
    assert ex.touched == [("waited", "n1")]  # not yet
    now[0] += 6
    s.loop.new_term()
    s.loop.cycle()
    await settle(s)
    assert ex.touched == [("waited", "n1")] * 2
    # Bound: forgotten, never touched again.
    bound = refused(pod("waited"))
    bound["spec"]["nodeName"] = "n1"
    s.shared.cache.upsert_pod(bound)
    now[0] += 60
    s.loop.new_term()
    s.loop.cycle()
    await settle(s)
    assert ex.touched == [("waited", "n1")] * 2
