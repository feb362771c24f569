"""How ``pumice simulate`` prints: tables for people, one JSON/YAML document for machines.

The documents are a stable shape: fields may be added, never renamed or removed (a test pins them).

Snapshot mode, ``kind: SnapshotSimulation``:

- ``now`` (RFC 3339: the simulated clock at the end), ``cycles`` (scheduling cycles run);
- ``placements``: ``pod``, ``node``, ``group`` (namespace/name of its PodGroup), ``queue``;
- ``evictions``: ``pod``, ``node``, ``reason`` (``Preempted``|``Reclaimed``), ``message``, ``for`` (the
  PodGroup that takes its place);
- ``podGroups``: ``name``, ``queue``, ``phase``, ``minMember``, ``running``, ``waiting``, ``reason`` and
  ``message`` (why it waits; null when nothing holds it back);
- ``shares``: the shape of ``pumice queue list -o json``'s ``shares`` (deserved, allocated, guarantee,
  capability per queue and resource, after the simulation);
- ``ignored``: objects the simulation does not act on, each as ``Kind namespace/name``.

Trace mode, ``kind: TraceSimulation``, ``runs``: one per ``--scheduler-conf``, in the order given, each:

- ``conf`` (its label: the file name, or ``default``), ``keyResource``, ``makespan`` (seconds), ``cycles``,
  ``evictions``, ``allocationRate`` (resource -> time-weighted mean 0..1), ``fragmentationRate`` (0..1);
- ``queues``: ``name``, ``jobs``, ``finished``, ``waitMean``/``waitP50``/``waitP95``/``waitMax`` (seconds,
  null when no job started), ``shareMean``, ``deservedMean`` (null without a share plugin);
- ``jobs``: ``name``, ``queue``, ``submit``, ``start``, ``end``, ``wait``, ``queued``, ``run`` (seconds,
  null when it did not happen), ``restarts``, ``evicted``, ``dropped`` (it could not start when it
  arrived: the openb replay drops it), ``placements`` (every start's pods: ``at``, ``pod``, ``node``,
  ``cards``: the ``volcano.sh/gpu-index`` or vGPU ids written on it, "" without cards), ``reason`` and
  ``message`` (why it still waits at the end; null when it does not);
- ``series``: ``time`` and, per key, values at those times (at most 400 points):
  ``allocation:<resource>``, ``fragmentation``, ``share:<queue>``, ``deserved:<queue>``, and with GPU
  cards ``gpu:allocation``, ``gpu:fragmentation``, ``gpu:stranded-asks``;
- ``gpu`` (null without GPU cards, see :mod:`controllers.simulate.gpumetrics`): ``cards``, ``memory``
  (all cards'), ``allocationMean``/``allocationPeak``/``allocationEnd``,
  ``fragmentationMean``/``fragmentationEnd``, ``strandedAsksMean``/``strandedAsksEnd`` (0..1);
- ``topology`` (null without leaf labels): ``gangs`` (starts of gangs of two or more pods),
  ``inOneLeaf``, ``inOneSpine``, ``leavesMean``;
- ``arrivals`` (null but for the openb replay, see :mod:`controllers.simulate.arrivals`): ``pods``,
  ``placed``, ``dropped``, ``gpus`` (cards), ``arrived`` (0..1, at the end) and ``curve``: per whole
  percent of the GPUs arrived, ``arrived`` (that percent), ``allocation``, ``fragmentation`` (the paper's
  measure, of all GPU) and ``fragmentationRatio`` (of the idle GPU), means over the arrivals there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from controllers.shares_view import shares_document, shares_table
from controllers.simulate.arrivals import ArrivalFigures
from controllers.simulate.metrics import TraceResult
from controllers.simulate.snapshot import SnapshotResult
from controllers.tables import human_duration, render_table

Obj = dict[str, Any]
Runs = Sequence[tuple[str, TraceResult]]


def snapshot_document(r: SnapshotResult, queues: dict[str, Obj]) -> Obj:
    return {
        "kind": "SnapshotSimulation",
        "now": r.now,
        "cycles": r.cycles,
        "placements": [
            {"pod": p.pod, "node": p.node, "group": p.group, "queue": p.queue} for p in r.placements
        ],
        "evictions": [
            {"pod": e.pod, "node": e.node, "reason": e.reason, "message": e.message, "for": e.by}
            for e in r.evictions
        ],
        "podGroups": [
            {
                "name": g.name,
                "queue": g.queue,
                "phase": g.phase,
                "minMember": g.min_member,
                "running": g.running,
                "waiting": g.waiting,
                "reason": g.reason or None,
                "message": g.message or None,
            }
            for g in r.podgroups
        ],
        "shares": shares_document(r.shares, queues),
        "ignored": list(r.ignored),
    }


def snapshot_table(r: SnapshotResult, queues: dict[str, Obj]) -> str:
    out = [f"Simulated {r.cycles} scheduling cycles (clock at the end: {r.now}).\n"]
    if r.placements:
        out.append("\nPLACEMENTS\n")
        out.append(
            render_table(
                ["pod", "node", "podgroup", "queue"],
                ((p.pod, p.node, p.group, p.queue) for p in r.placements),
            )
        )
    else:
        out.append("\nNo pod was placed.\n")
    if r.evictions:
        out.append("\nEVICTIONS\n")
        out.append(
            render_table(
                ["pod", "node", "reason", "for"], ((e.pod, e.node, e.reason, e.by) for e in r.evictions)
            )
        )
    if r.podgroups:
        out.append("\nPODGROUPS\n")
        rows = (
            (g.name, g.queue, g.phase, f"{g.running}/{g.min_member}", str(g.waiting), g.message or "")
            for g in r.podgroups
        )
        out.append(render_table(["podgroup", "queue", "phase", "running/min", "waiting", "why"], rows))
    out.append("\nQUEUES\n")
    out.append(
        shares_table(r.shares, queues, datetime.fromisoformat(r.now.replace("Z", "+00:00")), wide=False)
    )
    if r.ignored:
        out.append("\nNot simulated:\n" + "".join(f"  {x}\n" for x in r.ignored))
    return "".join(out)


def _run_document(label: str, r: TraceResult) -> Obj:
    return {
        "conf": label,
        "keyResource": r.key_resource,
        "makespan": r.makespan,
        "cycles": r.cycles,
        "evictions": r.evictions,
        "allocationRate": dict(r.allocation),
        "fragmentationRate": r.fragmentation,
        "queues": [
            {
                "name": q.name,
                "jobs": q.jobs,
                "finished": q.finished,
                "waitMean": q.wait_mean,
                "waitP50": q.wait_p50,
                "waitP95": q.wait_p95,
                "waitMax": q.wait_max,
                "shareMean": q.share_mean,
                "deservedMean": q.deserved_mean,
            }
            for q in r.queues
        ],
        "jobs": [
            {
                "name": j.name,
                "queue": j.queue,
                "submit": j.submit,
                "start": j.start,
                "end": j.end,
                "wait": j.wait,
                "queued": j.queued,
                "run": j.run,
                "restarts": j.restarts,
                "evicted": j.evicted,
                "dropped": j.dropped,
                "placements": [
                    {"at": p.at, "pod": p.pod, "node": p.node, "cards": p.cards} for p in j.placements
                ],
                "reason": j.reason or None,
                "message": j.message or None,
            }
            for j in r.jobs
        ],
        "series": r.series,
        "gpu": None
        if r.gpu is None
        else {
            "cards": r.gpu.cards,
            "memory": r.gpu.memory,
            "allocationMean": r.gpu.allocation_mean,
            "allocationPeak": r.gpu.allocation_peak,
            "allocationEnd": r.gpu.allocation_end,
            "fragmentationMean": r.gpu.fragmentation_mean,
            "fragmentationEnd": r.gpu.fragmentation_end,
            "strandedAsksMean": r.gpu.stranded_asks_mean,
            "strandedAsksEnd": r.gpu.stranded_asks_end,
        },
        "topology": None
        if r.topology is None
        else {
            "gangs": r.topology.gangs,
            "inOneLeaf": r.topology.in_one_leaf,
            "inOneSpine": r.topology.in_one_spine,
            "leavesMean": r.topology.leaves_mean,
        },
        "arrivals": None if r.arrivals is None else _arrivals_document(r.arrivals),
    }


def _arrivals_document(a: ArrivalFigures) -> Obj:
    return {
        "pods": a.pods,
        "placed": a.placed,
        "dropped": a.dropped,
        "gpus": a.gpus,
        "arrived": a.arrived,
        "curve": [
            {
                "arrived": p.percent,
                "allocation": p.allocation,
                "fragmentation": p.fragmentation,
                "fragmentationRatio": p.fragmentation_ratio,
            }
            for p in a.curve
        ],
    }


def trace_document(runs: Runs) -> Obj:
    return {"kind": "TraceSimulation", "runs": [_run_document(label, r) for label, r in runs]}


def _t(seconds: float | None) -> str:
    return "-" if seconds is None else human_duration(seconds)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _gpu_rows(results: Sequence[TraceResult]) -> list[list[str]]:
    """Card-level GPU figures and gang places, when the trace has cards or leaf labels."""
    rows: list[list[str]] = []
    if all(r.gpu is not None for r in results):
        gpus = [r.gpu for r in results if r.gpu is not None]
        rows += [
            [
                "GPU allocation mean / peak / end",
                *(
                    f"{_pct(g.allocation_mean)} / {_pct(g.allocation_peak)} / {_pct(g.allocation_end)}"
                    for g in gpus
                ),
            ],
            [
                "GPU fragmentation mean / end",
                *(f"{_pct(g.fragmentation_mean)} / {_pct(g.fragmentation_end)}" for g in gpus),
            ],
            [
                "GPU asks stranded mean / end",
                *(f"{_pct(g.stranded_asks_mean)} / {_pct(g.stranded_asks_end)}" for g in gpus),
            ],
        ]
    if all(r.topology is not None for r in results):
        tops = [r.topology for r in results if r.topology is not None]
        rows += [
            ["gangs in one leaf", *(f"{t.in_one_leaf}/{t.gangs}" for t in tops)],
            ["gangs in one spine", *(f"{t.in_one_spine}/{t.gangs}" for t in tops)],
            ["leaves per gang (mean)", *(f"{t.leaves_mean:.2f}" for t in tops)],
        ]
    return rows


def _arrival_rows(results: Sequence[TraceResult]) -> list[list[str]]:
    """The openb replay's figures: allocation and the paper's fragmentation at 100 % and at the end."""
    figures = [r.arrivals for r in results]
    if not all(a is not None for a in figures):
        return []
    arrivals = [a for a in figures if a is not None]

    def at(a: ArrivalFigures, percent: int) -> str:
        p = a.at(percent)
        return "-" if p is None else f"{_pct(p.allocation)} / {_pct(p.fragmentation)}"

    end = round(100 * max(a.arrived for a in arrivals))
    return [
        ["pods arrived / placed / dropped", *(f"{a.pods} / {a.placed} / {a.dropped}" for a in arrivals)],
        ["GPU allocated / fragmented at 100% arrived", *(at(a, 100) for a in arrivals)],
        [f"GPU allocated / fragmented at {end}% arrived", *(at(a, end) for a in arrivals)],
    ]


def trace_table(runs: Runs) -> str:
    """The cluster figures and per-queue waits and shares, one column per conf (side by side)."""
    labels = [label for label, _ in runs]
    results = [r for _, r in runs]
    key = results[0].key_resource
    rows: list[list[str]] = [
        *_arrival_rows(results),
        ["jobs finished", *(f"{sum(j.end is not None for j in r.jobs)}/{len(r.jobs)}" for r in results)],
        ["makespan", *(_t(r.makespan) for r in results)],
        *(
            [f"allocation {res}", *(_pct(r.allocation.get(res)) for r in results)]
            for res in results[0].allocation
        ),
        [f"fragmentation ({key})", *(_pct(r.fragmentation) for r in results)],
        *_gpu_rows(results),
        ["evictions", *(str(r.evictions) for r in results)],
        ["restarts", *(str(sum(j.restarts for j in r.jobs)) for r in results)],
        ["scheduling cycles", *(str(r.cycles) for r in results)],
    ]
    queues = [q.name for q in results[0].queues if q.jobs]
    for name in queues:
        per = [next(q for q in r.queues if q.name == name) for r in results]
        rows.append(
            [
                f"{name}: wait mean / p95 / max",
                *(f"{_t(q.wait_mean)} / {_t(q.wait_p95)} / {_t(q.wait_max)}" for q in per),
            ]
        )
        rows.append(
            [
                f"{name}: {key} share / deserved",
                *(f"{_pct(q.share_mean)} / {_pct(q.deserved_mean)}" for q in per),
            ]
        )
    return render_table(["", *labels], rows)
