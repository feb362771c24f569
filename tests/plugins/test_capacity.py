"""capacity: explicit deserved/capability/guarantee per queue, flat and hierarchical.

The scenarios reproduce the facts of Volcano's capacity plugin tests (queues, pods, nodes and the outcome
they expect), written as pumice cycles over raw objects. The reclaim action is not exercised here: its
hooks (``overused``, ``preemptive``, ``reclaimable``) are called directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.hierarchy import QueueTree
from extender.core.model import Pod, PodUID, group_key
from extender.core.parse import parse_queue
from extender.framework.reasons import NOT_ADMITTED, NOT_ENOUGH_RESOURCES
from extender.framework.result import CycleResult, Unschedulable
from extender.framework.session import Session
from extender.plugins.capacity import CapacityPlugin
from extender.plugins.registry import load_conf
from tests.core.builders import Raw, node, pod, podgroup, queue, run
from tests.plugins.helpers import queue_of, session

GPU = "nvidia.com/gpu"


def conf(hierarchy: bool = False, actions: str = "enqueue, allocate") -> str:
    return f"""
actions: "{actions}"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: capacity
    enableHierarchy: {"true" if hierarchy else "false"}
"""


def cq(
    name: str,
    *,
    deserved: Mapping[str, str] | None = None,
    capability: Mapping[str, str] | None = None,
    guarantee: Mapping[str, str] | None = None,
    parent: str | None = None,
    priority: int = 0,
    reclaimable: bool = True,
) -> Raw:
    """A Queue with the capacity plugin's fields."""
    raw = queue(name, capability=capability, deserved=deserved, parent=parent)
    if guarantee is not None:
        raw["spec"]["guarantee"] = {"resource": dict(guarantee)}
    if priority:
        raw["spec"]["priority"] = priority
    raw["spec"]["reclaimable"] = reclaimable
    return raw


def job(
    name: str,
    q: str,
    cpu: str = "1",
    memory: str = "1Gi",
    *,
    on: str = "",
    gpus: int = 0,
    phase: str | None = None,
    min_resources: Mapping[str, str] | None = None,
    created: str = "2024-01-01T00:00:00Z",
) -> tuple[Raw, Raw]:
    """A one-pod group named like its pod: running on node ``on``, else waiting (admitted)."""
    pg = podgroup(
        name,
        1,
        queue=q,
        phase=phase or ("Running" if on else "Inqueue"),
        min_resources=min_resources,
        created=created,
    )
    p = pod(
        name,
        group=name,
        cpu=cpu,
        memory=memory,
        node=on,
        phase="Running" if on else "Pending",
        gpus=gpus,
        created=created,
    )
    return pg, p


def cycle(
    nodes: Sequence[Raw], queues: Sequence[Raw], jobs: Sequence[tuple[Raw, Raw]], hierarchy: bool = False
) -> CycleResult:
    return run(nodes, [p for _, p in jobs], [g for g, _ in jobs], queues, conf=conf(hierarchy))


def hooks(
    nodes: Sequence[Raw], queues: Sequence[Raw], jobs: Sequence[tuple[Raw, Raw]], hierarchy: bool = False
) -> tuple[CapacityPlugin, Session]:
    """A session with the capacity plugin alone, for calling its hooks."""
    plugin = CapacityPlugin({})
    plugin.switches = {"enableHierarchy": hierarchy}
    ssn = session([plugin], nodes, [p for _, p in jobs], [g for g, _ in jobs], queues)
    return plugin, ssn


def why(result: CycleResult, group: str) -> Unschedulable:
    return result.unschedulable[group_key("default", group)]


def pods(ssn: Session, *names: str) -> list[Pod]:
    return [ssn.snapshot.pods[PodUID(n)] for n in names]


def names(victims: Sequence[Pod]) -> list[str]:
    return [p.name for p in victims]


# --- flat: capability, guarantee, order -----------------------------------------------------------


def test_loads_from_a_volcano_conf() -> None:
    loaded = load_conf(conf(hierarchy=True))
    plugin = loaded.tiers()[1][1]
    assert isinstance(plugin, CapacityPlugin)
    assert plugin.hierarchy and not plugin.local_queue_order
    flat = load_conf(conf()).tiers()[1][1]
    assert isinstance(flat, CapacityPlugin)
    assert not flat.hierarchy and flat.local_queue_order


def test_arguments() -> None:
    """Volcano's arguments load (capacity.go: ancestorReclaimLevel, the DRA switches); a typo or a negative
    level does not (Volcano falls back to 0 with a warning; pumice says so at start-up)."""
    assert CapacityPlugin({}).ancestor_levels is None
    assert CapacityPlugin({"ancestorReclaimLevel": 2}).ancestor_levels == 2
    CapacityPlugin(
        {"capacity.DynamicResourceAllocationEnable": True, "capacity.DRAConsumableCapacityEnable": "false"}
    )
    with pytest.raises(ValueError, match="unknown argument"):
        CapacityPlugin({"ancestorReclaimLvl": 1})
    with pytest.raises(ValueError, match="ancestorReclaimLevel -1 must be 0 or more"):
        CapacityPlugin({"ancestorReclaimLevel": -1})


def test_allocates_within_capability() -> None:
    """Volcano case0: one of the queue's 2 cpu is held, the waiting pod takes the other."""
    n = [node("n1", cpu="2", memory="4Gi"), node("n2", cpu="2", memory="4Gi")]
    jobs = [job("p1", "q1", on="n1"), job("p2", "q1")]
    result = cycle(n, [cq("q1", capability={"cpu": "2", "memory": "2Gi"})], jobs)
    assert set(result.placements) == {"p2"}


def test_refuses_past_capability() -> None:
    """Volcano case1: 1 of 1.5 cpu held, one more cpu would pass the limit."""
    n = [node("n1", cpu="2", memory="4Gi"), node("n2", cpu="2", memory="4Gi")]
    jobs = [job("p3", "q2", on="n1"), job("p4", "q2")]
    result = cycle(n, [cq("q2", capability={"cpu": "1500m", "memory": "1536Mi"})], jobs)
    assert result.placements == {}
    u = why(result, "p4")
    assert u.reason == NOT_ENOUGH_RESOURCES
    assert u.message.endswith("queue q2: cpu 2/1.5, memory 2Gi/1.5Gi over capability")


