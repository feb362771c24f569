"""The cache's pods as chunks (``PodIndex.chunks``, kept by ``controllers.state.pod_log``) are, concatenated,
exactly ``PodIndex.pods``' values in its order, whatever the writes (hypothesis): pods stored new, stored
again (a new version moves to the end, as in the map), removed, laid on a node (keeps its place), chunks
taken between writes or not, enough writes to fill, empty and compact chunks. And a snapshot's
``Residents`` walks the same pods in the same order from the chunks as from a flat list.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.state import pod_log
from controllers.state.pod_index import PodIndex
from extender.core.model import Pod, PodPhase, PodUID
from extender.core.residents import PodChunks, Residents

NODES = {"n0": 0, "n1": 1}


def _pod(i: int, version: int, node: str = "") -> Pod:
    return Pod(
        uid=PodUID(f"p{i}"),
        namespace="ns",
        name=f"p{i}-{version}",
        scheduler_name="volcano",
        requests={},
        node_name=node,
        phase=PodPhase.RUNNING if node else PodPhase.PENDING,
    )


_ops = st.lists(
    st.tuples(st.sampled_from(("put", "put", "remove", "bind", "take")), st.integers(0, 40)), max_size=300
)


@settings(max_examples=200, deadline=None)
@given(_ops, st.integers(1, 6))
def test_chunks_are_the_map_in_order(ops: list[tuple[str, int]], chunk: int) -> None:
    old = pod_log.CHUNK
    pod_log.CHUNK = chunk  # small chunks, so a few hundred writes fill, empty and compact many
    try:
        index = PodIndex(scheduler_names=frozenset({"volcano"}), default_queue="default")
        for version, (op, i) in enumerate(ops):
            uid = PodUID(f"p{i}")
            if op == "put":
                index.put(uid, _pod(i, version))
            elif op == "remove":
                index.put(uid, None)
            elif op == "bind" and uid in index.pods:
                index.bind(uid, "n0")
            elif op == "take":
                assert list(index.chunks()) == list(index.pods.values())
        assert list(index.chunks()) == list(index.pods.values())
        assert all(index.chunks().chunks)  # no empty chunk handed out
    finally:
        pod_log.CHUNK = old


def test_a_chunk_is_rebuilt_only_when_one_of_its_pods_changed() -> None:
    index = PodIndex(scheduler_names=frozenset({"volcano"}), default_queue="default")
    for i in range(3 * pod_log.CHUNK):
        index.put(PodUID(f"p{i}"), _pod(i, 0))
    before = index.chunks().chunks
    index.bind(PodUID("p0"), "n1")
    after = index.chunks().chunks
    assert after[0] is not before[0] and after[1:] == before[1:]
    assert all(a is b for a, b in zip(after[1:], before[1:], strict=True))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from(("", "n0", "n1", "gone"))), max_size=60))
def test_residents_walk_chunks_as_a_list(rows: list[tuple[int, str]]) -> None:
    pods = list({i: _pod(i, 0, node) for i, node in rows}.values())
    chunks = PodChunks(tuple(tuple(pods[s : s + 4]) for s in range(0, len(pods), 4)))
    flat, chunked = Residents(pods, {}, NODES), Residents(chunks, {}, NODES)
    assert chunked.bound() == flat.bound()
    assert chunked.all() == flat.all()
    assert Residents(chunks, {}, NODES).with_terms() == flat.with_terms()
