"""The gang rule for kube-scheduler's preemption, as a table: which proposed victim sets pumice refuses."""

from __future__ import annotations

import pytest

from extender.core.model import PodUID
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.framework.victims import refuse_victims
from tests.core.builders import conf_of, node, pod, podgroup, snapshot

# Gang "g" (minMember 2) runs 3 pods over n1 and n2; gang "h" (minMember 1) runs one pod on n2; "x" is
# another scheduler's pod; "sys" a kube-system pod of ours; "done" a finished member of "g".
PODS = [
    pod("g-0", group="g", node="n1", phase="Running"),
    pod("g-1", group="g", node="n1", phase="Running"),
    pod("g-2", group="g", node="n2", phase="Running"),
    pod("h-0", group="h", node="n2", phase="Running"),
    pod("x", scheduler="default-scheduler", node="n2", phase="Running"),
    pod("sys", namespace="kube-system", node="n2", phase="Running"),
]
GROUPS = [podgroup("g", 2, phase="Running"), podgroup("h", 1, phase="Running")]


@pytest.mark.parametrize(
    ("victims", "refused"),
    [
        ({"n1": ["g-0"]}, {}),  # g keeps 2 of minMember 2
        ({"n1": ["g-0", "g-1"]}, {"n1": "gang default/g would keep 1 of minMember 2"}),
        ({"n2": ["h-0"]}, {"n2": "gang default/h would keep 0 of minMember 1"}),
        ({"n2": ["x"]}, {}),  # not ours: not ours to judge
        ({"n2": ["g-2", "x"]}, {}),
        ({"n2": ["unknown-uid"]}, {}),
        (
            {"n2": ["sys"]},
            {"n2": "pod kube-system/sys must not be evicted: kube-system/sys is in kube-system"},
        ),
        (
            {"n1": ["g-0"], "n2": ["g-2", "h-0"]},
            {"n2": "gang default/h would keep 0 of minMember 1"},  # each node is judged on its own
        ),
        ({}, {}),
    ],
)
def test_refuse_victims(victims: dict[str, list[str]], refused: dict[str, str]) -> None:
    snap = snapshot([node("n1"), node("n2")], PODS, GROUPS)
    ssn = Session(snap, build_hooks(conf_of(None).tiers()))
    proposed = {n: [PodUID(u) for u in uids] for n, uids in victims.items()}
    assert refuse_victims(ssn, proposed) == refused


def test_a_succeeded_member_counts_towards_min_member() -> None:
    pods = [
        pod("g-0", group="g", node="n1", phase="Running"),
        pod("g-1", group="g", node="n1", phase="Succeeded"),
    ]
    snap = snapshot([node("n1")], pods, [podgroup("g", 2, phase="Running")])
    ssn = Session(snap, build_hooks(conf_of(None).tiers()))
    assert refuse_victims(ssn, {"n1": [PodUID("g-0")]}) == {
        "n1": "gang default/g would keep 1 of minMember 2"
    }
    pods.append(pod("g-2", group="g", node="n1", phase="Running"))
    snap = snapshot([node("n1")], pods, [podgroup("g", 2, phase="Running")])
    assert refuse_victims(Session(snap, build_hooks(conf_of(None).tiers())), {"n1": [PodUID("g-0")]}) == {}
