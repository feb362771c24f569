#!/usr/bin/env python3
"""What pumice holds after listing a big cluster, in process: no API server, the real handlers.

``restart_bench.py`` needs a control plane filled with the objects, which takes this 2-core machine most
of an hour at 100 000 pods; this feeds the same handlers ``pumice serve`` wires (the cluster cache, the
store of watched objects, the watch metrics, the finished jobs' runtimes: extender.wiring's tee) with
copies of real objects as kube-apiserver v1.24 returns them (managedFields included): ``--nodes`` Nodes,
``--pods`` Running pods (nine in ten in vcjobs of ``--gang``, each vcjob with its Job and PodGroup
objects; each pod with its own ``volcano.sh/task-index`` label, as the job controller makes them), in LIST
pages of 500 decoded as they come, the way the tree's informer hands them over (page by page where its
handlers take pages, else the whole LIST at once). It prints the process's RSS before and after and its peak
(VmHWM), and CPU seconds: in all, and inside pumice's handlers alone (what a cold restart spends on top of
the API server's LIST). ``--tree`` runs another source tree (e.g. the code before a change).

    .venv/bin/python hack/bench/restart_memory.py --pods 100000
    .venv/bin/python hack/bench/restart_memory.py --pods 100000 --tree /tmp/before
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=100_000)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--gang", type=int, default=8)
    p.add_argument("--tree", type=Path, default=REPO, help="the pumice source tree to measure")
    p.add_argument(
        "--heap",
        choices=("frozen", "as-is"),
        default="frozen",
        help="freeze what is held after each page, as serve does while it lists (about a page per 0.1 s), "
        "or leave the collector alone (the figures before serve did)",
    )
    return p.parse_args()


def status_mib() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0]) // 1024
    return out


def variants(template: bytes, subs: list[tuple[bytes, str]], n: int, page: int = 500) -> Any:
    """Pages of ``n`` decoded copies of ``template``, each with its own strings (``{i}``, ``{j}``: the
    copy's and its job's numbers)."""
    for start in range(0, n, page):
        out = []
        for i in range(start, min(n, start + page)):
            raw = template
            for old, new in subs:
                fields = {"i": i, "j": i // 8, "k": i % 8, "n": i % 5000, "a": i // 250 % 250, "b": i % 250}
                raw = raw.replace(old, new.format(**fields).encode())
            out.append(orjson.loads(raw))
        yield out


def main() -> int:
    args = parse_args()
    sys.path.insert(0, str(args.tree))
    import extender.serve  # noqa: F401 (everything pumice serve imports: the process's floor)
    from controllers.kube import informer
    from controllers.kube.informer import Handler, tee

    assert Path(informer.__file__).is_relative_to(args.tree.resolve()), informer.__file__
    from controllers.state.cluster import cluster_state
    from controllers.state.indexes import watched_objects
    from controllers.watch_metrics import WatchMetrics

    gc.collect()
    floor = status_mib()
    names = frozenset({"volcano"})
    state = cluster_state(names)
    # The store borrows the cache's packer for the raw PodGroups, as serve wires them (a tree that has one).
    packer = getattr(state.cache, "packer", None)
    store = watched_objects(names) if packer is None else watched_objects(names, packer)
    metrics = WatchMetrics(scheduler_names=names, bound=lambda _: None, waited=lambda _: None)
    cache_h, store_h, metrics_h = state.cache.handlers(), store.handlers(), metrics.handlers()
    from controllers.forecast.finished import runtime_handler
    from extender.forecast.runtimes import RuntimeBook

    runtime_h = {"jobs": runtime_handler(RuntimeBook(), "default")}  # the jobs watch's fourth handler

    def handler(kind: str) -> Handler:
        hs = [h[kind] for h in (cache_h, store_h, metrics_h, runtime_h) if kind in h]
        return tee(*hs) if len(hs) > 1 else hs[0]

    grew: dict[str, int] = {}
    handled: dict[str, float] = {}  # CPU seconds inside pumice's handlers, by kind

    @contextlib.contextmanager
    def handling(kind: str) -> Iterator[None]:
        t = time.process_time()
        try:
            yield
        finally:
            handled[kind] = handled.get(kind, 0.0) + time.process_time() - t

    def list_into(kind: str, pages: Any) -> None:
        before = status_mib()["VmRSS"]
        _list_into(kind, pages)
        gc.collect()
        grew[kind] = status_mib()["VmRSS"] - before

    lean = getattr(informer, "_lean", lambda o: o)  # what the tree's informer drops on decode, if anything

    def _list_into(kind: str, pages: Any) -> None:
        h = handler(kind)
        pages = ([lean(o) for o in page] for page in pages)
        # Only the handlers' CPU is pumice's: the pages are made (and decoded) by this bench in between.
        if hasattr(h, "begin"):  # a tree whose informer hands pages over as they come
            with handling(kind):
                listing = h.begin()
            for page in pages:
                with handling(kind):
                    listing.page(page)
                if args.heap == "frozen":
                    gc.freeze()
            with handling(kind):
                listing.done()
        else:  # before: the informer kept every page, then replace()
            objects = [o for page in pages for o in page]
            with handling(kind):
                h.replace(objects)

    jobs = args.pods * 9 // 10 // args.gang
    t0 = time.process_time()
    node = (FIXTURES / "restart_node.json").read_bytes()
    list_into("nodes", variants(node, [(b'"n-0"', '"n-{i}"'), (b"10.1.0.1", "10.1.{a}.{b}")], args.nodes))
    # A vcjob, its PodGroup and one of its pods, of one cluster (restart_bench.py --save-fixtures).
    job, pg, pod = ((FIXTURES / f"restart_{name}.json").read_bytes() for name in ("vcjob", "podgroup", "pod"))
    job_uid = orjson.loads(job)["metadata"]["uid"].encode()
    pod_uid = orjson.loads(pod)["metadata"]["uid"].encode()
    pod_node = f'"{orjson.loads(pod)["spec"]["nodeName"]}"'.encode()
    of_job = [(job_uid, "{i:08x}-1111-4000-8000-000000000000"), (b'"job-0"', '"job-{i}"'),
              (b"job-0-", "job-{i}-")]  # fmt: skip
    list_into("jobs", variants(job, of_job, jobs))
    list_into("podgroups", variants(pg, of_job, jobs))
    plain_pod = orjson.loads(pod)
    meta = plain_pod["metadata"]
    meta["name"], meta["labels"] = "plain-0", {"app": "web"}
    del meta["ownerReferences"], meta["annotations"]
    vcjob_pods = variants(
        pod,
        [(pod_uid, "{i:08x}-0000-4000-8000-000000000000"), (job_uid, "{j:08x}-1111-4000-8000-000000000000"),
         (b"job-0-worker-0", "job-{j}-worker-{k}"), (b'"job-0"', '"job-{j}"'), (b"job-0-", "job-{j}-"),
         (pod_node, '"n-{n}"'), (b'"volcano.sh/task-index": "0"', '"volcano.sh/task-index": "{k}"')],
        jobs * args.gang,
    )  # fmt: skip
    plain = variants(
        orjson.dumps(plain_pod),
        [(pod_uid, "{i:08x}-2222-4000-8000-000000000000"), (b"plain-0", "plain-{i}")],
        args.pods - jobs * args.gang,
    )
    list_into("pods", itertools.chain(vcjob_pods, plain))  # one LIST of every pod
    cpu = time.process_time() - t0
    gc.collect()
    after = status_mib()
    print(
        f"{args.tree}: {args.nodes} nodes, {jobs} vcjobs + PodGroups, {args.pods} pods listed in "
        f"{cpu:.1f} s CPU; RSS {floor['VmRSS']} MiB before (imports), {after['VmRSS']} MiB after, "
        f"peak {after['VmHWM']} MiB; RSS grew by kind (MiB): {grew}"
    )
    by_kind = ", ".join(f"{k} {v:.2f}" for k, v in handled.items())
    print(
        f"CPU in pumice's handlers: {sum(handled.values()):.1f} s ({by_kind}); the rest is this bench making "
        "and decoding the objects (a real informer decodes each page too: orjson, ~14 µs a pod here)"
    )
    print(f"heap {args.heap}; target (#23, #24): 5 000 nodes and 100 000 pods held in < 400 MiB RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
