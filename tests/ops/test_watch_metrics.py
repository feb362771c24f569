"""Binds and wait times observed from the watch: a transition seen happening is observed once; a state
first seen already reached (pumice restarted meanwhile) is not."""

from __future__ import annotations

from typing import Any

from controllers.watch_metrics import Seen, WatchMetrics

CREATED = "2026-01-01T00:00:00Z"
T0 = 1767225600.0  # CREATED in epoch seconds


class Probe:
    def __init__(self) -> None:
        self.binds = 0
        self.jobs: list[float] = []
        self.groups: list[float] = []
        self.waited: list[Seen] = []
        self.finished: list[Seen] = []
        self.gone: list[Seen] = []

    def watch(self, now: float) -> WatchMetrics:
        def bound(_seconds: float) -> None:
            self.binds += 1

        def waited(seen: Seen) -> None:
            (self.jobs if seen.kind == "job" else self.groups).append(seen.seconds)
            self.waited.append(seen)

        return WatchMetrics(
            scheduler_names=frozenset({"volcano"}),
            bound=bound,
            waited=waited,
            finished=self.finished.append,
            gone=self.gone.append,
            clock=lambda: now,
        )


def pod(uid: str, node: str = "", scheduler: str = "volcano", phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {"uid": uid, "name": uid, "namespace": "ns"},
        "spec": {"schedulerName": scheduler, "nodeName": node},
        "status": {"phase": phase},
    }


def job(uid: str, phase: str | None) -> dict[str, Any]:
    status = {"state": {"phase": phase}} if phase else {}
    return {"metadata": {"uid": uid, "creationTimestamp": CREATED}, "status": status}


def group(uid: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "creationTimestamp": CREATED}, "status": {"phase": phase}}


def test_binds_count_pods_seen_going_from_no_node_to_a_node() -> None:
    p = Probe()
    h = p.watch(T0).handlers()["pods"]
    h.replace([pod("a"), pod("b", node="n1"), pod("c", scheduler="default-scheduler")])
    h.upsert(pod("b", node="n1"))  # already bound when first seen
    h.upsert(pod("c", node="n1"))  # another scheduler's
    assert p.binds == 0
    h.upsert(pod("a", node="n1"))
    h.upsert(pod("a", node="n1"))
    assert p.binds == 1
    # Deleted while waiting, then a relist shows it bound: the delete forgot it.
    h.upsert(pod("d"))
    h.remove(pod("d"))
    h.replace([pod("d", node="n2")])
    assert p.binds == 1
    # A bind that happened while the watch was down shows in the relist.
    h.upsert(pod("e"))
    h.replace([pod("e", node="n2")])
    assert p.binds == 2


def test_waits_are_observed_once_from_creation_to_running() -> None:
    p = Probe()
    handlers = p.watch(T0 + 90).handlers()
    jobs, groups = handlers["jobs"], handlers["podgroups"]
    jobs.upsert(job("j1", None))
    jobs.upsert(job("j1", "Pending"))
    jobs.upsert(job("j1", "Running"))
    jobs.upsert(job("j1", "Running"))
    jobs.upsert(job("j2", "Running"))  # first seen running: never watched waiting
    jobs.upsert(job("j3", "Pending"))
    jobs.upsert(job("j3", "Completed"))
    jobs.upsert(job("j3", "Running"))  # a finished job that runs again is not a wait
    groups.upsert(group("g1", "Pending"))
    groups.upsert(group("g1", "Inqueue"))
    groups.upsert(group("g1", "Running"))
    assert p.jobs == [90.0]
    assert p.groups == [90.0]


def test_reports_name_the_object_and_its_queue() -> None:
    p = Probe()
    handlers = p.watch(T0 + 30).handlers()
    g = {**group("g1", "Pending"), "spec": {"queue": "q1"}}
    g["metadata"] = {**g["metadata"], "name": "pg", "namespace": "ns"}
    handlers["podgroups"].upsert(g)
    handlers["podgroups"].upsert({**g, "status": {"phase": "Running"}})
    j = job("j1", "Pending")
    j["metadata"] = {**j["metadata"], "name": "train", "namespace": "ns"}
    handlers["jobs"].upsert(j)
    handlers["jobs"].upsert({**j, "status": {"state": {"phase": "Running"}}})
    handlers["jobs"].upsert({**j, "status": {"state": {"phase": "Completed"}}})
    handlers["jobs"].upsert({**j, "status": {"state": {"phase": "Completed"}}})  # counted once
    handlers["jobs"].remove(j)
    assert [(s.kind, s.namespace, s.name, s.queue) for s in p.waited] == [
        ("podgroup", "ns", "pg", "q1"),
        ("job", "ns", "train", "default"),  # no spec.queue: the default queue
    ]
    assert [(s.name, s.phase) for s in p.finished] == [("train", "Completed")]
    assert [(s.kind, s.name) for s in p.gone] == [("job", "train")]
