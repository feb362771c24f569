"""Trace mode honours where a job's pods may go (``nodeSelector``, ``affinity``, ``tolerations``) or refuses
the field; jobs without a duration never end; ``--until`` takes plain seconds; ``-o json`` lists every
placement with its node and GPU cards."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controllers.simulate.engine import TraceRun
from controllers.simulate.trace import TraceError, parse_trace
from controllers.simulate.trace_fields import until
from extender.main import main
from extender.plugins.registry import load_conf


def _trace(*jobs: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "name": "v100",
                "count": 2,
                "allocatable": {"cpu": "8", "memory": "16Gi"},
                "labels": {"model": "V100"},
            },
            {
                "name": "t4",
                "count": 2,
                "allocatable": {"cpu": "8", "memory": "16Gi"},
                "labels": {"model": "T4"},
            },
        ],
        "jobs": list(jobs),
    }


def _job(name: str, submit: int = 0, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "submit": submit,
        "duration": "10m",
        "tasks": [{"replicas": 2, "requests": {"cpu": "1"}}],
        **more,
    }


def test_a_node_selector_keeps_a_job_on_matching_nodes_and_one_matching_none_waits_with_a_reason() -> None:
    doc = _trace(
        _job("on-v100", nodeSelector={"model": "V100"}),
        _job("nowhere", nodeSelector={"model": "A100"}),
        _job("any"),
    )
    result = TraceRun(parse_trace(doc), load_conf(None)).run()
    jobs = {j.name: j for j in result.jobs}
    on = jobs["default/on-v100"]
    assert on.placements and {p.node for p in on.placements} <= {"v100-0", "v100-1"}
    nowhere = jobs["default/nowhere"]
    assert nowhere.start is None and not nowhere.placements
    assert "node does not match the pod's nodeSelector (4 nodes)" in nowhere.message
    assert jobs["default/any"].placements


def test_a_task_selector_replaces_the_jobs_and_affinity_and_tolerations_are_read() -> None:
    job = _job("t4", nodeSelector={"model": "V100"})
    job["tasks"] = [{"replicas": 1, "requests": {"cpu": "1"}, "nodeSelector": {"model": "T4"}}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "model", "operator": "In", "values": ["T4"]}]}
                ]
            }
        }
    }
    doc = _trace(job, _job("aff", affinity=affinity, tolerations=[{"operator": "Exists"}]))
    result = TraceRun(parse_trace(doc), load_conf(None)).run()
    for j in result.jobs:
        assert j.placements and all(p.node.startswith("t4-") for p in j.placements), j.name


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("nodeSelector", ["model"], "jobs[0].nodeSelector"),
        (
            "affinity",
            {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}},
            "jobs[0]: spec.affinity.nodeAffinity",
        ),
        ("nodeName", "v100-0", "unknown fields ['nodeName']"),
    ],
)
def test_a_placement_field_it_cannot_honour_is_refused(field: str, value: Any, message: str) -> None:
    with pytest.raises(TraceError) as e:
        parse_trace(_trace(_job("x", **{field: value})))
    assert message in str(e.value)


def test_a_job_without_duration_never_ends_and_until_takes_seconds() -> None:
    forever = {k: v for k, v in _job("forever").items() if k != "duration"}
    doc = _trace(forever, _job("later", submit=100))
    trace = parse_trace(doc)
    assert next(j for j in trace.jobs if j.name == "forever").duration is None
    result = TraceRun(trace, load_conf(None), until=until("3600")).run()
    jobs = {j.name: j for j in result.jobs}
    assert jobs["default/forever"].start == 0 and jobs["default/forever"].end is None
    assert jobs["default/later"].end == 100 + 600
    assert until("10") == 10.0 and until("2.5") == 2.5 and until("1m") == 60.0


def test_json_lists_every_placement_with_its_cards(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    doc = {
        "nodes": [
            {
                "name": "g",
                "count": 1,
                "allocatable": {"cpu": "8", "memory": "16Gi"},
                "gpus": {"cards": 2, "memory": 1000},
            }
        ],
        "jobs": [
            {
                "name": "half",
                "submit": 0,
                "tasks": [{"replicas": 2, "requests": {"volcano.sh/gpu-memory": "500"}}],
            }
        ],
    }
    path = tmp_path / "t.yaml"
    path.write_text(json.dumps(doc))
    assert main(["simulate", str(path), "-o", "json", "--until", "60", "--no-progress"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    (job,) = run["jobs"]
    assert sorted(p["node"] for p in job["placements"]) == ["g-0", "g-0"]
    assert all(p["cards"] in ("0", "1") for p in job["placements"])
    # The GPU conf is the default on a trace with cards: both halves share a card (fragmentation policy).
    assert len({p["cards"] for p in job["placements"]}) == 1
