"""JobFlow, JobTemplate and CronJob admission: one row per rule, the denial naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from admission import cronjobs, flows
from admission.lookup import StaticLookup
from admission.webhooks import WEBHOOKS
from tests.flows.builders import entry, flow, task, template

TEMPLATES = StaticLookup(job_templates=frozenset(("default", n) for n in "abcde"))
EXAMPLE = (entry("a"), entry("b", "a"), entry("c", "b"), entry("d", "b"), entry("e", "c", "d"))


def denied(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]


def test_volcano_example_is_admitted() -> None:
    assert flows.validate_jobflow(flow("test", *EXAMPLE), None, TEMPLATES) == []


@pytest.mark.parametrize(
    ("entries", "want"),
    [
        (
            (entry("a"), entry("zz")),
            ["spec.flows[1].name: JobTemplate default/zz not found; create it first"],
        ),
        (
            (entry("a", "b"), entry("b", "c"), entry("c", "a")),
            ["spec.flows[0].dependsOn.targets: dependency cycle: a -> b -> c -> a"],
        ),
        (
            (entry("a"), entry("b", "x")),
            ["spec.flows[1].dependsOn.targets[0]: 'x' is not an entry of this flow (entries: a, b)"],
        ),
        ((entry("a", "a"),), ["spec.flows[0].dependsOn.targets[0]: 'a' cannot depend on itself"]),
        (({"name": 5},), ["spec.flows[0].name: expected a string, got int"]),
        (
            (entry("a"), entry("b", probe={"httpGetList": [{"port": 0}]})),
            ["spec.flows[1].dependsOn.probe.httpGetList[0].port: expected a port number 1..65535"],
        ),
    ],
)
def test_jobflow_denials(entries: tuple[dict[str, Any], ...], want: list[str]) -> None:
    assert denied(flows.validate_jobflow(flow("f", *entries), None, TEMPLATES)) == want


def test_update_does_not_recheck_existing_entries() -> None:
    old = flow("f", entry("gone"))
    assert flows.validate_jobflow(flow("f", entry("gone")), old, TEMPLATES) == []
    assert denied(flows.validate_jobflow(flow("f", entry("gone"), entry("new")), old, TEMPLATES)) == [
        "spec.flows[1].name: JobTemplate default/new not found; create it first"
    ]


def test_jobtemplate_is_validated_as_a_job() -> None:
    assert flows.validate_jobtemplate(template("a"), None, TEMPLATES) == []
    bad = template("a", task("x", replicas=-1))
    assert any(
        "spec.tasks[0].replicas" in e for e in denied(flows.validate_jobtemplate(bad, None, TEMPLATES))
    )
    assert denied(flows.validate_jobtemplate({"metadata": {"name": "t"}}, None, TEMPLATES)) == [
        "spec: required: a vcjob spec (tasks, minAvailable, ...)"
    ]


def cron(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schedule": "*/5 * * * *",
        "jobTemplate": {"spec": {"minAvailable": 1, "tasks": [task()]}},
    }
    return {"metadata": {"name": "nightly", "namespace": "default"}, "spec": {**base, **spec}}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({}, []),
        ({"timeZone": "Europe/Berlin", "concurrencyPolicy": "Forbid"}, []),
        (
            {"schedule": "not cron"},
            ["spec.schedule: 'not cron': expected 5 fields (minute hour day month weekday)"],
        ),
        ({"timeZone": "Nowhere/City"}, ["spec.timeZone: unknown time zone 'Nowhere/City'"]),
        (
            {"concurrencyPolicy": "Never"},
            ["spec.concurrencyPolicy: 'Never' is not one of Allow, Forbid, Replace"],
        ),
        (
            {"jobTemplate": {"spec": {"tasks": [task("x", replicas=-1)]}}},
            ["spec.jobTemplate.spec.tasks[0].replicas"],
        ),
    ],
)
def test_cronjob(spec: dict[str, Any], want: list[str]) -> None:
    got = denied(cronjobs.validate(cron(**spec), None, TEMPLATES))
    assert len(got) == len(want) and all(g.startswith(w) for g, w in zip(got, want, strict=True)), got


def test_webhook_rows() -> None:
    rows = {w.path: w for w in WEBHOOKS}
    assert rows["/jobflows/validate"].validate is flows.validate_jobflow
    assert rows["/jobtemplates/validate"].validate is flows.validate_jobtemplate
    assert rows["/cronjobs/validate"].validate is cronjobs.validate
    assert all(rows[p].failure_policy == "Fail" for p in ("/jobflows/validate", "/cronjobs/validate"))
