"""``pumice queue list``: shares per queue and resource from the scheduler's own plugins, and the tree.

Pure tables first (raw objects in, the table and the JSON document out), then the command against the
fake API server.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from controllers import shares_view
from controllers.shares_view import Cluster, SharesView, compute_shares
from tests.cli.conftest import Cli, FakeApiServer, parse

NOW = datetime(2024, 5, 3, 10, 0, 0, tzinfo=UTC)  # two days after the fake server's creation time
CREATED = "2024-05-01T10:00:00Z"
SCHED = "/apis/scheduling.volcano.sh/v1beta1"
CORE = "/api/v1"


# -- builders --------------------------------------------------------------------------------------


def queue(
    name: str,
    *,
    weight: int = 1,
    parent: str | None = None,
    priority: int | None = None,
    capability: dict[str, str] | None = None,
    deserved: dict[str, str] | None = None,
    guarantee: dict[str, str] | None = None,
    **status: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if parent:
        spec["parent"] = parent
    if priority is not None:
        spec["priority"] = priority
    if capability:
        spec["capability"] = capability
    if deserved:
        spec["deserved"] = deserved
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "creationTimestamp": CREATED},
        "spec": spec,
        "status": {"state": "Open", **status},
    }


GPU = "nvidia.com/gpu"


def node(name: str, allocatable: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": CREATED},
        "status": {"allocatable": {"pods": "110", **allocatable}},
    }


def pod(
    name: str,
    *,
    queue: str | None = None,
    group: str | None = None,
    on: str | None = None,
    phase: str | None = None,
    scheduler: str = "volcano",
    namespace: str = "team-a",
    requests: dict[str, str] | None = None,
) -> dict[str, Any]:
    req = requests or {}
    ann: dict[str, str] = {}
    if queue:
        ann["scheduling.volcano.sh/queue-name"] = queue
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": req}}],
    }
    if on:
        spec["nodeName"] = on
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": CREATED,
            "annotations": ann,
        },
        "spec": spec,
        "status": {"phase": phase or ("Running" if on else "Pending")},
    }


def podgroup(
    name: str, *, queue: str, min_member: int = 1, phase: str = "Pending", **min_resources: str
) -> dict[str, Any]:
    spec: dict[str, Any] = {"queue": queue, "minMember": min_member}
    if min_resources:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}", "creationTimestamp": CREATED},
        "spec": spec,
        "status": {"phase": phase},
    }


def by_name(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs}


def names_column(table: str) -> list[str]:
    """The NAME cells with their indentation (the column ends where WEIGHT starts)."""
    header, *rows = table.splitlines()
    width = header.index("WEIGHT")
    return [row[:width].rstrip() for row in rows]


# Two 8-cpu nodes, one with 4 GPUs. default (weight 1) holds 2 cpu and waits for 10 more; research
# (weight 3, capability 20 cpu, guarantee 2 cpu) holds 3 cpu and a GPU and waits for 10 cpu more. Pods that
# hold nothing of a queue's share: a finished one, and one of another scheduler.
NODES = [node("n1", {"cpu": "8", "memory": "32Gi", GPU: "4"}), node("n2", {"cpu": "8", "memory": "32Gi"})]
PODS = [
    pod("p1", queue="default", on="n1", requests={"cpu": "2", "memory": "4Gi"}),
    pod("p2", queue="default", requests={"cpu": "10", "memory": "4Gi"}),
    pod("p3", group="train", on="n1", requests={"cpu": "3", "memory": "1Gi", GPU: "1"}),
    pod("p4", group="train", requests={"cpu": "10", "memory": "1Gi"}),
    pod("p5", group="train", on="n2", phase="Succeeded", requests={"cpu": "4"}),
    pod("p6", queue="research", on="n2", scheduler="default-scheduler", requests={"cpu": "1"}),
]
PODGROUPS = [podgroup("train", queue="research", min_member=1, phase="Running")]
QUEUES = [
    queue("default", inqueue=0, pending=1, running=1),
    queue("research", weight=3, capability={"cpu": "20"}, guarantee={"cpu": "2"}, running=1),
]


def cluster(nodes: list[Any] = NODES, pods: list[Any] = PODS, groups: list[Any] = PODGROUPS) -> Cluster:
    return Cluster(nodes=nodes, pods=pods, podgroups=groups)


# -- pure: the figures -----------------------------------------------------------------------------


def test_proportion_shares_by_weight_capped_by_demand() -> None:
    view = compute_shares(QUEUES, cluster())
    assert view.resources == ("cpu", "memory", "nvidia.com/gpu")
    assert view.total == {"cpu": 16000, "memory": 64 * 2**30, "nvidia.com/gpu": 4}
    rows = {q.name: q for q in view.queues}
    # cpu is contended (12 and 13 asked of 16): split 1:3. Memory and GPUs are not: each gets what it asks.
    assert rows["default"].deserved == {"cpu": 4000, "memory": 8 * 2**30, "nvidia.com/gpu": 0}
    assert rows["research"].deserved == {"cpu": 12000, "memory": 2 * 2**30, "nvidia.com/gpu": 1}
    # Only bound, unfinished pods of pumice's scheduler count.
    assert rows["default"].allocated == {"cpu": 2000, "memory": 4 * 2**30, "nvidia.com/gpu": 0}
    assert rows["research"].allocated == {"cpu": 3000, "memory": 2**30, "nvidia.com/gpu": 1}
    assert rows["research"].guarantee == {"cpu": 2000, "memory": 0, "nvidia.com/gpu": 0}
    assert rows["research"].capability == {"cpu": 20000}
    assert rows["default"].capability == {}


def test_capacity_reads_spec_deserved_within_guarantee_and_real_capability() -> None:
    qs = [
        queue("default", deserved={"cpu": "6"}),
        queue("research", deserved={"cpu": "40", "memory": "1Gi"}, guarantee={"cpu": "2"}),
        queue("idle", guarantee={"cpu": "1"}),
    ]
    view = compute_shares(qs, cluster(), plugin="capacity")
    rows = {q.name: q.deserved for q in view.queues}
    assert rows["default"] == {"cpu": 6000, "memory": 0, "nvidia.com/gpu": 0}
    # 40 asked, but the cluster less the other queues' guarantee (1 cpu) is 15.
    assert rows["research"] == {"cpu": 15000, "memory": 2**30, "nvidia.com/gpu": 0}
    assert rows["idle"] == {"cpu": 1000, "memory": 0, "nvidia.com/gpu": 0}
    assert view.plugin == "capacity" and not view.hierarchy


def test_capacity_hierarchy_bounds_a_child_by_its_parent() -> None:
    qs = [
        queue("org", capability={"cpu": "4"}),
        queue("team", parent="org", deserved={"cpu": "10"}),
    ]
    flat = {q.name: q.deserved for q in compute_shares(qs, cluster(), plugin="capacity").queues}
    tree = compute_shares(qs, cluster(), plugin="capacity", hierarchy=True)
    assert flat["team"] is not None and flat["team"]["cpu"] == 10000
    assert {q.name: q.deserved for q in tree.queues}["team"] == {
        "cpu": 4000,
        "memory": 0,
        "nvidia.com/gpu": 0,
    }
    assert tree.hierarchy


@pytest.mark.parametrize(
    ("nodes", "qs", "resources"),
    [
        pytest.param([node("n", {"cpu": "4", "memory": "8Gi"})], [queue("q")], ("cpu", "memory"), id="base"),
        pytest.param(
            # Node-level resources that are not extended ones stay out unless a queue names them.
            [node("n", {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "hugepages-2Mi": "0"})],
            [queue("q")],
            ("cpu", "memory"),
            id="no-node-level-resources",
        ),
        pytest.param(
            [node("n", {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi"})],
            [queue("q", capability={"ephemeral-storage": "10Gi"})],
            ("cpu", "memory", "ephemeral-storage"),
            id="named-by-a-queue",
        ),
        pytest.param(
            [node("n", {"cpu": "4", "memory": "8Gi", "example.com/fpga": "2", GPU: "1"})],
            [queue("q")],
            ("cpu", "memory", "example.com/fpga", "nvidia.com/gpu"),
            id="extended-sorted",
        ),
    ],
)
def test_resource_columns(nodes: list[Any], qs: list[Any], resources: tuple[str, ...]) -> None:
    view = compute_shares(qs, cluster(nodes=nodes, pods=[], groups=[]))
    assert view.resources == resources
    header = shares_view.shares_table(view, by_name(qs), NOW, wide=False).splitlines()[0].split()
    assert header == [
        "NAME", "WEIGHT", "STATE", "PRIORITY",
        *(f"{r.upper()}(D/A/G/C)" for r in resources),
        "INQUEUE", "PENDING", "RUNNING", "AGE",
    ]  # fmt: skip


def test_a_gpu_only_a_pod_asks_for_still_gets_a_column() -> None:
    view = compute_shares(
        [queue("q")],
        cluster(
            nodes=[node("n", {"cpu": "4", "memory": "8Gi"})], pods=[pod("p", queue="q", requests={GPU: "1"})]
        ),
    )
    assert view.resources == ("cpu", "memory", "nvidia.com/gpu")


# -- pure: the tree --------------------------------------------------------------------------------


def test_tree_indents_children_and_sets_loops_flat_with_a_note() -> None:
    qs = [
        queue("research", weight=2),
        queue("vision", parent="research"),
        queue("nlp", parent="research"),
        queue("small", parent="nlp"),
        queue("default"),
        queue("orphan", parent="gone"),
        queue("a", parent="b"),
        queue("b", parent="a"),
    ]
    view = compute_shares(qs, cluster(pods=[], groups=[]))
    table = shares_view.shares_table(view, by_name(qs), NOW, wide=False)
    assert names_column(table) == [
        "a", "b", "default", "orphan", "research", "  nlp", "    small", "  vision",
    ]  # fmt: skip
    assert [(q.name, q.parent, q.depth) for q in view.queues][4:] == [
        ("research", None, 0),
        ("nlp", "research", 1),
        ("small", "nlp", 2),
        ("vision", "research", 1),
    ]
    assert shares_view.warnings(view) == [
        "Warning: queue a: spec.parent forms a loop (a -> b -> a); shown at the top",
        "Warning: queue b: spec.parent forms a loop (b -> a -> b); shown at the top",
        "Warning: queue orphan: spec.parent gone does not exist; shown at the top",
    ]


def test_an_explicit_root_queue_is_the_top() -> None:
    qs = [queue("root"), queue("default"), queue("x", parent="y"), queue("y", parent="x")]
    view = compute_shares(qs, cluster(pods=[], groups=[]))
    table = shares_view.shares_table(view, by_name(qs), NOW, wide=False)
    assert names_column(table) == ["root", "  default", "  x", "  y"]
    assert shares_view.warnings(view)[0] == (
        "Warning: queue x: spec.parent forms a loop (x -> y -> x); shown under root"
    )


# -- pure: rendering -------------------------------------------------------------------------------


def test_table() -> None:
    qs = [*QUEUES, queue("vision", parent="research", capability={"nvidia.com/gpu": "2"}, priority=5)]
    view = compute_shares(qs, cluster())
    assert shares_view.shares_table(view, by_name(qs), NOW, wide=False) == (
        "NAME      WEIGHT  STATE  PRIORITY  CPU(D/A/G/C)  MEMORY(D/A/G/C)  NVIDIA.COM/GPU(D/A/G/C)"
        "  INQUEUE  PENDING  RUNNING  AGE\n"
        "default   1       Open   0         4/2/0/-       8Gi/4Gi/0/-      0/0/0/-                "
        "  0        1        1        2d\n"
        "research  3       Open   0         12/3/2/20     2Gi/1Gi/0/-      1/1/0/-                "
        "  0        0        1        2d\n"
        "  vision  1       Open   5         0/0/0/-       0/0/0/-          0/0/0/2                "
        "  0        0        0        2d\n"
    )
    wide = shares_view.shares_table(view, by_name(qs), NOW, wide=True).splitlines()
    assert wide[0].split()[-3:] == ["UNKNOWN", "COMPLETED", "PARENT"]
    assert wide[3].split()[-3:] == ["0", "0", "research"]


def test_fractions_show_as_short_figures() -> None:
    qs = [queue("a"), queue("b"), queue("c")]
    pods = [pod(f"p{q}", queue=q, requests={"cpu": "8", "memory": "40Gi"}) for q in "abc"]
    view = compute_shares(qs, cluster(pods=pods, groups=[]))
    cells = [
        row.split()[4:6]
        for row in shares_view.shares_table(view, by_name(qs), NOW, wide=False).splitlines()[1:]
    ]
    # 16 cpu and 64Gi shared three ways: cpu to the milli, memory to three figures.
    assert cells == [["5.333/0/0/-", "21.3Gi/0/0/-"]] * 3


def test_json_document_shape() -> None:
    view = compute_shares(QUEUES, cluster())
    assert shares_view.shares_document(view, by_name(QUEUES)) == {
        "plugin": "proportion",
        "hierarchy": False,
        "resources": ["cpu", "memory", "nvidia.com/gpu"],
        "clusterTotal": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"},
        "error": None,
        "skipped": [],
        "queues": [
            {
                "name": "default",
                "parent": None,
                "depth": 0,
                "note": None,
                "weight": 1,
                "priority": 0,
                "state": "Open",
                "deserved": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "0"},
                "allocated": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "0"},
                "guarantee": {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"},
                "capability": {"cpu": None, "memory": None, "nvidia.com/gpu": None},
            },
            {
                "name": "research",
                "parent": None,
                "depth": 0,
                "note": None,
                "weight": 3,
                "priority": 0,
                "state": "Open",
                "deserved": {"cpu": "12", "memory": "2Gi", "nvidia.com/gpu": "1"},
                "allocated": {"cpu": "3", "memory": "1Gi", "nvidia.com/gpu": "1"},
                "guarantee": {"cpu": "2", "memory": "0", "nvidia.com/gpu": "0"},
                "capability": {"cpu": "20", "memory": None, "nvidia.com/gpu": None},
            },
        ],
    }


def test_unreadable_objects_are_skipped_and_named() -> None:
    bad_pod = pod("bad", queue="default", requests={"cpu": "lots"})
    bad_node = node("broken", {"cpu": "8"})
    bad_node["status"]["allocatable"]["memory"] = "a lot"
    view = compute_shares(QUEUES, cluster(nodes=[*NODES, bad_node], pods=[*PODS, bad_pod]))
    assert view.skipped == (
        "Node broken: Node.status.allocatable: invalid resource quantity 'a lot'",
        "Pod team-a/bad: spec.containers[0].resources.requests: invalid resource quantity 'lots'",
    )
    assert view.total is not None and view.total["cpu"] == 16000  # the rest is computed as usual
    assert shares_view.warnings(view)[-1].startswith("Warning: skipped Pod team-a/bad: ")


def test_without_the_cluster_shares_are_unknown_and_allocated_comes_from_status() -> None:
    qs = [queue("default", allocated={"cpu": "2", "memory": "4Gi"})]
    view = compute_shares(qs, None, error="nodes is forbidden")
    assert view.error == "nodes is forbidden" and view.total is None
    table = shares_view.shares_table(view, by_name(qs), NOW, wide=False).splitlines()
    assert table[1].split()[4:6] == ["?/2/0/-", "?/4Gi/0/-"]
    doc = shares_view.shares_document(view, by_name(qs))
    assert doc["error"] == "nodes is forbidden" and doc["clusterTotal"] is None
    assert doc["queues"][0]["deserved"] is None
    assert doc["queues"][0]["allocated"] == {"cpu": "2", "memory": "4Gi"}
    assert shares_view.warnings(view) == ["Warning: deserved shares not computed: nodes is forbidden"]


def test_no_queues() -> None:
    view = compute_shares([], cluster())
    assert view.queues == () and isinstance(view, SharesView)


# -- the command against the fake API server -------------------------------------------------------


def seed(fake: FakeApiServer) -> None:
    for n in NODES:
        fake.put(CORE, "nodes", json.loads(json.dumps(n)))
    for p in PODS:
        fake.put(CORE, "pods", json.loads(json.dumps(p)))
    for g in PODGROUPS:
        fake.put(SCHED, "podgroups", json.loads(json.dumps(g)))
    for q in QUEUES:
        fake.put(SCHED, "queues", json.loads(json.dumps(q)))


async def test_list_shows_shares(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    result = await cli("queue", "list")
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0].split()[4:7] == ["CPU(D/A/G/C)", "MEMORY(D/A/G/C)", "NVIDIA.COM/GPU(D/A/G/C)"]
    assert lines[1].split()[:7] == ["default", "1", "Open", "0", "4/2/0/-", "8Gi/4Gi/0/-", "0/0/0/-"]
    assert lines[2].split()[:7] == ["research", "3", "Open", "0", "12/3/2/20", "2Gi/1Gi/0/-", "1/1/0/-"]
    gets = {r.path: r.query for r in fake_api.calls("GET")}
    assert set(gets) == {f"{SCHED}/queues", f"{CORE}/nodes", f"{CORE}/pods", f"{SCHED}/podgroups"}
    assert gets[f"{CORE}/pods"]["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"


async def test_list_with_capacity(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    fake_api.put(SCHED, "queues", queue("team", parent="research", deserved={"cpu": "3"}))
    result = await cli("queue", "list", "--plugin", "capacity", "--hierarchy")
    assert result.code == 0
    assert [line.split()[:5] for line in result.out.splitlines()[1:]] == [
        ["default", "1", "Open", "0", "0/2/0/-"],
        ["research", "3", "Open", "0", "2/3/2/20"],
        ["team", "1", "Open", "0", "3/0/0/-"],
    ]
    assert result.out.splitlines()[3].startswith("  team ")


async def test_list_json_keeps_the_items_and_adds_shares(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    doc = json.loads((await cli("queue", "list", "-o", "json")).out)
    assert set(doc) == {"apiVersion", "kind", "items", "metadata", "shares"}
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]) == ("v1", "List", {"resourceVersion": ""})
    assert doc["items"] == [
        fake_api.get(SCHED, "queues", "default"),
        fake_api.get(SCHED, "queues", "research"),
    ]
    view = compute_shares(QUEUES, cluster())
    assert doc["shares"] == shares_view.shares_document(view, by_name(QUEUES))
    as_yaml = yaml.safe_load((await cli("queue", "list", "-o", "yaml")).out)
    assert as_yaml == doc


async def test_list_without_node_access_still_lists_the_queues(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    fake_api.deny[("GET", f"{CORE}/nodes")] = 'nodes is forbidden: User "me" cannot list resource "nodes"'
    result = await cli("queue", "list")
    assert result.code == 0
    assert result.out.splitlines()[1].split()[:5] == ["default", "1", "Open", "0", "?/0/0/-"]
    assert result.err == (
        'Warning: deserved shares not computed: nodes is forbidden: User "me" cannot list resource "nodes"\n'
    )
    doc = json.loads((await cli("queue", "list", "-o", "json")).out)
    assert doc["shares"]["error"].startswith("nodes is forbidden")


async def test_list_warns_about_loops_on_stderr(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(SCHED, "queues", queue("a", parent="b"))
    fake_api.put(SCHED, "queues", queue("b", parent="a"))
    result = await cli("queue", "list")
    assert result.code == 0 and names_column(result.out) == ["a", "b"]
    assert result.err.splitlines() == [
        "Warning: queue a: spec.parent forms a loop (a -> b -> a); shown at the top",
        "Warning: queue b: spec.parent forms a loop (b -> a -> b); shown at the top",
    ]


async def test_hierarchy_needs_capacity(cli: Cli, fake_api: FakeApiServer) -> None:
    result = await cli("queue", "list", "--hierarchy")
    assert result.code == 2 and "--hierarchy needs --plugin capacity" in result.err
    assert fake_api.requests == []


def test_list_flags() -> None:
    args = parse("queue", "list", "--scheduler-name", "a", "--scheduler-name", "b", "--default-queue", "q")
    assert (args.plugin, args.hierarchy, args.scheduler_name, args.default_queue) == (
        "proportion",
        False,
        ["a", "b"],
        "q",
    )
    with pytest.raises(SystemExit) as exc:
        parse("queue", "list", "--plugin", "drf")
    assert exc.value.code == 2


async def test_scheduler_names_and_default_queue_flags(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    fake_api.put(SCHED, "queues", queue("batch"))
    fake_api.put(CORE, "pods", pod("mine", on="n2", scheduler="pumice", requests={"cpu": "1"}))
    result = await cli(
        "queue", "list", "--scheduler-name", "pumice", "--default-queue", "batch", "-o", "json"
    )
    rows = {q["name"]: q for q in json.loads(result.out)["shares"]["queues"]}
    # Only the pod of scheduler "pumice" counts now, in the default queue named by the flag.
    assert rows["batch"]["allocated"]["cpu"] == "1"
    assert rows["default"]["allocated"]["cpu"] == "0"