def test_queue_priority_goes_first() -> None:
    """Volcano case4: room for one more pod; of two best-effort queues the one of higher priority gets it."""
    n = [node("n5", cpu="2", memory="4Gi"), node("n6", cpu="2", memory="4Gi")]
    cap = {"cpu": "2", "memory": "4Gi"}
    queues = [cq("q7", capability=cap, priority=5), cq("q8", capability=cap, priority=1)]
    queues.append(cq("q9", capability=cap, priority=10))
    jobs = [job("p13", "q7", "2", "4Gi", on="n5"), job("p14", "q8", "2", "4Gi"), job("p15", "q9", "2", "4Gi")]
    result = cycle(n, queues, jobs)
    assert result.placements == {"p15": "n6"}


def test_borrows_past_deserved_up_to_capability() -> None:
    """Deserved is what reclaim defends, not a limit: idle room is lent up to the capability."""
    pg = podgroup("j", 1, queue="q", phase="Inqueue")
    members = [pod(f"j-{i}", group="j") for i in range(4)]
    queues = [cq("q", deserved={"cpu": "1"}, capability={"cpu": "3"})]
    result = run(
        [node("n1", cpu="8")], members, [pg], queues, conf=conf(actions="enqueue, allocate, backfill")
    )
    assert len(result.placements) == 3


def test_other_queues_guarantees_stay_free() -> None:
    """realCapability: the cluster total less what other queues are guaranteed."""
    members = [pod(f"j-{i}", group="j", queue="qa") for i in range(2)]
    queues = [cq("qa"), cq("qb", guarantee={"cpu": "3", "memory": "1Gi"})]
    result = run(
        [node("n1", cpu="4")], members, [podgroup("j", 2, queue="qa", phase="Inqueue")], queues, conf=conf()
    )
    assert result.placements == {}
    assert why(result, "j").message.endswith(
        "queue qa: cpu 2/1 over capability less other queues' guarantees"
    )
    # The guaranteed queue itself may use its guarantee and what nobody else is guaranteed.
    members = [pod(f"k-{i}", group="k", queue="qb") for i in range(4)]
    result = run(
        [node("n1", cpu="4")], members, [podgroup("k", 4, queue="qb", phase="Inqueue")], queues, conf=conf()
    )
    assert len(result.placements) == 4


# Volcano's enqueue cases: q1 holds 1 cpu / 3G (more memory than its 2G), q2 holds 3 cpu / 1G of 3/3G.
ENQUEUE: list[tuple[str, str, str, str, bool]] = [
    ("memory-over-cpu-asked", "q1", "1", "0", True),
    ("cpu-over-memory-asked", "q2", "0", "1G", True),
    ("memory-over-memory-asked", "q1", "1", "1G", False),
]


@pytest.mark.parametrize(
    ("q", "cpu", "memory", "admitted"), [r[1:] for r in ENQUEUE], ids=[r[0] for r in ENQUEUE]
)
def test_enqueue_checks_only_what_the_group_asks_for(q: str, cpu: str, memory: str, admitted: bool) -> None:
    n = [node("n1", cpu="3", memory="3G"), node("n2", cpu="3", memory="3G")]
    queues = [
        cq("q1", deserved={"cpu": "2", "memory": "2G"}, capability={"cpu": "2", "memory": "2G"}),
        cq("q2", deserved={"cpu": "2", "memory": "2G"}, capability={"cpu": "3", "memory": "3G"}),
    ]
    asked = {"cpu": cpu, "memory": memory}
    jobs = [  # the running groups' minResources are what they hold, as in Volcano's case (no elastic part)
        job("pod1", "q1", "1", "3G", on="n1", min_resources={"cpu": "1", "memory": "3G"}),
        job("pod2", "q2", "3", "1G", on="n2", min_resources={"cpu": "3", "memory": "1G"}),
        job("new", q, cpu, memory, phase="Pending", min_resources=asked),
    ]
    result = cycle(n, queues, jobs)
    assert ("default/new" in result.admitted) is admitted
    assert ("new" in result.placements) is admitted
    if not admitted:
        u = why(result, "new")
        assert u.reason == NOT_ADMITTED
        assert u.message.startswith("queue q1: memory ")
        assert "over capability, counting what admitted groups are promised (memory: used " in u.message


def test_enqueue_counts_promises_to_admitted_groups() -> None:
    queues = [cq("q", capability={"cpu": "2"})]
    jobs = [
        job("a", "q", phase="Pending", min_resources={"cpu": "2"}, created="2024-01-01T00:00:00Z"),
        job("b", "q", phase="Pending", min_resources={"cpu": "1"}, created="2024-01-02T00:00:00Z"),
    ]
    result = cycle([node("n1", cpu="8")], queues, jobs)
    assert result.admitted == {"default/a"}
    assert why(result, "b").message == (
        "queue q: cpu 3/2 over capability, counting what admitted groups are promised"
        " (cpu: used 0 + promised 2 + minResources 1)"  # the sum's terms
    )


def test_capacity_ignores_the_pods_slot() -> None:
    """Volcano's resource type keeps the pods count out of capacity checks."""
    pg = podgroup("j", 3, queue="q", phase="Inqueue")
    members = [pod(f"j-{i}", group="j") for i in range(3)]
    result = run(
        [node("n1", cpu="8")], members, [pg], [cq("q", capability={"cpu": "4", "pods": "1"})], conf=conf()
    )
    assert len(result.placements) == 3


def test_zero_cpu_capability_means_unset() -> None:
    """As in Volcano, a cpu or memory capability of 0 is read as "not set"; a scalar's 0 is a limit."""
    jobs = [job("a", "q", "2")]
    result = cycle([node("n1", cpu="8")], [cq("q", capability={"cpu": "0"})], jobs)
    assert set(result.placements) == {"a"}
    jobs = [job("g", "q", gpus=1)]
    result = cycle([node("n1", gpus=2)], [cq("q", capability={GPU: "0"})], jobs)
    assert why(result, "g").message.endswith("queue q: nvidia.com/gpu 1/0 over capability")


