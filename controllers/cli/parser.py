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
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from controllers.cli import commands, job_bodies, output, queue_bodies
from extender.api import labels as L
from extender.core.quantity import parse_quantity

# extender.plugins.queue_shares.SHARE_PLUGINS (a test keeps them equal): importing it would load the
# scheduler's plugins, and numpy, for every command.
SHARE_PLUGINS: Final = ("proportion", "capacity")

if TYPE_CHECKING:
    # What add_subparsers() returns; only typeshed's version is generic, so only for the checker.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def resource_list(value: str) -> dict[str, str]:
    """``cpu=1000m,memory=100Mi`` -> ``{"cpu": "1000m", "memory": "100Mi"}``; ``""`` -> ``{}``.

    Each quantity must parse as a Kubernetes quantity, so a typo fails here rather than at admission.
    """
    out: dict[str, str] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        name, sep, quantity = (part.strip() for part in item.partition("="))
        if not sep or not name or not quantity:
            raise argparse.ArgumentTypeError(
                f"{item!r} is not RESOURCE=QUANTITY (e.g. cpu=1000m,memory=100Mi)"
            )
        try:
            parse_quantity(quantity)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{quantity!r} for {name} is not a quantity (e.g. 500m, 2, 4Gi)"
            ) from None
        out[name] = quantity
    return out


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return number

    parse.__name__ = "integer"  # argparse names the type in its error message
    return parse


def _common(namespaced: bool) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
    )
    common.add_argument(
        "--context", default=None, help="the kubeconfig context to use (default: its current-context)"
    )
    if namespaced:
        common.add_argument(
            "-n",
            "--namespace",
            default=None,
            help="namespace (default: the kubeconfig context's namespace, else 'default')",
        )
    return common


def _output(p: argparse.ArgumentParser, choices: tuple[str, ...], *, many: bool = False) -> None:
    example = "{.items[*].metadata.name}" if many else "{.metadata.uid}"
    p.add_argument(
        "-o",
        "--output",
        type=output.output_format(choices),
        default="table",
        metavar="FORMAT",
        help=f"output format: {', '.join(choices)}, name, or jsonpath=TEMPLATE as kubectl's "
        f"(e.g. -o jsonpath='{example}'; default: a table)",
    )


def _name(p: argparse.ArgumentParser, what: str, *, short_n: bool = False) -> None:
    """NAME as a positional argument (kubectl) or ``-N/--name`` (vcctl; also ``-n`` when ``short_n``),
    exactly one of them; either way it lands in ``args.name``."""
    named = p.add_mutually_exclusive_group(required=True)
    # SUPPRESS: an absent positional must not overwrite the name a flag gave.
    named.add_argument("name", nargs="?", default=argparse.SUPPRESS, metavar="NAME", help=f"the {what}")
    flags = ("-N", "--name", "-n") if short_n else ("-N", "--name")
    named.add_argument(*flags, dest="name", metavar="NAME", help="the same, as a flag (vcctl's spelling)")


def _list_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-l", "--selector", default=None, help="only objects with these labels (e.g. app=x,tier!=db)"
    )
    p.add_argument("-w", "--watch", action="store_true", help="after listing, print each change until Ctrl-C")
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --watch: stop after this many seconds (default: never)",
    )


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{value} must be above 0")
    return number


