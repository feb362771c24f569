"""resourcequota: a PodGroup whose minResources exceeds what its namespace's ResourceQuotas leave stays
Pending, with the quota named. Cases from Volcano's resourcequota_test.go (expected outcomes), then ours."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from controllers.state.cluster import cluster_state
from extender.core.errors import InvalidObject
from extender.core.model import GroupKey, PodGroup
from extender.core.parse import parse_resource_quota
from extender.framework.actions import enqueue
from extender.framework.hooks import build_hooks
from extender.framework.plugin import Plugin
from extender.framework.reasons import NOT_ADMITTED
from extender.framework.session import Session
from extender.plugins.registry import load_conf
from extender.plugins.resourcequota import ResourcequotaPlugin
from tests.core.builders import conf_with, node, pod, podgroup, queue
from tests.plugins.quota_objects import resource_quota, run_with, session_with, snapshot_with

NORMAL = {"cpu": "2000m", "memory": "2G"}
HUGE = {"cpu": "20000m", "memory": "20G"}


def _enqueued(
    groups: list[dict[str, Any]], quotas: list[dict[str, Any]], **kw: Any
) -> Mapping[str, str | None]:
    """Each group's enqueue answer from resourcequota alone (None: permitted)."""
    ssn = session_with([ResourcequotaPlugin({})], groups=groups, quotas=quotas, **kw)
    rq = ssn.plugins[0]
    return {k: rq.enqueue(ssn, g) for k, g in sorted(ssn.snapshot.groups.items())}


# Volcano's TestResourceQuotaPlugin: (id, group minResources, quotas, enqueueable).
VOLCANO = [
    ("quota-fits", NORMAL, [resource_quota("test", "default", NORMAL)], True),
    ("quota-too-small", HUGE, [resource_quota("test", "default", NORMAL)], False),
    ("no-quota", HUGE, [], True),
    ("no-min-resources", None, [resource_quota("test", "default", NORMAL)], True),
]


@pytest.mark.parametrize(
    ("min_resources", "quotas", "admitted"), [r[1:] for r in VOLCANO], ids=[r[0] for r in VOLCANO]
)
def test_volcano_cases(
    min_resources: dict[str, str] | None, quotas: list[dict[str, Any]], admitted: bool
) -> None:
    pg = podgroup("pg", 2, queue="c1", phase="Pending", min_resources=min_resources)
    answers = _enqueued([pg], quotas, queues=[queue("c1")])
    assert (answers["default/pg"] is None) == admitted


class _Rejecter(Plugin):
    """Volcano's uthelper.RejecterPlugin: refuses one named group."""

    name = "test-rejecter"

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse

    def enqueue(self, ssn: Session, group: PodGroup) -> str | None:
        return "refused by the test" if group.name == self.refuse else None


@pytest.mark.parametrize("refused", ["pgA", ""], ids=["co-tier-refuses-pgA", "nobody-refuses"])
def test_a_group_refused_by_another_plugin_spends_no_quota(refused: str) -> None:
    """Volcano's TestJobEnqueuedOnOtherPluginsReject: the quota holds one group; pgA, refused by a plugin of
    the same tier, must not use it up, so pgB is admitted. Without the refusal pgA takes it and pgB waits."""
    one = {"cpu": "1", "memory": "1G"}
    groups = [
        podgroup("pgA", 1, queue="q1", namespace="ns1", min_resources=one),
        podgroup("pgB", 1, queue="q1", namespace="ns1", min_resources=one, created="2024-01-01T00:00:01Z"),
    ]
    snap = snapshot_with(
        nodes=[node("n1", cpu="4", memory="4G")],
        groups=groups,
        queues=[queue("q1")],
        quotas=[resource_quota("rq1", "ns1", one)],
    )
    ssn = Session(snap, build_hooks([[ResourcequotaPlugin({}), _Rejecter(refused)]]))
    enqueue(ssn)
    expected = {"ns1/pgB"} if refused else {"ns1/pgA"}
    assert ssn.result.admitted == expected


