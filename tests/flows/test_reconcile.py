"""One JobFlow reconcile: what is created when, what the status says, and that it is idempotent."""

from __future__ import annotations

from typing import Any

from extender.core.timestamps import epoch
from extender.flows.model import CREATED_BY_TEMPLATE, parse_jobflow
from extender.flows.probes import PodEndpoint, ProbeRequest, ProbeResult
from extender.flows.reconcile import FlowWorld, reconcile
from tests.flows.builders import entry, flow, job, task, template

NOW = epoch("2026-01-01T01:00:00Z")
EXAMPLE = (entry("a"), entry("b", "a"), entry("c", "b"), entry("d", "b"), entry("e", "c", "d"))
TEMPLATES = {n: template(n) for n in "abcde"}


def run(fl: dict[str, Any], jobs: dict[str, dict[str, Any]], **kw: Any) -> Any:
    w = FlowWorld(flow=parse_jobflow(fl), templates=kw.pop("templates", TEMPLATES), jobs=jobs, now=NOW, **kw)
    return reconcile(w)


def created(plan: Any) -> list[str]:
    return [j["metadata"]["name"] for j in plan.create_jobs]


def test_volcano_example_runs_in_dependency_order() -> None:
    fl = flow("test", *EXAMPLE)
    assert created(run(fl, {})) == ["test-a"]
    assert created(run(fl, {"test-a": job("test-a", "Running")})) == []
    assert created(run(fl, {"test-a": job("test-a", "Completed")})) == ["test-b"]
    both = {"test-a": job("test-a", "Completed"), "test-b": job("test-b", "Completed")}
    assert created(run(fl, both)) == ["test-c", "test-d"]
    three = {**both, "test-c": job("test-c", "Completed"), "test-d": job("test-d", "Running")}
    assert created(run(fl, three)) == []  # e waits for c AND d
    four = {**three, "test-d": job("test-d", "Completed")}
    assert created(run(fl, four)) == ["test-e"]
    done = {**four, "test-e": job("test-e", "Completed")}
    plan = run(fl, done)
    assert plan.create_jobs == [] and plan.status is not None
    assert plan.status["state"] == {"phase": "Succeed"}


def test_created_job_shape() -> None:
    (j,) = run(flow("test", entry("a", patch={"queue": "q9"})), {}).create_jobs
    meta = j["metadata"]
    assert meta["name"] == "test-a" and meta["namespace"] == "default"
    assert meta["labels"] == {CREATED_BY_TEMPLATE: "default.a"} == meta["annotations"]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "name": "test",
            "uid": "flow-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert j["spec"]["queue"] == "q9" and j["spec"]["tasks"] == TEMPLATES["a"]["spec"]["tasks"]


def test_idempotent_after_restart() -> None:
    fl = flow("test", *EXAMPLE)
    first = run(fl, {})
    stored = {**fl, "status": first.status}
    jobs = {"test-a": job("test-a", "Pending")}
    again = run(stored, jobs)
    assert again.create_jobs == []  # a restart sees the job: no second create
    settled = run({**fl, "status": again.status}, jobs)
    assert settled.create_jobs == [] and settled.status is None  # nothing to do, nothing to write


def test_failing_stage_fails_the_flow_and_stops() -> None:
    fl = flow("test", *EXAMPLE, status={"state": {"phase": "Running"}})
    plan = run(fl, {"test-a": job("test-a", "Failed")})
    assert plan.create_jobs == [] and plan.status["state"] == {"phase": "Failed"}
    failed = {**fl, "status": plan.status}
    assert created(run(failed, {"test-a": job("test-a", "Failed")})) == []


def test_retain_policy_delete_after_success() -> None:
    fl = flow("test", entry("a"), retain="delete", status={"state": {"phase": "Succeed"}})
    plan = run(fl, {"test-a": job("test-a", "Completed")})
    assert plan.delete_jobs == ["test-a"] and plan.create_jobs == []
    kept = run(
        flow("test", entry("a"), retain="retain", status={"state": {"phase": "Succeed"}}),
        {"test-a": job("test-a", "Completed")},
    )
    assert kept.delete_jobs == []


