"""Keyword builders for the workflow tests: JobFlows, JobTemplates and vcjobs as the API stores them."""

from __future__ import annotations

from typing import Any

NS = "default"


def entry(
    name: str, *targets: str, probe: dict[str, Any] | None = None, patch: dict[str, Any] | None = None
) -> dict[str, Any]:
    e: dict[str, Any] = {"name": name}
    if targets or probe:
        e["dependsOn"] = {}
        if targets:
            e["dependsOn"]["targets"] = list(targets)
        if probe:
            e["dependsOn"]["probe"] = probe
    if patch is not None:
        e["patch"] = {"jobSpec": patch}
    return e


def flow(
    name: str,
    *entries: dict[str, Any],
    retain: str | None = None,
    status: dict[str, Any] | None = None,
    uid: str = "flow-uid",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"flows": list(entries)}
    if retain:
        spec["jobRetainPolicy"] = retain
    obj: dict[str, Any] = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": name, "namespace": NS, "uid": uid, "resourceVersion": "1"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def task(name: str = "main", replicas: int = 1, image: str = "busybox") -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "c", "image": image}], "restartPolicy": "Never"}},
    }


def template(name: str, *tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": list(tasks) or [task()],
            **spec,
        },
    }


def job(
    name: str,
    phase: str | None = None,
    *,
    created: str = "2026-01-01T00:00:00Z",
    owner: str = "flow-uid",
    task_counts: dict[str, dict[str, int]] | None = None,
    tasks: list[dict[str, Any]] | None = None,
    finished: str | None = None,
    running: str | None = None,
    kind: str = "JobFlow",
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if phase:
        status["state"] = {"phase": phase}
        if finished:
            status["state"]["lastTransitionTime"] = finished
    if task_counts:
        status["taskStatusCount"] = {t: {"phase": c} for t, c in task_counts.items()}
    if running:
        status["runningDuration"] = running
    group = "flow.volcano.sh/v1alpha1" if kind == "JobFlow" else "batch.volcano.sh/v1alpha1"
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "ownerReferences": [
                {"apiVersion": group, "kind": kind, "name": "x", "uid": owner, "controller": True}
            ],
        },
        "spec": {"tasks": tasks or [task()]},
        "status": status,
    }
