"""The API server's Kubernetes release, from its ``/version``: for ``pumice serve`` and ``pumice manifests``.

:func:`server_version` asks through a client ``serve`` already holds; :func:`cluster_version` is the whole
round trip for a one-shot command (load a kubeconfig, one GET, close), on an event loop of its own. The
composition root hands the latter to the deploy CLI (``pumice manifests ... --kubeconfig``), which must not
talk to a cluster itself; the answer is decoded by :func:`extender.api.versions.version_from_info`, the same
rule ``serve`` applies.
"""

from __future__ import annotations

import asyncio
from typing import Final

import aiohttp

from controllers.kube.client import ApiError, KubeClient
from controllers.kube.kubeconfig import KubeConfigError, load_config
from extender.api.versions import ClusterUnreachable, KubernetesVersion, version_from_info

# Reading /version is one small GET; a cluster that cannot answer it in this time is not one to deploy to.
VERSION_TIMEOUT_SECONDS: Final = 15.0


async def server_version(client: KubeClient) -> KubernetesVersion:
    """The API server's release from its ``/version``; ApiError or ValueError when it cannot be read."""
    return version_from_info(await client.get("/version"))


def cluster_version(kubeconfig: str, *, timeout: float = VERSION_TIMEOUT_SECONDS) -> KubernetesVersion:
    """The release of the cluster ``kubeconfig`` points at. Runs its own event loop, so it is for callers
    outside one (a CLI command). ClusterUnreachable when the cluster cannot be asked (no usable kubeconfig,
    no connection, an error status, no answer within ``timeout`` seconds); ValueError when its answer names
    no version."""

    async def read() -> KubernetesVersion:
        client = KubeClient(await load_config(kubeconfig), pool=1)
        try:
            async with asyncio.timeout(timeout):
                return await server_version(client)
        finally:
            await client.close()

    try:
        return asyncio.run(read())
    except (KubeConfigError, ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise ClusterUnreachable(str(exc) or type(exc).__name__) from exc
