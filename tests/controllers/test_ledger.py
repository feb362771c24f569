"""The reservation ledger through a pod's whole life, and its running totals.

Random lifecycles (plans, binds by pumice and by others, watch events old and new, deletions, re-lists,
PodGroups moving queue) must leave the ledger's totals equal to a recomputation from its entries, its
held entries equal to what the cache shows bound, and the pending set's waiting index equal to the
cache's waiting pods. The named cases are the lifecycle's edges one by one."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from controllers.state.cluster import ClusterState, cluster_state
from controllers.state.ledger import Ledger, State
from extender.core.model import GroupKey, PodUID
from extender.core.snapshot import pod_group_key

NODES = ("n1", "n2", "n3")


def _pod(
    uid: str,
    *,
    node: str = "",
    phase: str = "Pending",
    group: str = "g",
    cpu: str = "1",
    scheduler: str = "volcano",
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": uid,
            "namespace": "ns",
            "uid": uid,
            "annotations": {"scheduling.k8s.io/group-name": group} if group else {},
        },
        "spec": {
            "schedulerName": scheduler,
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": phase},
    }


def _podgroup(name: str, queue: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name},
        "spec": {"minMember": 1, "queue": queue},
    }


def _state() -> ClusterState:
    s = cluster_state(frozenset({"volcano"}))
    s.cache.replace_nodes(
        [{"metadata": {"name": n}, "status": {"allocatable": {"cpu": "64", "pods": "110"}}} for n in NODES]
    )
    s.cache.replace_podgroups([_podgroup("g", "q0"), _podgroup("h", "q1")])
    return s


def _plan(s: ClusterState, uid: str, node: str) -> None:
    pod = s.cache.pod(PodUID(uid))
    assert pod is not None
    key = pod_group_key(pod)
    s.ledger.plan(pod.uid, node, pod.requests, s.cache.pod_queue(pod), key)


def _check(s: ClusterState) -> None:
    """Totals equal a recomputation from the entries; held entries equal the cache's bound pods;
    the waiting index equals the cache's waiting pods of pumice's."""
    entries = s.ledger.entries()
    per_node: dict[str, dict[str, int]] = {}
    per_queue: dict[str, dict[str, int]] = {}
    for r in entries.values():
        for d in [per_node.setdefault(r.node, {})] + ([per_queue.setdefault(r.queue, {})] if r.queue else []):
            for k, v in r.requests.items():
                d[k] = d.get(k, 0) + v
    for n in NODES:
        assert {k: v for k, v in s.ledger.on_node(n).items() if v} == {
            k: v for k, v in per_node.get(n, {}).items() if v
        }
    assert {
        q: {k: v for k, v in u.items() if v} for q, u in s.ledger.queue_usage().items() if any(u.values())
    } == {q: u for q, u in per_queue.items() if any(u.values())}
    snap = s.cache.full_snapshot()
    held = {u: r.node for u, r in entries.items() if r.state is not State.PLANNED}
    assert held == {p.uid: p.node_name for p in snap.pods.values() if p.holds_resources}
    for uid, r in entries.items():
        if r.state is State.PLANNED:
            pod = snap.pods[uid]
            assert pod.waiting and r.queue == s.cache.pod_queue(pod)
    waiting: dict[GroupKey, frozenset[PodUID]] = {}
    for p in snap.pods.values():
        if p.waiting and p.scheduler_name == "volcano":
            key = pod_group_key(p)
            waiting[key] = waiting.get(key, frozenset()) | {p.uid}
    assert s.pending.waiting() == waiting


@pytest.mark.parametrize("seed", range(6))
def test_random_lifecycles_keep_the_totals_exact(seed: int) -> None:
    rng = random.Random(seed)
    s = _state()
    live: dict[str, dict[str, Any]] = {}
    for step in range(2500):
        uid = f"u{rng.randrange(30)}"
        roll = rng.random()
        if roll < 0.1 and uid in live:
            s.cache.remove_pod(live.pop(uid))
        elif roll < 0.3 and uid in live:
            pod = s.cache.pod(PodUID(uid))
            if pod is not None and pod.waiting:
                node = rng.choice(NODES)
                if rng.random() < 0.5 or s.ledger.planned_node(pod.uid) is None:
                    _plan(s, uid, node)
                else:  # our bind succeeded
                    s.cache.assume_bound(pod.uid, s.ledger.planned_node(pod.uid) or node)
        elif roll < 0.35 and uid in live:
            s.ledger.release(PodUID(uid))
        elif roll < 0.4:  # a watch event from before a bind
            s.cache.upsert_pod(_pod(uid, cpu=str(rng.randrange(1, 4))))
            live[uid] = _pod(uid)
        else:
            live[uid] = _pod(
                uid,
                node=rng.choice(["", "", *NODES]),
                phase=rng.choice(["Pending", "Running", "Succeeded", "Failed"]),
                group=rng.choice(["g", "h", "", "missing"]),
                cpu=str(rng.randrange(1, 4)),
                scheduler=rng.choice(["volcano", "volcano", "default-scheduler"]),
            )
            s.cache.upsert_pod(live[uid])
        if step % 400 == 200:
            s.cache.upsert_podgroup(_podgroup(rng.choice("gh"), rng.choice(["q0", "q1", "q2"])))
        if step % 700 == 350:
            s.cache.remove_podgroup(_podgroup("h", "q1"))
        if step % 900 == 450:  # the watch re-lists: some pods went meanwhile
            keep = {u: o for u, o in live.items() if rng.random() < 0.8}
            s.cache.replace_pods([copy.deepcopy(o) for o in keep.values()])
            live = keep
        if step % 50 == 0:
            _check(s)
    _check(s)


def test_plan_then_kube_scheduler_binds_elsewhere() -> None:
    s = _state()
    s.cache.upsert_pod(_pod("p", cpu="2"))
    _plan(s, "p", "n1")
    assert s.ledger.on_node("n1")["cpu"] == 2000
    s.cache.upsert_pod(_pod("p", node="n2", phase="Running", cpu="2"))
    assert s.ledger.planned_node(PodUID("p")) is None
    assert s.ledger.on_node("n1")["cpu"] == 0 and s.ledger.on_node("n2")["cpu"] == 2000
    entry = s.ledger.get(PodUID("p"))
    assert entry is not None and entry.state is State.BOUND and entry.queue == "q0"
    _check(s)


def test_plan_then_pod_deleted_releases_the_room() -> None:
    s = _state()
    obj = _pod("p", cpu="2")
    s.cache.upsert_pod(obj)
    _plan(s, "p", "n1")
    s.pending.work()
    s.cache.remove_pod(obj)
    assert s.ledger.get(PodUID("p")) is None and s.ledger.on_node("n1")["cpu"] == 0
    assert s.ledger.queue_usage()["q0"]["cpu"] == 0
    _check(s)


def test_plan_then_pod_being_deleted_releases_the_plan() -> None:
    s = _state()
    s.cache.upsert_pod(_pod("p"))
    _plan(s, "p", "n1")
    going = _pod("p")
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    s.cache.upsert_pod(going)
    assert s.ledger.planned_node(PodUID("p")) is None


def test_assumed_binding_survives_an_older_watch_event_then_the_watch_confirms() -> None:
    s = _state()
    s.cache.upsert_pod(_pod("p"))
    _plan(s, "p", "n1")
    s.cache.assume_bound(PodUID("p"), "n1")
    entry = s.ledger.get(PodUID("p"))
    assert entry is not None and entry.state is State.ASSUMED
    s.cache.upsert_pod(_pod("p"))  # from before the bind
    pod = s.cache.pod(PodUID("p"))
    assert pod is not None and pod.node_name == "n1" and s.ledger.on_node("n1")["cpu"] == 1000
    s.cache.upsert_pod(_pod("p", node="n1", phase="Running"))
    entry = s.ledger.get(PodUID("p"))
    assert entry is not None and entry.state is State.BOUND
    _check(s)


def test_a_failed_bind_releases_only_a_plan() -> None:
    ledger = Ledger()
    ledger.plan(PodUID("p"), "n1", {"cpu": 1}, "q", None)
    ledger.release(PodUID("p"))
    assert ledger.get(PodUID("p")) is None and ledger.plan_count() == 0
    ledger.plan(PodUID("b"), "n1", {"cpu": 1}, "q", None)
    ledger.assume(PodUID("b"), "n1")
    ledger.release(PodUID("b"))  # held reservations leave only through the watch
    assert ledger.on_node("n1") == {"cpu": 1}


def test_a_relist_drops_pods_gone_meanwhile_and_keeps_assumptions() -> None:
    s = _state()
    gone, kept = _pod("gone"), _pod("kept")
    s.cache.upsert_pod(gone)
    s.cache.upsert_pod(kept)
    _plan(s, "gone", "n1")
    _plan(s, "kept", "n2")
    s.cache.assume_bound(PodUID("kept"), "n2")
    s.cache.replace_pods([kept])  # the re-list still shows it unbound: our binding is newer
    assert s.ledger.get(PodUID("gone")) is None
    entry = s.ledger.get(PodUID("kept"))
    assert entry is not None and entry.state is State.ASSUMED and s.ledger.on_node("n2")["cpu"] == 1000
    assert PodUID("gone") in s.pending.drain().pods
    _check(s)


def test_a_podgroup_moving_queue_moves_its_usage() -> None:
    s = _state()
    s.cache.upsert_pod(_pod("run", node="n1", phase="Running", cpu="3"))
    s.cache.upsert_pod(_pod("wait", cpu="1"))
    _plan(s, "wait", "n2")
    assert s.ledger.queue_usage() == {"q0": {"cpu": 4000, "pods": 2}}
    s.cache.upsert_podgroup(_podgroup("g", "q9"))
    assert s.ledger.queue_usage() == {"q0": {"cpu": 0, "pods": 0}, "q9": {"cpu": 4000, "pods": 2}}
    _check(s)


def test_other_schedulers_pods_hold_nodes_but_no_queue() -> None:
    s = _state()
    s.cache.upsert_pod(_pod("x", node="n3", phase="Running", cpu="5", scheduler="default-scheduler"))
    assert s.ledger.on_node("n3")["cpu"] == 5000 and s.ledger.queue_usage() == {}
    assert s.pending.waiting() == {}
