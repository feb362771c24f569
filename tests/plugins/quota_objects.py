"""Builders for ResourceQuotas and PodDisruptionBudgets, and a cycle over a snapshot that carries them
(shared by the resourcequota, pdb, cdp and drf namespace tests)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from extender.core.parse import (
    parse_node,
    parse_pod,
    parse_pod_disruption_budget,
    parse_podgroup,
    parse_priority_class,
    parse_queue,
    parse_resource_quota,
)
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.plugin import Plugin
from extender.framework.result import CycleResult
from extender.framework.session import Session
from tests.core.builders import NOW, Raw, conf_of, queue


def resource_quota(
    name: str, namespace: str, hard: Mapping[str, Any], used: Mapping[str, Any] | None = None
) -> Raw:
    out: Raw = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace, "uid": f"rq-{namespace}-{name}"},
        "spec": {"hard": dict(hard)},
    }
    if used is not None:
        out["status"] = {"hard": dict(hard), "used": dict(used)}
    return out


def budget(
    name: str,
    namespace: str = "default",
    allowed: int = 0,
    selector: Mapping[str, Any] | None = None,
    disrupted: Sequence[str] = (),
) -> Raw:
    """A policy/v1 PDB; ``selector`` is the raw spec.selector (None: no selector at all)."""
    spec: Raw = {"minAvailable": 1}
    if selector is not None:
        spec["selector"] = dict(selector)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "uid": f"pdb-{namespace}-{name}"},
        "spec": spec,
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": dict.fromkeys(disrupted, "2024-01-01T00:00:00Z"),
        },
    }


def snapshot_with(
    nodes: Iterable[Raw] = (),
    pods: Iterable[Raw] = (),
    groups: Iterable[Raw] = (),
    queues: Iterable[Raw] | None = None,
    quotas: Iterable[Raw] = (),
    budgets: Iterable[Raw] = (),
    priority_classes: Iterable[Raw] = (),
) -> Snapshot:
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(q) for q in ([queue("default")] if queues is None else queues)],
        priority_classes=[parse_priority_class(pc) for pc in priority_classes],
        quotas=[parse_resource_quota(q) for q in quotas],
        budgets=[parse_pod_disruption_budget(b) for b in budgets],
    )


def run_with(conf: str, now: float = NOW, **objects: Any) -> CycleResult:
    """One cycle of ``conf`` over :func:`snapshot_with` ``(**objects)``."""
    return run_cycle(snapshot_with(**objects), conf_of(conf), now)


def session_with(plugins: Sequence[Plugin], now: float = NOW, **objects: Any) -> Session:
    """A session with ``plugins`` as its one tier (``open`` already called)."""
    return Session(snapshot_with(**objects), build_hooks([list(plugins)]), now=now)
