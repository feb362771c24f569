"""A Node LIST handed over page by page (controllers.state.parsed_kind): staged, then applied whole.

The cache's node dict is one object for its life (the cache holds it under its own name), so a paged LIST
must land in that dict, in place; until the LIST's end the nodes from before stand (a snapshot taken while
pages arrive never sees half a LIST); a node that does not parse is remembered with why, once the LIST
ends, and one that did parse clears what was remembered of it.
"""

from __future__ import annotations

from typing import Any

from controllers.state.cluster import cluster_state
from controllers.state.staged import Staged


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": "8Gi", "pods": "10"}
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def test_a_paged_node_list_is_applied_whole_and_in_place() -> None:
    cache = cluster_state(frozenset({"volcano"})).cache
    handler = cache.handlers()["nodes"]
    handler.replace([node("old"), node("bad", cpu="lots")])
    held = cache._nodes
    assert set(held) == {"old"} and ("Node", "bad") in cache.unreadable()
    before = cache.version

    listing = handler.begin()
    assert isinstance(listing, Staged)  # parsed as pages come, not every raw Node kept to the end
    listing.page([node("n-0"), node("n-1")])
    listing.page([node("bad"), node("worse", cpu="lots")])
    assert set(cache._nodes) == {"old"} and cache.version == before  # nothing applied mid-LIST

    listing.done()
    assert cache._nodes is held and set(held) == {"n-0", "n-1", "bad"}
    assert cache.node("n-1") is not None and cache.node("old") is None
    assert set(cache.unreadable()) == {("Node", "worse")}  # "bad" parsed this time: forgotten
    assert cache.version > before


def test_queues_keep_their_raw_objects_through_a_list() -> None:
    cache = cluster_state(frozenset({"volcano"})).cache
    handler = cache.handlers()["queues"]
    listing = handler.begin()
    listing.page([{"metadata": {"name": "q1"}, "spec": {"weight": 2}}])
    listing.done()
    assert cache._raw_queues["q1"]["spec"] == {"weight": 2}
