"""Objects held packed (controllers.state.packed), and equal values held once (controllers.state.shared).

What a reader gets back from the compact forms must be what it read from the raw object: the vcjob the
job controller parses, the PodGroup the status writer patches from, the metadata the store's indexes
read, the labels the scheduler matches. Checked over the real objects in tests/fixtures (as kube-apiserver
v1.24 returned them) and over odd inputs.
"""

from __future__ import annotations

import copy
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from controllers.state.cluster import cluster_state
from controllers.state.indexes import VCJOB, watched_objects
from controllers.state.meta import read_meta
from controllers.state.packed import PackedMap, Packer, pack, unpack
from controllers.state.shared import Shared
from controllers.state.store import Stored
from extender.core.model import PodUID, group_key
from extender.core.parse import parse_podgroup
from extender.jobs.model import parse_job
from extender.plugins.registry import load_conf
from extender.wiring import Process
from tests.ops.test_serve_runtime_flags import settings as serve_settings

Obj = dict[str, Any]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NAMES = frozenset({"volcano"})


def fixture(name: str) -> Obj:
    obj: Obj = orjson.loads((FIXTURES / f"restart_{name}.json").read_bytes())
    return obj


@pytest.mark.parametrize("name", ["vcjob", "podgroup", "pod", "node"])
def test_a_packed_fixture_reads_back_equal(name: str) -> None:
    obj = fixture(name)
    assert unpack(pack(obj)) == obj
    stored = Stored.packed(copy.deepcopy(obj))
    assert stored.obj == obj
    # The metadata view is the one read from the raw object, but for ``raw`` (not kept: read ``obj``).
    assert stored.meta == read_meta(obj)
    assert stored.meta.raw == {}


def test_the_job_controller_and_the_status_writer_read_what_they_read_raw() -> None:
    job, pg = fixture("vcjob"), fixture("podgroup")
    assert parse_job(Stored.packed(copy.deepcopy(job)).obj) == parse_job(job)
    assert parse_podgroup(Stored.packed(copy.deepcopy(pg)).obj) == parse_podgroup(pg)


def test_each_read_is_a_copy_the_reader_owns() -> None:
    stored = Stored.packed(fixture("vcjob"))
    first = stored.obj
    first["status"] = {"state": {"phase": "Changed"}}
    first["metadata"]["name"] = "changed"
    assert stored.obj == fixture("vcjob")
    assert stored.obj is not stored.obj


def test_what_is_not_json_is_held_as_it_is() -> None:
    odd = {"metadata": {"name": "a"}, "spec": {1: "an int key"}}
    assert pack(odd) is odd
    assert Stored.packed(odd).obj is odd
    assert Stored.packed(odd).meta.name == "a"


def test_a_packed_object_costs_its_length() -> None:
    """orjson's result keeps its writer's buffer (~8 KB held for a 1 KB vcjob): pack copies it out."""
    job = fixture("vcjob")
    job["metadata"].pop("managedFields", None)
    length = len(orjson.dumps(job))
    tracemalloc.start()
    try:
        held = [pack(job) for _ in range(200)]
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(held) == 200
    assert size / 200 < length + 200, f"{size / 200:.0f} bytes held for {length} bytes of JSON"


def test_a_packed_map_packs_on_write_and_shares_bodies_on_copy() -> None:
    m: PackedMap[str] = PackedMap()
    m["a"] = fixture("podgroup")
    m["b"] = {"x": 1}
    assert m["a"] == fixture("podgroup") and m.get("c") is None and "b" in m and len(m) == 2
    m["a"]["status"] = {}  # a read is a copy
    assert m["a"] == fixture("podgroup")
    c = m.copy()
    del m["b"]
    assert list(m) == ["a"] and sorted(c) == ["a", "b"]
    other: PackedMap[str] = PackedMap()
    assert other.take("a", c) and not other.take("z", c)
    assert other["a"] == fixture("podgroup")


def test_a_packer_gives_equal_objects_one_body_and_a_changed_object_its_own() -> None:
    packer = Packer()
    pg = fixture("podgroup")
    first = packer(pg)
    assert first == pack(pg) and packer(copy.deepcopy(pg)) is first and packer(pg) is first
    pg["status"] = {"phase": "Changed"}  # the same dict changed: packed anew, never by its identity
    assert unpack(packer(pg)) == pg and packer(pg) is not first
    odd = {"spec": {1: "an int key"}}
    assert packer(odd) is odd


async def test_the_store_and_the_cache_hold_one_body_of_a_podgroup() -> None:
    """Both hold every PodGroup packed (the reconcilers' and the status writer's); as serve wires them
    (extender.wiring: the store borrows the cache's packer), the JSON is held once (10 MiB at 11 000
    PodGroups)."""
    client = KubeClient(Connection(host="http://localhost"))
    try:
        proc = Process(serve_settings(), load_conf(), client)
    finally:
        await client.close()
    state, store = proc, proc.watched
    pg = fixture("podgroup")
    key = group_key(read_meta(pg).namespace, read_meta(pg).name)
    for handlers in (state.cache.handlers(), store.handlers()):  # a LIST, as the informer's tee feeds it
        listing = handlers["podgroups"].begin()
        listing.page([pg])
        listing.done()
    (held,) = store.all("podgroups")
    assert isinstance(held.body, bytes) and held.obj == pg == state.cache.raw_podgroup(key)
    assert held.body is state.cache._raw_podgroups._bodies[key]
    pg["metadata"]["resourceVersion"] = "999"  # a watch event: each handler packs it as it comes
    state.cache.handlers()["podgroups"].upsert(pg)
    store.handlers()["podgroups"].upsert(pg)
    (held,) = store.all("podgroups")
    assert held.obj == pg and held.body is state.cache._raw_podgroups._bodies[key]


