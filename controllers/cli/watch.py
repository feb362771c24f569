"""``list -w/--watch``: after the list, print each change of the listed objects, as ``kubectl get -w``.

The watch starts at the list's resourceVersion, so no change between the two is lost and none is shown
twice. It runs until Ctrl-C or ``--timeout`` seconds (then exit 0). The API server ends watches now and
then: the next one resumes from the last resourceVersion seen; when that is too old (``410 Gone``) the
collection is listed again and the watch resumes from there (objects that changed meanwhile are printed
once more, as kubectl does). A line per change is printed and flushed at once, so the output can be piped.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

from controllers.cli.errors import CliError
from controllers.cli.kubeconfig import list_versioned
from controllers.kube.client import KubeClient

GONE: Final = 410

Render = Callable[[Mapping[str, Any]], str]


async def _follow(
    client: KubeClient, path: str, query: list[tuple[str, str]], version: str, render: Render
) -> None:
    while True:
        params = [*query, ("allowWatchBookmarks", "true")]
        if version:
            params.append(("resourceVersion", version))
        restart = False
        async for event in client.watch(path, params):
            kind, obj = event.get("type"), event.get("object")
            obj = obj if isinstance(obj, dict) else {}
            if kind == "ERROR":
                if obj.get("code") == GONE:
                    restart = True
                    break
                raise CliError(f"watch failed: {obj.get('message') or obj}")
            meta = obj.get("metadata")
            version = str((meta if isinstance(meta, dict) else {}).get("resourceVersion") or version)
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                sys.stdout.write(render(obj))
                sys.stdout.flush()
        if restart:
            _, version = await list_versioned(client, path, query)


async def watch(
    client: KubeClient,
    path: str,
    query: list[tuple[str, str]],
    version: str,
    render: Render,
    *,
    seconds: float | None,
) -> None:
    """Print ``render(obj)`` for every change after ``version`` for ``seconds`` (None: until Ctrl-C)."""
    if seconds is None:
        await _follow(client, path, query, version, render)
        return
    limit = asyncio.timeout(seconds)
    try:
        async with limit:
            await _follow(client, path, query, version, render)
    except TimeoutError:
        if not limit.expired():
            raise  # a network timeout, not ours


def one_row(table: str) -> str:
    """The rows of a rendered table without its header line (a change printed under the first table)."""
    return "".join(line + "\n" for line in table.splitlines()[1:])
