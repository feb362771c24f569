"""Trace mode: the small example under pumice's confs, checked for invariants at every event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.simulate.engine import TraceRun
from controllers.simulate.report import trace_document
from controllers.simulate.trace import TraceError, parse_trace
from extender.core.model import GroupKey
from extender.core.snapshot import pod_group_key
from extender.main import main
from extender.plugins.registry import load_conf

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "examples" / "simulate" / "two-teams.yaml"
RECLAIM = ROOT / "examples" / "simulate" / "reclaim.conf"


def _doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(SMALL.read_text())
    doc.update(over)
    return doc


def _check_invariants(run: TraceRun, capability: dict[str, dict[str, int]]) -> None:
    """At this moment: no node holds more than it has, every gang is whole or not started, no queue holds
    more than its capability."""
    cache = run.cluster.cache
    on_node: dict[str, dict[str, int]] = {}
    per_queue: dict[str, dict[str, int]] = {}
    bound_per_group: dict[GroupKey, int] = {}
    for raw in run.cluster.pods.values():
        pod = cache.pod(raw["metadata"]["uid"])
        assert pod is not None
        if not pod.holds_resources:
            continue
        key = pod_group_key(pod)
        bound_per_group[key] = bound_per_group.get(key, 0) + 1
        queue = cache.pod_queue(pod) or ""
        for k, v in pod.requests.items():
            on_node.setdefault(pod.node_name, {})[k] = on_node.get(pod.node_name, {}).get(k, 0) + v
            per_queue.setdefault(queue, {})[k] = per_queue.get(queue, {}).get(k, 0) + v
    for name, used in on_node.items():
        node = cache.node(name)
        assert node is not None
        over = {k: (v, node.allocatable.get(k, 0)) for k, v in used.items() if v > node.allocatable.get(k, 0)}
        assert not over, f"node {name} over capacity at t={run.t}: {over}"
    for key, n in bound_per_group.items():
        group = cache.group(key)
        assert group is not None and n >= group.min_member, f"gang {key} partial at t={run.t}: {n}"
    for q, limit in capability.items():
        used = per_queue.get(q, {})
        assert all(used.get(k, 0) <= v for k, v in limit.items()), f"queue {q} over capability: {used}"


@pytest.mark.parametrize("conf_path", [None, RECLAIM], ids=["default", "reclaim"])
def test_the_small_example_keeps_every_invariant_at_every_event(conf_path: Path | None) -> None:
    doc = _doc()
    doc["queues"][0]["capability"] = {"nvidia.com/gpu": "40"}  # team-a may never hold more than 40 GPUs
    trace = parse_trace(doc)
    conf = load_conf(conf_path.read_text() if conf_path else None)
    checks: list[float] = []
    run: TraceRun

    def check(t: float) -> None:
        _check_invariants(run, {"team-a": {"nvidia.com/gpu": 40}})
        checks.append(t)

    run = TraceRun(trace, conf, progress=check)
    result = run.run()
    assert len(checks) > 40
    assert all(j.end is not None for j in result.jobs), "every job of the example finishes"
    assert result.makespan > 0 and 0 < result.allocation["nvidia.com/gpu"] <= 1
    if conf_path is None:
        # Without reclaim, team-b's large job waits for team-a's pretraining to end (3h in).
        large = next(j for j in result.jobs if j.name == "default/b-large")
        assert large.wait is not None and large.wait > 2 * 3600 and result.evictions == 0
    else:
        assert result.evictions > 0


def test_runs_are_deterministic() -> None:
    trace = parse_trace(_doc())
    conf = load_conf(RECLAIM.read_text())
    a, b = TraceRun(trace, conf).run(), TraceRun(trace, conf).run()
    assert a.jobs == b.jobs and a.allocation == b.allocation


def _preempted_trace(**job: Any) -> dict[str, Any]:
    return {
        "nodes": [{"name": "n", "count": 1, "allocatable": {"cpu": "4", "memory": "8Gi"}}],
        "priorityClasses": [{"name": "high", "value": 100}],
        "jobs": [
            {
                "name": "low",
                "submit": 0,
                "duration": "1h",
                "tasks": [{"replicas": 1, "requests": {"cpu": "4"}}],
            },
            {
                "name": "high",
                "submit": "30m",
                "duration": "10m",
                "priorityClassName": "high",
                "tasks": [{"replicas": 1, "requests": {"cpu": "4"}}],
            },
        ],
        **job,
    }


@pytest.mark.parametrize(("resume", "end"), [(False, 40 * 60 + 3600), (True, 40 * 60 + 30 * 60)])
def test_a_preempted_job_starts_over_unless_it_resumes(resume: bool, end: float) -> None:
    conf = load_conf(RECLAIM.read_text())
    result = TraceRun(parse_trace(_preempted_trace()), conf, resume=resume).run()
    low = next(j for j in result.jobs if j.name == "default/low")
    assert low.restarts == 1 and low.evicted == 1 and low.end == end
    assert low.queued == 10 * 60  # it waited while the high-priority job ran


def test_an_injected_failure_restarts_the_job() -> None:
    doc = _preempted_trace()
    doc["jobs"] = [dict(doc["jobs"][0], failures=["20m"])]
    result = TraceRun(parse_trace(doc), load_conf(None)).run()
    (low,) = result.jobs
    assert low.restarts == 1 and low.end == 20 * 60 + 3600


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"jobs": [{"name": "x", "tasks": []}]}, "jobs[0].tasks: a job needs at least one task"),
        ({"jobs": [{"name": "x", "queue": "nope", "duration": 1, "tasks": [{}]}]}, "queue 'nope'"),
        (
            {"jobs": [{"name": "x", "duration": 1, "minAvailable": 3, "tasks": [{"replicas": 2}]}]},
            "jobs[0].minAvailable: 3 is more than its 2 pods",
        ),
        ({"jobs": [{"name": "x", "duration": "soon", "tasks": [{}]}]}, "jobs[0].duration"),
        ({"nodes": [{"name": "n", "allocatable": {"cpu": "lots"}}]}, "nodes[0].allocatable"),
        ({"queue": []}, "unknown fields ['queue']"),
    ],
)
def test_a_bad_trace_says_where(change: dict[str, Any], message: str) -> None:
    doc = {"nodes": [{"name": "n", "allocatable": {"cpu": "1"}}], **change}
    with pytest.raises(TraceError, match=None) as e:
        parse_trace(doc)
    assert message in str(e.value)


def test_the_json_document_keeps_its_shape() -> None:
    result = TraceRun(parse_trace(_preempted_trace()), load_conf(RECLAIM.read_text())).run()
    doc = trace_document([("reclaim.conf", result)])
    (run,) = doc["runs"]
    assert doc["kind"] == "TraceSimulation"
    assert set(run) == {
        "conf",
        "keyResource",
        "makespan",
        "cycles",
        "evictions",
        "allocationRate",
        "fragmentationRate",
        "queues",
        "jobs",
        "series",
        "gpu",
        "topology",
        "arrivals",
    }
    assert set(run["queues"][0]) == {
        "name",
        "jobs",
        "finished",
        "waitMean",
        "waitP50",
        "waitP95",
        "waitMax",
        "shareMean",
        "deservedMean",
    }
    assert set(run["jobs"][0]) == {
        "name",
        "queue",
        "submit",
        "start",
        "end",
        "wait",
        "queued",
        "run",
        "restarts",
        "evicted",
        "dropped",
        "placements",
        "reason",
        "message",
    }
    assert {"time", "fragmentation", "allocation:cpu", "share:default"} <= set(run["series"])
    assert len({len(v) for v in run["series"].values()}) == 1


def test_the_cli_compares_confs_side_by_side(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = main(
        ["simulate", str(SMALL), "--scheduler-conf", str(RECLAIM), "--no-progress", "--plot", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "RECLAIM.CONF" in out and "team-b: wait mean / p95 / max" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shares.png", "utilization.png", "waits.png"]
    rc = main(["simulate", str(SMALL), "--scheduler-conf", str(RECLAIM), "--scheduler-conf", str(RECLAIM)])
    header = capsys.readouterr().out.splitlines()[0].split()
    assert rc == 0 and header == ["RECLAIM.CONF", "RECLAIM.CONF"]


def test_the_cli_reports_bad_input_with_exit_code_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: []\n")
    assert main(["simulate", str(bad)]) == 2
    assert "nodes: a trace needs at least one node pool" in capsys.readouterr().err
    assert main(["simulate"]) == 2
    assert main(["simulate", str(tmp_path / "missing.yaml")]) == 2


def test_the_readme_first_command_runs_as_written(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the command's paths are relative to a fresh clone's root
    readme = (ROOT / "README.md").read_text()
    first = readme.split("```sh\n", 1)[1].splitlines()[0]
    command = first.split("#", 1)[0].split("&&")[-1].split()
    assert command[0] == ".venv/bin/pumice" and command[1] == "simulate", first
    assert main(command[1:]) == 0
    assert "team-b: wait mean / p95 / max" in capsys.readouterr().out


def test_an_unknown_key_names_the_known_one_it_misspells() -> None:
    with pytest.raises(
        TraceError, match=r"unknown fields \['priorityClass'\]; did you mean 'priorityClasses'\?"
    ):
        parse_trace({"nodes": [{"count": 1, "cpu": "4"}], "priorityClass": []})
    with pytest.raises(
        TraceError, match=r"queues\[0\]: unknown fields \['weigth'\]; did you mean 'weight'\?"
    ):
        parse_trace(
            {
                "nodes": [{"name": "n", "count": 1, "allocatable": {"cpu": "4"}}],
                "queues": [{"name": "q", "weigth": 2}],
            }
        )