def test_shared_gives_the_first_of_equal_values_and_forgets_when_full() -> None:
    s: Shared[list[int]] = Shared(limit=2)
    a = s.share("k", lambda: [1])
    assert s.share("k", lambda: [1]) is a
    s.share("l", lambda: [2])
    s.share("m", lambda: [3])  # full: everything before is forgotten
    assert s.share("k", lambda: [1]) is not a


def _gang_pod(i: int) -> Obj:
    pod = fixture("pod")
    pod["metadata"]["uid"] = f"uid-{i}"
    pod["metadata"]["name"] = f"job-0-worker-{i}"
    return pod


def test_a_gangs_pods_share_their_labels_and_owner_references() -> None:
    state, store = cluster_state(NAMES), watched_objects(NAMES)
    for i in range(3):
        state.cache.handlers()["pods"].upsert(_gang_pod(i))
        store.handlers()["pods"].upsert(_gang_pod(i))
    pods = [state.cache.pod(PodUID(f"uid-{i}")) for i in range(3)]
    assert all(p is not None and p.labels == fixture("pod")["metadata"]["labels"] for p in pods)
    assert pods[0] is not None and pods[2] is not None and pods[0].labels is pods[2].labels
    held = store.all("pods")
    assert len(held) == 3
    assert held[0].meta.owner_references is held[2].meta.owner_references
    assert held[0].meta.owner_references == read_meta(fixture("pod")).owner_references
    assert held[0].meta.labels is held[2].meta.labels


def test_podgroups_parsed_apart_share_the_strings_they_repeat() -> None:
    """Every PodGroup repeats its namespace, queue, creation second and conditions (but their messages):
    held once, not once per PodGroup (~400 bytes each)."""
    raw = (FIXTURES / "restart_podgroup.json").read_bytes()
    a, b = (parse_podgroup(orjson.loads(raw)) for _ in range(2))
    assert a == b and a.conditions
    assert a.namespace is b.namespace and a.queue is b.queue and a.created is b.created
    for x, y in zip(a.conditions, b.conditions, strict=True):
        assert x.type is y.type and x.status is y.status and x.reason is y.reason
        assert x.last_transition_time is y.last_transition_time


def test_a_gangs_pods_share_one_group_key() -> None:
    """The ledger keeps a group key per pod: one string for a gang's pods, the cache's members key."""
    state = cluster_state(NAMES)
    for i in range(3):
        raw = _gang_pod(i)
        raw["spec"]["nodeName"] = "n1"
        state.cache.handlers()["pods"].upsert(raw)
    held = [state.ledger.get(PodUID(f"uid-{i}")) for i in range(3)]
    assert all(r is not None for r in held) and len({r.group for r in held if r is not None}) == 1
    assert held[0] is not None and held[2] is not None and held[0].group is held[2].group
    pod = state.cache.pod(PodUID("uid-1"))
    assert pod is not None and state.cache._index.ours(pod) is held[0].group


def test_the_store_holds_jobs_and_podgroups_packed_and_nodes_by_their_metadata() -> None:
    store = watched_objects(NAMES)
    job, pg, node = fixture("vcjob"), fixture("podgroup"), fixture("node")
    for kind, obj in (("jobs", job), ("podgroups", pg), ("nodes", node)):
        store.handlers()[kind].replace([copy.deepcopy(obj)])
    (held_job,) = store.all("jobs")
    assert isinstance(held_job.body, bytes) and held_job.obj == job
    assert store.raw("jobs")[read_meta(job).key] == job
    (held_pg,) = store.all("podgroups")
    assert held_pg.obj == pg
    assert store.indexed("podgroups", VCJOB, f"{read_meta(pg).namespace}/job-0") == [held_pg]
    (held_node,) = store.all("nodes")
    want = read_meta(node)
    held_meta = held_node.meta
    assert (held_meta.name, held_meta.uid, held_meta.labels) == (want.name, want.uid, want.labels)
    assert held_node.obj == {}


def test_the_cache_lists_podgroups_page_by_page_and_keeps_them_packed() -> None:
    state = cluster_state(NAMES)
    pg = fixture("podgroup")
    broken = {"metadata": {"name": "broken", "namespace": "ns", "uid": "u"}, "spec": {"minMember": "x"}}
    listing = state.cache.handlers()["podgroups"].begin()
    listing.page([copy.deepcopy(pg)])
    listing.page([broken])
    assert state.cache.podgroup_keys() == []  # applied at the LIST's end
    listing.done()
    meta = read_meta(pg)
    key = group_key(meta.namespace, meta.name)
    assert state.cache.podgroup_keys() == [key]
    assert state.cache.raw_podgroup(key) == pg
    assert state.cache.group(key) == parse_podgroup(pg)
    assert ("PodGroup", "ns/broken") in state.cache.unreadable()
    # A forecast's copy reads the same objects, nothing decoded until read.
    assert state.cache.models().raw_podgroups[key] == pg
