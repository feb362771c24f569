"""Elastic resources (what a running job holds beyond its minResources) count as room on admission, and
reclaim then gives the lender its share back: capacity (flat and hierarchical) and proportion, as Volcano's
``jobEnqueueable`` counts them (``minResources + allocated + inqueue - elastic <= realCapability``);
overcommit does not count them (Volcano's overcommit.go never did).
"""

from __future__ import annotations

import pytest

from extender.core.model import GroupKey
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.framework.reasons import NOT_ADMITTED
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, Raw, conf_with, node, pod, podgroup, queue, run
from tests.core.cycles import Cycles

# Volcano's capacity user guide conf (docs/user-guide/how_to_use_capacity_plugin.md), hierarchy on.
CAPACITY_TREE_CONF = """\
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
  - name: binpack
"""


def _job(
    name: str, q: str, replicas: int, min_member: int, *, on: str | None = None
) -> tuple[Raw, list[Raw]]:
    """A vcjob's PodGroup (minResources: its first ``min_member`` pods, as the job controller sets them)
    and ``replicas`` 1-cpu 1Gi pods, bound round-robin to n1/n2 when ``on`` is given."""
    min_res = {"cpu": str(min_member), "memory": f"{min_member}Gi"}
    phase = "Running" if on else "Pending"
    pg = podgroup(name, min_member, queue=q, phase=phase, min_resources=min_res)
    pods = [
        pod(
            f"{name}-{i}",
            group=name,
            cpu="1",
            memory="1Gi",
            node="" if on is None else f"n{1 + i % 2}",
            phase="Running" if on else "Pending",
        )
        for i in range(replicas)
    ]
    return pg, pods


def _tree(hierarchy: bool = True) -> list[Raw]:
    two = {"cpu": "2"}
    return [
        queue("root"),
        queue("org", capability={"cpu": "4"}, deserved={"cpu": "4"}, parent="root" if hierarchy else None),
        queue("ta", deserved=two, parent="org" if hierarchy else None),
        queue("tb", deserved=two, parent="org" if hierarchy else None),
    ]


NODES = [node("n1", cpu="2", memory="8Gi"), node("n2", cpu="2", memory="8Gi")]


def test_issue_22_a_queue_tree_gives_the_lenders_share_back() -> None:
    """Issue #22, item 1 (Volcano: capacity.go jobEnqueueable subtracts the queue's elastic resources;
    docs/design/elastic-scheduler.md, case 3 "submit job1-1 and then submit job2-1 in queue2, elastic pods
    in job1-1 will be preempted"). org (capability and deserved cpu 4) has ta and tb (deserved 2 each) on
    two 2-cpu nodes; ta's job (4 x 1 cpu, minAvailable 1) runs all 4; tb's job (2 x 1 cpu, minAvailable 2)
    is admitted (org: used 4 + minResources 2 - elastic 3 = 3 <= 4), reclaim takes 2 of ta's pods for it,
    and ta keeps 2 (its deserved share, above its minimum). Then nothing moves."""
    ta, ta_pods = _job("ta-job", "ta", 4, 1, on="running")
    tb, tb_pods = _job("tb-job", "tb", 2, 2)
    sim = Cycles(
        nodes=[parse_node(n) for n in NODES],
        queues=[parse_queue(q) for q in _tree()],
        conf=load_conf(CAPACITY_TREE_CONF),
        now=NOW,
    )
    sim.submit([parse_podgroup(ta)], [parse_pod(p) for p in ta_pods])
    sim.cycle()
    assert sim.held(GroupKey("default/ta-job")) == 4000
    sim.submit([parse_podgroup(tb)], [parse_pod(p) for p in tb_pods])
    first = sim.cycle()
    assert GroupKey("default/tb-job") in first.admitted
    assert len(first.evictions) == 2
    assert {m.by for m in sim.moves} == {"default/tb-job"}
    assert sorted(first.pipelined) == ["tb-job-0", "tb-job-1"]
    sim.run(4)
    assert sim.held(GroupKey("default/tb-job")) == 2000
    assert sim.held(GroupKey("default/ta-job")) == 2000  # at least its minimum (1), here its share
    assert len(sim.moves) == 2  # nothing taken back, nothing more taken
    assert [len(r.evictions) for r in sim.results[-3:]] == [0, 0, 0]