def test_queue_order_by_share_best_effort_last() -> None:
    """a holds 1 of its deserved 4 cpu, b 1 of 2; c has no deserved share (best effort, share 1) and d
    holds all it deserves (share 1): a queue with a share goes before a best-effort one at the same value."""
    queues = [
        cq("a", deserved={"cpu": "4"}),
        cq("b", deserved={"cpu": "2"}),
        cq("c"),
        cq("d", deserved={"cpu": "1"}),
    ]
    jobs = [job(f"{q}-held", q, on="n1") for q in "abcd"]
    plugin, ssn = hooks([node("n1", cpu="16")], queues, jobs)
    keys = {q: plugin.queue_order(ssn, queue_of(ssn, q)) for q in "abcd"}
    assert keys["a"] == (0, ((0.25, 0),))
    assert keys["c"] == (0, ((1.0, 1),))
    assert sorted("dcba", key=lambda q: ssn.queue_key(queue_of(ssn, q))) == ["a", "b", "d", "c"]


def test_queue_order_follows_usage_in_the_cycle() -> None:
    """Keys are cached per usage array: a placement must change the queue's key."""
    queues = [cq("a", deserved={"cpu": "2"}), cq("b", deserved={"cpu": "2"})]
    jobs = [job("a-0", "a", created="2024-01-01T00:00:00Z"), job("b-0", "b", created="2024-01-02T00:00:00Z")]
    jobs += [job("a-1", "a", created="2024-01-03T00:00:00Z")]
    result = cycle([node("n1", cpu="2")], queues, jobs)
    # a's first pod goes first (name order), then b is behind its share, so b gets the last cpu.
    assert set(result.placements) == {"a-0", "b-0"}


# --- reclaim hooks, flat (Volcano's reclaim cases) ---------------------------------------------------


def test_reclaim_from_a_queue_above_its_share() -> None:
    """Volcano case2: q3 holds twice its deserved share; q4 holds nothing of its share."""
    n = [node("n1", cpu="2", memory="4Gi"), node("n2", cpu="2", memory="4Gi")]
    share = {"cpu": "2", "memory": "4Gi"}
    jobs = [
        job("p5", "q3", "2", "4Gi", on="n1"),
        job("p6", "q3", "2", "4Gi", on="n2"),
        job("p7", "q4", "2", "4Gi"),
    ]
    plugin, ssn = hooks(n, [cq("q3", deserved=share), cq("q4", deserved=share)], jobs)
    assert plugin.preemptive(ssn, queue_of(ssn, "q4"), ssn.vector(PodUID("p7"))) is None
    # q3 is past its share, yet not "overused": Volcano's capacity leaves that to preemptive.
    assert plugin.overused(ssn, queue_of(ssn, "q3")) is None
    # The first victim brings q3 down to its share; the second would take it below.
    assert names(plugin.reclaimable(ssn, pods(ssn, "p7")[0], pods(ssn, "p6", "p5"))) == ["p6"]


# (id, nodes, queues, jobs, reclaimer, candidates, allowed)
RECLAIM: list[tuple[str, list[Raw], list[Raw], list[tuple[Raw, Raw]], str, list[str], list[str]]] = [
    (
        # Volcano case3: q5 holds 20 GPUs of its 10; the reclaimer asks for GPUs only.
        "scalar-over",
        [node("n3", cpu="2", memory="4Gi", gpus=10), node("n4", cpu="2", memory="4Gi", gpus=10)],
        [
            cq("q5", deserved={"cpu": "2", "memory": "4Gi", GPU: "10"}),
            cq("q6", deserved={"cpu": "2", GPU: "10"}),
        ],
        [
            job("p8", "q5", "0", "0", gpus=10, on="n3"),
            job("p9", "q5", "0", "0", gpus=10, on="n4"),
            job("p10", "q6", "2", "4Gi", on="n3"),
            job("p12", "q6", "0", "0", gpus=10),
        ],
        "p12",
        ["p9", "p10"],
        ["p9"],
    ),
    (
        # Volcano case7: queue14 is not above its share in anything p22 frees; queue15 has no share.
        "not-above-share",
        [node("n7", cpu="4", memory="8Gi", gpus=4)],
        [
            cq("queue14", deserved={"cpu": "2", "memory": "4Gi", GPU: "2"}),
            cq("queue15"),
            cq("queue16", deserved={"cpu": "2", "memory": "4Gi", GPU: "2"}),
        ],
        [
            job("p22", "queue14", "2", "4Gi", on="n7"),
            job("p23", "queue15", "0", "0", gpus=1, on="n7"),
            job("p24", "queue16", "2", "1Gi", gpus=1, on="n7"),
            job("p25", "queue16", "2", "3Gi", gpus=1),
        ],
        "p25",
        ["p22", "p23"],
        ["p23"],
    ),
    (
        # Volcano case8: p26 frees only memory, which the reclaimer does not ask for; p27's cpu is within
        # queue17's share; p28's GPU is something queue17's share does not name.
        "reclaimer-dimensions",
        [node("n8", cpu="4", memory="8Gi", gpus=1)],
        [
            cq("queue17", deserved={"cpu": "2", "memory": "2Gi"}),
            cq("queue18", deserved={"cpu": "2", GPU: "1"}),
        ],
        [
            job("p26", "queue17", "0", "4Gi", on="n8"),
            job("p27", "queue17", "1", "0", on="n8"),
            job("p28", "queue17", "0", "0", gpus=1, on="n8"),
            job("p29", "queue18", "2", "4Gi", on="n8"),
            job("p30", "queue18", "1", "0", gpus=1),
        ],
        "p30",
        ["p26", "p27", "p28"],
        ["p28"],
    ),
    (
        # Volcano case9: queue19's share is one GPU, which p31 holds: its cpu is not reclaimable.
        "scalar-only-share",
        [node("n8", cpu="4", memory="8Gi", gpus=1)],
        [cq("queue19", deserved={GPU: "1"}), cq("queue20", deserved={"cpu": "2", "memory": "2Gi"})],
        [job("p31", "queue19", "4", "4Gi", gpus=1, on="n8"), job("p32", "queue20", "1", "1Gi")],
        "p32",
        ["p31"],
        [],
    ),
    (
        # Volcano case5: q11's share is zero (best effort): its pod goes.
        "best-effort-victim",
        [node("n1", cpu="2", memory="4Gi")],
        [
            cq("q10", deserved={"cpu": "2", "memory": "2Gi"}, capability={"cpu": "4", "memory": "4Gi"}),
            cq("q11", deserved={"cpu": "0", "memory": "0"}, capability={"cpu": "2", "memory": "2Gi"}),
        ],
        [job("p16", "q10", "1", "3Gi", on="n1"), job("p17", "q10", "1", "1Gi"), job("p18", "q11", on="n1")],
        "p17",
        ["p18"],
        ["p18"],
    ),
    (
        # Pushing a queue below its share is refused: q holds 3 of its 2 cpu; a 2-cpu victim would leave 1.
        "never-below-share",
        [node("n1", cpu="8")],
        [cq("q", deserved={"cpu": "2"}), cq("r", deserved={"cpu": "4"})],
        [job("big", "q", "2", on="n1"), job("small", "q", on="n1"), job("want", "r", "2")],
        "want",
        ["big", "small"],
        ["small"],
    ),
    (
        # A queue that is not reclaimable gives nothing, whatever it holds.
        "not-reclaimable",
        [node("n1", cpu="8")],
        [cq("q", reclaimable=False), cq("r", deserved={"cpu": "4"})],
        [job("x", "q", "2", on="n1"), job("want", "r", "2")],
        "want",
        ["x"],
        [],
    ),
]


