"""``pumice manifests``: print the YAML that installs pumice, for ``kubectl apply -f -``.

Sub-commands: ``crds`` (Volcano-compatible CRDs), ``scheduler-config`` (a KubeSchedulerConfiguration for a
scheduler you run yourself), ``webhooks`` (admission webhook configurations), ``deploy`` (everything: RBAC,
pumice, a second kube-scheduler, webhooks). Output is multi-document YAML on stdout and nothing else; bad
arguments end in an argparse usage error (exit 2); a cluster that cannot tell its release, or ``webhooks`` in
a build without a webhook builder, in a one-line error (exit 1).

``deploy`` prints no certificate or key (pumice makes them at start-up, see the certificate contract in
:mod:`extender.deploy.names`): the same arguments print the same output, and it holds nothing secret.

Kubernetes version: ``scheduler-config``, ``webhooks`` and ``deploy`` generate for one release
(``--kubernetes-version``, default :data:`extender.api.versions.DEFAULT_VERSION`); ``webhooks`` and ``deploy``
can instead read it from a cluster's ``/version`` (``--kubeconfig``), the only call to a cluster a command
makes. ``scheduler-config`` cannot: its ``--kubeconfig`` already names the file kube-scheduler reads, on its
host.

Dependencies come in through :func:`extender.deploy.args.add_manifests_parser` (the flags), from the
composition root (:mod:`extender.main`): the reader of a cluster's ``/version`` (I/O, which lives in
``controllers.kube``) and the builder of the webhook configurations (``admission.webhooks``). This package
imports neither.
"""

import argparse
import posixpath
import sys
from urllib.parse import urlsplit

from extender.api import crds, versions
from extender.api.labels import DEFAULT_SCHEDULER_NAME
from extender.api.versions import DEFAULT_VERSION, ClusterUnreachable, KubernetesVersion
from extender.deploy import yamltext
from extender.deploy.args import VersionReader, default_image
from extender.deploy.manifests import deploy_manifests
from extender.deploy.scheduler_config import ExtenderTLS, scheduler_config, scheduler_config_yaml
from extender.deploy.webhooks import WebhookBuilder, webhook_manifests


def print_manifests(
    args: argparse.Namespace,
    *,
    cluster_version: VersionReader,
    webhook_configurations: WebhookBuilder | None,
) -> int:
    """Print the manifests ``args`` ask for to stdout; 0 on success, 1 when the cluster cannot tell its
    release or there is no webhook builder for ``webhooks``."""
    parser: argparse.ArgumentParser = args.manifests_parser
    command: str = args.manifests_command
    if command == "crds":
        return _print_crds()
    version = _target_version(args, cluster_version)
    if version is None:
        return 1
    try:
        if command == "scheduler-config":
            config = scheduler_config(
                extender_url=args.extender_url,
                api_version=args.api_version or versions.scheduler_config_api_versions(version)[0],
                kubeconfig=args.kubeconfig,
                scheduler_name=args.scheduler_name,
                with_default_profile=args.with_default_profile,
                leader_elect=args.leader_elect,
                weight=args.weight,
                http_timeout_seconds=args.http_timeout_seconds,
                lease_namespace=args.lease_namespace,
                bind_verb=args.bind_verb,
                tls=_extender_tls(parser, args),
            )
            sys.stdout.write("---\n" + scheduler_config_yaml(config))
            return 0
        if command == "webhooks":
            return _print_webhooks(parser, args, version, webhook_configurations)
        if command == "deploy":
            docs = deploy_manifests(
                namespace=args.namespace,
                image=args.image or default_image(),
                mutual_tls=not args.extender_plain_http,
                webhook_configurations=webhook_configurations if args.webhooks else None,
                kubernetes_version=version,
                scheduler_image=args.scheduler_image,
                scheduler_name=args.scheduler_name,
                api_version=args.api_version,
                network_policy=args.network_policy,
            )
            sys.stdout.write(yamltext.dump_all(docs))
            return 0
    except ValueError as exc:
        parser.error(str(exc))
    parser.error(f"unknown manifests command {command!r}")
    return 2  # parser.error exits; ruff cannot tell


def _target_version(args: argparse.Namespace, cluster_version: VersionReader) -> KubernetesVersion | None:
    """The release to generate for: ``--kubernetes-version``, else the ``--kubeconfig`` cluster's, else the
    default. None, with the reason on stderr, when the cluster cannot tell or is too old."""
    given: KubernetesVersion | None = args.kubernetes_version
    if given is not None:
        return given
    kubeconfig: str | None = getattr(args, "cluster_kubeconfig", None)
    if not kubeconfig:
        return DEFAULT_VERSION
    prefix = f"pumice manifests {args.manifests_command}"
    try:
        return versions.check_supported(cluster_version(kubeconfig))
    except ClusterUnreachable as exc:
        print(f"{prefix}: cannot read the Kubernetes version from {kubeconfig}: {exc}", file=sys.stderr)
    except ValueError as exc:
        print(f"{prefix}: {exc}", file=sys.stderr)
    return None


def _extender_tls(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ExtenderTLS | None:
    """The ``tlsConfig`` the flags ask for, or None for plain HTTP; usage errors for what cannot work."""
    files = {
        "--tls-ca-file": args.tls_ca_file,
        "--tls-client-cert-file": args.tls_client_cert_file,
        "--tls-client-key-file": args.tls_client_key_file,
    }
    given = [flag for flag, value in (*files.items(), ("--tls-server-name", args.tls_server_name)) if value]
    if urlsplit(args.extender_url).scheme != "https":
        if given:
            parser.error(f"{', '.join(given)}: TLS settings need an https:// --extender-url")
        return None
    if not args.tls_ca_file:
        parser.error(
            "--extender-url is https:// but --tls-ca-file is missing: without a CA kube-scheduler does not "
            "verify pumice's certificate at all"
        )
    if bool(args.tls_client_cert_file) != bool(args.tls_client_key_file):
        parser.error("--tls-client-cert-file and --tls-client-key-file go together")
    for flag, path in files.items():
        if path and not posixpath.isabs(path):
            parser.error(
                f"{flag} {path!r} must be an absolute path on kube-scheduler's host (a relative one would be "
                "resolved against its working directory)"
            )
    return ExtenderTLS(
        ca_file=args.tls_ca_file,
        cert_file=args.tls_client_cert_file or None,
        key_file=args.tls_client_key_file or None,
        server_name=args.tls_server_name or None,
    )


def _print_crds() -> int:
    text = crds.crd_yaml()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _print_webhooks(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    version: KubernetesVersion,
    builder: WebhookBuilder | None,
) -> int:
    ca_bundle = b""
    if args.ca_file is not None:
        try:
            with open(args.ca_file, "rb") as handle:
                ca_bundle = handle.read()
        except OSError as exc:
            parser.error(f"--ca-file: cannot read {args.ca_file}: {exc.strerror}")
        if not ca_bundle.strip():
            parser.error(f"--ca-file: {args.ca_file} is empty")
    elif args.url_base is not None:
        parser.error("--url-base needs --ca-file (nothing patches a caBundle into URL webhooks)")
    if builder is None:
        print("pumice manifests webhooks: admission.webhooks is not available in this build", file=sys.stderr)
        return 1
    configs = webhook_manifests(
        builder,
        ca_bundle=ca_bundle,
        url_base=args.url_base,
        service=args.service,
        port=args.port,
        kubernetes_version=version,
        scheduler_names=args.scheduler_names or [DEFAULT_SCHEDULER_NAME],
    )
    sys.stdout.write(yamltext.dump_all(configs))
    return 0
