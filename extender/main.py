"""The ``pumice`` command: one parser for every sub-command, and the dispatch to the one that runs.

The entry point (``pumice = "extender.main:main"``) and the head of the composition root, the only modules
that import the extender, admission and controllers packages together: this one, :mod:`extender.serve_args`
(``serve``'s flags), :mod:`extender.serve` (the process ``serve`` runs), :mod:`extender.wiring` (the objects
it builds) and :mod:`extender.families` (its metric families). Nothing else imports any of them.

Start-up cost is the invariant here: building the parser imports only the parser definitions (argparse,
constants, value checks), never an implementation. A command's implementation is imported when it runs, by
a plain import inside the function that runs it (import-linter sees it; nothing is imported by name), so
``pumice --help`` and ``pumice job list`` load neither the server, admission, the scheduler nor numpy.
``--version`` reads the package's metadata only when asked; ``completion`` imports shtab only when it runs.

The same parser serves ``kubectl pumice ...`` (the ``kubectl-pumice`` console script kubectl finds on
``PATH``: :func:`kubectl_main`), named so in its help and usage.
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


class _Version(argparse.Action):
    """``--version``: the installed package's version, read only when the flag is given."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print pumice's version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("pumice")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


SHELLS = ("bash", "zsh", "fish")


def build_parser(prog: str = "pumice") -> argparse.ArgumentParser:
    """The whole command line, every sub-command included; builds without importing an implementation."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Volcano-style batch scheduling for stock Kubernetes"
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    add_serve_parser(sub)
    add_manifests_parser(
        sub, cluster_version=_cluster_version, webhook_configurations=_webhook_configurations
    )
    add_cli_parsers(sub)
    add_simulate_parser(sub)
    sub.add_parser("version", help="print the version")
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description="Print a completion script for SHELL. bash: `source <(pumice completion bash)` (or save "
        "it in /etc/bash_completion.d/); zsh: save it as _pumice in a directory of $fpath; fish: "
        "`pumice completion fish > ~/.config/fish/completions/pumice.fish`.",
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    return parser


def _completion(parser: argparse.ArgumentParser, shell: str) -> str:
    import shtab

    return str(shtab.complete(parser, shell=shell))


def main(argv: list[str] | None = None, *, prog: str = "pumice") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.command == "version":
        print(_version())
        return 0
    if args.command == "completion":
        # Always for the `pumice` command (kubectl completes its plugins through kubectl_complete-* itself).
        sys.stdout.write(_completion(parser if prog == "pumice" else build_parser(), args.shell))
        return 0
    if args.command != "serve":  # every other sub-command (manifests, job, queue, jobflow, ...) runs itself
        return int(args.func(args))
    settings = serve_settings(args, parser)
    from extender.serve import run

    return run(settings)


def kubectl_main() -> int:
    """``kubectl pumice ...``: kubectl runs the ``kubectl-pumice`` executable it finds on PATH."""
    return main(prog="kubectl pumice")


if __name__ == "__main__":
    sys.exit(main())