@pytest.mark.parametrize(
    ("nodes", "queues", "jobs", "reclaimer", "candidates", "allowed"),
    [r[1:] for r in RECLAIM],
    ids=[r[0] for r in RECLAIM],
)
def test_reclaimable(
    nodes: list[Raw],
    queues: list[Raw],
    jobs: list[tuple[Raw, Raw]],
    reclaimer: str,
    candidates: list[str],
    allowed: list[str],
) -> None:
    plugin, ssn = hooks(nodes, queues, jobs)
    got = plugin.reclaimable(ssn, pods(ssn, reclaimer)[0], pods(ssn, *candidates))
    assert names(got) == allowed


# (id, queues, jobs, queue, reclaimer, reason or None)
PREEMPTIVE: list[tuple[str, list[Raw], list[tuple[Raw, Raw]], str, str, str | None]] = [
    (
        # Volcano case5: within its share in cpu (2/2) though past it in memory.
        "within-share-in-one-resource",
        [cq("q10", deserved={"cpu": "2", "memory": "2Gi"}, capability={"cpu": "4", "memory": "4Gi"})],
        [job("p16", "q10", "1", "3Gi", on="n1"), job("p17", "q10", "1", "1Gi")],
        "q10",
        "p17",
        None,
    ),
    (
        # Volcano case6: past its share in everything it asks for.
        "past-share-in-all",
        [cq("q12", deserved={"cpu": "1", "memory": "2Gi"}, capability={"cpu": "4", "memory": "4Gi"})],
        [job("p19", "q12", "1", "1Gi", on="n1"), job("p20", "q12", "1", "2Gi")],
        "q12",
        "p20",
        "queue q12: reclaiming would pass its deserved share in all it asks for (cpu 2/1, memory 3Gi/2Gi)",
    ),
    (
        # Volcano case10: below its share in memory, but the capability binds reclaim too.
        "capability-binds",
        [cq("queue21", deserved={"cpu": "8", "memory": "100Gi"}, capability={"cpu": "8", "memory": "100Gi"})],
        [job("p33", "queue21", "7", "90Gi", on="n1"), job("p34", "queue21", "2", "5Gi")],
        "queue21",
        "p34",
        "queue queue21: cpu 9/8 over capability",
    ),
    (
        "best-effort-reclaims-nothing",
        [cq("q")],
        [job("x", "q")],
        "q",
        "x",
        "queue q: reclaiming would pass its deserved share in all it asks for (cpu 1/0, memory 1Gi/0)",
    ),
]


@pytest.mark.parametrize(
    ("queues", "jobs", "q", "reclaimer", "reason"),
    [r[1:] for r in PREEMPTIVE],
    ids=[r[0] for r in PREEMPTIVE],
)
def test_preemptive(
    queues: list[Raw], jobs: list[tuple[Raw, Raw]], q: str, reclaimer: str, reason: str | None
) -> None:
    plugin, ssn = hooks([node("n1", cpu="16", memory="200Gi")], queues, jobs)
    assert plugin.preemptive(ssn, queue_of(ssn, q), ssn.vector(PodUID(reclaimer))) == reason


def test_reclaim_keeps_accumulating_within_one_call() -> None:
    """Three 1-cpu victims from a queue 2 above its share: the first two go, the third would cut in."""
    jobs = [job(f"v{i}", "q", on="n1") for i in range(3)] + [job("x", "q", "0", "1Gi", on="n1")]
    jobs.append(job("want", "r", "3", "0"))
    queues = [cq("q", deserved={"cpu": "1"}), cq("r", deserved={"cpu": "4"})]
    plugin, ssn = hooks([node("n1", cpu="8")], queues, jobs)
    got = plugin.reclaimable(ssn, pods(ssn, "want")[0], pods(ssn, "v0", "x", "v1", "v2"))
    assert names(got) == ["v0", "v1"]  # x frees only memory, which the reclaimer does not ask for


# --- hierarchy ------------------------------------------------------------------------------------


def test_hierarchy_leaf_within_limits() -> None:
    """Volcano hierarchy case0."""
    queues = [
        cq("root"),
        cq("q1", capability={"cpu": "4", "memory": "4Gi"}, parent="root"),
        cq("q2", capability={"cpu": "4", "memory": "4Gi"}, parent="root"),
        cq("q11", capability={"cpu": "1", "memory": "1Gi"}, parent="q1"),
        cq("q12", capability={"cpu": "3", "memory": "3Gi"}, parent="q1"),
    ]
    result = cycle([node("n1", cpu="8", memory="8Gi")], queues, [job("p1", "q11")], hierarchy=True)
    assert set(result.placements) == {"p1"}


