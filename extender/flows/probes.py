"""When a flow entry's targets are satisfied: Volcano's rule (every target job Completed), plus the
``dependsOn.probe`` checks Volcano declares but never evaluates.

A target is satisfied when its job is Completed, or, when the entry has a probe, when every probe item holds
for it (a Completed job also satisfies: it got past every stage a probe can ask for):

- ``taskStatusList`` item ``{taskName, phase}``: the target's task has reached ``phase``: at least as many of
  its pods as the task has replicas are in that phase or a later one (Pending < Running < Succeeded; any
  other phase counts only itself), read from the job's ``status.taskStatusCount``.
- ``httpGetList`` item ``{taskName, port, path, httpHeader}``: every Running pod of the task (every pod of
  the job without ``taskName``) with a pod IP answered ``GET http://<podIP>:<port><path>`` with a 2xx, and
  there is at least one such pod.
- ``tcpSocketList`` item ``{taskName, port}``: the same, a TCP connection to ``<podIP>:<port>`` accepted.

HTTP and TCP checks are not made here: :func:`evaluate` lists the :class:`ProbeRequest` s it needs (those
without a result younger than :data:`RESULT_TTL`), the controller runs them off the scheduling path and feeds
the :class:`ProbeResult` s back in on the next reconcile. Pure: results and ``now`` are arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from extender.flows.model import FlowEntry, HttpGet, TcpSocket
from extender.flows.state import job_phase

Obj = Mapping[str, Any]

# A probe result is used for this long; then the probe is made again (a server may stop serving).
RESULT_TTL: Final = 5.0
# How often an entry waiting on probes is looked at again.
PROBE_PERIOD: Final = 2.0
_ORDER: Final = {"Pending": 0, "Running": 1, "Succeeded": 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class PodEndpoint:
    name: str
    task: str
    ip: str
    phase: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeRequest:
    kind: str  # "httpGet" | "tcpSocket"
    ip: str
    port: int
    path: str = ""
    header: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    ok: bool
    at: float
    message: str = ""


@dataclass(slots=True)
class Evaluation:
    ready: bool
    wanted: list[ProbeRequest] = field(default_factory=list)
    report: list[dict[str, Any]] = field(default_factory=list)


def _task_replicas(job: Obj, task: str) -> int | None:
    spec = job.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, Mapping) else None
    for t in tasks if isinstance(tasks, list) else ():
        if isinstance(t, Mapping) and t.get("name") == task:
            r = t.get("replicas")
            return r if isinstance(r, int) and not isinstance(r, bool) else 1
    return None


def task_reached(job: Obj, task: str, phase: str) -> tuple[bool, str]:
    """Whether ``task`` of the vcjob ``job`` has reached pod phase ``phase``, and why (for the status)."""
    replicas = _task_replicas(job, task)
    if replicas is None:
        return False, f"the job has no task {task!r}"
    st = job.get("status")
    counts = st.get("taskStatusCount") if isinstance(st, Mapping) else None
    entry = counts.get(task) if isinstance(counts, Mapping) else None
    by_phase = entry.get("phase") if isinstance(entry, Mapping) else None
    by_phase = by_phase if isinstance(by_phase, Mapping) else {}
    want = _ORDER.get(phase)
    n = 0
    for p, c in by_phase.items():
        if not isinstance(c, int) or isinstance(c, bool):
            continue
        if p == phase or (want is not None and _ORDER.get(p, -1) >= want):
            n += c
    return n >= max(replicas, 1), f"{n}/{replicas} pods of task {task!r} {phase} or later"


def _endpoints(pods: Sequence[PodEndpoint], task: str) -> list[PodEndpoint]:
    return sorted(
        (p for p in pods if p.phase == "Running" and p.ip and (not task or p.task == task)),
        key=lambda p: p.name,
    )


def _network(
    item: HttpGet | TcpSocket,
    pods: Sequence[PodEndpoint],
    results: Mapping[ProbeRequest, ProbeResult],
    now: float,
    out: Evaluation,
) -> tuple[bool, str]:
    endpoints = _endpoints(pods, item.task)
    if not endpoints:
        where = f"task {item.task!r}" if item.task else "the job"
        return False, f"no Running pod of {where} with an IP yet"
    ok_all, messages = True, []
    for p in endpoints:
        if isinstance(item, HttpGet):
            req = ProbeRequest(kind="httpGet", ip=p.ip, port=item.port, path=item.path, header=item.header)
        else:
            req = ProbeRequest(kind="tcpSocket", ip=p.ip, port=item.port)
        res = results.get(req)
        if res is None or now - res.at > RESULT_TTL:
            out.wanted.append(req)
        if res is None:
            ok_all = False
            messages.append(f"{p.name}: not probed yet")
        elif not res.ok:
            ok_all = False
            messages.append(f"{p.name}: {res.message}")
    # Bounded (the CRD caps it): a task of many pods lists its first failures only.
    return ok_all, "; ".join(messages)[:1000] or f"{len(endpoints)} pod(s) answered"


def evaluate(
    entry: FlowEntry,
    targets: Mapping[str, Obj | None],
    pods: Mapping[str, Sequence[PodEndpoint]],
    results: Mapping[ProbeRequest, ProbeResult],
    now: float,
) -> Evaluation:
    """Whether every target of ``entry`` is satisfied. ``targets``: target entry -> its job (None: not
    created yet); ``pods``: target entry -> the endpoints of its job's pods."""
    out = Evaluation(ready=True)
    for target in entry.targets:
        job = targets.get(target)
        if job is None:
            out.ready = False
            continue
        phase = job_phase(job)
        if phase == "Completed":
            continue
        if entry.probe.empty:
            out.ready = False
            continue
        for ts in entry.probe.task_status:
            ok, why = task_reached(job, ts.task, ts.phase)
            out.ready &= ok
            out.report.append(
                {
                    "target": target,
                    "type": "taskStatus",
                    "taskName": ts.task,
                    "phase": ts.phase,
                    "ready": ok,
                    "message": why,
                }
            )
        items: list[HttpGet | TcpSocket] = [*entry.probe.http, *entry.probe.tcp]
        for item in items:
            ok, why = _network(item, pods.get(target, ()), results, now, out)
            out.ready &= ok
            row: dict[str, Any] = {
                "target": target,
                "type": "httpGet" if isinstance(item, HttpGet) else "tcpSocket",
                "port": item.port,
                "ready": ok,
                "message": why,
            }
            if item.task:
                row["taskName"] = item.task
            if isinstance(item, HttpGet):
                row["path"] = item.path
            out.report.append(row)
    return out
