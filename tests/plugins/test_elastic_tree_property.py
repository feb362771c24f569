"""Issue #22, item 1, as a property: in a queue tree, a queue below its deserved share with pending work
gets that share back, whatever its siblings borrowed elastically.

The cluster is exactly the tree's size (one 1-cpu node per cpu of ``org``'s deserved share, which is also
its capability) and every node runs a pod of an elastic job in some sibling leaf (``minAvailable`` below
the job's replicas). Then a gang asking for exactly its leaf's deserved share arrives. The generator keeps
what Volcano's rules promise it: the borrowers' minimums fit beside the new gang (``minResources +
allocated - elastic <= capability`` on ``org``, capacity's ``jobEnqueueable``) and each leaf's minimums
stay within its own deserved share (so reclaim, which takes a queue down to its share and no job below its
minimum, can always free enough). Under Volcano's capacity plugin with the hierarchy the gang is admitted,
reclaim frees its nodes, and it runs whole; no borrower ends below its minimum, and nothing moves once it
has settled.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.model import GroupKey
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, Raw, node, pod, podgroup, queue
from tests.core.cycles import Cycles
from tests.plugins.test_elastic import CAPACITY_TREE_CONF

# A leaf's deserved cpu, and its borrowers: per elastic job, (replicas beyond the minimum, minimum).
Leaf = tuple[int, list[tuple[int, int]]]


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[Leaf], int]:
    """Leaves (deserved cpu, elastic jobs) and which leaf the new gang goes to. Every leaf's minimums
    fit in its deserved share; the borrowers' pods fill the tree's deserved share exactly."""
    deserved = draw(st.lists(st.integers(1, 3), min_size=2, max_size=4))
    target = draw(st.integers(0, len(deserved) - 1))
    total = sum(deserved)
    leaves: list[Leaf] = []
    placed = 0
    for i, d in enumerate(deserved):
        jobs: list[tuple[int, int]] = []
        if i != target:
            room = d  # the leaf's minimums stay within its deserved share
            for _ in range(draw(st.integers(0, 2))):
                if room == 0:
                    break
                minimum = draw(st.integers(1, room))
                room -= minimum
                jobs.append((0, minimum))
                placed += minimum
        leaves.append((d, jobs))
    # The borrowers' minimums leave room for the new gang (org: capability == deserved == total): jobs
    # are dropped until they do; and at least one borrower holds the spare nodes.
    while placed + deserved[target] > total:
        i = next(i for i, (_, jobs) in enumerate(leaves) if jobs)
        placed -= leaves[i][1].pop()[1]
    if not any(jobs for _, jobs in leaves):
        i = draw(st.sampled_from([i for i in range(len(deserved)) if i != target]))
        leaves[i][1].append((0, 1))
        placed = 1
    # What is left of the cluster is taken by the borrowers' elastic pods.
    spare = total - placed
    holders = [(i, j) for i, (_, jobs) in enumerate(leaves) for j in range(len(jobs))]
    for _ in range(spare):
        i, j = draw(st.sampled_from(holders))
        extra, minimum = leaves[i][1][j]
        leaves[i][1][j] = (extra + 1, minimum)
    return leaves, target


@settings(max_examples=40, deadline=None)
@given(trees())
def test_a_leaf_below_its_deserved_share_gets_it_back_from_elastic_borrowers(
    tree: tuple[list[Leaf], int],
) -> None:
    leaves, target = tree
    total = sum(d for d, _ in leaves)
    queues: list[Raw] = [
        queue("root"),
        queue("org", capability={"cpu": str(total)}, deserved={"cpu": str(total)}, parent="root"),
    ]
    queues += [queue(f"l{i}", deserved={"cpu": str(d)}, parent="org") for i, (d, _) in enumerate(leaves)]
    nodes = [node(f"n{k}", cpu="1", memory="8Gi") for k in range(total)]
    groups: list[Raw] = []
    pods: list[Raw] = []
    minimums: dict[GroupKey, int] = {}
    for i, (_, jobs) in enumerate(leaves):
        for j, (extra, minimum) in enumerate(jobs):
            name = f"b{i}-{j}"
            minimums[GroupKey(f"default/{name}")] = minimum
            res = {"cpu": str(minimum), "memory": f"{minimum}Gi"}
            groups.append(podgroup(name, minimum, queue=f"l{i}", phase="Running", min_resources=res))
            for k in range(minimum + extra):
                n = len(pods)
                pods.append(pod(f"{name}-{k}", group=name, node=f"n{n}", phase="Running"))
    assert len(pods) == total  # the borrowers fill the cluster
    sim = Cycles(
        nodes=[parse_node(n) for n in nodes],
        queues=[parse_queue(q) for q in queues],
        conf=load_conf(CAPACITY_TREE_CONF),
        now=NOW,
    )
    sim.submit([parse_podgroup(g) for g in groups], [parse_pod(p) for p in pods])
    sim.cycle()
    assert not sim.moves  # nobody is short of its share yet: nothing moves

    want = leaves[target][0]
    res = {"cpu": str(want), "memory": f"{want}Gi"}
    gang = podgroup("new", want, queue=f"l{target}", min_resources=res)
    sim.submit([parse_podgroup(gang)], [parse_pod(pod(f"new-{k}", group="new")) for k in range(want)])
    sim.run(8)
    key = GroupKey("default/new")
    last = sim.results[-1].unschedulable.get(key)
    assert sim.held(key) == want * 1000, (leaves, target, last)
    for g, minimum in minimums.items():
        assert sim.held(g) >= minimum * 1000, (g, leaves, target)
    assert {m.by for m in sim.moves} == {key}
    assert [len(r.evictions) for r in sim.results[-3:]] == [0, 0, 0]
