"""``pumice job run|list|view|why|suspend|resume|delete``: vcctl's job commands on Volcano Jobs.

Mirrors vcctl's behaviour: ``run`` builds a one-task ``batch.volcano.sh/v1alpha1`` Job from flags (or
creates one from a YAML file); ``suspend`` and ``resume`` do not touch the Job but create a
``bus.volcano.sh/v1alpha1`` Command (``AbortJob`` / ``ResumeJob``) that the job controller consumes, owned
by the Job so it is garbage-collected with it. Output follows kubectl rather than vcctl: an AGE column
instead of a creation date, ``<kind>.<group>/<name> created`` confirmations.

Here: the API calls (taking a KubeClient, tested against a fake API server) and the ``cmd_*`` entry points
of ``run``, ``list``, ``suspend``, ``resume`` and ``delete``. The bodies they create are
:mod:`controllers.cli.job_bodies`, the tables :mod:`controllers.cli.job_views`; ``view`` and ``why`` (ours:
vcctl has none) are :mod:`controllers.cli.explain`. ``list`` is the command whose start-up is kept short:
this module imports neither numpy nor the scheduler.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controllers.cli import output
from controllers.cli.flags import DRY_CLIENT, created, dry_run_query, show
from controllers.cli.job_bodies import (
    ABORT_JOB,
    COMMAND_RESOURCE,
    JOB_RESOURCE,
    RESUME_JOB,
    build_command,
    build_job,
    load_job_file,
)
from controllers.cli.job_views import filter_jobs, job_table
from controllers.cli.kubeconfig import list_versioned, run_action, selector_query
from controllers.cli.watch import one_row, watch
from controllers.kube import paths
from controllers.kube.client import KubeClient
from controllers.tables import Obj, metadata

# -- API calls -------------------------------------------------------------------------------------


def jobs_path(namespace: str | None) -> str:
    """The Job collection of one namespace, or of all when ``namespace`` is None."""
    return paths.JOBS.collection(None if namespace is None else paths.segment(namespace))


def job_path(namespace: str, name: str) -> str:
    return paths.JOBS.item(paths.segment(name), namespace=paths.segment(namespace))


async def create_job(client: KubeClient, job: Obj, *, query: list[tuple[str, str]] | None = None) -> Obj:
    return await client.post(jobs_path(str(metadata(job).get("namespace"))), job, query=query)


async def list_jobs(client: KubeClient, namespace: str | None, selector: str | None = None) -> list[Obj]:
    return (await list_jobs_versioned(client, namespace, selector))[0]


async def list_jobs_versioned(
    client: KubeClient, namespace: str | None, selector: str | None = None
) -> tuple[list[Obj], str]:
    return await list_versioned(client, jobs_path(namespace), selector_query(selector))


async def get_job(client: KubeClient, namespace: str, name: str) -> Obj:
    return await client.get(job_path(namespace, name))


async def job_command(client: KubeClient, namespace: str, name: str, action: str) -> Obj:
    """The Command for ``action`` on the Job (which must exist: its uid goes in the reference)."""
    return build_command(await get_job(client, namespace, name), action)


async def command_job(
    client: KubeClient, namespace: str, name: str, action: str, *, query: list[tuple[str, str]] | None = None
) -> Obj:
    """Create the Command for ``action`` on the Job."""
    command = await job_command(client, namespace, name, action)
    return await client.post(paths.COMMANDS.collection(paths.segment(namespace)), command, query=query)


async def delete_job(client: KubeClient, namespace: str, name: str) -> Obj:
    return await client.delete(job_path(namespace, name))


# -- entry points ----------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC)


def cmd_run(args: argparse.Namespace) -> int:
    content: str | None = None
    if args.filename:
        try:
            content = sys.stdin.read() if args.filename == "-" else Path(args.filename).read_text()
        except OSError as e:
            print(f"pumice: cannot read {args.filename}: {e.strerror}", file=sys.stderr)
            return 1
    elif args.min > args.replicas:
        print(f"pumice: error: --min {args.min} exceeds --replicas {args.replicas}", file=sys.stderr)
        return 2

    async def action(client: KubeClient, namespace: str) -> None:
        if content is not None:
            job = load_job_file(content, namespace=namespace, explicit_namespace=args.namespace is not None)
        else:
            job = build_job(
                name=args.name,
                namespace=namespace,
                image=args.image,
                replicas=args.replicas,
                min_available=args.min,
                requests=args.requests,
                limits=args.limits,
                scheduler=args.scheduler,
                queue=args.queue,
            )
        if args.dry_run == DRY_CLIENT:
            sys.stdout.write(show(job))
            return
        made = await create_job(client, job, query=dry_run_query(args.dry_run))
        print(created(JOB_RESOURCE, made, args.dry_run))

    return run_action(args, action)


def render_jobs(jobs: Sequence[Obj], fmt: str, *, all_namespaces: bool, header: bool = True) -> str:
    """Jobs as ``-o`` asks: a table (``header=False``: its rows only, for a watch), a List document,
    names or a jsonpath template."""
    # As kubectl: a template sees the List, but in a watch each changed object on its own.
    special = output.render_as(fmt, output.as_list(list(jobs)) if header else jobs[0], JOB_RESOURCE)
    if special is not None:
        return special
    if fmt in output.DOCUMENTS:
        if header:
            return output.dump(output.as_list(list(jobs)), "json" if fmt == "json" else "yaml")
        # A watch prints each changed object as a document of its own.
        return "---\n" + output.dump(jobs[0], "yaml") if fmt == "yaml" else output.dump(jobs[0], "json")
    table = job_table(jobs, _now(), all_namespaces=all_namespaces, wide=fmt == "wide")
    return table if header else one_row(table)


def cmd_list(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        where_ns = None if args.all_namespaces else namespace
        jobs, version = await list_jobs_versioned(client, where_ns, args.selector)
        jobs = filter_jobs(jobs, queue=args.queue, scheduler=args.scheduler)
        per_object = args.watch and args.output.startswith(output.JSONPATH)
        if per_object:  # kubectl: while watching, a template sees each object, the first ones too
            sys.stdout.write(
                "".join(render_jobs([j], args.output, all_namespaces=False, header=False) for j in jobs)
            )
        elif jobs or output.always_printed(args.output) or (args.watch and args.output in ("table", "wide")):
            sys.stdout.write(render_jobs(jobs, args.output, all_namespaces=args.all_namespaces))
        else:
            where = "" if args.all_namespaces else f" in {namespace} namespace"
            print(f"No resources found{where}.", file=sys.stderr)
        if not args.watch:
            return
        sys.stdout.flush()

        def row(obj: Mapping[str, Any]) -> str:
            if not filter_jobs([dict(obj)], queue=args.queue, scheduler=args.scheduler):
                return ""
            return render_jobs([dict(obj)], args.output, all_namespaces=args.all_namespaces, header=False)

        query = selector_query(args.selector)
        await watch(client, jobs_path(where_ns), query, version, row, seconds=args.timeout)

    return run_action(args, action)


def _cmd_command(args: argparse.Namespace, action_name: str) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        if args.dry_run == DRY_CLIENT:
            sys.stdout.write(show(await job_command(client, namespace, args.name, action_name)))
            return
        made = await command_job(client, namespace, args.name, action_name, query=dry_run_query(args.dry_run))
        print(created(COMMAND_RESOURCE, made, args.dry_run))

    return run_action(args, action)


def cmd_suspend(args: argparse.Namespace) -> int:
    return _cmd_command(args, ABORT_JOB)


def cmd_resume(args: argparse.Namespace) -> int:
    return _cmd_command(args, RESUME_JOB)


def cmd_delete(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        await delete_job(client, namespace, args.name)
        print(f'{JOB_RESOURCE} "{args.name}" deleted')

    return run_action(args, action)
