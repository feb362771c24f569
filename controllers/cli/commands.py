"""The entry point of every ``pumice`` CLI command, as the parser (:mod:`controllers.cli.parser`) names it.

Each imports its implementation when the command runs, by a plain import inside the function (import-linter
sees it; nothing is imported by name), so building the parser imports no implementation: ``pumice --help``
loads none of them, and ``pumice job list`` only what listing jobs needs (not numpy, not the scheduler,
which ``job why`` and ``queue list`` need). Every function returns the command's exit code.
"""

from __future__ import annotations

import argparse


def job_run(args: argparse.Namespace) -> int:
    from controllers.cli.jobs import cmd_run

    return cmd_run(args)


def job_list(args: argparse.Namespace) -> int:
    from controllers.cli.jobs import cmd_list

    return cmd_list(args)


def job_view(args: argparse.Namespace) -> int:
    from controllers.cli.explain import cmd_view

    return cmd_view(args)


def job_why(args: argparse.Namespace) -> int:
    from controllers.cli.explain import cmd_why

    return cmd_why(args)


def job_suspend(args: argparse.Namespace) -> int:
    from controllers.cli.jobs import cmd_suspend

    return cmd_suspend(args)


def job_resume(args: argparse.Namespace) -> int:
    from controllers.cli.jobs import cmd_resume

    return cmd_resume(args)


def job_delete(args: argparse.Namespace) -> int:
    from controllers.cli.jobs import cmd_delete

    return cmd_delete(args)


def queue_create(args: argparse.Namespace) -> int:
    from controllers.cli.queues import cmd_create

    return cmd_create(args)


def queue_list(args: argparse.Namespace) -> int:
    from controllers.cli.queues import cmd_list

    return cmd_list(args)


def queue_pending(args: argparse.Namespace) -> int:
    from controllers.cli.pending import cmd_pending

    return cmd_pending(args)


def queue_get(args: argparse.Namespace) -> int:
    from controllers.cli.queues import cmd_get

    return cmd_get(args)


def queue_operate(args: argparse.Namespace) -> int:
    from controllers.cli.queues import cmd_operate

    return cmd_operate(args)


def queue_delete(args: argparse.Namespace) -> int:
    from controllers.cli.queues import cmd_delete

    return cmd_delete(args)


def flow_list(args: argparse.Namespace) -> int:
    from controllers.cli.flows import cmd_flow_list

    return cmd_flow_list(args)


def flow_get(args: argparse.Namespace) -> int:
    from controllers.cli.flows import cmd_flow_get

    return cmd_flow_get(args)


def flow_delete(args: argparse.Namespace) -> int:
    from controllers.cli.flows import cmd_flow_delete

    return cmd_flow_delete(args)


def template_list(args: argparse.Namespace) -> int:
    from controllers.cli.flows import cmd_template_list

    return cmd_template_list(args)


def template_get(args: argparse.Namespace) -> int:
    from controllers.cli.flows import cmd_template_get

    return cmd_template_get(args)


def cron_list(args: argparse.Namespace) -> int:
    from controllers.cli.flows import cmd_cron_list

    return cmd_cron_list(args)


def cron_get(args: argparse.Namespace) -> int:
    from controllers.cli.flows import cmd_cron_get

    return cmd_cron_get(args)


def hypernode_list(args: argparse.Namespace) -> int:
    from controllers.cli.hypernodes import cmd_list

    return cmd_list(args)


def hypernode_get(args: argparse.Namespace) -> int:
    from controllers.cli.hypernodes import cmd_get

    return cmd_get(args)
