"""What a restart holds per pod: a benchmark-like guard on memory, below e2e.

10 000 pods, each a copy of a real vcjob pod as kube-apiserver v1.24 returned it (``managedFields``, a
Running status; tests/fixtures/restart_pod.json, saved by
hack/bench/restart_bench.py --save-fixtures) with its own name, UID, node and job, nine in ten in vcjobs
of 8, are listed into what ``pumice serve`` feeds from the pod watch (the cluster cache with its ledger
and pending set, the store of watched objects, the watch metrics: extender.wiring's tee), page by page as
the informer hands them over. What stays allocated afterwards, per pod, must be under
:data:`BYTES_PER_POD`; likewise for vcjobs and their PodGroups (:data:`BYTES_PER_JOB`).

The margin: ~2 200 bytes a pod are held today (Python 3.11); the bound is 3 500, half as much again, so
that another Python's object sizes or a field added to a record do not fail it, while the regressions it
is here for do: a raw pod kept anywhere costs ~20 000 bytes (the store once kept every vcjob pod raw: over
10 000 bytes a pod on average here), and losing the shared strings and records costs ~1 500 more.
"""

from __future__ import annotations

import gc
import itertools
import tracemalloc
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from controllers.kube.informer import tee
from controllers.state import store as store_module
from controllers.state.cluster import ClusterState, cluster_state
from controllers.state.indexes import VCJOB, watched_objects
from controllers.state.store import ObjectStore
from controllers.watch_metrics import WatchMetrics
from extender.core.model import PodUID

PODS = 10_000
PAGE = 500
BYTES_PER_POD = 3_500
TEMPLATE = (Path(__file__).resolve().parents[1] / "fixtures" / "restart_pod.json").read_bytes()
_META = orjson.loads(TEMPLATE)
POD_UID = _META["metadata"]["uid"].encode()
JOB_UID = _META["metadata"]["ownerReferences"][0]["uid"].encode()
NODE = f'"{_META["spec"]["nodeName"]}"'.encode()
POD_IP = _META["status"]["podIP"].encode()


def pod(i: int) -> dict[str, Any]:
    """Pod ``i`` as a decode gives it (its own strings), of job ``i // 8`` unless a plain pod."""
    job = i // 8
    raw = (
        TEMPLATE.replace(POD_UID, f"{i:08x}-0000-4000-8000-000000000000".encode())
        .replace(JOB_UID, f"{job:08x}-1111-4000-8000-000000000000".encode())
        .replace(b"job-0-worker-0", f"job-{job}-worker-{i % 8}".encode())
        .replace(b'"job-0"', f'"job-{job}"'.encode())
        .replace(b"job-0-", f"job-{job}-".encode())
        .replace(NODE, f'"n-{i % 5000}"'.encode())
        .replace(POD_IP, f"10.64.{i // 250 % 250}.{i % 250}".encode())
        .replace(b'"volcano.sh/task-index": "0"', f'"volcano.sh/task-index": "{i % 8}"'.encode())
    )
    obj: dict[str, Any] = orjson.loads(raw)
    if i % 10 == 9:  # a plain pod: no vcjob, its own implicit group
        meta = obj["metadata"]
        meta["name"] = f"plain-{i}"
        del meta["ownerReferences"], meta["annotations"]
        meta["labels"] = {"app": "web"}
    return obj


def pages() -> Iterator[list[dict[str, Any]]]:
    for start in range(0, PODS, PAGE):
        yield [pod(i) for i in range(start, min(PODS, start + PAGE))]


def _listed(
    watches: Sequence[tuple[str, Iterable[list[dict[str, Any]]]]],
) -> tuple[int, ClusterState, ObjectStore]:
    """Each watch's LIST pages fed, page by page, to the handlers ``pumice serve`` tees together (the
    cache, the store of watched objects, the watch metrics), as the informer feeds them; the bytes still
    held after (tracemalloc), the cluster state and the store."""
    names = frozenset({"volcano"})
    gc.collect()
    tracemalloc.start()
    try:
        state = cluster_state(names)
        store = watched_objects(names, state.cache.packer)  # as extender.wiring builds them
        metrics = WatchMetrics(scheduler_names=names, bound=lambda _: None, waited=lambda _: None)
        handlers = (state.cache.handlers(), store.handlers(), metrics.handlers())
        for watch, pages_of in watches:
            listing = tee(*(h[watch] for h in handlers if watch in h)).begin()
            for page in pages_of:
                listing.page(page)
                del page
            listing.done()
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return held, state, store


