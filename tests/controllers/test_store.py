"""The store of watched objects (controllers.state.store): the invariants the reconcilers rely on, as tables.

A write's response is not undone by an older watch event and is kept only while its object is still held;
a deletion removes only the object deleted; a LIST replaces a kind and says what it no longer shows; what
cannot be read is remembered; a subscriber that raises is contained; the indexes place what the
reconcilers look up, and the metadata view reads anything without raising.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.state.indexes import (
    CRONJOB,
    JOB_LABEL,
    JOBFLOW,
    NAMESPACE,
    TARGET_JOB,
    VCJOB,
    WORKLOAD,
    watched_objects,
)
from controllers.state.meta import ObjectMeta, read_meta
from controllers.state.store import Change, ObjectStore, Stored, SubscriberFailed, Subscription

Obj = dict[str, Any]


def job(name: str, rv: str = "1", uid: str = "", **meta: Any) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid or f"uid-{name}",
            "resourceVersion": rv,
            **meta,
        }
    }


def owner(kind: str, api_version: str, name: str, uid: str = "u", *, controller: bool = True) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": controller}


class Told:
    """A subscriber that records what it is told."""

    def __init__(self, store: ObjectStore, *kinds: str) -> None:
        self.changes: list[Change] = []
        self.listed: list[str] = []
        self.unreadable: list[tuple[str, list[str]]] = []
        store.subscribe(
            Subscription(
                kinds=frozenset(kinds),
                changed=self.changes.append,
                listed=self.listed.append,
                unreadable=lambda kind, metas: self.unreadable.append((kind, [m.meta.key for m in metas])),
            )
        )

    def seen(self) -> list[tuple[str, str | None, str | None, bool]]:
        """(key, old rv, new rv, listed) of each change."""
        return [
            (
                c.key,
                c.old.meta.resource_version if c.old else None,
                c.new.meta.resource_version if c.new else None,
                c.listed,
            )
            for c in self.changes
        ]


@pytest.fixture
def store() -> ObjectStore:
    return watched_objects(frozenset({"volcano"}))


def test_an_older_watch_event_does_not_undo_a_write_response(store: ObjectStore) -> None:
    told = Told(store, "jobs")
    h = store.handlers()["jobs"]
    h.upsert(job("a", "5"))
    store.written("jobs", job("a", "7"))  # our status write's response
    h.upsert(job("a", "6"))  # the watch catching up: older, ignored
    h.upsert(job("a", "7"))  # the write itself, seen by the watch: taken (and told)
    held = store.get("jobs", "ns/a")
    assert held is not None and held.meta.resource_version == "7"
    assert told.seen() == [("ns/a", None, "5", False), ("ns/a", "5", "7", False), ("ns/a", "7", "7", False)]
    # Another object of the name (a new UID) is never older.
    h.upsert(job("a", "2", uid="other"))
    assert store.raw("jobs")["ns/a"]["metadata"]["uid"] == "other"


def test_a_write_response_is_kept_only_while_its_object_is_held(store: ObjectStore) -> None:
    h = store.handlers()["jobs"]
    h.upsert(job("a", "5"))
    h.remove(job("a", "5"))  # the watch's DELETE came before the write's response
    store.written("jobs", job("a", "6"))
    assert store.get("jobs", "ns/a") is None
    h.upsert(job("b", "5"))
    h.upsert(job("b", "1", uid="new"))  # deleted and made again meanwhile
    store.written("jobs", job("b", "6"))  # the old object's write
    assert store.raw("jobs")["ns/b"]["metadata"]["uid"] == "new"
    # What a create or a GET returns is stored like a watch event.
    store.fetched("jobs", job("c", "3"))
    assert "ns/c" in store.raw("jobs")


def test_a_deletion_removes_only_the_object_deleted(store: ObjectStore) -> None:
    told = Told(store, "jobs")
    h = store.handlers()["jobs"]
    h.upsert(job("a", "5"))
    store.fetched("jobs", job("a", "9", uid="new"))  # our create of a namesake, before the old one's DELETE
    h.remove(job("a", "6"))
    assert store.raw("jobs")["ns/a"]["metadata"]["uid"] == "new"
    last = told.changes[-1]
    assert last.old is not None and last.old.meta.uid == "uid-a" and last.new is not None
    assert last.new.meta.uid == "new" and not last.removed
    # A deletion of an object never held is still told (an unreadable job deleted: its pods go).
    h.remove(job("ghost"))
    assert told.changes[-1].removed and told.changes[-1].key == "ns/ghost"
    store.gone("jobs", "ns/a")
    assert store.get("jobs", "ns/a") is None and told.changes[-1].removed and not told.changes[-1].listed


def test_a_list_replaces_the_kind_and_says_what_it_no_longer_shows(store: ObjectStore) -> None:
    told = Told(store, "jobs")
    h = store.handlers()["jobs"]
    h.upsert(job("a", "1"))
    h.upsert(job("b", "1"))
    told.changes.clear()
    assert not store.listed("jobs")
    h.replace([job("a", "2"), job("c", "1")])
    assert told.seen() == [("ns/a", "1", "2", True), ("ns/c", None, "1", True), ("ns/b", "1", None, True)]
    assert told.listed == ["jobs"] and store.listed("jobs") and not store.listed("jobs", "pods")
    assert sorted(store.keys("jobs")) == ["ns/a", "ns/c"]
    # A LIST is the API server's word: taken even when older than a held write response.
    store.written("jobs", job("a", "9"))
    h.replace([job("a", "3")])
    assert store.raw("jobs")["ns/a"]["metadata"]["resourceVersion"] == "3"


def test_unreadable_objects_are_remembered_until_read_or_deleted(store: ObjectStore) -> None:
    told = Told(store, "jobs")
    h = store.handlers()["jobs"]
    h.upsert(job("deep"))
    h.replace([])
    h.unreadable([{"metadata": {"name": "deep", "namespace": "ns"}}])
    assert list(store.unreadable("jobs")) == ["ns/deep"] and told.unreadable == [("jobs", ["ns/deep"])]
    h.replace([])  # a re-list that cannot read it either: still known to exist
    assert "ns/deep" in store.unreadable("jobs")
    h.upsert(job("deep"))
    assert "ns/deep" not in store.unreadable("jobs") and store.get("jobs", "ns/deep") is not None
    store.record_unreadable("jobs", {"metadata": {"name": "deep", "namespace": "ns"}})  # a GET that failed
    assert "ns/deep" in store.unreadable("jobs") and store.get("jobs", "ns/deep") is None
    h.remove(job("deep"))
    assert not store.unreadable("jobs")


def test_a_subscriber_that_raises_is_contained(store: ObjectStore) -> None:
    def boom(_: Change) -> None:
        raise RuntimeError("bug")

    store.subscribe(Subscription(kinds=frozenset({"jobs"}), changed=boom, listed=lambda _k: boom(None)))  # type: ignore[arg-type]  # raises before reading it
    told = Told(store, "jobs")
    store.handlers()["jobs"].replace([job("a")])  # a LIST is never failed by a subscriber
    with pytest.raises(SubscriberFailed):  # a watch event is: the informer counts it
        store.handlers()["jobs"].upsert(job("b"))
    store.fetched("jobs", job("c"))
    assert [c.key for c in told.changes] == ["ns/a", "ns/b", "ns/c"] and told.listed == ["jobs"]
    assert store.subscriber_errors == 4
    with pytest.raises(ValueError, match="does not hold"):
        store.subscribe(Subscription(kinds=frozenset({"queues"}), changed=boom))


def test_pods_are_kept_only_when_an_index_places_them(store: ObjectStore) -> None:
    told = Told(store, "pods")
    h = store.handlers()["pods"]
    plain = {"metadata": {"name": "p", "namespace": "ns", "uid": "p"}, "spec": {"schedulerName": "volcano"}}
    h.upsert(plain)
    h.remove(plain)
    assert store.keys("pods") == [] and told.changes == []
    labelled = {**plain, "metadata": {**plain["metadata"], "labels": {"volcano.sh/job-name": "j"}}}
    h.upsert(labelled)
    assert [s.meta.name for s in store.indexed("pods", JOB_LABEL, "ns/j")] == ["p"]
    h.upsert({**plain, "metadata": {**plain["metadata"], "resourceVersion": "2"}})  # the label went
    assert store.keys("pods") == [] and store.indexed("pods", JOB_LABEL, "ns/j") == []
    assert told.changes[-1].removed and store.index_values("pods", JOB_LABEL) == []


INDEXED: list[tuple[str, str, Obj, str | None]] = [
    # (kind, index, object, the value it is placed under)
    (
        "pods",
        VCJOB,
        {
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "ownerReferences": [owner("Job", "batch.volcano.sh/v1alpha1", "j", controller=False)],
            }
        },
        "ns/j",
    ),
    (
        "pods",
        VCJOB,
        {"metadata": {"name": "p", "namespace": "ns", "ownerReferences": [owner("Job", "batch/v1", "j")]}},
        None,
    ),
    (
        "podgroups",
        VCJOB,
        {"metadata": {"name": "g", "ownerReferences": [owner("Job", "batch.volcano.sh/v1alpha1", "j")]}},
        "default/j",
    ),
    (
        "commands",
        TARGET_JOB,
        {"metadata": {"name": "c", "namespace": "ns"}, "target": {"kind": "Job", "name": "j"}},
        "ns/j",
    ),
    (
        "commands",
        TARGET_JOB,
        {"metadata": {"name": "c", "namespace": "ns"}, "target": {"kind": "Queue", "name": "q"}},
        None,
    ),
    ("commands", TARGET_JOB, {"metadata": {"name": "c", "namespace": "ns"}, "target": ["odd"]}, None),
    (
        "jobs",
        JOBFLOW,
        {
            "metadata": {
                "name": "f-a",
                "namespace": "ns",
                "ownerReferences": [owner("JobFlow", "flow.volcano.sh/v1alpha1", "f")],
            }
        },
        "ns/f",
    ),
    (
        "jobs",
        JOBFLOW,
        {
            "metadata": {
                "name": "f-a",
                "namespace": "ns",
                "ownerReferences": [owner("JobFlow", "flow.volcano.sh/v1alpha1", "f", controller=False)],
            }
        },
        None,
    ),
    (
        "jobs",
        CRONJOB,
        {
            "metadata": {
                "name": "cj-1",
                "namespace": "ns",
                "ownerReferences": [owner("CronJob", "batch.volcano.sh/v1alpha1", "cj")],
            }
        },
        "ns/cj",
    ),
    ("jobflows", NAMESPACE, {"metadata": {"name": "f"}}, "default"),
    (
        "pods",
        WORKLOAD,
        {
            "metadata": {
                "name": "w",
                "namespace": "ns",
                "ownerReferences": [owner("ReplicaSet", "apps/v1", "rs", "u1")],
            },
            "spec": {"schedulerName": "volcano"},
        },
        "ns/ReplicaSet/rs/u1",
    ),
    (
        "pods",
        WORKLOAD,
        {
            "metadata": {
                "name": "w",
                "namespace": "ns",
                "ownerReferences": [owner("ReplicaSet", "apps/v1", "rs", "u1")],
            },
            "spec": {"schedulerName": "default-scheduler"},
        },
        None,
    ),
    (
        "pods",
        WORKLOAD,
        {
            "metadata": {
                "name": "w",
                "namespace": "ns",
                "annotations": {"scheduling.k8s.io/group-name": "spark"},
                "ownerReferences": [owner("ReplicaSet", "apps/v1", "rs", "u1")],
            },
            "spec": {"schedulerName": "volcano"},
        },
        None,
    ),
]


@pytest.mark.parametrize(("kind", "index", "obj", "value"), INDEXED)
def test_the_indexes_place_what_the_reconcilers_look_up(
    store: ObjectStore, kind: str, index: str, obj: Obj, value: str | None
) -> None:
    store.handlers()[kind].upsert(obj)
    assert store.index_values(kind, index) == ([value] if value else [])


ODD: list[Any] = [
    None,
    [],
    {},
    {"metadata": "nope"},
    {"metadata": {"name": 5, "labels": ["a"], "annotations": {"a": 1, "b": "x"}, "ownerReferences": "no"}},
    {"metadata": {"generation": True, "ownerReferences": [None, {"kind": 3}], "deletionTimestamp": {}}},
]


@pytest.mark.parametrize("obj", ODD)
def test_the_metadata_view_reads_anything(obj: Any) -> None:
    meta = read_meta(obj)
    assert isinstance(meta, ObjectMeta) and meta.generation == 0 and not meta.deleting
    assert all(isinstance(v, str) for v in meta.annotations.values())
    assert meta.key == f"{meta.namespace or 'default'}/{meta.name}"


def test_odd_objects_are_stored_and_indexed_without_raising(store: ObjectStore) -> None:
    for kind, h in store.handlers().items():
        for obj in ODD[2:]:
            h.upsert(obj)
            h.remove(obj)
        h.replace(ODD[2:])
        h.unreadable(ODD[2:])
        assert store.listed(kind)
    assert Stored.of({}).meta == ObjectMeta()