def test_the_refusal_names_the_quota() -> None:
    """The brief's example: 8 cpu hard, 4 used, a group asking 9 is told what is left."""
    pg = podgroup("big", 1, namespace="ns1", min_resources={"cpu": "9"})
    quotas = [resource_quota("q1", "ns1", {"requests.cpu": "8"}, used={"requests.cpu": "4"})]
    answers = _enqueued([pg], quotas)
    assert answers["ns1/big"] == "namespace ns1: resourcequota q1: requests.cpu 9 > 4 left of 8"


# (id, group minResources, quota hard, quota used, admitted)
CASES = [
    ("bare-cpu-is-requests", {"cpu": "3"}, {"cpu": "4"}, {"cpu": "2"}, False),
    ("used-leaves-room", {"cpu": "2"}, {"requests.cpu": "4"}, {"requests.cpu": "2"}, True),
    ("memory", {"memory": "3Gi"}, {"requests.memory": "4Gi"}, {"requests.memory": "2Gi"}, False),
    ("extended", {"nvidia.com/gpu": "2"}, {"requests.nvidia.com/gpu": "1"}, None, False),
    ("limits-are-not-requests", {"cpu": "9"}, {"limits.cpu": "1"}, None, True),
    ("counts-are-not-requests", {"cpu": "9"}, {"count/pods": "1", "services": "0"}, None, True),
    ("unasked-resource", {"cpu": "1"}, {"requests.memory": "0"}, None, True),
    ("no-status-yet", {"cpu": "5"}, {"cpu": "4"}, None, False),
]


