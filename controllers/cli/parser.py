"""The ``job`` and ``queue`` sub-commands of ``pumice``: flags, help, and which function runs each.

Names are positional as in kubectl (``pumice job view demo``), and vcctl's flag spellings work too:
``--name``/``-N`` everywhere, and ``-n`` for the name of a Queue (cluster-scoped, so ``-n`` is free there:
``pumice queue create -n q1`` as ``vcctl queue create -n q1``); ``--min``, ``--replicas``, ``--requests``,
``--weight`` ... as vcctl. Connection and output flags follow kubectl: ``--kubeconfig``, ``--context``,
``-n/--namespace``, ``-A/--all-namespaces``, ``-l/--selector``, ``-w/--watch``,
``-o yaml|json|wide|name|jsonpath=TEMPLATE``. Values are parsed and checked here (a jsonpath template
too), so a malformed flag is an argparse usage error (exit 2) before anything talks to the cluster. Every
leaf parser sets ``func(args) -> int``; a command's NAME is in ``args.name`` whichever way it was given.

Building the parser imports no command's implementation: each ``func`` is an entry point of
:mod:`controllers.cli.commands`, which imports the implementation when the command runs. Defaults and
choices come from the light modules of constants and builders (``job_bodies``, ``queue_bodies``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

__all__ = ["SHARE_PLUGINS", "add_cli_parsers", "resource_list"]

from controllers.cli import commands, job_bodies, queue_bodies
from controllers.cli.flags import (
    common,
    dry_run,
    int_at_least,
    list_flags,
    name_flags,
    output_flag,
    resource_list,
    selector,
)
from extender.api import labels as L

# extender.plugins.queue_shares.SHARE_PLUGINS (a test keeps them equal): importing it would load the
# scheduler's plugins, and numpy, for every command.
SHARE_PLUGINS: Final = ("proportion", "capacity")

if TYPE_CHECKING:
    # What add_subparsers() returns; only typeshed's version is generic, so only for the checker.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _job_parsers(sub: Subparsers) -> None:
    job = sub.add_parser(
        "job",
        help="run and manage Volcano Jobs (batch.volcano.sh), like vcctl job",
        description="Run and manage Volcano Jobs (batch.volcano.sh/v1alpha1), like vcctl job.",
    )
    verbs = job.add_subparsers(dest="job_command", required=True, metavar="COMMAND")
    ns = common(namespaced=True)

    run = verbs.add_parser(
        "run",
        aliases=["create"],
        parents=[ns],
        help="create a Job from flags or a YAML file (also: job create)",
        description="Create a one-task Job from flags, or any Job from a YAML file (-f).",
    )
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("name", nargs="?", default=argparse.SUPPRESS, metavar="NAME", help="the job's name")
    source.add_argument("-N", "--name", dest="name", metavar="NAME", help="the same, as a flag (vcctl)")
    source.add_argument("-f", "--filename", help="create the Job in this YAML file ('-' for stdin)")
    run.add_argument(
        "-i", "--image", default=job_bodies.DEFAULT_IMAGE, help="container image (default: %(default)s)"
    )
    run.add_argument(
        "-r", "--replicas", type=int_at_least(1), default=1, help="number of pods (default: %(default)s)"
    )
    run.add_argument(
        "-m",
        "--min",
        type=int_at_least(0),
        default=1,
        help="minAvailable: pods that must be schedulable together (default: %(default)s)",
    )
    run.add_argument(
        "-R",
        "--requests",
        type=resource_list,
        default=resource_list(job_bodies.DEFAULT_RESOURCES),
        help=f"container requests, RESOURCE=QUANTITY,... (default: {job_bodies.DEFAULT_RESOURCES})",
    )
    run.add_argument(
        "-L",
        "--limits",
        type=resource_list,
        default=resource_list(job_bodies.DEFAULT_RESOURCES),
        help=f"container limits, RESOURCE=QUANTITY,... (default: {job_bodies.DEFAULT_RESOURCES})",
    )
    run.add_argument(
        "-S", "--scheduler", default=L.DEFAULT_SCHEDULER_NAME, help="schedulerName (default: %(default)s)"
    )
    run.add_argument("-q", "--queue", default=None, help="queue (default: the cluster's default queue)")
    dry_run(run)
    run.set_defaults(func=commands.job_run)

    ls = verbs.add_parser(
        "list", parents=[ns], help="list Jobs", description="List Jobs with their phase and pod counts."
    )
    ls.add_argument("-A", "--all-namespaces", action="store_true", help="list Jobs in every namespace")
    ls.add_argument("-q", "--queue", default=None, help="only Jobs in this queue")
    ls.add_argument("-S", "--scheduler", default=None, help="only Jobs with this schedulerName")
    list_flags(ls)
    output_flag(ls, ("wide", "yaml", "json"), many=True)
    ls.set_defaults(func=commands.job_list)

    view = verbs.add_parser(
        "view",
        parents=[ns],
        help="describe one Job",
        description="Show a Job's spec, status, per-task pod counts, conditions and events.",
    )
    name_flags(view, "job")
    output_flag(view, ("yaml", "json"))
    view.set_defaults(func=commands.job_view)

    why = verbs.add_parser(
        "why",
        parents=[ns],
        help="say whether a Job runs, or why it waits",
        description="Say whether a Job runs or why it waits: its PodGroup's phase, the Unschedulable "
        "reason and message pumice wrote on it (NotEnoughResources, NotEnoughTasks, QueueUnavailable, "
        "NotEnqueued, WaitingForVictims), and for each of its pods that has no node, why. NAME may also "
        "name a PodGroup, or a pod (then its group is explained).",
    )
    name_flags(why, "Job (or PodGroup, or pod)")
    why.set_defaults(func=commands.job_why)

    for verb, func, action, summary in (
        (
            "suspend",
            commands.job_suspend,
            job_bodies.ABORT_JOB,
            "abort a Job: its pods are deleted, the Job stays",
        ),
        ("resume", commands.job_resume, job_bodies.RESUME_JOB, "resume a suspended Job"),
    ):
        p = verbs.add_parser(
            verb,
            parents=[ns],
            help=summary,
            description=f"{summary[0].upper()}{summary[1:]}, by creating a bus.volcano.sh Command "
            f"(action {action}) for the job controller.",
        )
        name_flags(p, "job")
        dry_run(p)
        p.set_defaults(func=func)

    delete = verbs.add_parser("delete", parents=[ns], help="delete a Job", description="Delete a Job.")
    name_flags(delete, "job")
    delete.set_defaults(func=commands.job_delete)


def _queue_parsers(sub: Subparsers) -> None:
    queue = sub.add_parser(
        "queue",
        help="create and manage Volcano Queues (scheduling.volcano.sh), like vcctl queue",
        description="Create and manage Volcano Queues (scheduling.volcano.sh/v1beta1, cluster-scoped), "
        "like vcctl queue.",
    )
    verbs = queue.add_subparsers(dest="queue_command", required=True, metavar="COMMAND")
    cluster = common(namespaced=False)

    create = verbs.add_parser(
        "create", parents=[cluster], help="create a Queue", description="Create a Queue."
    )
    name_flags(create, "queue", short_n=True)
    create.add_argument(
        "-w", "--weight", type=int_at_least(1), default=1, help="share weight (default: %(default)s)"
    )
    create.add_argument(
        "-S", "--state", choices=queue_bodies.STATES, default=None, help="initial state (default: Open)"
    )
    create.add_argument("-p", "--parent", default=None, help="parent queue (hierarchical queues)")
    dry_run(create)
    for flag, what in (
        ("--capability", "upper bound of what the queue may use"),
        ("--deserved", "share the queue deserves before it is reclaimable"),
        ("--guarantee", "resources reserved for the queue"),
    ):
        create.add_argument(flag, type=resource_list, default=None, help=f"{what}, e.g. cpu=4,memory=8Gi")
    create.set_defaults(func=commands.queue_create)

    ls = verbs.add_parser(
        "list",
        parents=[cluster],
        help="list Queues with their shares, as a tree",
        description="List Queues as a tree (children indented under spec.parent) with their weight, "
        "priority, state and PodGroup counts per phase, and per resource (cpu, memory, extended resources "
        "such as nvidia.com/gpu) one column DESERVED/ALLOCATED/GUARANTEE/CAPABILITY: the share the "
        "scheduler's plugin computes now from the cluster's nodes, pods, PodGroups and queues; what the "
        "queue's bound pods hold; its spec.guarantee; its spec.capability ('-': no limit). Listing nodes "
        "and pods needs read access to them cluster-wide; without it the shares show as '?'. With "
        "-o json|yaml the List of Queues gets a 'shares' key with the same figures as exact quantities "
        "(a jsonpath template sees that document too). With -w, the plain Queue table and a line per change: "
        "shares follow nodes and pods, which a watch of Queues does not see.",
    )
    output_flag(ls, ("wide", "yaml", "json"), many=True)
    list_flags(ls)
    ls.add_argument(
        "--plugin",
        choices=SHARE_PLUGINS,
        default=SHARE_PLUGINS[0],
        help="the share plugin of your scheduler conf that computes deserved (default: %(default)s)",
    )
    ls.add_argument(
        "--hierarchy",
        action="store_true",
        help="with --plugin capacity: as with its enableHierarchy: true (children share their parent's)",
    )
    ls.add_argument(
        "--scheduler-name",
        action="append",
        default=None,
        help="schedulerName(s) pumice schedules, as given to pumice serve (default: volcano)",
    )
    ls.add_argument(
        "--default-queue",
        default=L.DEFAULT_QUEUE,
        help="the queue of pods and PodGroups that name none, as given to pumice serve "
        "(default: %(default)s)",
    )
    ls.set_defaults(func=commands.queue_list)

    get = verbs.add_parser("get", parents=[cluster], help="show one Queue", description="Show one Queue.")
    name_flags(get, "queue", short_n=True)
    output_flag(get, ("wide", "yaml", "json"))
    get.set_defaults(func=commands.queue_get)

    operate = verbs.add_parser(
        "operate",
        parents=[cluster],
        help="open or close a Queue, or change its weight",
        description="Open or close a Queue, or change its weight. vcctl opens and closes queues through a "
        "bus.volcano.sh Command (OpenQueue/CloseQueue), which pumice also executes; this command patches "
        "the Queue's status.state (the /status subresource) directly, so it takes effect at once and "
        "without pumice running. A Closed queue accepts no new PodGroups.",
    )
    name_flags(operate, "queue", short_n=True)
    operate.add_argument(
        "-a",
        "--action",
        required=True,
        choices=(*queue_bodies.ACTION_STATES, queue_bodies.ACTION_UPDATE),
        help="open or close the queue, or update its weight",
    )
    operate.add_argument(
        "-w", "--weight", type=int_at_least(1), default=None, help="the new weight, with --action update"
    )
    operate.set_defaults(func=commands.queue_operate)

    delete = verbs.add_parser(
        "delete", parents=[cluster], help="delete a Queue", description="Delete a Queue."
    )
    name_flags(delete, "queue", short_n=True)
    delete.set_defaults(func=commands.queue_delete)


def add_cli_parsers(sub: Subparsers) -> None:
    """Add ``job`` and ``queue`` to ``pumice``'s sub-commands."""
    _job_parsers(sub)
    _queue_parsers(sub)
    _flow_parsers(sub)
    _hypernode_parsers(sub)


