"""The Grafana dashboard (manifests/grafana/pumice-dashboard.json) is dashboard JSON Grafana loads, and
every PromQL query in it names only series pumice exports (read from a real process's registry)."""

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
DASHBOARD = json.loads((ROOT / "manifests" / "grafana" / "pumice-dashboard.json").read_text())
# A PromQL identifier; pumice's series all start with pumice_ (functions and labels never do).
SERIES = re.compile(r"\bpumice_[a-zA-Z0-9_:]*")
PANEL_TYPES = {"row", "timeseries", "stat", "gauge", "bargauge", "table", "heatmap", "text"}


def panels() -> list[dict[str, Any]]:
    out = []
    for p in DASHBOARD["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def queries() -> list[str]:
    exprs = [t["expr"] for p in panels() for t in p.get("targets", [])]
    for var in DASHBOARD["templating"]["list"]:
        if var["type"] == "query":
            exprs.append(var["definition"])
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


def test_is_dashboard_json() -> None:
    for key in ("uid", "title", "panels", "schemaVersion", "templating", "time"):
        assert key in DASHBOARD, key
    assert isinstance(DASHBOARD["schemaVersion"], int) and DASHBOARD["schemaVersion"] >= 36
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for p in panels():
        assert p["type"] in PANEL_TYPES, p["type"]
        grid = p["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0 and grid["y"] >= 0, p["title"]
        if p["type"] != "row":
            assert p["targets"], p["title"]
            assert p["datasource"]["uid"] == "${datasource}", p["title"]
            assert len({t["refId"] for t in p["targets"]}) == len(p["targets"])
    assert {v["name"] for v in DASHBOARD["templating"]["list"]} >= {"datasource", "queue"}


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
    ):
        assert series in text, series


def test_every_query_names_only_exported_series(exported: set[str]) -> None:
    named = {m for q in queries() for m in SERIES.findall(q)}
    assert named, "no pumice series found in the queries"
    assert named - exported == set()


def test_the_check_would_catch_a_misspelt_series(exported: set[str]) -> None:
    assert set(SERIES.findall("rate(pumice_bind_total[5m])")) - exported == {"pumice_bind_total"}
