"""The ``pumice`` command: one parser for every sub-command, and the dispatch to the one that runs.

The entry point (``pumice = "extender.main:main"``) and the head of the composition root, the only modules
that import the extender, admission and controllers packages together: this one, :mod:`extender.serve_args`
(``serve``'s flags), :mod:`extender.serve` (the process ``serve`` runs), :mod:`extender.wiring` (the objects
it builds) and :mod:`extender.families` (its metric families). Nothing else imports any of them.

Start-up cost is the invariant here: building the parser imports only the parser definitions (argparse,
constants, value checks), never an implementation. A command's implementation is imported when it runs, by
a plain import inside the function that runs it (import-linter sees it; nothing is imported by name), so
``pumice --help`` and ``pumice job list`` load neither the server, admission, the scheduler nor numpy.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from controllers.cli.parser import add_cli_parsers
from controllers.simulate.args import add_simulate_parser
from extender.api.versions import KubernetesVersion
from extender.deploy.args import add_manifests_parser
from extender.serve_args import add_serve_parser, serve_settings


def _cluster_version(kubeconfig: str) -> KubernetesVersion:
    """The release of a kubeconfig's cluster, for ``manifests --kubeconfig`` (controllers.kube.version)."""
    from controllers.kube.version import cluster_version

    return cluster_version(kubeconfig)


def _webhook_configurations(
    *,
    ca_bundle: bytes,
    url_base: str | None,
    service: tuple[str, str] | None,
    port: int,
    scheduling_gates: bool,
    match_conditions: bool,
    scheduler_names: Sequence[str],
) -> list[dict[str, Any]]:
    """admission.webhooks' builder of the webhook configurations, for ``manifests webhooks|deploy``
    (an extender.deploy.manifests.WebhookBuilder)."""
    from admission.webhooks import webhook_configurations

    return webhook_configurations(
        ca_bundle=ca_bundle,
        url_base=url_base,
        service=service,
        port=port,
        scheduling_gates=scheduling_gates,
        match_conditions=match_conditions,
        scheduler_names=scheduler_names,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pumice", description="Volcano-style batch scheduling for stock Kubernetes"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_serve_parser(sub)
    add_manifests_parser(
        sub, cluster_version=_cluster_version, webhook_configurations=_webhook_configurations
    )
    add_cli_parsers(sub)
    add_simulate_parser(sub)
    sub.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        from importlib import metadata

        print(metadata.version("pumice"))
        return 0
    if args.command != "serve":  # every other sub-command (manifests, job, queue, jobflow, ...) runs itself
        return int(args.func(args))
    settings = serve_settings(args, parser)
    from extender.serve import run

    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
