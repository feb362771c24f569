"""The flags of ``pumice manifests`` (see :mod:`extender.deploy.cli`, which runs the command).

Only the parser and its value checks: building it imports none of the manifests' generators, so
``pumice --help`` and every other command start without them; the command's implementation is imported
when it runs. Values are checked here, so a malformed flag is an argparse usage
error (exit 2) before anything is generated.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from extender.api import versions
from extender.api.labels import DEFAULT_SCHEDULER_NAME
from extender.api.versions import DEFAULT_VERSION, KubernetesVersion
from extender.deploy.names import DEFAULT_NAMESPACE, WEBHOOK_SERVICE_PORT, scheduler_tls_secret
from extender.deploy.scheduler_config import (
    DEFAULT_EXTENDER_WEIGHT,
    DEFAULT_HTTP_TIMEOUT_SECONDS,
    SUPPORTED_API_VERSIONS,
)

if TYPE_CHECKING:
    from extender.deploy.webhooks import WebhookBuilder

_API_GROUP = "kubescheduler.config.k8s.io/"

# The release of the cluster a kubeconfig points at; raises ClusterUnreachable when the cluster cannot be
# asked, ValueError when its answer names no version (controllers.kube.version.cluster_version).
VersionReader = Callable[[str], KubernetesVersion]


def _api_version(value: str) -> str:
    """Accept ``kubescheduler.config.k8s.io/v1beta3`` or just ``v1beta3``."""
    full = value if "/" in value else _API_GROUP + value
    if full not in SUPPORTED_API_VERSIONS:
        choices = ", ".join(v.removeprefix(_API_GROUP) for v in SUPPORTED_API_VERSIONS)
        raise argparse.ArgumentTypeError(f"unsupported version {value!r} (choose from {choices})")
    return full


def _kubernetes_version(value: str) -> KubernetesVersion:
    try:
        return versions.check_supported(versions.parse_version(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_version_flags(parser: argparse.ArgumentParser, *, from_cluster: bool) -> None:
    """``--kubernetes-version`` and, where ``--kubeconfig`` is free for it, reading it from the cluster."""
    target = parser.add_mutually_exclusive_group() if from_cluster else parser
    where = ", or the cluster's own with --kubeconfig" if from_cluster else ""
    target.add_argument(
        "--kubernetes-version",
        type=_kubernetes_version,
        metavar="VERSION",
        help="the cluster's Kubernetes release, e.g. 1.24 or v1.28.7 (1.22 or later): the output is what it "
        f"accepts. Default: {DEFAULT_VERSION}, the newest release pumice is tested against{where}",
    )
    if from_cluster:
        target.add_argument(
            "--kubeconfig",
            dest="cluster_kubeconfig",
            metavar="PATH",
            help="read the Kubernetes release from this cluster's /version (nothing else is read or written)",
        )


def _http_url(value: str) -> str:
    url = urlsplit(value)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise argparse.ArgumentTypeError(f"{value!r} is not an absolute http:// or https:// URL")
    return value


def _namespaced_name(value: str) -> tuple[str, str]:
    namespace, sep, name = value.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"{value!r} is not NAMESPACE/NAME")
    return namespace, name


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be positive")
    return number


def default_image() -> str:
    """``pumice:<the installed pumice's version>``. Asked when a deploy is rendered, not when the parser is
    built: reading the installed distributions takes a CLI command's start-up 40 ms."""
    from importlib import metadata

    try:
        return f"pumice:{metadata.version('pumice')}"
    except metadata.PackageNotFoundError:
        return "pumice:latest"


