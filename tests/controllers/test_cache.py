"""The cache's running totals (node usage, per-queue usage, waiting sets) must always equal a
recomputation from its pods, whatever order adds, updates, binds and removals arrive in."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controllers.cache import ClusterCache
from extender.core.model import GroupKey
from extender.core.snapshot import pod_group_key


def _pod(rng: random.Random, uid: str) -> dict[str, Any]:
    ann = {"scheduling.k8s.io/group-name": f"g{rng.randrange(4)}"} if rng.random() < 0.6 else {}
    return {
        "metadata": {"name": uid, "namespace": "ns", "uid": uid, "annotations": ann},
        "spec": {
            "schedulerName": rng.choice(["volcano", "default-scheduler"]),
            "nodeName": rng.choice(["", "n1", "n2"]),
            "containers": [{"name": "c", "resources": {"requests": {"cpu": str(rng.randrange(1, 4))}}}],
        },
        "status": {"phase": rng.choice(["Pending", "Running", "Succeeded", "Failed"])},
    }


def _podgroup(i: int, queue: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"g{i}", "namespace": "ns", "uid": f"pg{i}"},
        "spec": {"minMember": 1, "queue": queue},
    }


def _nonzero(m: dict[Any, dict[str, int]]) -> dict[Any, dict[str, int]]:
    return {k: {r: v for r, v in d.items() if v} for k, d in m.items() if any(d.values())}


def _recompute(
    c: ClusterCache,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]], dict[GroupKey, set[str]]]:
    node_usage: dict[str, dict[str, int]] = {}
    queue_held: dict[str, dict[str, int]] = {}
    waiting: dict[GroupKey, set[str]] = {}
    for p in c.pods.values():
        ours = p.scheduler_name in c.scheduler_names
        if ours and p.waiting:
            waiting.setdefault(pod_group_key(p), set()).add(p.uid)
        if not p.holds_resources:
            continue
        targets = [node_usage.setdefault(p.node_name, {})]
        q = c._queue_of(pod_group_key(p)) if ours else None
        if q is not None:
            targets.append(queue_held.setdefault(q, {}))
        for d in targets:
            for k, v in p.requests.items():
                d[k] = d.get(k, 0) + v
    return node_usage, queue_held, waiting


@pytest.mark.parametrize("seed", range(5))
def test_running_totals_match_a_recomputation(seed: int) -> None:
    rng = random.Random(seed)
    c = ClusterCache(scheduler_names=frozenset({"volcano"}))
    c.replace_podgroups([_podgroup(i, f"q{i % 2}") for i in range(3)])
    live: dict[str, dict[str, Any]] = {}
    for step in range(3000):
        uid = f"u{rng.randrange(40)}"
        roll = rng.random()
        if roll < 0.15 and uid in live:
            c.remove_pod(live.pop(uid))
        elif roll < 0.2 and uid in live:
            c.assume_bound(live[uid]["metadata"]["uid"], "n1")
        else:
            live[uid] = _pod(rng, uid)
            c.upsert_pod(live[uid])
        if step % 500 == 250:  # a PodGroup appears or moves queue
            c.upsert_podgroup(_podgroup(3, rng.choice(["q0", "q1"])))
        if step % 700 == 350:
            c.remove_podgroup(_podgroup(rng.randrange(4), "q0"))
    node_usage, queue_held, waiting = _recompute(c)
    assert _nonzero(c.node_usage.by_node) == _nonzero(node_usage)
    assert _nonzero(c.queue_held) == _nonzero(queue_held)
    assert {k: set(v) for k, v in c.waiting.items()} == waiting
