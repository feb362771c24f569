"""The running index's walk over the pods on nodes (``Residents.bound``) is what ``Residents.all`` holds
for the bound pods: the same pods, rows and order, whether ``all`` was worked out first or not.

Over random pod lists: bound or not, on a known node or not, any phase, being deleted or not, planned
or not (planned pods are in ``all`` but not bound, so ``bound`` leaves them out).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.model import Pod, PodPhase, PodUID
from extender.core.residents import Residents

_NODES = {"n0": 0, "n1": 1, "n2": 2}


@st.composite
def _pods(draw: st.DrawFn) -> tuple[list[Pod], dict[PodUID, str]]:
    pods: list[Pod] = []
    plans: dict[PodUID, str] = {}
    for i in range(draw(st.integers(0, 30))):
        uid = PodUID(f"p{i}")
        node = draw(st.sampled_from(("", "n0", "n1", "n2", "gone")))
        pods.append(
            Pod(
                uid=uid,
                namespace="ns",
                name=f"p{i}",
                scheduler_name="volcano",
                requests={},
                node_name=node,
                phase=draw(st.sampled_from(list(PodPhase))),
                deleting=draw(st.booleans()),
            )
        )
        if not node and draw(st.booleans()):
            plans[uid] = draw(st.sampled_from(("n0", "n1", "gone")))
    return pods, plans


@settings(max_examples=300, deadline=None)
@given(_pods(), st.booleans())
def test_bound_is_all_bound(cluster: tuple[list[Pod], dict[PodUID, str]], all_first: bool) -> None:
    pods, plans = cluster
    expected = [(p, r) for p, r in Residents(pods, plans, _NODES).all() if p.node_name]
    residents = Residents(pods, plans, _NODES)
    if all_first:
        residents.all()
    got_pods, got_rows = residents.bound()
    assert [(p.uid, r) for p, r in zip(got_pods, got_rows, strict=True)] == [(p.uid, r) for p, r in expected]