def test_hierarchy_gang_within_its_parent() -> None:
    """Volcano hierarchy case2: a gang of two 2-cpu pods fills q31 and its parent q3 exactly."""
    q3_limit = {"cpu": "4", "memory": "4Gi", "pods": "10"}
    queues = [
        cq("root"),
        cq("q3", deserved=q3_limit, capability=q3_limit, parent="root"),
        cq(
            "q31",
            deserved={"cpu": "2", "memory": "2Gi"},
            capability={"cpu": "4", "memory": "4Gi"},
            parent="q3",
        ),
        cq(
            "q32",
            deserved={"cpu": "2", "memory": "2Gi"},
            capability={"cpu": "4", "memory": "4Gi"},
            parent="q3",
        ),
    ]
    pg = podgroup("pg3", 2, queue="q31", phase="Inqueue")
    members = [pod(f"p{i}", group="pg3", cpu="2", memory="2Gi") for i in (3, 4)]
    result = run([node("n1", cpu="8", memory="8Gi")], members, [pg], queues, conf=conf(hierarchy=True))
    assert set(result.placements) == {"p3", "p4"}


@pytest.mark.parametrize("hierarchy", [True, False])
def test_child_cannot_pass_its_parents_capability(hierarchy: bool) -> None:
    """Volcano hierarchy case4: q31 and q32 hold all of q3's 4 cpu; q33 may not add 3 more. Without the
    switch spec.parent is ignored and q33's own limit allows it."""
    limit = {"cpu": "4", "memory": "4Gi"}
    queues = [
        cq("root"),
        cq("q3", capability=limit, parent="root"),
        cq("q31", capability=limit, parent="q3"),
        cq("q32", capability=limit, parent="q3"),
        cq("q33", capability=limit, parent="q3"),
    ]
    jobs = [
        job("p6", "q31", "2", "2Gi", on="n1"),
        job("p9", "q32", "2", "2Gi", on="n1"),
        job("p10", "q33", "3", "3Gi"),
    ]
    result = cycle([node("n1", cpu="8", memory="8Gi")], queues, jobs, hierarchy=hierarchy)
    if hierarchy:
        assert result.placements == {}
        assert why(result, "p10").message.endswith(
            "queue q33: ancestor queue q3: cpu 7/4, memory 7Gi/4Gi over capability"
        )
    else:
        assert set(result.placements) == {"p10"}


def test_child_inherits_unset_capability() -> None:
    """Volcano hierarchy cases 5 and 11: what a child's capability does not name, its parent's does."""
    queues = [
        cq("root"),
        cq("q5", capability={"memory": "4Gi"}, parent="root"),
        cq("q51", capability={"memory": "2Gi"}, parent="q5"),
        cq("q6", capability={"cpu": "2", GPU: "2"}, parent="root"),
        cq("q61", parent="q6"),
    ]
    n = [node("n1", cpu="8", memory="8Gi", gpus=8)]
    jobs = [job("p11", "q51", "1", "0"), job("wide", "q61", "3", "0"), job("gpus", "q61", "1", "0", gpus=4)]
    result = cycle(n, queues, jobs, hierarchy=True)
    assert set(result.placements) == {"p11"}
    assert why(result, "wide").message.endswith("queue q61: cpu 3/2 over capability inherited from queue q6")
    assert why(result, "gpus").message.endswith(
        "queue q61: nvidia.com/gpu 4/2 over capability inherited from queue q6"
    )


def test_siblings_each_get_their_scalar_capability() -> None:
    """Volcano hierarchy case11: a parent without a capability, two children of 4 GPUs each."""
    queues = [
        cq("root"),
        cq("c1", parent="root"),
        cq("c11", capability={"cpu": "4", "memory": "4Gi", GPU: "4"}, parent="c1"),
        cq("c12", capability={"cpu": "4", "memory": "4Gi", GPU: "4"}, parent="c1"),
    ]
    jobs = [job("p14", "c11", gpus=4), job("p15", "c12", gpus=4)]
    result = cycle([node("n2", cpu="8", memory="8Gi", gpus=8)], queues, jobs, hierarchy=True)
    assert set(result.placements) == {"p14", "p15"}


def test_enqueue_checks_every_ancestor() -> None:
    """Volcano hierarchy case6: q6's 2 cpu admit one of its children's 2-cpu groups, not both."""
    queues = [cq("root"), cq("q6", capability={"cpu": "2", "memory": "4Gi"}, parent="root")]
    queues += [cq("q61", parent="q6"), cq("q62", parent="q6")]
    asked = {"cpu": "2", "memory": "4Gi"}
    jobs = [
        job("pg10", "q61", "2", "4Gi", phase="Pending", min_resources=asked),
        job("pg11", "q62", "2", "4Gi", phase="Pending", min_resources=asked),
    ]
    result = cycle([node("n1", cpu="8", memory="8Gi")], queues, jobs, hierarchy=True)
    assert result.admitted == {"default/pg10"}
    u = why(result, "pg11")
    assert (u.reason, u.message) == (
        NOT_ADMITTED,
        "queue q62: ancestor queue q6: cpu 4/2, memory 8Gi/4Gi over capability, "
        "counting what admitted groups are promised "
        "(cpu: used 0 + promised 2 + minResources 2; memory: used 0 + promised 4Gi + minResources 4Gi)",
    )


