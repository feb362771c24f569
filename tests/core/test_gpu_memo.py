"""deviceshare's memo across cycles: brought up to each snapshot by what changed, it holds exactly the
card use a memo built afresh from the same snapshot holds (hypothesis, over random clusters and event
sequences: holds bound, moved and released through the hold log, plans coming and going, a cycle's own
placements put on and taken off, cpu and memory changing, nodes replaced); and the hold log's positions."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.gpu_memo import Applied, CardMemo, HoldLog, HoldsAt
from extender.core.gpus import SHARE, VGPU, Card, GpuHold, NodeGpus
from extender.core.model import Node, PodUID

Held = tuple[str, GpuHold]


def _node(i: int, share: int, vgpu: int, model: str) -> Node:
    gpus = NodeGpus(
        share=tuple(Card(key=str(c), index=c, memory=1000) for c in range(share)),
        vgpu=tuple(Card(key=f"u{i}-{c}", index=c, memory=1000, slots=4, type="NVIDIA") for c in range(vgpu)),
    )
    return Node(
        name=f"n{i}",
        allocatable={"cpu": 8000, "memory": 1 << 30},
        labels={"nvidia.com/gpu.product": model},
        gpus=gpus if share or vgpu else None,
    )


@st.composite
def _cluster(draw: st.DrawFn) -> list[Node]:
    n = draw(st.integers(1, 5))
    return [
        _node(i, draw(st.integers(0, 4)), draw(st.integers(0, 2)), draw(st.sampled_from(["A", "B"])))
        for i in range(n)
    ]


# An event: (kind, pod number, node number, cards, memory, whole).
_EVENT = st.tuples(
    st.sampled_from(["bind", "release", "plan", "unplan", "cycle-put", "cycle-off", "cpu", "nodes", "sync"]),
    st.integers(0, 7),
    st.integers(0, 5),
    st.lists(st.integers(0, 4), min_size=1, max_size=2, unique=True),
    st.integers(0, 600),
    st.booleans(),
)


def _hold(family: str, cards: list[int], memory: int, whole: bool, node: Node) -> GpuHold:
    if family == VGPU:
        keys = [c.key for c in node.gpus.vgpu] if node.gpus else []
        cards_ = tuple((keys[c % len(keys)] if keys else "x", memory, 10) for c in cards)
        return GpuHold(family=VGPU, cards=cards_)
    return GpuHold(family=SHARE, cards=tuple((str(c), 0 if whole else memory, 0) for c in cards), whole=whole)


Free = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _free(nodes: list[Node], rng: np.random.Generator) -> Free:
    return (
        rng.integers(0, 8000, len(nodes)).astype(np.int64),
        rng.integers(0, 1 << 30, len(nodes)).astype(np.int64),
    )


def _sync(
    memo: CardMemo, nodes: list[Node], holds: dict[PodUID, Held], at: HoldsAt | None, free: Free
) -> None:
    memo.sync(
        nodes=nodes,
        node_pos={n.name: i for i, n in enumerate(nodes)},
        holds=holds,
        at=at,
        cpu=free[0],
        memory=free[1],
        group_of=lambda uid: "",
        model_label="nvidia.com/gpu.product",
    )


def _same(a: CardMemo, b: CardMemo) -> None:
    for name in ("used", "sharers", "whole", "memory", "valid"):
        assert np.array_equal(getattr(a.share, name), getattr(b.share, name)), name
    assert a.vgpu == b.vgpu
    assert a.seen == b.seen
    assert np.array_equal(a.cpu, b.cpu) and np.array_equal(a.memory, b.memory)
    assert a.models == b.models and np.array_equal(a.model, b.model)


@given(_cluster(), st.lists(_EVENT, max_size=40), st.integers(0, 2**31))
@settings(max_examples=300, deadline=None)
def test_the_memo_kept_across_cycles_equals_one_built_afresh(
    nodes: list[Node], events: list[tuple[str, int, int, list[int], int, bool]], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    log = HoldLog()
    planned: dict[PodUID, Held] = {}
    memo = CardMemo()
    free = _free(nodes, rng)

    def snapshot() -> tuple[dict[PodUID, Held], HoldsAt]:
        holds = {**log.holds, **planned}
        return holds, HoldsAt(log=log, position=log.position, planned=frozenset(planned))

    holds, at = snapshot()
    _sync(memo, nodes, holds, at, free)
    for kind, p, n, cards, memory, whole in events:
        uid = PodUID(f"p{p}")
        node = nodes[n % len(nodes)]
        family = VGPU if node.gpus is not None and node.gpus.vgpu and p % 2 else SHARE
        held = (node.name, _hold(family, cards, memory, whole and family == SHARE, node))
        if kind == "bind":
            planned.pop(uid, None)
            log.set(uid, held)
        elif kind == "release":
            log.set(uid, None)
        elif kind == "plan" and uid not in log.holds:
            planned[uid] = held
        elif kind == "unplan":
            planned.pop(uid, None)
        elif kind == "cycle-put" and node.gpus is not None:
            # A cycle's tentative placement (committed or not: the next snapshot says).
            row = nodes.index(node)
            keys = {c.key: i for i, c in enumerate(node.gpus.cards(family))}
            taken = tuple((keys[k], m, c) for k, m, c in held[1].cards if k in keys)
            memo.put(uid, held, Applied(row=row, family=family, taken=taken, whole=held[1].whole, group=""))
            if p % 3 == 0:
                planned[uid] = held  # the plan stood
        elif kind == "cycle-off":
            memo.take_off(uid)
        elif kind == "cpu":
            free = _free(nodes, rng)
        elif kind == "nodes":
            # The node table is rebuilt: the same nodes (new objects), or one node's cards changed.
            nodes = [replace(x) for x in nodes]
            if p % 2 and nodes[n % len(nodes)].gpus is not None:
                nodes[n % len(nodes)] = _node(n % len(nodes), 1 + p % 3, 0, "C")
            free = _free(nodes, rng)
        holds, at = snapshot()
        if kind in ("sync", "nodes", "cpu") or p % 2:
            _sync(memo, nodes, holds, at, free)
            fresh = CardMemo()
            _sync(fresh, nodes, holds, None, free)
            _same(memo, fresh)
    _sync(memo, nodes, holds, at, free)
    fresh = CardMemo()
    _sync(fresh, nodes, holds, None, free)
    _same(memo, fresh)


def test_the_hold_log_says_what_changed_between_two_positions() -> None:
    log = HoldLog()
    hold = GpuHold(family=SHARE, cards=(("0", 100, 0),))
    start = log.position
    log.set(PodUID("a"), ("n1", hold))
    log.set(PodUID("b"), ("n1", hold))
    middle = log.position
    log.set(PodUID("a"), ("n1", hold))  # no change: not logged
    log.set(PodUID("a"), None)
    assert log.changed(start, middle) == ["a", "b"]
    assert log.changed(middle, log.position) == ["a"]
    assert log.holds == {"b": ("n1", hold)}
    assert log.changed(log.position, start) is None  # backwards: compare everything
    for i in range(20_000):  # grows past its holds: a new generation, older positions read everything
        log.set(PodUID("c"), ("n1", hold) if i % 2 else None)
    assert log.changed(middle, log.position) is None


def test_a_memo_taken_by_a_cycle_is_not_given_to_another_until_released_or_stale() -> None:
    memo = CardMemo()
    assert memo.acquire(100.0)
    assert not memo.acquire(101.0)
    memo.release()
    assert memo.acquire(102.0)
    assert memo.acquire(102.0 + 601.0)  # the cycle that took it failed long ago: taken over
    memo.release()
