"""The scheduling loop's side effects: touching rejected pods once planned, lifting gang gates only for
a whole gang, releasing a gang's plans when a bind fails."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from controllers.scheduling.executor import BindError
from controllers.scheduling.scheduler import Scheduler, build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import cluster_state
from extender.core.model import PodUID, group_key
from extender.framework.cycle import run_cycle
from extender.framework.reasons import NOT_ADMITTED
from extender.plugins.registry import load_conf


class RecordingExecutor:
    def __init__(self) -> None:
        self.touched: list[tuple[str, str]] = []
        self.lifted: list[str] = []
        self.fail_bind = False

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        if self.fail_bind:
            raise BindError("HTTP 409: conflict")

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        self.touched.append((name, node))

    async def lift_gate(self, namespace: str, name: str) -> None:
        self.lifted.append(name)

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        pass

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        return None

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        pass

    async def patch_status(
        self, path: str, status: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        pass


def node(name: str, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}},
    }


def pod(name: str, group: str | None = None, gated: bool = False, cpu: str = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": name,
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if gated:
        spec["schedulingGates"] = [{"name": "pumice.dev/gang"}]
    return {"metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": {"minMember": min_member}}


def scheduler(*nodes: dict[str, Any]) -> tuple[Scheduler, RecordingExecutor]:
    return scheduler_with(LoopSettings(), *nodes)


def scheduler_with(settings: LoopSettings, *nodes: dict[str, Any]) -> tuple[Scheduler, RecordingExecutor]:
    state = cluster_state(frozenset({"volcano"}))
    state.cache.replace_nodes(list(nodes))
    state.cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    ex = RecordingExecutor()
    return build_scheduler(state, load_conf(), ex, settings=settings, gates=True), ex


async def settle(s: Scheduler) -> None:
    await asyncio.gather(*s.writes._tasks)


async def test_gates_are_lifted_only_when_the_whole_gang_is_planned() -> None:
    s, ex = scheduler(node("n1", "4"))
    s.shared.cache.upsert_podgroup(podgroup("g", 3))
    for i in range(2):
        s.shared.cache.upsert_pod(pod(f"g-{i}", "g", gated=True))
    s.loop.cycle()
    await settle(s)
    assert ex.lifted == [] and len(s.shared.ledger.plans()) == 0
    s.shared.cache.upsert_pod(pod("g-2", "g", gated=True))
    s.loop.cycle()
    await settle(s)
    assert sorted(ex.lifted) == ["g-0", "g-1", "g-2"]
    assert sorted(n for n, _ in ex.touched) == ["g-0", "g-1", "g-2"]


async def test_a_gate_that_could_not_be_lifted_is_lifted_by_the_next_cycle() -> None:
    """A failed lift (the guarded patch kept losing, the API server was away) drops the gang's plans: a
    pod that keeps its plan is never touched again, and a gated pod never reaches kube-scheduler."""
    s, ex = scheduler(node("n1", "4"))
    fails = [True]

    async def lift_gate(namespace: str, name: str) -> None:
        if fails.pop() if fails else False:
            raise RuntimeError("HTTP 409: conflict")
        ex.lifted.append(name)

    ex.lift_gate = lift_gate  # type: ignore[method-assign]  # this case's double fails its first lifts
    s.shared.cache.upsert_pod(pod("solo", gated=True))
    s.loop.cycle()
    await settle(s)
    assert ex.lifted == [] and len(s.shared.ledger.plans()) == 0  # the plan went with the failure
    s.loop.cycle()
    await settle(s)
    assert ex.lifted == ["solo"]


def filtered(s: Scheduler, raw: dict[str, Any], nodes: list[str]) -> Any:
    """What a filter answers once the scheduling loop has run (filter itself never runs a cycle)."""
    s.loop.ensure_fresh()
    return s.verbs.filter(raw, nodes)


async def test_a_rejected_pod_is_touched_once_it_has_a_plan() -> None:
    s, ex = scheduler(node("n1", "1900m"))
    s.shared.cache.upsert_pod(pod("big", cpu="2"))
    result = filtered(s, pod("big", cpu="2"), ["n1"])
    assert result["NodeNames"] == [] and "needs cpu 2" in result["FailedAndUnresolvableNodes"]["n1"]
    s.shared.cache.upsert_node(node("n2", "4"))
    s.loop.cycle()
    await settle(s)
    assert ex.touched == [("big", "n2")]


async def test_a_pod_kube_scheduler_failed_without_us_is_touched_once_planned() -> None:
    """pumice restarted while kube-scheduler filtered the pod (connection refused: SchedulerError), or its
    predecessor refused it: this process never refused it, yet kube-scheduler holds it for up to five
    minutes unless the pod changes. A pod without that condition is not touched."""
    s, ex = scheduler(node("n1", "4"))
    failed = pod("failed")
    failed["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]
    s.shared.cache.upsert_pod(failed)
    s.shared.cache.upsert_pod(pod("fresh"))
    s.loop.cycle()
    await settle(s)
    assert set(s.shared.ledger.plans()) == {"failed", "fresh"}
    assert ex.touched == [("failed", "n1")]


async def test_a_failed_bind_releases_the_whole_gang_for_replanning() -> None:
    s, ex = scheduler(node("n1", "4"))
    s.shared.cache.upsert_podgroup(podgroup("g", 2))
    for i in range(2):
        s.shared.cache.upsert_pod(pod(f"g-{i}", "g"))
    s.loop.cycle()
    assert set(s.shared.ledger.plans()) == {"g-0", "g-1"}
    ex.fail_bind = True
    err = await s.verbs.bind({"PodName": "g-0", "PodNamespace": "ns", "PodUID": "g-0", "Node": "n1"})
    assert "conflict" in err
    assert len(s.shared.ledger.plans()) == 0
    s.loop.cycle()
    assert set(s.shared.ledger.plans()) == {"g-0", "g-1"}


async def test_a_plan_kube_scheduler_refuses_is_moved_to_another_node() -> None:
    s, _ = scheduler(node("n1", "4"), node("n2", "4"))
    s.shared.cache.upsert_pod(pod("p"))
    first = filtered(s, pod("p"), ["n1", "n2"])["NodeNames"]
    assert first is not None and len(first) == 1
    # kube-scheduler's own filters (say, a host port in use) leave the planned node out.
    other = "n2" if first[0] == "n1" else "n1"
    refused = filtered(s, pod("p"), [other])
    assert refused["NodeNames"] == [] and "re-planning" in refused["FailedAndUnresolvableNodes"][other]
    assert filtered(s, pod("p"), [first[0], other])["NodeNames"] == [other]


async def test_a_node_kube_scheduler_refused_is_asked_again_once_it_changes() -> None:
    """A new Node's status arrives after the Node: kube-scheduler refuses it at first ("Too many pods").
    Remembered for good, the refusal kept a gang that needed that node waiting forever (CI, a pumice
    restart test); a change of the node lets pumice plan on it again."""
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_pod(pod("p"))
    assert filtered(s, pod("p"), ["n1"])["NodeNames"] == ["n1"]
    refused = filtered(s, pod("p"), [])  # kube-scheduler's own filters left n1 out
    assert refused["NodeNames"] == []
    s.loop.cycle()
    assert s.shared.ledger.plans() == {}  # n1 refused for p, and no other node
    s.shared.cache.upsert_node(node("n1", "8"))  # its status is updated
    assert filtered(s, pod("p"), ["n1"])["NodeNames"] == ["n1"]


async def test_a_pod_of_a_missing_podgroup_is_told_so() -> None:
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_pod(pod("lost", "ghost"))
    result = filtered(s, pod("lost", "ghost"), ["n1"])
    assert result["NodeNames"] == []
    assert result["FailedAndUnresolvableNodes"] == {"n1": "podgroup ns/ghost does not exist"}


async def test_a_relist_drops_plans_of_pods_deleted_while_not_watching() -> None:
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.replace_pods([pod("kept"), pod("gone")])
    s.loop.cycle()
    assert set(s.shared.ledger.plans()) == {"kept", "gone"}
    s.shared.cache.replace_pods([pod("kept")])  # "gone" was deleted during a watch outage
    s.loop.cycle()
    assert set(s.shared.ledger.plans()) == {"kept"}
    assert s.shared.ledger.on_node("n1")["cpu"] == 1000


async def test_a_failed_bind_is_replanned_for_a_group_no_longer_in_the_working_snapshot() -> None:
    s, ex = scheduler(node("n1", "4"))
    running = podgroup("g", 1)
    running["status"] = {"phase": "Running"}
    s.shared.cache.upsert_podgroup(running)
    bound_pod = pod("g-0", "g")
    bound_pod["spec"]["nodeName"], bound_pod["status"]["phase"] = "n1", "Running"
    s.shared.cache.upsert_pod(bound_pod)
    s.shared.cache.upsert_pod(pod("g-1", "g"))  # an elastic extra of a running gang
    s.loop.cycle()
    assert set(s.shared.ledger.plans()) == {"g-1"}
    # Unrelated work: the next cycle's snapshot holds only the new pod, not the running group.
    s.shared.cache.upsert_pod(pod("other"))
    s.loop.cycle()
    ex.fail_bind = True
    assert await s.verbs.bind({"PodName": "g-1", "PodNamespace": "ns", "PodUID": "g-1", "Node": "n1"})
    assert "g-1" not in s.shared.ledger.plans()
    s.loop.cycle()
    assert "g-1" in s.shared.ledger.plans()


# --- the cycle off the event loop: decisions a newer event made stale are not applied -----------------


def _cycle_with(s: Scheduler, meanwhile: Any) -> None:
    """Run one cycle the way the loop does (snapshot, pure schedule, apply) with ``meanwhile`` happening
    while the pure part runs in its worker thread."""
    t0 = 0.0
    snap, left_out = s.loop._prepare()
    result = run_cycle(snap, s.shared.conf, 0.0)
    meanwhile()
    s.loop._apply(snap, left_out, result, t0)


async def test_placements_of_a_gang_whose_pod_went_during_the_cycle_are_dropped_whole() -> None:
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_podgroup(podgroup("g", 2))
    for i in range(2):
        s.shared.cache.upsert_pod(pod(f"g-{i}", "g"))
    _cycle_with(s, lambda: s.shared.cache.remove_pod(pod("g-1", "g")))
    assert len(s.shared.ledger.plans()) == 0 and s.shared.stats.stale_groups == 1
    s.shared.cache.upsert_pod(pod("g-1", "g"))  # back again: the next cycle plans the gang whole
    s.loop.ensure_fresh()
    assert sorted(s.shared.ledger.plans()) == ["g-0", "g-1"]


async def test_placements_on_a_node_filled_meanwhile_are_dropped() -> None:
    s, _ = scheduler(node("n1", "2"))
    s.shared.cache.upsert_podgroup(podgroup("g", 2))
    for i in range(2):
        s.shared.cache.upsert_pod(pod(f"g-{i}", "g"))
    other = pod("intruder", cpu="1")
    other["spec"].update(schedulerName="default-scheduler", nodeName="n1")
    other["status"]["phase"] = "Running"
    _cycle_with(s, lambda: s.shared.cache.upsert_pod(other))  # kube-scheduler bound someone else's pod there
    assert len(s.shared.ledger.plans()) == 0
    s.loop.ensure_fresh()
    held = s.shared.cache.pod(PodUID("g-0"))
    assert held is not None
    assert len(s.shared.ledger.plans()) == 0 and "needs cpu" in s.verbs.reason_for(held)  # and it says why


async def test_placements_on_a_node_changed_meanwhile_are_dropped_but_others_stand() -> None:
    s, _ = scheduler(node("n1", "1"), node("n2", "1"))
    s.shared.cache.upsert_pod(pod("a"))
    s.shared.cache.upsert_pod(pod("b"))
    cordoned = node("n1", "1") | {"spec": {"unschedulable": True}}
    _cycle_with(s, lambda: s.shared.cache.upsert_node(cordoned))
    assert len(s.shared.ledger.plans()) == 1 and set(s.shared.ledger.plans().values()) == {"n2"}


async def test_unrelated_changes_during_the_cycle_keep_its_placements() -> None:
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_podgroup(podgroup("g", 2))
    for i in range(2):
        s.shared.cache.upsert_pod(pod(f"g-{i}", "g"))
    _cycle_with(s, lambda: s.shared.cache.upsert_pod(pod("newcomer")))
    assert sorted(s.shared.ledger.plans()) == ["g-0", "g-1"] and s.shared.stats.stale_groups == 0


async def test_filter_waits_for_the_loop_when_much_is_waiting() -> None:
    s, _ = scheduler_with(LoopSettings(resync=10.0, debounce=0.0, inline_groups=0), node("n1", "4"))
    loop_task = asyncio.create_task(s.run())
    try:
        s.shared.cache.upsert_pod(pod("p"))
        await s.verbs.prepare(PodUID("p"))
        assert s.verbs.filter(pod("p"), ["n1"])["NodeNames"] == ["n1"]
        assert s.shared.stats.cycles >= 1
    finally:
        loop_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop_task
    # Without the loop such a filter waits at most plan_timeout and plans nothing itself.
    s2, _ = scheduler_with(LoopSettings(plan_timeout=0.05, inline_groups=0), node("n1", "4"))
    s2.shared.cache.upsert_pod(pod("q"))
    await s2.verbs.prepare(PodUID("q"))
    assert s2.verbs.filter(pod("q"), ["n1"])["NodeNames"] == [] and s2.shared.stats.cycles == 0


async def test_filter_plans_inline_when_little_is_waiting() -> None:
    s, _ = scheduler(node("n1", "4"))  # no loop running: only the inline cycle can plan it
    s.shared.cache.upsert_pod(pod("q"))
    await s.verbs.prepare(PodUID("q"))
    assert s.verbs.filter(pod("q"), ["n1"])["NodeNames"] == ["n1"] and s.shared.stats.cycles == 1


@pytest.mark.parametrize(("web_on", "expected"), [("n1", "n2"), ("n2", "n1")])
async def test_required_anti_affinity_counts_pods_already_running_on_nodes(
    web_on: str, expected: str
) -> None:
    """The core sees every pod on a node (residents), not only the work of this cycle: a plan never needs
    kube-scheduler to refuse it for anti-affinity against another workload's running pod."""
    s, _ = scheduler(node("n1", "4"), node("n2", "4"))
    for n in ("n1", "n2"):
        s.shared.cache.upsert_node(
            node(n, "4") | {"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}}
        )
    web = pod("web", cpu="1")
    web["metadata"]["labels"] = {"app": "web"}
    web["spec"].update(schedulerName="default-scheduler", nodeName=web_on)
    web["status"]["phase"] = "Running"
    s.shared.cache.upsert_pod(web)
    # The other node is busier, so every score but the rule prefers web's node.
    filler = pod("filler", cpu="2")
    filler["spec"].update(schedulerName="default-scheduler", nodeName=expected)
    filler["status"]["phase"] = "Running"
    s.shared.cache.upsert_pod(filler)
    shy = pod("shy", cpu="1")
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    shy["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    s.shared.cache.upsert_pod(shy)
    s.loop.ensure_fresh()
    assert s.shared.ledger.planned_node(PodUID("shy")) == expected


async def test_a_pod_that_arrives_during_a_cycle_gets_a_cycle_of_its_own() -> None:
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_pod(pod("first"))
    _cycle_with(s, lambda: s.shared.cache.upsert_pod(pod("late")))
    assert sorted(s.shared.ledger.plans()) == ["first"]
    s.loop.ensure_fresh()  # what the loop does on its next wake: the late pod was not taken as seen
    assert sorted(s.shared.ledger.plans()) == ["first", "late"]


# --- settled groups: a backlog short of room is not re-examined until something could let it fit ------


def _stuck(s: Scheduler, name: str, cpu: str = "8") -> None:
    s.shared.cache.upsert_podgroup(podgroup(name, 1))
    s.shared.cache.upsert_pod(pod(f"{name}-0", name, cpu=cpu))


async def test_a_group_short_of_room_is_settled_and_keeps_its_reason() -> None:
    s, _ = scheduler(node("n1", "4"))
    _stuck(s, "big")
    s.loop.ensure_fresh()
    reason = s.shared.reasons[group_key("ns", "big")].message
    assert group_key("ns", "big") in s.shared.pending.settled() and "needs cpu 8" in reason
    s.shared.cache.upsert_pod(pod("small", cpu="1"))  # unrelated work arrives
    snap, left_out = s.loop._prepare()
    # Left out of the snapshot, its pods too; its queue still counts what it asks for.
    assert left_out == {group_key("ns", "big")} and group_key("ns", "big") not in snap.groups
    assert "big-0" not in snap.pods and list(snap.aside_waiting["default"][:1]) == [8000]
    s.loop._apply(snap, left_out, run_cycle(snap, s.shared.conf, 0.0), 0.0)
    assert s.shared.ledger.planned_node(PodUID("small")) == "n1"
    assert s.shared.reasons[group_key("ns", "big")].message == reason  # still says why
    assert group_key("ns", "big") in s.shared.pending.settled()


def _with_min(name: str, cpu: str) -> dict[str, Any]:
    pg = podgroup(name, 1)
    pg["spec"]["minResources"] = {"cpu": cpu}
    return pg


async def test_a_settled_admitted_group_keeps_its_promise() -> None:
    """A group admitted but short of room is owed its minResources while it is left out: a newcomer the
    promise leaves no room for is refused admission, as if the left-out group were in the snapshot."""
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_podgroup(_with_min("big", "3"))
    s.shared.cache.upsert_pod(pod("big-0", "big", cpu="8"))  # admitted (3 of 4 cpu promised), never placeable
    s.loop.ensure_fresh()
    assert group_key("ns", "big") in s.shared.pending.settled()
    big = s.shared.cache.group(group_key("ns", "big"))
    assert big is not None and big.phase == "Inqueue"
    s.shared.cache.upsert_podgroup(_with_min("next", "2"))
    s.shared.cache.upsert_pod(pod("next-0", "next", cpu="2"))
    snap, left_out = s.loop._prepare()
    assert left_out == {group_key("ns", "big")} and list(snap.aside_owed["default"][:1]) == [3000]
    s.loop._apply(snap, left_out, run_cycle(snap, s.shared.conf, 0.0), 0.0)
    assert s.shared.reasons[group_key("ns", "next")].reason == NOT_ADMITTED
    assert "next-0" not in s.shared.ledger.plans()
    # Without that promise the newcomer fits: it is the left-out group's promise that refused it.
    s.shared.cache.remove_podgroup(_with_min("big", "3"))
    s.loop.ensure_fresh()
    assert s.shared.ledger.planned_node(PodUID("next-0")) == "n1"


async def test_a_group_refused_admission_settles_until_room_appears() -> None:
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_podgroup(_with_min("huge", "64"))
    s.shared.cache.upsert_pod(pod("huge-0", "huge", cpu="1"))
    s.loop.ensure_fresh()
    assert s.shared.reasons[group_key("ns", "huge")].reason == NOT_ADMITTED
    assert group_key("ns", "huge") in s.shared.pending.settled()
    s.shared.cache.upsert_node(node("n2", "64"))
    s.loop.ensure_fresh()
    assert s.shared.ledger.planned_node(PodUID("huge-0")) is not None


@pytest.mark.parametrize("change", ["node added", "room freed", "its pod changed"])
async def test_a_settled_group_is_looked_at_again_when_it_could_fit(change: str) -> None:
    s, _ = scheduler(node("n1", "4"))
    blocker = pod("blocker", cpu="4")
    blocker["spec"].update(schedulerName="default-scheduler", nodeName="n1")
    blocker["status"]["phase"] = "Running"
    s.shared.cache.upsert_pod(blocker)
    _stuck(s, "g", cpu="2")
    s.loop.ensure_fresh()
    assert group_key("ns", "g") in s.shared.pending.settled() and "g-0" not in s.shared.ledger.plans()
    if change == "node added":
        s.shared.cache.upsert_node(node("n2", "4"))
    elif change == "room freed":
        blocker["status"]["phase"] = "Succeeded"
        s.shared.cache.upsert_pod(blocker)
    else:
        s.shared.cache.remove_pod(blocker)  # the room is freed by a deletion the group does not see...
        s.shared.cache.upsert_pod(pod("g-0", "g", cpu="1"))  # ...and its own pod changed too
    s.loop.ensure_fresh()
    assert "g-0" in s.shared.ledger.plans()


async def test_a_filter_waits_for_the_rest_of_a_gang_still_being_created() -> None:
    """kube-scheduler takes a gang's first pod as soon as it exists: the filter waits (bounded) while the
    gang's pods keep coming, and answers with the plan once the gang is whole, instead of refusing it."""
    s, _ = scheduler_with(LoopSettings(gang_idle=0.3, gang_wait=2.0), node("n1", "4"))
    s.shared.cache.upsert_podgroup(podgroup("g", 3))
    s.shared.cache.upsert_pod(pod("g-0", "g"))

    async def the_rest() -> None:
        for i in (1, 2):
            await asyncio.sleep(0.05)
            s.shared.cache.upsert_pod(pod(f"g-{i}", "g"))

    rest = asyncio.create_task(the_rest())
    await s.verbs.prepare("g-0")  # type: ignore[arg-type]
    await rest
    assert s.verbs.filter(pod("g-0", "g"), ["n1"])["NodeNames"] == ["n1"]


async def test_a_filter_does_not_wait_for_a_gang_that_stopped_growing() -> None:
    s, _ = scheduler_with(LoopSettings(gang_idle=0.05, gang_wait=5.0), node("n1", "4"))
    s.shared.cache.upsert_podgroup(podgroup("g", 3))
    s.shared.cache.upsert_pod(pod("g-0", "g"))
    await asyncio.sleep(0.1)  # its last pod came longer ago than gang_idle
    t0 = asyncio.get_running_loop().time()
    await s.verbs.prepare("g-0")  # type: ignore[arg-type]
    assert asyncio.get_running_loop().time() - t0 < 1.0
    assert s.verbs.filter(pod("g-0", "g"), ["n1"])["NodeNames"] == []
    assert "waiting for 2 more pods" in s.verbs.reason_for(s.shared.cache.pod("g-0"))  # type: ignore[arg-type]


async def test_a_deleted_pod_brings_its_placed_group_back_into_view() -> None:
    """A placed group is left out of cycles until it changes; a pod of it deleted is such a change (what
    the group holds, its status)."""
    s, _ = scheduler(node("n1", "4"))
    s.shared.cache.upsert_podgroup(podgroup("g", 2) | {"status": {"phase": "Inqueue"}})
    for i in range(2):
        s.shared.cache.upsert_pod(pod(f"g-{i}", "g"))
    s.loop.cycle()
    assert group_key("ns", "g") in s.shared.pending.placed()
    s.shared.cache.remove_pod(pod("g-1", "g"))
    assert group_key("ns", "g") not in s.shared.pending.placed()
    snap, _ = s.loop._prepare()
    assert group_key("ns", "g") in snap.groups
