"""What a simulated step carries instead of working out again equals what working it out gives.

- a simulated bind stores the bound pod's model made from the stored one (on its node, running) instead
  of parsing the new object: after every bind of a run, the stored model equals the parse;
- proportion's queue terms (real capability, guarantee, floor) are worked out once per queues and cluster
  size (:func:`extender.plugins.proportion._queue_terms`): after any run of changes, equal to fresh ones;
- the cluster's allocatable total (proportion, drf and overcommit each read it every cycle) and whether any
  node has a PreferNoSchedule taint (nodeorder) are worked out once per node table
  (:class:`extender.core.snapshot.NodeTable`): always the matrix's sum and the walk's answer, in every
  snapshot over the table;
- the loop's answers to "does this settled group stay out, capped" read its pods' facts once per settling
  (:class:`controllers.scheduling.revote.CappedKeeper`): every answer of a run equals the one worked out
  afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.scheduling.revote import CappedKeeper, capped_keeper
from controllers.simulate.cluster import EPOCH, SimCluster
from controllers.simulate.engine import TraceRun
from controllers.simulate.trace import parse_trace
from extender.core import prefer
from extender.core.model import GroupKey, Node, PodUID, Queue, Taint
from extender.core.node_table import build_node_table
from extender.core.parse import parse_pod
from extender.core.resources import ResourceIndex
from extender.core.snapshot import Aside, build_snapshot
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.plugins import proportion
from extender.plugins.registry import load_conf

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulate"


@pytest.mark.parametrize(
    ("trace", "conf"),
    [
        ("two-teams.yaml", None),
        ("two-teams.yaml", "reclaim.conf"),  # evictions: pods bound again after their job restarts
        ("gpu-share.yaml", "gpu-share-binpack.conf"),  # cards annotated on the pod before it binds
    ],
)
def test_bound_model_is_the_parse(trace: str, conf: str | None) -> None:
    doc = yaml.safe_load((EXAMPLES / trace).read_text())
    run = TraceRun(parse_trace(doc), load_conf(None if conf is None else (EXAMPLES / conf).read_text()))
    cluster = run.cluster
    bind = cluster.bind
    binds = 0

    def checked(uid: PodUID, node: str) -> None:
        nonlocal binds
        bind(uid, node)
        binds += 1
        assert cluster.cache.pod(uid) == parse_pod(cluster.pods[uid])

    cluster.bind = checked  # type: ignore[method-assign]  # (the executor calls it through the cluster)
    run.run()
    assert binds > 10


_taints = st.lists(
    st.builds(
        Taint,
        key=st.sampled_from(["a", "b"]),
        effect=st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", ""]),
    ),
    max_size=2,
).map(tuple)
_allocatable = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 1 << 40), max_size=3
)
_nodes = st.lists(
    st.builds(Node, name=st.sampled_from(["n1", "n2", "n3"]), allocatable=_allocatable, taints=_taints),
    max_size=4,
    unique_by=lambda n: n.name,
).map(tuple)


@settings(max_examples=200, deadline=None)
@given(_nodes, st.integers(1, 3))
def test_node_table_total_and_prefer_taints_are_worked_out(nodes: tuple[Node, ...], cycles: int) -> None:
    """The table's total is its matrix's sum and its taint answer the walk's, and every snapshot (and
    session) over the table reads those, read-only."""
    table = build_node_table(nodes)
    walk = any(t.effect == prefer.PREFER_NO_SCHEDULE for n in nodes for t in n.taints)
    assert table.prefer_taints == walk
    assert np.array_equal(table.total, table.alloc.sum(axis=0)) and not table.total.flags.writeable
    hooks = build_hooks(load_conf(None).tiers())
    for _ in range(cycles):
        snap = build_snapshot(nodes=table, pods=[], podgroups=[], queues=[])
        assert snap.prefer_taints == walk and snap.alloc_total is table.total
        assert np.array_equal(Session(snap, hooks).total, snap.alloc.sum(axis=0))


_amounts = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 64), max_size=2
)
_queues = st.lists(
    st.builds(
        Queue,
        name=st.sampled_from(["a", "b", "c", "d"]),
        weight=st.integers(1, 3),
        capability=_amounts,
        guarantee=_amounts,
    ),
    min_size=1,
    max_size=4,
)
_index = st.sampled_from([ResourceIndex.of([]), ResourceIndex.of(["nvidia.com/gpu"])])
_totals = st.lists(st.integers(0, 128), min_size=4, max_size=4)
Step = tuple[list[Queue], ResourceIndex, list[int], str]
_step = st.tuples(_queues, _index, _totals, st.sampled_from(["new", "same", "total"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(_step, min_size=1, max_size=8))
def test_queue_terms_carried_are_the_fresh(steps: list[Step]) -> None:
    """A run of cycles, each over new queues, the same ones again, or the same queues over another
    cluster size: the terms carried from the last cycle equal those worked out afresh."""
    first, index, amounts, _ = steps[0]
    queues = {q.name: q for q in first}
    for new_queues, new_index, new_amounts, kind in steps:
        if kind == "new":
            queues, index = {q.name: q for q in new_queues}, new_index
        if kind != "same":
            amounts = new_amounts
        total = np.array(amounts[: len(index.names)], dtype=np.int64)
        carried = proportion._queue_terms(queues, index, total)
        proportion._last_terms = None
        fresh = proportion._queue_terms(queues, index, total)
        assert carried.queues == fresh.queues and carried.names == fresh.names
        for field in ("capability", "guarantee", "floors"):
            a, b = getattr(carried, field), getattr(fresh, field)
            assert a.keys() == b.keys() and all(np.array_equal(a[q], b[q]) for q in a), field
        assert np.array_equal(carried.shared, fresh.shared)


def test_capped_answers_carried_are_the_fresh() -> None:
    """A run with a queue at its capability and a backlog settled behind it: at every freed room, each
    settled group's answer from the carried facts is the one worked out afresh, and the facts are reused."""
    doc = yaml.safe_load((EXAMPLES / "gpu-fleet.yaml").read_text())
    doc["generate"][0]["count"] = 400
    for q in doc["queues"]:
        if q["name"] == "interns":
            q["capability"] = {"nvidia.com/gpu": "64"}
    run = TraceRun(parse_trace(doc), load_conf(None))
    loop = run.cluster.scheduler.loop
    keeper: CappedKeeper = loop._keeper
    question = keeper.question
    answers: list[bool] = []
    read = 0

    def checked() -> Callable[[GroupKey], bool]:
        carried, fresh = question(), capped_keeper(loop.shared.cache, loop.shared.ledger)

        def both(key: GroupKey) -> bool:
            nonlocal read
            before = keeper._facts.get(key)
            answer = carried(key)
            assert answer == fresh(key), key
            answers.append(answer)
            read += keeper._facts.get(key) is not before
            return answer

        return both

    keeper.question = checked  # type: ignore[method-assign]  # (the loop asks through the keeper)
    run.run()
    assert sum(answers) > 100 and len(answers) - sum(answers) > 10  # capped ones and others
    assert read < len(answers) / 2  # most answers reuse what was read at the settling


