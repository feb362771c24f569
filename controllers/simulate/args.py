"""The flags of ``pumice simulate`` (see :mod:`controllers.simulate.cli`, which runs the command).

Only the parser: building it imports none of the simulator (the scheduler, numpy), so every other command
of ``pumice`` starts without it; the simulator is imported when the command runs.
"""

from __future__ import annotations

import argparse


def add_simulate_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate pumice on a trace of jobs or a cluster snapshot (no cluster needed)",
        description="Run pumice's scheduler on a simulated cluster: a trace of jobs over virtual time "
        "(TRACE), or the objects of a real cluster (--snapshot).",
    )
    p.add_argument("trace", nargs="?", metavar="TRACE", help="a trace file (YAML: nodes, queues, jobs)")
    p.add_argument(
        "--snapshot", metavar="STATE", help="cluster objects as `kubectl get ... -o yaml` prints them"
    )
    p.add_argument(
        "--openb-nodes",
        metavar="CSV",
        help="the node list of Alibaba's openb GPU trace (sn,cpu_milli,memory_mib,gpu,model), "
        "with --openb-pods",
    )
    p.add_argument(
        "--openb-pods",
        metavar="CSV",
        help="an openb pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec]): pods arrive one a "
        "second in a seeded random order until --arrive times the GPUs were asked, never leave, and are "
        "dropped when they fit nowhere (the method of 'Beware of Fragmentation', ATC '23)",
    )
    p.add_argument("--seed", type=int, default=42, help="openb: the arrival order's seed (default 42)")
    p.add_argument(
        "--arrive",
        type=float,
        default=1.3,
        metavar="SHARE",
        help="openb: the GPU the pods ask, as a share of the cluster's GPUs (default 1.3)",
    )
    p.add_argument(
        "--scheduler-conf",
        action="append",
        default=[],
        metavar="CONF",
        help="a volcano-scheduler.conf, or 'default' for pumice's default conf; give several to compare them "
        "side by side (trace mode)",
    )
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument("--plot", metavar="DIR", help="write PNG plots to DIR (trace mode; needs matplotlib)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="a preempted or reclaimed job keeps its progress (default: it starts over)",
    )
    p.add_argument(
        "--until",
        metavar="DURATION",
        help="stop the simulation at this virtual time: seconds (600) or a duration (24h)",
    )
    p.add_argument(
        "--cycles",
        type=int,
        metavar="N",
        help="snapshot mode: run exactly N scheduling sessions and stop (1: one session, as one Volcano "
        "session; default: until nothing changes)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--forecast",
        action="store_true",
        help="trace mode: forecast each job's start at its submission, as pumice serve would show it, and "
        "report the error against the start it then had",
    )
    p.add_argument(
        "--runtime-noise",
        type=float,
        default=0.0,
        metavar="F",
        help="with --forecast: jobs run their declared duration times a factor drawn from 1-F to 1+F "
        "(seeded), while the forecast is told the declared one (default 0)",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    """The command, imported when it runs (the parser alone stays cheap to build)."""
    from controllers.simulate.cli import run

    return run(args)
