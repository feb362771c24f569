"""A job in a parent (non-leaf) queue under capacity's ``enableHierarchy``: as Volcano, never admitted nor
given room, with a reason (capacity.go: AddJobEnqueueableFn and AddAllocatableFn reject a queue that is not
a leaf; docs/design/hierarchical-queue-on-capacity-plugin.md, "only leaf queues can schedule
jobs/podgroups"). Without the hierarchy ``spec.parent`` is ignored and every queue takes jobs. The vcjob
webhook refuses such a job at admission already (tests/admission/test_jobs_validate.py); a PodGroup is not
refused there (Volcano's PodGroup webhook checks only that the queue is Open), so the scheduler's rule is
what a PodGroup in a parent queue meets.
"""

from __future__ import annotations

import pytest

from extender.core.model import GroupKey
from extender.framework.reasons import NOT_ADMITTED, NOT_ENOUGH_RESOURCES
from tests.core.builders import node, pod, podgroup, queue, run


def conf(hierarchy: bool) -> str:
    return f"""\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: capacity
    enableHierarchy: {str(hierarchy).lower()}
"""


QUEUES = [queue("root"), queue("p", parent="root"), queue("c", parent="p")]
NOT_A_LEAF = (
    "queue p is not a leaf queue (it has child queues c): with capacity's enableHierarchy jobs run in leaf"
    " queues only"
)


@pytest.mark.parametrize(("phase", "reason"), [("Pending", NOT_ADMITTED), ("Inqueue", NOT_ENOUGH_RESOURCES)])
def test_a_job_in_a_parent_queue_waits_with_a_reason(phase: str, reason: str) -> None:
    """Pending: enqueue refuses it; already Inqueue (admitted before the queue got a child): allocate does."""
    groups = [podgroup("j", 1, queue="p", phase=phase, min_resources={"cpu": "1"})]
    result = run([node("n1")], [pod("j-0", group="j")], groups, QUEUES, conf=conf(True))
    assert result.placements == {}
    u = result.unschedulable[GroupKey("default/j")]
    assert u.reason == reason
    assert NOT_A_LEAF in u.message


def test_the_root_queue_is_a_parent_too() -> None:
    groups = [podgroup("j", 1, queue="root", min_resources={"cpu": "1"})]
    result = run([node("n1")], [pod("j-0", group="j")], groups, QUEUES, conf=conf(True))
    assert (
        "queue root is not a leaf queue (it has child queues p)"
        in result.unschedulable[GroupKey("default/j")].message
    )


def test_leaves_run_and_without_the_hierarchy_parents_do_too() -> None:
    groups = [
        podgroup("leaf", 1, queue="c", min_resources={"cpu": "1"}),
        podgroup("parent", 1, queue="p", min_resources={"cpu": "1"}),
    ]
    pods = [pod("leaf-0", group="leaf"), pod("parent-0", group="parent")]
    assert set(run([node("n1")], pods, groups, QUEUES, conf=conf(True)).placements) == {"leaf-0"}
    assert set(run([node("n1")], pods, groups, QUEUES, conf=conf(False)).placements) == {"leaf-0", "parent-0"}
