"""The flags ``pumice``'s CLI commands share, spelled as kubectl spells them where the meaning is the same.

``--kubeconfig``, ``--context``, ``-n/--namespace``, ``-A/--all-namespaces`` (each list's own),
``-o/--output`` (``yaml|json|wide|name|jsonpath=TEMPLATE``), ``-l/--selector``, ``-w/--watch`` and
``--dry-run=client|server`` on the commands that create something: ``client`` prints the object that
would be sent and sends nothing, ``server`` sends it with ``dryRun=All`` (the API server and its admission
webhooks check it; nothing is stored). Values are parsed and checked here, so a malformed flag is an
argparse usage error (exit 2) before anything talks to the cluster. Light on purpose: imported whenever
the parser is built.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Final

from controllers.cli import output
from extender.core.quantity import parse_quantity

# --dry-run's values, as kubectl's: none (the default: really do it), client, server.
DRY_NONE: Final = "none"
DRY_CLIENT: Final = "client"
DRY_SERVER: Final = "server"


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


def int_at_least(minimum: int) -> Callable[[str], int]:
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


def common(namespaced: bool) -> argparse.ArgumentParser:
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


def output_flag(p: argparse.ArgumentParser, choices: tuple[str, ...], *, many: bool = False) -> None:
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


def name_flags(p: argparse.ArgumentParser, what: str, *, short_n: bool = False) -> None:
    """NAME as a positional argument (kubectl) or ``-N/--name`` (vcctl; also ``-n`` when ``short_n``),
    exactly one of them; either way it lands in ``args.name``."""
    named = p.add_mutually_exclusive_group(required=True)
    # SUPPRESS: an absent positional must not overwrite the name a flag gave.
    named.add_argument("name", nargs="?", default=argparse.SUPPRESS, metavar="NAME", help=f"the {what}")
    flags = ("-N", "--name", "-n") if short_n else ("-N", "--name")
    named.add_argument(*flags, dest="name", metavar="NAME", help="the same, as a flag (vcctl's spelling)")


def selector(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-l", "--selector", default=None, help="only objects with these labels (e.g. app=x,tier!=db)"
    )


def list_flags(p: argparse.ArgumentParser) -> None:
    selector(p)
    p.add_argument("-w", "--watch", action="store_true", help="after listing, print each change until Ctrl-C")
    p.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="with --watch: stop after this many seconds (default: never)",
    )


def seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{value} must be above 0")
    return number


def dry_run(p: argparse.ArgumentParser) -> None:
    """``--dry-run[=client|server]`` (bare ``--dry-run`` is ``client``, as kubectl's old spelling)."""
    p.add_argument(
        "--dry-run",
        nargs="?",
        const=DRY_CLIENT,
        default=DRY_NONE,
        choices=(DRY_NONE, DRY_CLIENT, DRY_SERVER),
        metavar="none|client|server",
        help="client: print the object that would be sent, send nothing; server: send it with dryRun=All "
        "(validated and admitted by the API server, not stored); none: do it (default)",
    )


def dry_run_query(mode: str) -> list[tuple[str, str]] | None:
    """The query a create sends: ``dryRun=All`` for ``--dry-run=server``."""
    return [("dryRun", "All")] if mode == DRY_SERVER else None


def created(resource: str, obj: Mapping[str, object], mode: str) -> str:
    """kubectl's confirmation line: ``<resource>/<name> created``, marked for a server dry run."""
    meta = obj.get("metadata")
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    return f"{resource}/{name} created" + (" (server dry run)" if mode == DRY_SERVER else "")


def show(obj: Mapping[str, object]) -> str:
    """What ``--dry-run=client`` prints: the object that would be sent, as YAML."""
    return output.dump(obj, "yaml")