def _hypernode_parsers(sub: Subparsers) -> None:
    """``hypernode list|get``: HyperNodes as the scheduler resolves them (see controllers.cli.hypernodes)."""
    top = sub.add_parser(
        "hypernode",
        help="list and show HyperNodes (topology.volcano.sh) as the scheduler resolves them",
        description="List and show HyperNodes (topology.volcano.sh/v1alpha1, cluster-scoped): their tier, "
        "members, the nodes they resolve to and the problems the scheduler finds in them (members it "
        "leaves out: a bad regexMatch, a missing or same-tier member HyperNode, a node in two HyperNodes "
        "of one tier), the same problems pumice reports as Warning Events on them. Listing nodes needs "
        "read access to them; without it NODES shows '?'. With -o json|yaml the document gets a "
        "'resolved' key with the nodes and problems.",
    )
    verbs = top.add_subparsers(dest="hypernode_command", required=True, metavar="COMMAND")
    cluster = common(namespaced=False)
    ls = verbs.add_parser(
        "list",
        parents=[cluster],
        help="list HyperNodes with their node and problem counts",
        description="List HyperNodes: NAME, TIER, MEMBERS, NODES (resolved), PROBLEMS, AGE.",
    )
    selector(ls)
    output_flag(ls, ("yaml", "json"), many=True)
    ls.set_defaults(func=commands.hypernode_list)
    get = verbs.add_parser(
        "get",
        parents=[cluster],
        help="show one HyperNode: members, nodes, problems",
        description="Show one HyperNode: its members, the nodes it resolves to and its problems.",
    )
    name_flags(get, "hypernode")
    output_flag(get, ("yaml", "json"))
    get.set_defaults(func=commands.hypernode_get)