def test_sibling_guarantees_past_the_parent_do_not_break() -> None:
    """Volcano hierarchy case7: the children's guarantees add up past q7's capability. Each child's real
    capability is what q7 has beyond its siblings' guarantees, plus its own: 4 cpu, 3Gi."""
    g = {"cpu": "4", "memory": "3Gi"}
    queues = [
        cq("root"),
        cq("q7", capability={"cpu": "6", "memory": "4Gi"}, parent="root"),
        cq("q71", capability={"cpu": "6", "memory": "4Gi"}, guarantee=g, parent="q7"),
        cq("q72", capability={"cpu": "6", "memory": "4Gi"}, guarantee=g, parent="q7"),
    ]
    result = cycle(
        [node("n1", cpu="8", memory="8Gi")], queues, [job("big", "q71", "5", "1Gi")], hierarchy=True
    )
    assert why(result, "big").message.endswith(
        "queue q71: cpu 5/4 over capability less other queues' guarantees"
    )


def test_root_capability_binds_everyone() -> None:
    """Volcano hierarchy case10 (a root capability above the cluster is fine), and one below it binds."""
    queues = [cq("root", capability={"cpu": "16", "memory": "16Gi"}), cq("q10", capability={"cpu": "10"})]
    result = cycle([node("n1", cpu="8", memory="8Gi")], queues, [job("a", "q10", "4")], hierarchy=True)
    assert set(result.placements) == {"a"}
    queues = [cq("root", capability={"cpu": "2"}), cq("q10")]
    result = cycle([node("n1", cpu="8", memory="8Gi")], queues, [job("a", "q10", "3")], hierarchy=True)
    assert why(result, "a").message.endswith("queue q10: cpu 3/2 over capability inherited from queue root")


def test_hierarchy_queue_order_compares_subtrees_first() -> None:
    """x holds 3 of its 4 (through x1), y 1 of its 4 (through y1). y1 is served before x2 though x2 holds
    nothing: at the top, y's subtree is further behind its share. Flat, x2's own share decides."""
    queues = [
        cq("root"),
        cq("x", deserved={"cpu": "4"}, parent="root"),
        cq("y", deserved={"cpu": "4"}, parent="root"),
        cq("x1", deserved={"cpu": "2"}, parent="x"),
        cq("x2", deserved={"cpu": "2"}, parent="x"),
        cq("y1", deserved={"cpu": "4"}, parent="y"),
    ]
    jobs = [job("x1-held", "x1", "3", on="n1"), job("y1-held", "y1", "1", on="n1")]
    plugin, ssn = hooks([node("n1", cpu="16")], queues, jobs, hierarchy=True)
    order = sorted(["x1", "x2", "y1"], key=lambda q: ssn.queue_key(queue_of(ssn, q)))
    assert order == ["y1", "x2", "x1"]
    assert plugin.queue_order(ssn, queue_of(ssn, "x2")) == (0, ((0.75, 0), (0.0, 0)))
    plugin, ssn = hooks([node("n1", cpu="16")], queues, jobs, hierarchy=False)
    assert sorted(["x1", "x2", "y1"], key=lambda q: ssn.queue_key(queue_of(ssn, q))) == ["x2", "y1", "x1"]


def test_hierarchy_siblings_share_by_deserved() -> None:
    """Two siblings wait for 1-cpu pods one by one; each is served while further behind its share, so
    the 6 free cpu split 4:2 as their deserved 4 and 2."""
    queues = [
        cq("root"),
        cq("p", capability={"cpu": "6"}, parent="root"),
        cq("a", deserved={"cpu": "4"}, parent="p"),
        cq("b", deserved={"cpu": "2"}, parent="p"),
    ]
    groups = [podgroup(f"{q}-{i}", 1, queue=q, phase="Inqueue") for q in "ab" for i in range(6)]
    members = [pod(f"{q}-{i}", group=f"{q}-{i}") for q in "ab" for i in range(6)]
    result = run([node("n1", cpu="16", memory="64Gi")], members, groups, queues, conf=conf(hierarchy=True))
    by_queue = {q: sum(1 for u in result.placements if u.startswith(q)) for q in "ab"}
    assert by_queue == {"a": 4, "b": 2}


def test_hierarchy_reclaim_from_a_cousin_above_its_share() -> None:
    """Volcano hierarchy case3: q32 (below its share) reclaims from q31 (above its share, same parent);
    q4 is above its share too, but its only pod would take it below."""
    limit = {"cpu": "4", "memory": "4Gi"}
    queues = [
        cq("root"),
        cq("q3", deserved=limit, capability=limit, parent="root"),
        cq("q31", deserved={"cpu": "2", "memory": "2Gi"}, capability=limit, parent="q3"),
        cq("q32", deserved={"cpu": "2", "memory": "2Gi"}, capability=limit, parent="q3"),
        cq("q4", deserved={"cpu": "2", "memory": "2Gi"}, capability=limit, parent="root"),
    ]
    jobs = [
        job("p5", "q4", "4", "4Gi", on="n1"),
        job("p6", "q31", "2", "2Gi", on="n1"),
        job("p7", "q31", "2", "2Gi", on="n1"),
        job("p8", "q32", "2", "2Gi"),
    ]
    plugin, ssn = hooks([node("n1", cpu="8", memory="8Gi")], queues, jobs, hierarchy=True)
    assert plugin.preemptive(ssn, queue_of(ssn, "q32"), ssn.vector(PodUID("p8"))) is None
    assert names(plugin.reclaimable(ssn, pods(ssn, "p8")[0], pods(ssn, "p5", "p7", "p6"))) == ["p7"]


def test_hierarchy_reclaim_on_one_scalar() -> None:
    """Volcano hierarchy case12: c11 is within its share of a100 (2/2); c12 has no share."""
    a100 = "nvidia.com/a100"
    queues = [
        cq("root", deserved={"cpu": "16", "memory": "16Gi", a100: "4"}),
        cq("c1", deserved={a100: "2"}, parent="root"),
        cq("c11", deserved={a100: "2"}, parent="c1"),
        cq("c12", parent="c1"),
    ]
    n = [node("n3", cpu="16", memory="16Gi", extra={a100: "5"})]
    jobs = [
        (podgroup("p16", 1, queue="c11", phase="Inqueue"), pod("p16", group="p16", extra={a100: "2"})),
        (
            podgroup("p17", 1, queue="c12", phase="Running"),
            pod("p17", group="p17", extra={a100: "2"}, node="n3"),
        ),
    ]
    plugin, ssn = hooks(n, queues, jobs, hierarchy=True)
    assert plugin.preemptive(ssn, queue_of(ssn, "c11"), ssn.vector(PodUID("p16"))) is None
    assert names(plugin.reclaimable(ssn, pods(ssn, "p16")[0], pods(ssn, "p17"))) == ["p17"]