def add_manifests_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    cluster_version: VersionReader,
    webhook_configurations: WebhookBuilder | None,
) -> argparse.ArgumentParser:
    """Add ``manifests`` and its sub-commands; parsed args carry ``func``, :func:`run_manifests` bound to
    ``cluster_version`` (for ``--kubeconfig``) and
    ``webhook_configurations`` (None: a build without webhooks, where ``webhooks`` fails and ``deploy``
    leaves them out)."""
    parser = subparsers.add_parser(
        "manifests",
        help="print YAML manifests (CRDs, scheduler config, webhooks, full deployment)",
        description="Print Kubernetes manifests as multi-document YAML, for `kubectl apply -f -`.",
    )
    parser.set_defaults(
        func=functools.partial(
            run_manifests, cluster_version=cluster_version, webhook_configurations=webhook_configurations
        )
    )
    commands = parser.add_subparsers(dest="manifests_command", metavar="WHAT", required=True)

    crds = commands.add_parser("crds", help="Volcano-compatible CustomResourceDefinitions")

    config = commands.add_parser(
        "scheduler-config",
        help="a KubeSchedulerConfiguration whose extender is pumice",
        description="A KubeSchedulerConfiguration for a kube-scheduler that delegates to pumice. With leader "
        "election on, its lease is pumice-kube-scheduler: the scheduler's RBAC must allow it (see `deploy`). "
        "An http:// extender URL is plain HTTP (fine on loopback); an https:// one needs --tls-ca-file, and "
        "a pumice deployed by `deploy` also needs the client certificate: its files are in the Secret "
        f"{scheduler_tls_secret()} in pumice's namespace. The TLS paths are where kube-scheduler finds "
        "the files (absolute paths on its host); they are not read here.",
    )
    config.add_argument(
        "--extender-url", required=True, type=_http_url, help="pumice's extender URL (http:// or https://)"
    )
    _add_version_flags(config, from_cluster=False)
    config.add_argument(
        "--api-version",
        type=_api_version,
        help="v1 (Kubernetes >= 1.25), v1beta3 (1.23-1.28) or v1beta2 (1.22-1.27); default: the newest the "
        "--kubernetes-version reads (v1 from 1.25, v1beta3 in 1.23 and 1.24, v1beta2 in 1.22)",
    )
    config.add_argument(
        "--kubeconfig",
        help="kubeconfig path for the scheduler, written into its config (default: in-cluster); not read",
    )
    config.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME, help="default %(default)s")
    config.add_argument(
        "--with-default-profile",
        action="store_true",
        help="also serve pods of the default-scheduler profile (replaces the cluster's scheduler)",
    )
    config.add_argument("--no-leader-elect", dest="leader_elect", action="store_false")
    config.add_argument(
        "--bind-verb",
        action="store_true",
        help="delegate binding to pumice's /bind (default: kube-scheduler binds, pumice watches)",
    )
    config.add_argument(
        "--lease-namespace", help="namespace of the leader-election lease (default kube-system)"
    )
    config.add_argument(
        "--weight", type=_positive_int, default=DEFAULT_EXTENDER_WEIGHT, help="default %(default)s"
    )
    config.add_argument(
        "--http-timeout-seconds",
        type=_positive_int,
        default=DEFAULT_HTTP_TIMEOUT_SECONDS,
        help="default %(default)s",
    )
    tls = config.add_argument_group("extender TLS (https:// URLs)")
    tls.add_argument("--tls-ca-file", metavar="PATH", help="PEM CA that signed pumice's serving certificate")
    tls.add_argument(
        "--tls-client-cert-file", metavar="PATH", help="PEM client certificate kube-scheduler presents"
    )
    tls.add_argument("--tls-client-key-file", metavar="PATH", help="its PEM private key")
    tls.add_argument(
        "--tls-server-name",
        metavar="NAME",
        help="name to check pumice's certificate against, when the URL's host is not one of its names",
    )

    webhooks = commands.add_parser(
        "webhooks",
        help="admission webhook configurations",
        description="Mutating and validating webhook configurations pointing at pumice, either by URL "
        "(pumice outside the cluster; needs --ca-file) or by Service (caBundle left for pumice to patch in "
        "at startup). Only what the Kubernetes release accepts: the pod webhooks need matchConditions "
        "(1.28) and the gating one also scheduling gates (1.27); older releases get neither.",
    )
    target = webhooks.add_mutually_exclusive_group(required=True)
    target.add_argument("--url-base", type=_http_url, help="e.g. https://10.0.0.5:8443")
    target.add_argument(
        "--service", type=_namespaced_name, metavar="NS/NAME", help="e.g. volcano-system/pumice"
    )
    webhooks.add_argument("--ca-file", help="PEM CA bundle that signed pumice's serving certificate")
    webhooks.add_argument(
        "--port", type=_positive_int, default=WEBHOOK_SERVICE_PORT, help="Service port; default %(default)s"
    )
    webhooks.add_argument(
        "--scheduler-name",
        dest="scheduler_names",
        action="append",
        metavar="NAME",
        help=f"pods of this scheduler reach the pod webhooks (repeatable); default {DEFAULT_SCHEDULER_NAME}",
    )
    _add_version_flags(webhooks, from_cluster=True)

    deploy = commands.add_parser(
        "deploy",
        help="everything: RBAC, pumice, a second kube-scheduler, webhooks",
        description="Namespace, RBAC, pumice's Deployment and Service, a stock kube-scheduler configured to "
        "call it, the webhook configurations, and ClusterRoles that give the built-in view/edit/admin roles "
        "pumice's kinds. Install the CRDs first (`pumice manifests crds`). Both Deployments run two "
        "leader-elected replicas. kube-scheduler and pumice's extender talk mutual TLS. No certificate or "
        "key is printed: pumice creates its CA and certificates at start-up in Secrets of its namespace "
        "(pumice-ca, pumice-webhook-tls, pumice-extender-tls, pumice-kube-scheduler-tls; every replica uses "
        "the same ones) unless they exist, so the same arguments print the same output and re-applying it "
        "restarts nothing. Everything is generated for one Kubernetes release (--kubernetes-version or "
        "--kubeconfig): the webhooks it accepts, the scheduler config it reads and a kube-scheduler image of "
        "that release.",
    )
    deploy.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="default %(default)s")
    deploy.add_argument("--image", help="pumice image; default pumice:VERSION, this pumice's version")
    _add_version_flags(deploy, from_cluster=True)
    deploy.add_argument(
        "--scheduler-image",
        help=f"default: {versions.SCHEDULER_IMAGE_REPOSITORY} of the Kubernetes release (v1.N.0 when only "
        f"1.N is given; {versions.scheduler_image(DEFAULT_VERSION)} by default)",
    )
    deploy.add_argument(
        "--api-version",
        type=_api_version,
        help="KubeSchedulerConfiguration version the scheduler image reads; default: the newest the "
        "Kubernetes release reads (v1 from 1.25, v1beta3 in 1.23 and 1.24, v1beta2 in 1.22)",
    )
    deploy.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME, help="default %(default)s")
    deploy.add_argument(
        "--no-network-policy",
        dest="network_policy",
        action="store_false",
        help="omit the NetworkPolicy that lets only our kube-scheduler reach the extender port",
    )
    deploy.add_argument("--no-webhooks", dest="webhooks", action="store_false")
    deploy.add_argument(
        "--extender-plain-http",
        action="store_true",
        help="kube-scheduler calls the extender over plain HTTP (as before mutual TLS); only the "
        "NetworkPolicy then keeps other pods from calling it (the webhooks keep their certificates)",
    )

    # Errors found after parsing are reported with the usage of the sub-command that caused them.
    for command in (crds, config, webhooks, deploy):
        command.set_defaults(manifests_parser=command)
    return parser


def run_manifests(
    args: argparse.Namespace,
    *,
    cluster_version: VersionReader,
    webhook_configurations: WebhookBuilder | None,
) -> int:
    """Print the manifests ``args`` ask for (:func:`extender.deploy.cli.print_manifests`, imported when the
    command runs, so the parser alone stays cheap to build); the exit status."""
    from extender.deploy.cli import print_manifests

    return print_manifests(
        args, cluster_version=cluster_version, webhook_configurations=webhook_configurations
    )