def _raw_pod(group: int, i: int) -> dict[str, object]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"g{group}-{i}",
            "namespace": "ns",
            "uid": f"g{group}-{i}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {"scheduling.k8s.io/group-name": f"g{group}"},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}],
        },
        "status": {"phase": "Pending"},
    }


_OPS = st.lists(
    st.tuples(st.sampled_from(["add", "bind", "delete", "priority", "settle"]), st.integers(0, 2)),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_OPS)
def test_capped_answers_follow_every_change_of_the_pods(ops: list[tuple[str, int]]) -> None:
    """Pods of three groups (over their queue's capability) added, bound, deleted, given a priority, and
    the waiting groups settled, in any order: after each step, every settled group's answer from the
    carried facts is the one worked out afresh (what a pod of it holds, or its priority, moves it)."""
    cluster = SimCluster(load_conf(None), now=EPOCH)
    gpu = {"cpu": "64", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}
    cluster.add({"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": gpu}})
    cluster.add({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"capability": {"nvidia.com/gpu": "4"}}})
    for g in range(3):
        cluster.add(
            {
                "kind": "PodGroup",
                "metadata": {"name": f"g{g}", "namespace": "ns", "uid": f"pg{g}"},
                "spec": {"minMember": 1, "queue": "q", "minResources": {"nvidia.com/gpu": str(4 + g)}},
                "status": {"phase": "Pending"},
            }
        )
    pending = cluster.state.pending
    keeper = CappedKeeper(cluster.cache, cluster.ledger, pending)
    pods: list[list[PodUID]] = [[], [], []]
    made = [0, 0, 0]
    for op, g in ops:
        if op == "add":
            cluster.add(_raw_pod(g, made[g]))
            pods[g].append(PodUID(f"g{g}-{made[g]}"))
            made[g] += 1
        elif op == "bind" and pods[g]:
            cluster.bind(pods[g][0], "n1")
        elif op == "delete" and pods[g]:
            cluster.delete_pod(pods[g].pop(0))
        elif op == "priority" and pods[g]:
            cluster.edit_pod(pods[g][-1], lambda p: p["spec"].__setitem__("priority", 5))
        elif op == "settle":  # what a cycle that found them refused leaves
            pending.drain()
            pending.work()
            aside = Aside(queue="q", waiting={}, owed={}, planned={})
            pending.after_cycle((), dict.fromkeys(pending.waiting(), aside), {}, set())
        carried, fresh = keeper.question(), capped_keeper(cluster.cache, cluster.ledger)
        for key in pending.settled():
            assert carried(key) == fresh(key), (op, key)