def test_hierarchy_reclaim_keeps_every_ancestors_share() -> None:
    """a is above its share but its parent p is not: r (outside p) may not take from a, while a's sibling
    b may (p's total stays the same). Flat, the parent's share is not considered."""
    queues = [
        cq("root"),
        cq("p", deserved={"cpu": "4"}, parent="root"),
        cq("a", deserved={"cpu": "1"}, parent="p"),
        cq("b", deserved={"cpu": "3"}, parent="p"),
        cq("r", deserved={"cpu": "4"}, parent="root"),
    ]
    jobs = [job(f"a{i}", "a", on="n1") for i in range(4)] + [job("want-r", "r"), job("want-b", "b")]
    plugin, ssn = hooks([node("n1", cpu="8")], queues, jobs, hierarchy=True)
    victims = pods(ssn, "a0", "a1")
    assert plugin.reclaimable(ssn, pods(ssn, "want-r")[0], victims) == []
    assert names(plugin.reclaimable(ssn, pods(ssn, "want-b")[0], victims)) == ["a0", "a1"]
    plugin, ssn = hooks([node("n1", cpu="8")], queues, jobs, hierarchy=False)
    assert names(plugin.reclaimable(ssn, pods(ssn, "want-r")[0], pods(ssn, "a0", "a1"))) == ["a0", "a1"]


def test_hierarchy_parent_usage_counts_its_children() -> None:
    queues = [cq("root"), cq("p", deserved={"cpu": "2"}, parent="root"), cq("c", parent="p")]
    jobs = [job("c-0", "c", "1", on="n1"), job("p-0", "p", "1", on="n1")]
    plugin, ssn = hooks([node("n1", cpu="8")], queues, jobs, hierarchy=True)
    assert plugin.queue_order(ssn, queue_of(ssn, "p")) == (0, ((1.0, 0),))
    assert plugin.queue_order(ssn, queue_of(ssn, "c")) == (0, ((1.0, 0), (1.0, 1)))
    plugin, ssn = hooks([node("n1", cpu="8")], queues, jobs, hierarchy=False)
    assert plugin.queue_order(ssn, queue_of(ssn, "p")) == (0, ((0.5, 0),))


def test_loops_and_missing_parents_are_flat() -> None:
    """a and b name each other as parent, c hangs below the loop, d's parent is gone: all sit flat below
    the root, and nothing hangs."""
    queues = [
        cq("root", capability={"cpu": "6"}),
        cq("a", parent="b", capability={"cpu": "1"}),
        cq("b", parent="a"),
        cq("c", parent="a"),
        cq("d", parent="gone"),
    ]
    tree = QueueTree.of({q.name: q for q in map(parse_queue, queues)})
    assert {n: tree.parent[n] for n in "abcd"} == dict.fromkeys("abcd", "root")
    assert tree.subtree("root") == ("root", "a", "b", "c", "d")
    nested = QueueTree.of(
        {q.name: q for q in map(parse_queue, [cq("x"), cq("y", parent="x"), cq("z", parent="y")])}
    )
    assert nested.ancestors("z") == ("y", "x")
    assert nested.subtree("x") == nested.top_down() == ("x", "y", "z")
    plugin, ssn = hooks([node("n1", cpu="8")], queues, [job("x", "d", "3")], hierarchy=True)
    assert plugin.queue_order(ssn, queue_of(ssn, "a")) == (0, ((1.0, 1),))
    assert plugin.allocatable(ssn, queue_of(ssn, "b"), ssn.vector(PodUID("x"))) is None
    assert (
        plugin.allocatable(ssn, queue_of(ssn, "a"), ssn.vector(PodUID("x")))
        == "queue a: cpu 3/1 over capability"
    )
    result = cycle([node("n1", cpu="8")], queues, [job("x", "d", "7")], hierarchy=True)
    assert why(result, "x").message.endswith("queue d: cpu 7/6 over capability inherited from queue root")


def test_without_a_root_queue_tops_are_unbounded_by_the_cluster() -> None:
    """Under the hierarchy the top is bounded by its capability only (Volcano's root), not by what the
    cluster has now; flat, the cluster total is the limit."""
    queues = [cq("q", capability={"memory": "64Gi"})]
    jobs = [job("big", "q", "10", phase="Pending", min_resources={"cpu": "10"})]
    assert "default/big" in cycle([node("n1", cpu="4")], queues, jobs, hierarchy=True).admitted
    flat = cycle([node("n1", cpu="4")], queues, jobs)
    assert why(flat, "big").message.startswith("queue q: cpu 10/4 over capability less")


# --- properties -----------------------------------------------------------------------------------

QUEUES = ("q0", "q1", "q2", "q3", "q4")


@st.composite
def trees(draw: st.DrawFn, least: int = 1) -> dict[str, str | None]:
    """Parents for ``least`` or more queues: each below an earlier one or at the top."""
    n = draw(st.integers(least, len(QUEUES)))
    parents: dict[str, str | None] = {}
    for i, name in enumerate(QUEUES[:n]):
        parents[name] = draw(st.sampled_from([None, *QUEUES[:i]]))
    return parents


def _subtree(parents: Mapping[str, str | None], name: str, hierarchy: bool) -> set[str]:
    if not hierarchy:
        return {name}
    out = {name}
    changed = True
    while changed:
        grown = {q for q, up in parents.items() if up in out}
        changed = not grown <= out
        out |= grown
    return out


def _levels(parents: Mapping[str, str | None], name: str, hierarchy: bool) -> list[str]:
    out = [name]
    while hierarchy and parents[out[-1]] is not None:
        up = parents[out[-1]]
        assert up is not None
        out.append(up)
    return out


