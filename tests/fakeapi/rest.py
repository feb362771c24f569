"""What the in-process API server (:mod:`tests.fakeapi`) knows of Kubernetes REST: paths read as
kube-apiserver reads them (the resources of :mod:`controllers.kube.paths`), merge and JSON patches, label
selectors, Status bodies. Pure functions, no server."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web

from controllers.kube import paths

Obj = dict[str, Any]

# Every resource of the paths table, by (group/version prefix, plural).
_RESOURCES: Final = {(r.prefix, r.plural): r for r in vars(paths).values() if isinstance(r, paths.Resource)}
PREFIXES: Final = frozenset(prefix for prefix, _ in _RESOURCES)


@dataclass(frozen=True)
class Route:
    prefix: str
    namespace: str | None
    resource: str
    name: str | None
    subresource: str | None

    @property
    def collection(self) -> str:
        ns = f"/namespaces/{self.namespace}" if self.namespace is not None else ""
        return f"{self.prefix}{ns}/{self.resource}"

    @property
    def item(self) -> str:
        return f"{self.collection}/{self.name}"

    @property
    def status(self) -> bool:
        return self.subresource == "status"

    def has_status(self) -> bool:
        r = _RESOURCES.get((self.prefix, self.resource))
        return r is not None and "status" in r.subresources


def route(path: str) -> Route | None:
    """``path`` read as kube-apiserver reads it; None for a group/version it does not serve."""
    prefix = next((p for p in PREFIXES if path.startswith(p + "/")), None)
    if prefix is None:
        return None
    parts = path[len(prefix) + 1 :].split("/")
    namespace = None
    if parts[0] == "namespaces" and len(parts) >= 3:
        namespace, parts = parts[1], parts[2:]
    name = parts[1] if len(parts) > 1 else None
    return Route(prefix, namespace, parts[0], name, parts[2] if len(parts) > 2 else None)


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def json_patch(doc: Any, ops: list[Obj]) -> Any:
    """RFC 6902 (add, remove, replace, test); raises ValueError where the API server answers 422."""
    doc = copy.deepcopy(doc)
    for op in ops:
        *parents, last = _pointer(str(op.get("path", "")))
        cur = doc
        for p in parents:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        kind = op.get("op")
        if isinstance(cur, list):
            i = len(cur) if last == "-" else int(last)
            if kind == "add":
                cur.insert(i, op.get("value"))
            elif kind == "remove":
                del cur[i]
            elif kind == "replace":
                cur[i] = op.get("value")
            elif kind == "test" and cur[i] != op.get("value"):
                raise ValueError(f"test failed at {op.get('path')}")
        elif kind in ("add", "replace"):
            if kind == "replace" and last not in cur:
                raise ValueError(f"nothing to replace at {op.get('path')}")
            cur[last] = op.get("value")
        elif kind == "remove":
            del cur[last]
        elif kind == "test" and cur.get(last) != op.get("value"):
            raise ValueError(f"test failed at {op.get('path')}")
    return doc


def selected(obj: Obj, selector: str) -> bool:
    """Equality-based label selectors (``a=b``, ``a!=b``, ``a``, ``!a``), as the API server reads them."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            ok = labels.get(key) != value
        elif "=" in term:
            key, value = term.split("=", 1)
            ok = labels.get(key.rstrip("=")) == value
        elif term.startswith("!"):
            ok = term[1:] not in labels
        else:
            ok = term in labels
        if not ok:
            return False
    return True


def named(field_selector: str) -> str | None:
    """The name a ``metadata.name=NAME`` field selector asks for (None: no such term)."""
    for term in field_selector.split(","):
        key, _, value = term.strip().partition("=")
        if key == "metadata.name":
            return value
    return None


def status(code: int, reason: str, message: str) -> web.Response:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": message, "reason": reason, "code": code}  # fmt: skip
    headers = {}
    if code in (429, 503):  # throttled: how long to wait, as kube-apiserver says it (header and details)
        body["details"] = {"retryAfterSeconds": 1}
        headers["Retry-After"] = "1"
    return web.json_response(body, status=code, headers=headers)


def kind_name(r: Route) -> str:
    group = r.prefix.split("/")[2] if r.prefix.startswith("/apis/") else ""
    return f"{r.resource}.{group}" if group else r.resource
