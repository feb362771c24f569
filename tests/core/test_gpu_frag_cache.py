"""The fragmentation figures kept per row and per row state (:class:`FragCache`) are exactly those of the
plain computation (:class:`FragMeasure` over every row, afresh): hypothesis, over random clusters of
shared cards, shape mixes, asked shapes and sequences of changes (pods put on and taken off cards, cpu
and memory moving, a state left and come back to), with the owner's cheap row states (``deviceshare``'s
way) and with the default keys made from the cards. Rise, card and score must be equal bit for bit,
since the scores decide placements; and deviceshare's memo keeps its figures when the learned mix is
rebuilt alike."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.gpu_frag import Floats, FragMeasure, Mix, Shape, placement_score
from extender.core.gpu_frag_cache import FragCache, row_keys
from extender.core.gpu_memo import Applied, CardMemo
from extender.core.gpu_share import ShareCards
from extender.core.gpus import SHARE, Card, GpuHold, NodeGpus
from extender.core.model import Node

MODELS = ("A", "B")
_SHAPE = st.builds(
    Shape,
    cards=st.sampled_from([0, 0, 1, 2]),
    share=st.sampled_from([0, 0, 250, 500, 700]),
    cpu=st.sampled_from([0, 1000, 3000]),
    memory=st.sampled_from([0, 1 << 20]),
    models=st.sampled_from([(), (), ("A",), ("B",), ("A", "B")]),
).map(lambda s: Shape(share=s.share, cpu=s.cpu, memory=s.memory, models=s.models) if s.share else s)
# A change: (kind, row, card, amount, whole)
_CHANGE = st.tuples(
    st.sampled_from(["put", "put", "off", "cpu", "ask", "ask"]),
    st.integers(0, 7),
    st.integers(0, 3),
    st.sampled_from([250, 500, 500, 1000]),
    st.booleans(),
)


def _share_cards(sizes: list[tuple[int, int]]) -> ShareCards:
    gpus = {
        row: NodeGpus(share=tuple(Card(key=str(c), index=c, memory=memory) for c in range(n)))
        for row, (n, memory) in enumerate(sizes)
        if n
    }
    return ShareCards(len(sizes), gpus)


def _plain(
    share: ShareCards,
    cpu: npt.NDArray[np.int64],
    memory: npt.NDArray[np.int64],
    model: npt.NDArray[np.intp],
    mix: Mix,
    shape: Shape,
    best_fit: bool = False,
) -> tuple[Floats, npt.NDArray[np.intp], Floats]:
    """Every row's rise, card and score computed afresh, as before any cache; ties as ``best_fit``
    says."""
    measure = FragMeasure(mix)
    cards = share.frag_cards(np.arange(len(share), dtype=np.intp), cpu, memory, model)
    terms = measure.terms(cards)
    card = np.zeros(len(share), dtype=np.intp)
    if shape.share:
        rise, card = measure.share_delta(cards, terms, shape)
    elif shape.cards:
        rise = measure.whole_delta(cards, terms, shape)
    else:
        rise = measure.cpu_delta(cards, terms, shape)
    width = max(share.memory.shape[1], 1)
    size = np.maximum(cards.size.max(axis=1, initial=0), 1)
    left = terms.free - (shape.cards + shape.share / size)
    for row in range(len(share)) if shape.share and best_fit else ():
        # a share: the room its card keeps, as a fraction of the card, over 0..width
        if not np.isfinite(rise[row]):
            left[row] = width
            continue
        room = int(cards.avail[row, int(card[row])]) - shape.share
        left[row] = room / max(int(cards.size[row].max()), 1) * width
    return rise, card, placement_score(rise, left, width)


@settings(max_examples=200, deadline=None)
@given(
    # few rows and cards, few amounts: rows come back to states seen, and states alike in all but one
    # thing (the memory used, the cpu left) meet
    st.lists(st.tuples(st.integers(0, 3), st.sampled_from([1000, 1000, 2000])), min_size=1, max_size=4),
    st.lists(st.tuples(_SHAPE, st.sampled_from([0.5, 1.0, 2.0, 3.0])), min_size=1, max_size=4),
    st.lists(_SHAPE, min_size=1, max_size=4),
    st.lists(_CHANGE, max_size=40),
    st.integers(0, 2**31),
    st.booleans(),
)
def test_the_kept_figures_equal_a_fresh_computation(
    sizes: list[tuple[int, int]],
    shapes: list[tuple[Shape, float]],
    asked: list[Shape],
    changes: list[tuple[str, int, int, int, bool]],
    seed: int,
    best_fit: bool,
) -> None:
    rng = np.random.default_rng(seed)
    n = len(sizes)
    share = _share_cards(sizes)
    cpu = rng.choice([0, 2000, 4000], n).astype(np.int64)
    memory = rng.choice([0, 1 << 20, 1 << 30], n).astype(np.int64)
    model = rng.integers(0, len(MODELS) + 1, n).astype(np.intp)
    mix = Mix(shapes, MODELS, per_model=False)
    width = share.memory.shape[1]
    kept = [
        FragCache(
            FragMeasure(mix),
            share.clock,
            lambda rows: share.frag_cards(rows, cpu, memory, model),
            width=width,
            states=lambda rows: share.frag_states(rows, cpu, memory, model),
            best_fit=best_fit,
        ),
        FragCache(
            FragMeasure(mix),
            share.clock,
            lambda rows: share.frag_cards(rows, cpu, memory, model),
            width,
            best_fit=best_fit,
        ),
    ]
    held: list[tuple[int, tuple[tuple[int, int, int], ...], bool]] = []
    for t, (kind, r, c, amount, whole) in enumerate([("ask", 0, 0, 0, False), *changes]):
        row = r % n
        if kind == "put" and share.cards[row]:
            taken = ((c % int(share.cards[row]), 0 if whole else amount, 0),)
            share.add(row, taken, whole, 1)
            held.append((row, taken, whole))
        elif kind == "off" and held:
            back = held.pop(c % len(held))  # a row goes back to a state it had
            share.add(*back, -1)
        elif kind == "cpu":
            cpu[row] = rng.choice([0, 1000, 2000, 4000])
            share.clock.touch(row)
        shape = asked[t % len(asked)]
        want = _plain(share, cpu, memory, model, mix, shape, best_fit)
        for cache in kept:
            got = cache.rise(shape)
            for name, a, b in zip(("rise", "card", "score"), got, want, strict=True):
                assert np.array_equal(a, b), (name, a, b)


def test_of_alike_rises_best_fit_gives_a_share_the_tightest_card() -> None:
    """The mix weighs a 50 share only. Row 0: one card with 500 free; row 1: two cards, 360 free on one,
    the other idle. A 300 share raises neither row's fragmentation (every room it leaves fits a 50), so
    ties decide: by default the node left with less idle GPU (row 0: 0.2 cards against 1.06); with best
    fit the card left with less room (row 1's card 0: 60 against 200)."""
    share = _share_cards([(1, 1000), (2, 1000)])
    share.add(0, ((0, 500, 0),), False, 1)
    share.add(1, ((0, 640, 0),), False, 1)
    zeros = np.zeros(2, dtype=np.int64)
    model = np.zeros(2, dtype=np.intp)
    mix = Mix([(Shape(share=50), 1.0)], MODELS, per_model=False)
    for best_fit, winner in ((False, 0), (True, 1)):
        cache = FragCache(
            FragMeasure(mix),
            share.clock,
            lambda rows: share.frag_cards(rows, zeros, zeros, model),
            2,
            best_fit=best_fit,
        )
        rise, card, score = cache.rise(Shape(share=300))
        assert rise.tolist() == [0.0, 0.0] and card.tolist() == [0, 0]
        assert int(np.argmax(score)) == winner, (best_fit, score)


def test_row_keys_of_one_row_are_those_of_many() -> None:
    """One row's key (built without arrays) is that row's key among many: both paths share the memo."""
    a = np.arange(12, dtype=np.int64).reshape(4, 3)
    b = np.array([True, False, True, True])
    c = np.array([7, 8, 9, 10], dtype=np.intp)
    many = row_keys((a, b, c), np.arange(4, dtype=np.intp))
    assert [row_keys((a, b, c), np.array([i], dtype=np.intp))[0] for i in range(4)] == many
    assert len(set(many)) == 4


def test_the_memo_keeps_its_figures_when_the_mix_is_rebuilt_alike() -> None:
    """The learned mix is rebuilt as pods are seen; a rebuild that gives the same weighted shapes keeps
    the figures (one shape weighs 1.0 however often seen); a new shape makes new ones."""
    memo = CardMemo()
    one = Shape(share=500)
    for i in range(40):  # rebuilt after 8, 16 and 32 pods
        memo.learn(f"p{i}", one, 5000, 1.0)  # type: ignore[arg-type]
        if i == 0:
            first = memo.frag()
    assert first is not None and memo.frag() is first
    memo.learn("other", Shape(share=250), 5000, 1.0)  # type: ignore[arg-type]
    for i in range(40, 64):
        memo.learn(f"p{i}", one, 5000, 1.0)  # type: ignore[arg-type]
    assert memo.frag() is not first


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["A", "B"])), min_size=1, max_size=4),
    st.lists(_SHAPE.filter(lambda s: s.gpu), min_size=1, max_size=3),
    st.lists(_SHAPE, min_size=1, max_size=3),
    st.lists(
        st.tuples(
            st.sampled_from(["free", "free", "sync", "put", "off"]),
            st.integers(0, 3),
            st.integers(0, 3),
            st.sampled_from([0, 500, 1000, 2000, 3000, 4000, 8000]),
            st.sampled_from([0, 1 << 19, 1 << 20, 1 << 30]),
        ),
        max_size=30,
    ),
)
def test_the_memo_figures_follow_cpu_and_memory_as_a_fresh_computation(
    nodes: list[tuple[int, str]],
    learned: list[Shape],
    asked: list[Shape],
    changes: list[tuple[str, int, int, int, int]],
) -> None:
    """deviceshare's memo counts a change of a row's cpu or memory left only where a figure depends on
    it (FragCache.plenty): a placement's or an undo's (set_free) and a new snapshot's (sync), up and down
    across that point; every row's rise, card and score, over every row (rise) and one row alone
    (figures), equal the plain computation afresh."""
    table = [
        Node(
            name=f"n{i}",
            allocatable={"cpu": 8000, "memory": 1 << 30},
            labels={"nvidia.com/gpu.product": model},
            gpus=NodeGpus(share=tuple(Card(key=str(c), index=c, memory=1000) for c in range(n)))
            if n
            else None,
        )
        for i, (n, model) in enumerate(nodes)
    ]
    rows = len(table)
    memo = CardMemo()

    def sync(cpu: npt.NDArray[np.int64], memory: npt.NDArray[np.int64]) -> None:
        memo.sync(
            nodes=table,
            node_pos={n.name: i for i, n in enumerate(table)},
            holds={},
            at=None,
            cpu=cpu,
            memory=memory,
            group_of=lambda uid: "",
            model_label="nvidia.com/gpu.product",
        )

    sync(np.full(rows, 4000, dtype=np.int64), np.full(rows, 1 << 30, dtype=np.int64))
    for i, shape in enumerate(learned):
        memo.learn(f"p{i}", shape, 5000, 1.0)  # type: ignore[arg-type]
    held: list[tuple[str, Applied]] = []
    for t, (kind, r, c, cpu, memory) in enumerate([("free", 0, 0, 4000, 1 << 30), *changes]):
        row = r % rows
        if kind == "free":
            memo.set_free(row, cpu, memory)
        elif kind == "sync":
            new_cpu, new_memory = memo.cpu.copy(), memo.memory.copy()
            new_cpu[row], new_memory[(row + c) % rows] = cpu, memory
            sync(new_cpu, new_memory)
        elif kind == "put" and memo.share.cards[row]:
            uid = f"h{t}"
            a = Applied(
                row=row,
                family=SHARE,
                taken=((c % int(memo.share.cards[row]), 250, 0),),
                whole=False,
                group="",
            )
            memo.put(uid, (table[row].name, GpuHold(family=SHARE, cards=((str(c), 250, 0),))), a)  # type: ignore[arg-type]
            held.append((uid, a))
        elif kind == "off" and held:
            memo.take_off(held.pop(c % len(held))[0])  # type: ignore[arg-type]
        frag = memo.frag()
        assert frag is not None
        mix = Mix(memo.learner.mix() if memo.learner else (), memo.models, per_model=False)
        for shape in (asked[t % len(asked)], asked[(t + 1) % len(asked)]):
            want = _plain(memo.share, memo.cpu, memo.memory, memo.model, mix, shape)
            if t % 2:  # one row alone first, the others later
                one = frag.figures(shape, row)
                assert one == (float(want[0][row]), int(want[1][row]), float(want[2][row]))
            got = frag.rise(shape)
            for name, a_, b_ in zip(("rise", "card", "score"), got, want, strict=True):
                assert np.array_equal(a_, b_), (name, a_, b_)