@settings(max_examples=80, deadline=None)
@given(
    parents=trees(),
    hierarchy=st.booleans(),
    caps=st.lists(st.one_of(st.none(), st.integers(0, 8)), min_size=5, max_size=5),
    guarantees=st.lists(st.integers(0, 2), min_size=5, max_size=5),
    held=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3)), max_size=6),
    gangs=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3), st.integers(1, 2)), max_size=6),
)
def test_allocate_never_passes_a_capability(
    parents: dict[str, str | None],
    hierarchy: bool,
    caps: list[int | None],
    guarantees: list[int],
    held: list[tuple[int, int]],
    gangs: list[tuple[int, int, int]],
) -> None:
    """Whatever is placed in a subtree (or a queue, flat) leaves it within each capability it declares."""
    names_ = list(parents)
    queues = [cq("root")]
    for i, name in enumerate(names_):
        cap = caps[i]
        queues.append(
            cq(
                name,
                parent=parents[name] or "root",
                capability=None if cap is None else {"cpu": str(cap) if cap else "0", GPU: str(cap or 0)},
                guarantee={"cpu": str(guarantees[i])},
            )
        )
    queue_of_pod: dict[str, str] = {}
    cpu_of: dict[str, int] = {}
    gpus_of: dict[str, int] = {}
    groups: list[Raw] = []
    members: list[Raw] = []
    for i, (qi, cpu) in enumerate(held):
        q = names_[qi % len(names_)]
        pg, p = job(f"h{i}", q, str(cpu), "1Gi", on=f"n{i % 2}")
        groups.append(pg)
        members.append(p)
        queue_of_pod[f"h{i}"], cpu_of[f"h{i}"], gpus_of[f"h{i}"] = q, cpu * 1000, 0
    for i, (qi, size, cpu) in enumerate(gangs):
        q = names_[qi % len(names_)]
        groups.append(podgroup(f"g{i}", size, queue=q, phase="Inqueue"))
        for k in range(size):
            members.append(pod(f"g{i}-{k}", group=f"g{i}", cpu=str(cpu), memory="1Gi", gpus=k % 2))
            queue_of_pod[f"g{i}-{k}"], cpu_of[f"g{i}-{k}"], gpus_of[f"g{i}-{k}"] = q, cpu * 1000, k % 2
    nodes = [node(f"n{i}", cpu="16", memory="64Gi", gpus=8) for i in range(2)]
    result = run(nodes, members, groups, queues, conf=conf(hierarchy, "enqueue, allocate, backfill"))
    placed = {str(u) for u in result.placements}
    for i, name in enumerate(names_):
        cap = caps[i]
        if cap is None:
            continue
        limit = cap * 1000 if cap else None  # a cpu capability of 0 is "unset"
        sub = _subtree(parents, name, hierarchy)
        holding = [u for u, q in queue_of_pod.items() if q in sub and (u in placed or u.startswith("h"))]
        new = [u for u in holding if u in placed]
        if limit is not None and new:
            assert sum(cpu_of[u] for u in holding) <= limit, (name, holding)
        if any(gpus_of[u] for u in new):
            assert sum(gpus_of[u] for u in holding) <= cap, (name, holding)


@settings(max_examples=120, deadline=None)
@given(
    parents=trees(least=2),
    hierarchy=st.booleans(),
    deserved=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=5, max_size=5),
    running=st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=10
    ),
    reclaimer=st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 3)),
    order=st.randoms(use_true_random=False),
)
def test_reclaimable_never_takes_a_queue_below_its_share(
    parents: dict[str, str | None],
    hierarchy: bool,
    deserved: list[tuple[int, int]],
    running: list[tuple[int, int, int]],
    reclaimer: tuple[int, int, int],
    order: Any,
) -> None:
    """For every queue the victims count toward (and that the reclaimer's queue is not in): in every
    resource its share names and a victim frees, it keeps its share; a queue above its share in such a
    resource stays at or above it. And the answer stands for any prefix of it."""
    names_ = list(parents)
    queues = [cq("root")]
    for i, name in enumerate(names_):
        cpu, mem = deserved[i]
        queues.append(
            cq(name, parent=parents[name] or "root", deserved={"cpu": str(cpu), "memory": f"{mem}Gi"})
        )
    jobs = [
        job(f"r{i}", names_[qi % len(names_)], str(cpu), f"{mem}Gi", on="n1")
        for i, (qi, cpu, mem) in enumerate(running)
    ]
    mine = names_[reclaimer[0] % len(names_)]
    jobs.append(job("want", mine, str(reclaimer[1]), f"{reclaimer[2]}Gi"))
    plugin, ssn = hooks([node("n1", cpu="64", memory="256Gi")], queues, jobs, hierarchy=hierarchy)
    candidates = [
        p
        for p in pods(ssn, *(f"r{i}" for i in range(len(running))))
        if ssn.running.by_uid[p.uid].queue != mine
    ]
    order.shuffle(candidates)
    want = pods(ssn, "want")[0]
    allowed = list(plugin.reclaimable(ssn, want, candidates))
    assert [p.uid for p in allowed] == [p.uid for p in candidates if p in allowed]
    index = ssn.snapshot.index
    shared = np.array([n != "pods" for n in index.names])
    skip = set(_levels(parents, mine, hierarchy))
    for level in {
        lv for v in allowed for lv in _levels(parents, ssn.running.by_uid[v.uid].queue, hierarchy)
    } - skip:
        sub = _subtree(parents, level, hierarchy)
        before = sum((ssn.queue_used[q] for q in sub), np.zeros(len(index), dtype=np.int64))
        gone = [index.vector(v.requests) for v in allowed if ssn.running.by_uid[v.uid].queue in sub]
        after = before - sum(gone, np.zeros(len(index), dtype=np.int64))
        freed = (sum(gone, np.zeros(len(index), dtype=np.int64)) > 0) & shared
        share = plugin.deserved[level]
        kept = freed & (share > 0)
        assert (after[kept] >= share[kept]).all(), (level, before, after, share)
        over = kept & (before > share)
        assert (after[over] >= share[over]).all()
    cut = order.randint(0, len(allowed))
    assert list(plugin.reclaimable(ssn, want, allowed[:cut])) == allowed[:cut]