@pytest.mark.parametrize(
    ("min_resources", "hard", "used", "admitted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_quota_entries(
    min_resources: dict[str, str], hard: dict[str, str], used: dict[str, str] | None, admitted: bool
) -> None:
    pg = podgroup("g", 1, min_resources=min_resources)
    answers = _enqueued([pg], [resource_quota("rq", "default", hard, used=used)])
    assert (answers["default/g"] is None) == admitted


def test_only_the_groups_namespace_counts() -> None:
    pg = podgroup("g", 1, namespace="a", min_resources={"cpu": "5"})
    answers = _enqueued([pg], [resource_quota("tight", "b", {"cpu": "1"})])
    assert answers["a/g"] is None


def test_every_quota_of_the_namespace_must_fit() -> None:
    pg = podgroup("g", 1, min_resources={"cpu": "2", "memory": "1Gi"})
    quotas = [
        resource_quota("cpu", "default", {"cpu": "8"}),
        resource_quota("mem", "default", {"memory": "512Mi"}),
    ]
    why = _enqueued([pg], quotas)["default/g"]
    assert why is not None and "resourcequota mem: memory 1Gi > 512Mi left of 512Mi" in why


def test_the_groups_own_pods_are_not_counted_twice() -> None:
    """The group's pods exist and the quota already counts them (used 3 of 4): its minResources of 3 is
    all theirs, so nothing more is asked. Volcano would ask 3 more and refuse."""
    pg = podgroup("g", 3, min_resources={"cpu": "3"})
    pods = [pod(f"g-{i}", group="g", cpu="1") for i in range(3)]
    quotas = [resource_quota("rq", "default", {"cpu": "4"}, used={"cpu": "3"})]
    assert _enqueued([pg], quotas, pods=pods)["default/g"] is None
    # One pod of three exists: two more are asked, one is left.
    why = _enqueued([pg], quotas, pods=pods[:1])["default/g"]
    assert why == "namespace default: resourcequota rq: cpu 2 > 1 left of 4"


def test_groups_admitted_earlier_in_the_cycle_count() -> None:
    """Room for two of three 1-cpu groups: the third, by creation order, stays Pending, with why."""
    groups = [
        podgroup(f"g{i}", 1, min_resources={"cpu": "1"}, created=f"2024-01-01T00:00:0{i}Z") for i in range(3)
    ]
    result = run_with(
        conf_with("resourcequota", "gang"),
        nodes=[node("n0", cpu="8")],
        groups=groups,
        quotas=[resource_quota("rq", "default", {"requests.cpu": "2"}, used={"requests.cpu": "0"})],
    )
    assert result.admitted == {"default/g0", "default/g1"}
    why = result.unschedulable[GroupKey("default/g2")]
    assert why.reason == NOT_ADMITTED
    assert why.message == "namespace default: resourcequota rq: requests.cpu 1 > 0 left of 2"


def test_the_plugin_casts_no_permit() -> None:
    """A quota with room says nothing about the queue: a later tier's refusal still stands."""
    conf = """
actions: "enqueue"
tiers:
- plugins:
  - name: resourcequota
- plugins:
  - name: capacity
"""
    result = run_with(
        conf,
        nodes=[node("n0", cpu="8")],
        groups=[podgroup("g", 1, queue="small", min_resources={"cpu": "4"})],
        queues=[queue("small", capability={"cpu": "2"})],
        quotas=[resource_quota("rq", "default", {"cpu": "100"})],
    )
    assert not result.admitted


# --- reading quotas --------------------------------------------------------------------------------


def test_parse_keeps_request_entries_in_scheduler_units() -> None:
    q = parse_resource_quota(
        resource_quota(
            "rq",
            "ns",
            {
                "requests.cpu": "1500m",
                "memory": "1Gi",
                "limits.cpu": "junk-is-not-read",
                "volcano.sh/namespace.weight": "3",
            },
            used={"requests.cpu": "500m"},
        )
    )
    got = {(e.key, e.resource, e.hard, e.used) for e in q.entries}
    assert got == {("requests.cpu", "cpu", 1500, 500), ("memory", "memory", 2**30, 0)}
    assert q.weight == 3


@pytest.mark.parametrize(
    ("hard", "used", "field"),
    [({"cpu": "lots"}, None, "spec.hard.cpu"), ({"cpu": "1"}, {"cpu": [1]}, "status.used.cpu")],
    ids=["hard", "used"],
)
def test_a_bad_quantity_names_the_field(
    hard: dict[str, Any], used: dict[str, Any] | None, field: str
) -> None:
    with pytest.raises(InvalidObject, match=field.replace(".", r"\.")):
        parse_resource_quota(resource_quota("rq", "ns", hard, used=used))


def test_the_cache_skips_a_bad_quota_with_why_and_keeps_the_others() -> None:
    state = cluster_state(frozenset({"volcano"}))
    handler = state.cache.handlers()["resourcequotas"]
    good = resource_quota("good", "ns", {"cpu": "2"})
    bad = resource_quota("bad", "ns", {"cpu": "two"})
    handler.replace([good, bad, {"metadata": {"name": "broken"}, "spec": "nope"}])
    quotas = state.cache.full_snapshot().quotas["ns"]
    assert [q.name for q in quotas] == ["good"]
    problems = state.cache.unreadable()
    assert "spec.hard.cpu" in problems["ResourceQuota", "ns/bad"]
    assert ("ResourceQuota", "broken") in problems
    # Fixed by an update, then deleted.
    handler.upsert(resource_quota("bad", "ns", {"cpu": "3"}))
    assert [q.name for q in state.cache.full_snapshot().quotas["ns"]] == ["bad", "good"]
    assert ("ResourceQuota", "ns/bad") not in state.cache.unreadable()
    handler.remove(good)
    assert [q.name for q in state.cache.full_snapshot().quotas["ns"]] == ["bad"]


def test_conf_loads_with_the_new_plugin_names() -> None:
    conf = load_conf(
        """
actions: "enqueue, allocate, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: cdp
  - name: pdb
- plugins:
  - name: drf
    enableNamespaceOrder: true
  - name: resourcequota
  - name: proportion
"""
    )
    names: Sequence[str] = [p.name for tier in conf.tiers() for p in tier]
    assert names == ["priority", "gang", "cdp", "pdb", "drf", "resourcequota", "proportion"]