def test_missing_template_waits_with_an_event() -> None:
    plan = run(flow("test", entry("a")), {}, templates={})
    assert plan.create_jobs == [] and plan.events[0][1] == "TemplateNotFound"


def test_foreign_job_of_the_same_name_is_not_adopted() -> None:
    plan = run(flow("test", entry("a")), {}, foreign=frozenset({"test-a"}))
    assert plan.create_jobs == [] and plan.events[0][1] == "JobExists"


def test_task_status_probe_starts_next_while_target_runs() -> None:
    probe = {"taskStatusList": [{"taskName": "master", "phase": "Running"}]}
    fl = flow("p", entry("srv"), entry("cli", "srv", probe=probe))
    tmpl = {"srv": template("srv", task("master"), task("worker", 2)), "cli": template("cli")}
    pending = job(
        "p-srv", "Running", task_counts={"master": {"Pending": 1}}, tasks=[task("master"), task("worker", 2)]
    )
    plan = run(fl, {"p-srv": pending}, templates=tmpl)
    assert created(plan) == [] and plan.requeue_after is not None
    assert plan.status["probeStatusList"][0]["ready"] is False
    running = job(
        "p-srv",
        "Running",
        task_counts={"master": {"Running": 1}, "worker": {"Pending": 2}},
        tasks=[task("master"), task("worker", 2)],
    )
    assert created(run(fl, {"p-srv": running}, templates=tmpl)) == ["p-cli"]


def test_http_probe_asks_then_uses_results() -> None:
    probe = {"httpGetList": [{"taskName": "main", "port": 8080, "path": "/ready"}]}
    fl = flow("h", entry("srv"), entry("cli", "srv", probe=probe))
    tmpl = {"srv": template("srv"), "cli": template("cli")}
    srv = {"h-srv": job("h-srv", "Running")}
    pods = {"h-srv": [PodEndpoint(name="h-srv-main-0", task="main", ip="10.0.0.5", phase="Running")]}
    plan = run(fl, srv, templates=tmpl, pods=pods)
    req = ProbeRequest(kind="httpGet", ip="10.0.0.5", port=8080, path="/ready")
    assert plan.probes == [req] and created(plan) == []
    bad = run(
        fl, srv, templates=tmpl, pods=pods, results={req: ProbeResult(ok=False, at=NOW, message="HTTP 503")}
    )
    assert created(bad) == [] and bad.probes == []
    assert "HTTP 503" in bad.status["probeStatusList"][0]["message"]
    ok = run(fl, srv, templates=tmpl, pods=pods, results={req: ProbeResult(ok=True, at=NOW)})
    assert created(ok) == ["h-cli"]
    stale = run(fl, srv, templates=tmpl, pods=pods, results={req: ProbeResult(ok=True, at=NOW - 60)})
    assert stale.probes == [req]


def test_tcp_probe_needs_a_running_pod() -> None:
    probe = {"tcpSocketList": [{"port": 6379}]}
    fl = flow("t", entry("db"), entry("app", "db", probe=probe))
    plan = run(fl, {"t-db": job("t-db", "Running")}, pods={"t-db": []})
    assert created(plan) == [] and plan.probes == []
    assert "no Running pod" in plan.status["probeStatusList"][0]["message"]


def test_deleting_flow_does_nothing() -> None:
    fl = flow("test", entry("a"))
    fl["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    plan = run(fl, {})
    assert plan.create_jobs == [] and plan.status is None


def test_editing_a_template_leaves_created_jobs_alone() -> None:
    fl = flow("test", entry("a"), entry("b", "a"))
    first = run(fl, {})
    edited = {**TEMPLATES, "a": template("a", task("main", replicas=7))}
    plan = run({**fl, "status": first.status}, {"test-a": first.create_jobs[0]}, templates=edited)
    assert plan.create_jobs == [] and plan.delete_jobs == []  # no write touches test-a
    assert first.create_jobs[0]["spec"]["tasks"][0]["replicas"] == 1
