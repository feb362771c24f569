"""The Grafana dashboards (manifests/grafana/*.json: cluster, queues, GPUs, scheduler performance) are
dashboard JSON Grafana loads, and every PromQL query in them names only series pumice exports (read from a
real process's registry): pumice's own, the ones under Volcano's names, and the process's."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from admission.server import make_admission_app
from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from extender.plugins.registry import load_conf
from extender.wiring import Process
from tests.ops.test_metrics_exposition import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = {
    p.name: json.loads(p.read_text()) for p in sorted((ROOT / "manifests" / "grafana").glob("*.json"))
}
# A PromQL identifier of a series pumice exports: its own (pumice_), those under Volcano's names (volcano_),
# the process's and the interpreter's (process_, python_); functions and labels never start so.
SERIES = re.compile(r"\b(?:pumice|volcano|process|python)_[a-zA-Z0-9_:]*")
PANEL_TYPES = {"row", "timeseries", "stat", "gauge", "bargauge", "table", "heatmap", "text"}


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in dashboard["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def queries(dashboard: dict[str, Any] | None = None) -> list[str]:
    exprs = []
    for d in [dashboard] if dashboard is not None else DASHBOARDS.values():
        exprs += [t["expr"] for p in panels(d) for t in p.get("targets", [])]
        exprs += [v["definition"] for v in d["templating"]["list"] if v["type"] == "query"]
    return exprs


@pytest.fixture
async def exported() -> AsyncIterator[set[str]]:
    """Every series name the registry can expose: a histogram's _bucket/_sum/_count, a counter's _total."""
    kube = KubeClient(Connection(host="http://localhost"))
    try:
        proc = Process(SETTINGS, load_conf(), kube)
        proc.register_metrics(make_admission_app(proc.lookup, proc.limits))
        names: set[str] = set()
        for family in proc.metrics.registry.collect():
            suffixes = {
                "histogram": ("_bucket", "_sum", "_count"),
                "counter": ("_total",),
            }.get(family.type, ("",))
            names.update(family.name + s for s in suffixes)
        yield names
    finally:
        await kube.close()


def test_the_four_dashboards() -> None:
    assert set(DASHBOARDS) >= {
        "pumice-cluster.json",
        "pumice-queues.json",
        "pumice-gpus.json",
        "pumice-scheduler.json",
    }
    uids = [d["uid"] for d in DASHBOARDS.values()]
    assert len(uids) == len(set(uids)), "dashboard uids are unique"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_is_dashboard_json(name: str) -> None:
    dashboard = DASHBOARDS[name]
    for key in ("uid", "title", "panels", "schemaVersion", "templating", "time"):
        assert key in dashboard, key
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for p in panels(dashboard):
        assert p["type"] in PANEL_TYPES, p["type"]
        grid = p["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0 and grid["y"] >= 0, p["title"]
        if p["type"] != "row":
            assert p["targets"], p["title"]
            assert p["datasource"]["uid"] == "${datasource}", p["title"]
            assert len({t["refId"] for t in p["targets"]}) == len(p["targets"])
    assert "datasource" in {v["name"] for v in dashboard["templating"]["list"]}
    assert queries(dashboard), name


def test_covers_what_the_issue_asks_for() -> None:
    text = " ".join(queries())
    for series in (
        "pumice_queue_allocated",
        "pumice_cluster_allocatable",
        "pumice_queue_share",
        "pumice_queue_deserved",
        "pumice_job_wait_seconds_bucket",
        "pumice_podgroup_wait_seconds_bucket",
        "pumice_scheduling_cycle_duration_seconds_bucket",
        "pumice_extender_request_seconds_bucket",
        "pumice_cycle_errors_total",
        # issue 27: per-queue figures, GPUs per card, fragmentation and stranded asks, filter/bind latency,
        # action latency, the process.
        "pumice_queue_capability",
        "pumice_queue_pending",
        "pumice_gpu_card_memory_used",
        "pumice_gpu_fragmentation",
        "pumice_gpu_stranded_asks",
        "pumice_binds_total",
        "volcano_action_scheduling_latency_milliseconds_bucket",
        "process_resident_memory_bytes",
    ):
        assert series in text, series


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_query_names_only_exported_series(name: str, exported: set[str]) -> None:
    named = {m for q in queries(DASHBOARDS[name]) for m in SERIES.findall(q)}
    assert named, "no pumice series found in the queries"
    assert named - exported == set()


def test_the_check_would_catch_a_misspelt_series(exported: set[str]) -> None:
    assert set(SERIES.findall("rate(pumice_bind_total[5m])")) - exported == {"pumice_bind_total"}
    assert set(SERIES.findall("volcano_queue_alocated_milli_cpu")) - exported == {
        "volcano_queue_alocated_milli_cpu"
    }
