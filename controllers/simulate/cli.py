"""``pumice simulate``: what pumice would do, without a cluster (the flags: :mod:`controllers.simulate.args`).

``pumice simulate TRACE.yaml`` runs a trace (jobs arriving over time, see
:mod:`controllers.simulate.trace`); ``pumice simulate --openb-nodes NODES.csv --openb-pods PODS.csv``
replays Alibaba's openb GPU trace by the method of "Beware of Fragmentation" (see
:mod:`controllers.simulate.openb`); ``pumice simulate --snapshot STATE.yaml`` runs the scheduler on a
cluster's objects until nothing changes, or for exactly ``--cycles N`` scheduling sessions. Each
``--scheduler-conf`` (repeatable) is a ``volcano-scheduler.conf``; without one (or with ``default``),
pumice's default conf, and on a trace whose nodes have GPU cards :data:`GPU_CONF`: the same with
``deviceshare`` as the node scorer (its default GPU policy, ``fragmentation``). Exit codes: 0 done, 2 bad
input (the message says what and where).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from controllers.simulate.engine import TraceRun
from controllers.simulate.forecast_report import accuracy_document, accuracy_table
from controllers.simulate.forecast_trace import Accuracy, ForecastTraceRun, noisy
from controllers.simulate.metrics import TraceResult
from controllers.simulate.openb import openb_trace
from controllers.simulate.plots import require_matplotlib, write_plots
from controllers.simulate.report import snapshot_document, snapshot_table, trace_document, trace_table
from controllers.simulate.snapshot import flatten, simulate_snapshot
from controllers.simulate.trace import Trace, TraceError, parse_trace
from controllers.simulate.trace_fields import until as read_until
from extender.core.errors import ConfigError
from extender.plugins.registry import SchedulerConf, load_conf

# The default conf on GPU cards: Volcano's default with deviceshare (gpushare memory and whole cards) as
# the node scorer, in place of nodeorder and binpack, which would weigh cpu and memory against it.
GPU_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
      deviceshare.GPUNumberEnable: true
      deviceshare.ScheduleWeight: 10
"""


def _confs(paths: list[str], gpus: bool = False) -> list[tuple[str, SchedulerConf]]:
    default = GPU_CONF if gpus else None
    if not paths:
        return [("default", load_conf(default))]
    return [
        (p, load_conf(default)) if p == "default" else (Path(p).name, load_conf(Path(p).read_text()))
        for p in paths
    ]


def _emit(doc: dict[str, Any], fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))


def _run_trace(trace: Trace, confs: list[tuple[str, SchedulerConf]], args: argparse.Namespace) -> int:
    if args.plot:
        require_matplotlib()
    until = read_until(args.until) if args.until else None
    runs: list[tuple[str, TraceResult]] = []
    accuracy: list[tuple[str, Accuracy]] = []
    last = max((j.submit if j.duration is None else j.end for j in trace.jobs), default=0.0)
    end = until if until is not None else last
    for label, conf in confs:
        bar = _progress(label, end, quiet=args.no_progress or len(trace.jobs) < 200)
        try:
            if args.forecast:  # the forecast's accuracy (controllers.simulate.forecast_trace)
                noise = args.runtime_noise
                fr = ForecastTraceRun(
                    noisy(trace, noise), conf, noise=noise, resume=args.resume, until=until,
                    progress=bar.update_to,
                )  # fmt: skip
                runs.append((label, fr.run()))
                accuracy.append((label, fr.accuracy()))
                continue
            run = TraceRun(trace, conf, resume=args.resume, until=until, progress=bar.update_to)
            runs.append((label, run.run()))
        finally:
            bar.close()
    if args.output == "table":
        sys.stdout.write(trace_table(runs) + (accuracy_table(accuracy) if accuracy else ""))
    else:
        doc = trace_document(runs)
        for run_doc, (_, a) in zip(doc["runs"], accuracy, strict=False):
            run_doc["forecast"] = accuracy_document(a)
        _emit(doc, args.output)
    if args.plot:
        for path in write_plots(runs, Path(args.plot)):
            print(f"wrote {path}", file=sys.stderr)
    return 0


class _Bar:
    """A tqdm bar over virtual time, or nothing."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def update_to(self, t: float) -> None:
        if self._bar is not None and t > self._bar.n:
            self._bar.update(min(t, self._bar.total) - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _progress(label: str, end: float, *, quiet: bool) -> _Bar:
    if quiet or end <= 0:
        return _Bar(None)
    from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type hints

    fmt = "{desc}: {percentage:3.0f}%|{bar}| virtual {n:.0f}/{total:.0f}s [{elapsed}<{remaining}]"
    return _Bar(tqdm(total=end, desc=label, unit="s", bar_format=fmt, file=sys.stderr, leave=False))


def run(args: argparse.Namespace) -> int:
    if (args.runtime_noise and not args.forecast) or not 0 <= args.runtime_noise < 1:
        print("pumice simulate: --runtime-noise takes --forecast and a fraction from 0 to 1", file=sys.stderr)
        return 2
    openb = bool(args.openb_nodes or args.openb_pods)
    if sum((bool(args.trace), bool(args.snapshot), openb)) != 1:
        print(
            "pumice simulate: give a TRACE file, --snapshot STATE or --openb-nodes/--openb-pods "
            "(one of them)",
            file=sys.stderr,
        )
        return 2
    if openb and not (args.openb_nodes and args.openb_pods):
        print("pumice simulate: --openb-nodes and --openb-pods go together", file=sys.stderr)
        return 2
    if args.cycles is not None and (not args.snapshot or args.cycles < 1):
        print("pumice simulate: --cycles takes --snapshot and a number of sessions >= 1", file=sys.stderr)
        return 2
    try:
        if openb:
            trace = openb_trace(
                Path(args.openb_nodes), Path(args.openb_pods), seed=args.seed, arrive=args.arrive
            )
            return _run_trace(trace, _confs(args.scheduler_conf, gpus=True), args)
        path = Path(args.snapshot or args.trace)
        docs = list(yaml.safe_load_all(path.read_text()))
        if args.snapshot:
            confs = _confs(args.scheduler_conf)
            if len(confs) > 1:
                raise ValueError("--snapshot takes one --scheduler-conf")
            result = simulate_snapshot(flatten(docs), confs[0][1], cycles=args.cycles)
            queues = dict(result.queue_objects)
            if args.output == "table":
                sys.stdout.write(snapshot_table(result, queues))
            else:
                _emit(snapshot_document(result, queues), args.output)
            return 0
        if len(docs) != 1:
            raise TraceError(f"{path}: a trace is one YAML document, found {len(docs)}")
        trace = parse_trace(docs[0])
        return _run_trace(trace, _confs(args.scheduler_conf, gpus=trace.has_gpus), args)
    except (OSError, yaml.YAMLError, ConfigError, TraceError, ValueError, RuntimeError) as e:
        print(f"pumice simulate: {e}", file=sys.stderr)
        return 2
