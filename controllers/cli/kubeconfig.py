"""Where a CLI command finds its cluster and namespace, how it runs, lists, and reports errors.

Lookup order is kubectl's, not ``pumice serve``'s: ``--kubeconfig``, else ``$KUBECONFIG`` (``:``-separated,
merged by :mod:`controllers.kube.kubeconfig` as kubectl merges them), else ``~/.kube/config``, else the
in-cluster service account. The default namespace is ``-n``, else the current context's ``namespace``,
else the service account's namespace in a cluster, else ``default``. ``--context``
picks another context of the kubeconfig, for the cluster and the default namespace alike.

Every command ends in an exit code: 0 done, 1 the cluster said no or could not be reached (one line
``pumice: <why>`` on stderr, the API server's own message when it sent one), 2 a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import yaml

from controllers.cli.errors import CliError, UsageError
from controllers.kube.client import ApiError, KubeClient
from controllers.kube.kubeconfig import KubeConfigError, load_config, merge

Obj = dict[str, Any]

DEFAULT_NAMESPACE: Final = "default"
LIST_CHUNK: Final = "500"
SERVICE_ACCOUNT_NAMESPACE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")

Action = Callable[[KubeClient, str], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    kubeconfig: str | None  # what load_config takes; None means the in-cluster service account
    namespace: str
    context: str | None = None  # --context: a kubeconfig context other than the current one


def kubeconfig_paths(explicit: str | None, environ: Mapping[str, str], home: Path) -> list[Path]:
    """The kubeconfig files to read, in merge order."""
    if explicit:
        return [Path(explicit).expanduser()]
    env = environ.get("KUBECONFIG", "")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [home / ".kube" / "config"]


def context_namespace(docs: Sequence[Mapping[str, Any]], context: str | None = None) -> str | None:
    """The namespace of ``context`` (default: the current context) across merged kubeconfig files.

    Merged as the cluster loader merges them (:func:`controllers.kube.kubeconfig.merge`, kubectl's rules:
    the first file that sets ``current-context`` chooses the context, and the first file that defines a
    context name owns it), so the namespace and the cluster come from one context. A ``context`` no file
    defines is a KubeConfigError, as kubectl's ``context "x" does not exist``.
    """
    config = merge([(Path(), doc) for doc in docs])
    current = context or config.current_context
    if not current:
        return None
    entry = config.contexts.get(current)
    if entry is None:
        if context:
            raise KubeConfigError(f'context "{context}" does not exist in the kubeconfig')
        return None
    namespace = entry.body.get("namespace")
    return str(namespace) if namespace else None


def _read_kubeconfig(path: Path) -> Mapping[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise KubeConfigError(f"cannot read kubeconfig {path}: {e}") from None
    return doc if isinstance(doc, Mapping) else {}


def resolve_target(
    kubeconfig: str | None,
    namespace: str | None,
    *,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    context: str | None = None,
) -> Target:
    env = os.environ if environ is None else environ
    paths = [p for p in kubeconfig_paths(kubeconfig, env, home or Path.home()) if p.is_file()]
    if kubeconfig and not paths:
        raise KubeConfigError(f"kubeconfig {kubeconfig} does not exist")
    if paths:
        docs = [_read_kubeconfig(p) for p in paths]
        return Target(
            kubeconfig=os.pathsep.join(str(p) for p in paths),
            namespace=namespace or context_namespace(docs, context) or DEFAULT_NAMESPACE,
            context=context,
        )
    if env.get("KUBERNETES_SERVICE_HOST"):
        if context:
            raise KubeConfigError(f"--context {context} needs a kubeconfig; in a pod there is none")
        try:
            in_cluster = SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
        except OSError:
            in_cluster = ""
        return Target(kubeconfig=None, namespace=namespace or in_cluster or DEFAULT_NAMESPACE)
    raise KubeConfigError(
        "no cluster credentials: pass --kubeconfig, set $KUBECONFIG or create ~/.kube/config"
    )


def api_error_message(err: ApiError) -> str:
    """What the API server said, as kubectl shows it; a hint when the resource does not exist at all."""
    body = err.body
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    if err.status == 404:
        # A bare 404 (no Status body) means the path is unknown: usually the CRDs are not installed.
        request = str(err).split(": HTTP ", 1)[0]
        return f"the server could not find the requested resource ({request}); are the CRDs installed?"
    return str(err)


def selector_query(selector: str | None) -> list[tuple[str, str]]:
    """``-l``: the API server filters by labels (kubectl's selector syntax, checked by the server)."""
    return [("labelSelector", selector)] if selector else []


async def list_all(client: KubeClient, path: str, query: list[tuple[str, str]] | None = None) -> list[Obj]:
    """Every item of a collection, fetched in chunks as kubectl does so a big list cannot time out."""
    return (await list_versioned(client, path, query))[0]


async def list_versioned(
    client: KubeClient, path: str, query: list[tuple[str, str]] | None = None
) -> tuple[list[Obj], str]:
    """The items and the list's resourceVersion (where a watch of the same collection starts)."""
    items: list[Obj] = []
    token = ""
    while True:
        params = [*(query or []), ("limit", LIST_CHUNK)]
        if token:
            params.append(("continue", token))
        page = await client.get(path, params)
        items += [i for i in page.get("items") or [] if isinstance(i, dict)]
        meta = page.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        token = str(meta.get("continue") or "")
        if not token:
            return items, str(meta.get("resourceVersion") or "")


async def _with_client(target: Target, action: Action) -> None:
    client = KubeClient(await load_config(target.kubeconfig, target.context), pool=4)
    try:
        await action(client, target.namespace)
    finally:
        await client.close()


def run_action(args: argparse.Namespace, action: Action) -> int:
    """Run one command against the cluster the flags name; the exit code for ``main``."""
    try:
        target = resolve_target(
            args.kubeconfig, getattr(args, "namespace", None), context=getattr(args, "context", None)
        )
        asyncio.run(_with_client(target, action))
    except UsageError as e:
        print(f"pumice: error: {e}", file=sys.stderr)
        return 2
    except ApiError as e:
        print(f"pumice: {api_error_message(e)}", file=sys.stderr)
        return 1
    except (KubeConfigError, CliError) as e:
        print(f"pumice: {e}", file=sys.stderr)
        return 1
    except (aiohttp.ClientError, TimeoutError, OSError) as e:
        print(f"pumice: cannot reach the API server: {e or type(e).__name__}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C, the usual end of a --watch: no traceback
        return 130
    return 0