def _job_parsers(sub: Subparsers) -> None:
    job = sub.add_parser(
        "job",
        help="run and manage Volcano Jobs (batch.volcano.sh), like vcctl job",
        description="Run and manage Volcano Jobs (batch.volcano.sh/v1alpha1), like vcctl job.",
    )
    verbs = job.add_subparsers(dest="job_command", required=True, metavar="COMMAND")
    ns = _common(namespaced=True)

    run = verbs.add_parser(
        "run",
        parents=[ns],
        help="create a Job from flags or a YAML file",
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
        "-r", "--replicas", type=_int_at_least(1), default=1, help="number of pods (default: %(default)s)"
    )
    run.add_argument(
        "-m",
        "--min",
        type=_int_at_least(0),
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
    run.set_defaults(func=commands.job_run)

    ls = verbs.add_parser(
        "list", parents=[ns], help="list Jobs", description="List Jobs with their phase and pod counts."
    )
    ls.add_argument("-A", "--all-namespaces", action="store_true", help="list Jobs in every namespace")
    ls.add_argument("-q", "--queue", default=None, help="only Jobs in this queue")
    ls.add_argument("-S", "--scheduler", default=None, help="only Jobs with this schedulerName")
    _list_flags(ls)
    _output(ls, ("wide", "yaml", "json"), many=True)
    ls.set_defaults(func=commands.job_list)

    view = verbs.add_parser(
        "view",
        parents=[ns],
        help="describe one Job",
        description="Show a Job's spec, status, per-task pod counts, conditions and events.",
    )
    _name(view, "job")
    _output(view, ("yaml", "json"))
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
    _name(why, "Job (or PodGroup, or pod)")
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
        _name(p, "job")
        p.set_defaults(func=func)

    delete = verbs.add_parser("delete", parents=[ns], help="delete a Job", description="Delete a Job.")
    _name(delete, "job")
    delete.set_defaults(func=commands.job_delete)


def _queue_parsers(sub: Subparsers) -> None:
    queue = sub.add_parser(
        "queue",
        help="create and manage Volcano Queues (scheduling.volcano.sh), like vcctl queue",
        description="Create and manage Volcano Queues (scheduling.volcano.sh/v1beta1, cluster-scoped), "
        "like vcctl queue.",
    )
    verbs = queue.add_subparsers(dest="queue_command", required=True, metavar="COMMAND")
    common = _common(namespaced=False)

    create = verbs.add_parser(
        "create", parents=[common], help="create a Queue", description="Create a Queue."
    )
    _name(create, "queue", short_n=True)
    create.add_argument(
        "-w", "--weight", type=_int_at_least(1), default=1, help="share weight (default: %(default)s)"
    )
    create.add_argument(
        "-S", "--state", choices=queue_bodies.STATES, default=None, help="initial state (default: Open)"
    )
    create.add_argument("-p", "--parent", default=None, help="parent queue (hierarchical queues)")
    for flag, what in (
        ("--capability", "upper bound of what the queue may use"),
        ("--deserved", "share the queue deserves before it is reclaimable"),
        ("--guarantee", "resources reserved for the queue"),
    ):
        create.add_argument(flag, type=resource_list, default=None, help=f"{what}, e.g. cpu=4,memory=8Gi")
    create.set_defaults(func=commands.queue_create)

    ls = verbs.add_parser(
        "list",
        parents=[common],
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
    _output(ls, ("wide", "yaml", "json"), many=True)
    _list_flags(ls)
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

    get = verbs.add_parser("get", parents=[common], help="show one Queue", description="Show one Queue.")
    _name(get, "queue", short_n=True)
    _output(get, ("wide", "yaml", "json"))
    get.set_defaults(func=commands.queue_get)

    operate = verbs.add_parser(
        "operate",
        parents=[common],
        help="open or close a Queue, or change its weight",
        description="Open or close a Queue, or change its weight. vcctl opens and closes queues through a "
        "bus.volcano.sh Command (OpenQueue/CloseQueue), which pumice also executes; this command patches "
        "the Queue's status.state (the /status subresource) directly, so it takes effect at once and "
        "without pumice running. A Closed queue accepts no new PodGroups.",
    )
    _name(operate, "queue", short_n=True)
    operate.add_argument(
        "-a",
        "--action",
        required=True,
        choices=(*queue_bodies.ACTION_STATES, queue_bodies.ACTION_UPDATE),
        help="open or close the queue, or update its weight",
    )
    operate.add_argument(
        "-w", "--weight", type=_int_at_least(1), default=None, help="the new weight, with --action update"
    )
    operate.set_defaults(func=commands.queue_operate)

    delete = verbs.add_parser(
        "delete", parents=[common], help="delete a Queue", description="Delete a Queue."
    )
    _name(delete, "queue", short_n=True)
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
    common = _common(namespaced=False)
    ls = verbs.add_parser(
        "list",
        parents=[common],
        help="list HyperNodes with their node and problem counts",
        description="List HyperNodes: NAME, TIER, MEMBERS, NODES (resolved), PROBLEMS, AGE.",
    )
    _output(ls, ("yaml", "json"), many=True)
    ls.set_defaults(func=commands.hypernode_list)
    get = verbs.add_parser(
        "get",
        parents=[common],
        help="show one HyperNode: members, nodes, problems",
        description="Show one HyperNode: its members, the nodes it resolves to and its problems.",
    )
    _name(get, "hypernode")
    _output(get, ("yaml", "json"))
    get.set_defaults(func=commands.hypernode_get)


def _flow_parsers(sub: Subparsers) -> None:
    """``jobflow``, ``jobtemplate`` and ``cronjob``: list and get (and delete a flow), as kubectl get."""
    ns = _common(namespaced=True)
    for kind, what, list_cmd, get_cmd in (
        ("jobflow", "JobFlows (flow.volcano.sh)", commands.flow_list, commands.flow_get),
        ("jobtemplate", "JobTemplates (flow.volcano.sh)", commands.template_list, commands.template_get),
        ("cronjob", "Volcano CronJobs (batch.volcano.sh)", commands.cron_list, commands.cron_get),
    ):
        top = sub.add_parser(kind, help=f"list and show {what}", description=f"List and show {what}.")
        verbs = top.add_subparsers(dest=f"{kind}_command", required=True, metavar="COMMAND")
        ls = verbs.add_parser("list", parents=[ns], help=f"list {what}", description=f"List {what}.")
        ls.add_argument("-A", "--all-namespaces", action="store_true", help="list in every namespace")
        _output(ls, ("yaml", "json"))
        ls.set_defaults(func=list_cmd)
        get = verbs.add_parser("get", parents=[ns], help=f"show one of the {what}", description="Show one.")
        _name(get, kind)
        _output(get, ("yaml", "json"))
        get.set_defaults(func=get_cmd)
        if kind == "jobflow":
            delete = verbs.add_parser(
                "delete",
                parents=[ns],
                help="delete a JobFlow (and its jobs)",
                description="Delete a JobFlow; its jobs go with it unless --keep-jobs.",
            )
            _name(delete, kind)
            delete.add_argument(
                "--keep-jobs", action="store_true", help="keep the flow's jobs (propagationPolicy Orphan)"
            )
            delete.set_defaults(func=commands.flow_delete)