def _flow_parsers(sub: Subparsers) -> None:
    """``jobflow``, ``jobtemplate`` and ``cronjob``: list and get (and delete a flow), as kubectl get."""
    ns = common(namespaced=True)
    for kind, what, list_cmd, get_cmd in (
        ("jobflow", "JobFlows (flow.volcano.sh)", commands.flow_list, commands.flow_get),
        ("jobtemplate", "JobTemplates (flow.volcano.sh)", commands.template_list, commands.template_get),
        ("cronjob", "Volcano CronJobs (batch.volcano.sh)", commands.cron_list, commands.cron_get),
    ):
        top = sub.add_parser(kind, help=f"list and show {what}", description=f"List and show {what}.")
        verbs = top.add_subparsers(dest=f"{kind}_command", required=True, metavar="COMMAND")
        ls = verbs.add_parser("list", parents=[ns], help=f"list {what}", description=f"List {what}.")
        ls.add_argument("-A", "--all-namespaces", action="store_true", help="list in every namespace")
        selector(ls)
        output_flag(ls, ("yaml", "json"))
        ls.set_defaults(func=list_cmd)
        get = verbs.add_parser("get", parents=[ns], help=f"show one of the {what}", description="Show one.")
        name_flags(get, kind)
        output_flag(get, ("yaml", "json"))
        get.set_defaults(func=get_cmd)
        if kind == "jobflow":
            delete = verbs.add_parser(
                "delete",
                parents=[ns],
                help="delete a JobFlow (and its jobs)",
                description="Delete a JobFlow; its jobs go with it unless --keep-jobs.",
            )
            name_flags(delete, kind)
            delete.add_argument(
                "--keep-jobs", action="store_true", help="keep the flow's jobs (propagationPolicy Orphan)"
            )
            delete.set_defaults(func=commands.flow_delete)