def test_a_listed_pod_costs_under_the_bound() -> None:
    held, state, store = _listed([("pods", pages())])
    per_pod = held / PODS
    # Nothing was dropped on the way: every pod is in the cache, every vcjob pod in the store.
    assert all(state.cache.pod(PodUID(f"{i:08x}-0000-4000-8000-000000000000")) for i in range(PODS))
    assert (
        sum(len(store.indexed("pods", VCJOB, k)) for k in store.index_values("pods", VCJOB)) == PODS * 9 // 10
    )
    print(f"{per_pod:.0f} bytes held per pod")
    assert per_pod < BYTES_PER_POD, f"{per_pod:.0f} bytes held per pod (bound {BYTES_PER_POD})"


# What the store stages of each pod of a LIST until its end (its key, its record, its index places): ~40
# bytes a pod today, a gang's places held once. Staged as a tuple per pod with its own places (~240
# bytes), it was freed at the LIST's end as holes among the records kept: 30 MiB of RSS at 100 000 pods.
STAGED_PER_POD = 100
STAGED_PAGES = 4


def test_what_the_store_stages_of_a_pod_list_is_small() -> None:
    store = watched_objects(frozenset({"volcano"}))
    listing = store.handlers()["pods"].begin()
    tracemalloc.start()
    try:
        for page in itertools.islice(pages(), STAGED_PAGES):
            listing.page(page)
            del page
        gc.collect()
        # What store.py itself allocated and still holds (the records are made in controllers.state.indexes).
        staged = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, store_module.__file__)])
    finally:
        tracemalloc.stop()
    per_pod = sum(stat.size for stat in staged.statistics("filename")) / (STAGED_PAGES * PAGE)
    listing.done()
    assert len(store.keys("pods")) == STAGED_PAGES * PAGE * 9 // 10
    print(f"{per_pod:.0f} bytes staged per pod")
    assert per_pod < STAGED_PER_POD, f"{per_pod:.0f} bytes staged per pod (bound {STAGED_PER_POD})"


JOBS = 2_000
# ~5 900 bytes a vcjob with its PodGroup are held today (Python 3.11): both packed in the store with their
# metadata read, the PodGroup parsed in the cache (its JSON held once, by store and cache alike), and what
# the pending set and the watch metrics note of each. Held raw (the store kept both so, and the cache its
# PodGroups, before they were packed) they cost ~12 200: the bound lies between.
BYTES_PER_JOB = 9_000


def _jobs_and_groups(kind: str) -> Iterator[list[dict[str, Any]]]:
    template = (Path(__file__).resolve().parents[1] / "fixtures" / f"restart_{kind}.json").read_bytes()
    uid = orjson.loads(template)["metadata"]["uid"].encode()
    for start in range(0, JOBS, PAGE):
        page = []
        for i in range(start, min(JOBS, start + PAGE)):
            raw = (
                template.replace(uid, f"{i:08x}-3333-4000-8000-000000000000".encode())
                .replace(JOB_UID, f"{i:08x}-1111-4000-8000-000000000000".encode())
                .replace(b'"job-0"', f'"job-{i}"'.encode())
                .replace(b"job-0-", f"job-{i}-".encode())
            )
            obj = orjson.loads(raw)
            obj["metadata"].pop("managedFields", None)  # as the informer drops it
            page.append(obj)
        yield page


def test_a_listed_vcjob_and_its_podgroup_cost_under_the_bound() -> None:
    held, state, store = _listed(
        [("jobs", _jobs_and_groups("vcjob")), ("podgroups", _jobs_and_groups("podgroup"))]
    )
    assert len(store.all("jobs")) == len(store.all("podgroups")) == len(state.cache.podgroup_keys()) == JOBS
    per_job = held / JOBS
    print(f"{per_job:.0f} bytes held per vcjob and PodGroup")
    assert per_job < BYTES_PER_JOB, f"{per_job:.0f} bytes held per vcjob and PodGroup (bound {BYTES_PER_JOB})"
