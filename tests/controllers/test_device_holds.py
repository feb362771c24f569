"""GPU cards held between cycles: the ClusterCache's Snapshot.device_holds.

A pod planned by deviceshare holds the cards decided with its plan (the ledger's ``decided``
annotations) until the watch shows it bound, then the cards its own annotations name; an annotation
left on an unbound pod by an earlier plan holds nothing. The scheduling loop end to end: a second cycle
never gives a planned pod's card to another pod.
"""

from __future__ import annotations

from controllers.scheduling.scheduler import build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import ClusterState, cluster_state
from extender.core import gpus as G
from extender.core.gpus import GpuHold
from extender.core.model import PodUID
from extender.core.snapshot import pod_group_key
from extender.framework.cycle import run_cycle
from extender.plugins.registry import load_conf
from tests.controllers.test_bind_annotations import OrderedExecutor, settle
from tests.core.builders import NOW, Raw
from tests.plugins.test_deviceshare import SHARE_CONF, gpu_pod, share_node


def _state(cards: int = 2) -> ClusterState:
    s = cluster_state(frozenset({"volcano"}))
    s.cache.replace_nodes([share_node("n1", cards=cards)])
    s.cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    return s


def _plan(s: ClusterState, name: str, decided: dict[str, str] | None) -> None:
    pod = s.cache.pod(PodUID(name))
    assert pod is not None
    s.ledger.plan(pod.uid, "n1", pod.requests, s.cache.pod_queue(pod), pod_group_key(pod), decided=decided)


def _holds(s: ClusterState) -> dict[str, tuple[str, GpuHold]]:
    return {str(k): v for k, v in s.cache.full_snapshot().device_holds.items()}


def _on(*cards: str, memory: int = 600) -> GpuHold:
    return GpuHold(family=G.SHARE, cards=tuple((c, memory, 0) for c in cards))


def _index(card: str) -> dict[str, str]:
    return {G.GPU_INDEX: card, G.PREDICATE_TIME: "1"}


def _bound(raw: Raw, annotations: dict[str, str]) -> Raw:
    raw["spec"]["nodeName"] = "n1"
    raw["status"]["phase"] = "Running"
    raw["metadata"]["annotations"].update(annotations)
    return raw


def test_a_plan_holds_its_decided_cards_until_bound() -> None:
    s = _state()
    s.cache.upsert_pod(gpu_pod("p", memory=600))
    assert _holds(s) == {}
    _plan(s, "p", _index("1"))
    assert _holds(s) == {"p": ("n1", _on("1"))}
    # Our bind went through: still the decided cards (the watch has not shown the annotations yet).
    s.cache.assume_bound(PodUID("p"), "n1")
    assert _holds(s) == {"p": ("n1", _on("1"))}
    # The watch shows it bound: from now on its own annotations say which cards it has.
    s.cache.upsert_pod(_bound(gpu_pod("p", memory=600), _index("0")))
    assert _holds(s) == {"p": ("n1", _on("0"))}
    # ... and without them it holds none (as in Volcano: a pod's cards are its volcano.sh/gpu-index).
    s.cache.upsert_pod(_bound(gpu_pod("p", memory=600), {}))
    assert _holds(s) == {}


def test_an_annotation_left_from_an_earlier_plan_holds_nothing() -> None:
    s = _state()
    s.cache.upsert_pod(gpu_pod("p", memory=600, annotations=_index("0")))
    assert _holds(s) == {}
    _plan(s, "p", _index("1"))
    assert _holds(s) == {"p": ("n1", _on("1"))}  # the live plan's card, not the stale annotation's
    s.ledger.release(PodUID("p"))
    assert _holds(s) == {}
    _plan(s, "p", None)  # a plan without a decision (deviceshare off) holds no card
    assert _holds(s) == {}


def test_finished_and_plain_pods_hold_nothing() -> None:
    s = _state()
    done = _bound(gpu_pod("done", memory=600), _index("0"))
    done["status"]["phase"] = "Succeeded"
    s.cache.upsert_pod(done)
    s.cache.upsert_pod(_bound(gpu_pod("plain"), _index("1")))  # asks no GPU: its annotation is noise
    assert _holds(s) == {}


def test_a_planned_pod_outside_the_cycle_keeps_its_card() -> None:
    """The cycle's snapshot holds only the pods with work: the planned pod is not among them, its card
    still is not given to the new pod, and a third that needs a whole card waits."""
    s = _state()
    s.cache.upsert_pod(gpu_pod("p", memory=600))
    _plan(s, "p", _index("0"))
    for name in ("q", "r"):
        s.cache.upsert_pod(gpu_pod(name, memory=600))
    q, r = s.cache.pod(PodUID("q")), s.cache.pod(PodUID("r"))
    assert q is not None and r is not None
    snap = s.cache.snapshot({pod_group_key(q), pod_group_key(r)})
    assert "p" not in snap.pods
    got = run_cycle(snap, load_conf(SHARE_CONF), NOW)
    assert {str(k): v[G.GPU_INDEX] for k, v in got.annotations.items()} == {"q": "1"}
    assert "no GPU card has 600 memory free" in got.unschedulable[pod_group_key(r)].message


async def test_the_loop_never_gives_a_planned_card_twice() -> None:
    """Cycle one plans p on card 0 (its decision kept with the plan); cycle two plans q on card 1, and
    a third pod waits: two cards, three pods of 600."""
    s = _state()
    ex = OrderedExecutor()
    sched = build_scheduler(s, load_conf(SHARE_CONF), ex, settings=LoopSettings(), gates=True)
    s.cache.upsert_pod(gpu_pod("p", memory=600))
    sched.loop.cycle()
    await settle(sched)
    assert s.ledger.plans() == {"p": "n1"}
    reservation = s.ledger.get(PodUID("p"))
    assert reservation is not None
    assert reservation.decided[G.GPU_INDEX] == "0"
    for name in ("q", "r"):
        s.cache.upsert_pod(gpu_pod(name, memory=600))
    sched.loop.cycle()
    await settle(sched)
    assert s.ledger.plans() == {"p": "n1", "q": "n1"}
    assert {k: r.decided[G.GPU_INDEX] for k, r in s.ledger.entries().items()} == {"p": "0", "q": "1"}
    # What was written on the pods before their binds: the same cards.
    assert [(c[1], c[2][G.GPU_INDEX]) for c in ex.calls if c[0] == "annotate"] == [("p", "0"), ("q", "1")]