def _admission(queues: list[Raw], conf: str, running: tuple[str, int, int], new: str) -> tuple[bool, str]:
    """One cycle: a running job in queue ``running[0]`` holds ``running[1]`` 1-cpu pods with minimum
    ``running[2]``; is a new job in queue ``new`` (minResources 2 cpu) admitted, and why not."""
    q, replicas, minimum = running
    old, old_pods = _job("old", q, replicas, minimum, on="running")
    pg, pods = _job("new", new, 2, 2)
    result = run(NODES, [*old_pods, *pods], [old, pg], queues, conf=conf)
    u = result.unschedulable.get(GroupKey("default/new"))
    admitted = GroupKey("default/new") in result.admitted
    return admitted, "" if admitted or u is None else f"{u.reason}: {u.message}"


CAPACITY_FLAT = conf_with("gang", "capacity", actions="enqueue")
CAPACITY_HIER = CAPACITY_TREE_CONF.replace("backfill, reclaim", "backfill")
PROPORTION = conf_with("gang", "proportion", actions="enqueue")
OVERCOMMIT = conf_with("gang", "overcommit", actions="enqueue")
FLAT = [queue("q", capability={"cpu": "4"})]

# (id, queues, conf, the running job (queue, pods, minimum), the new job's queue, admitted, reason part)
ADMISSION: list[tuple[str, list[Raw], str, tuple[str, int, int], str, bool, str]] = [
    # The issue's case, admission only: org: 4 + 2 - 3 = 3 <= 4.
    ("hierarchy-elastic-is-room", _tree(), CAPACITY_HIER, ("ta", 4, 1), "tb", True, ""),
    (
        # ta's job holds only its minimum: nothing is reclaimable and org is full (Volcano rejects).
        "hierarchy-a-minimum-is-no-room",
        _tree(),
        CAPACITY_HIER,
        ("ta", 4, 4),
        "tb",
        False,
        "queue tb: ancestor queue org: cpu 6/4 over capability",
    ),
    (
        # Elastic 1 is not enough (4 + 2 - 1 = 5 > 4); the figure shows the subtraction.
        "hierarchy-too-little-elastic",
        _tree(),
        CAPACITY_HIER,
        ("ta", 4, 3),
        "tb",
        False,
        "(cpu: used 4 + promised 0 + minResources 2 − elastic 1)",
    ),
    # Flat capacity (Volcano's buildQueueAttrs): a queue's own elastic part counts toward its capability.
    ("capacity-flat-elastic-is-room", FLAT, CAPACITY_FLAT, ("q", 4, 1), "q", True, ""),
    (
        "capacity-flat-a-minimum-is-no-room",
        FLAT,
        CAPACITY_FLAT,
        ("q", 4, 4),
        "q",
        False,
        "queue q: cpu 6/4 over capability",
    ),
    # proportion (Volcano's proportion.go jobEnqueueable, the same formula).
    ("proportion-elastic-is-room", FLAT, PROPORTION, ("q", 4, 1), "q", True, ""),
    (
        "proportion-a-minimum-is-no-room",
        FLAT,
        PROPORTION,
        ("q", 4, 4),
        "q",
        False,
        "queue q: cpu 6/4 over capability (cpu: used 4 + minResources 2)",
    ),
    (
        "proportion-too-little-elastic",
        FLAT,
        PROPORTION,
        ("q", 4, 3),
        "q",
        False,
        "queue q: cpu 5/4 over capability (cpu: used 4 + minResources 2 − elastic 1)",
    ),
    # overcommit counts the cluster's nodes, not elastic parts (Volcano's overcommit.go): 4 x 1.2 - 4 < 2.
    ("overcommit-ignores-elastic", FLAT, OVERCOMMIT, ("q", 4, 1), "q", False, "cluster over-committed"),
]


@pytest.mark.parametrize(
    ("queues", "conf", "running", "new", "admitted", "reason"),
    [r[1:] for r in ADMISSION],
    ids=[r[0] for r in ADMISSION],
)
def test_admission_counts_elastic_resources_as_room(
    queues: list[Raw], conf: str, running: tuple[str, int, int], new: str, admitted: bool, reason: str
) -> None:
    got, why = _admission(queues, conf, running, new)
    assert got is admitted, why
    assert reason in why
    if not admitted:
        assert why.startswith(NOT_ADMITTED)
