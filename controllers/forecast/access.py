"""Who may read which namespace's forecasts: the API server decides, :class:`KubeAccess` asks it.

A caller's bearer token goes to a TokenReview (who is it?), then a SubjectAccessReview for that user
(with its groups, UID and extra) asks whether it may ``get`` ``podgroups.scheduling.volcano.sh`` in the
namespace: a user sees the forecasts of exactly the PodGroups ``kubectl get podgroups`` would show it.
Asked once for every namespace (``""``) first, so a cluster-wide reader costs one review.

Answers are remembered ``ttl`` seconds (a token by its SHA-256, never the token itself), at most
``max_entries`` of each kind: a dashboard polling every few seconds costs the API server a review per
user and namespace per ``ttl``, not per request. A review that fails raises :class:`AccessUnavailable`
(the endpoint answers 503): no answer is not "no".
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient

TOKEN_REVIEWS: Final = paths.TOKEN_REVIEWS.collection()
SUBJECT_ACCESS_REVIEWS: Final = paths.SUBJECT_ACCESS_REVIEWS.collection()
V = TypeVar("V")


class AccessUnavailable(Exception):
    """The API server could not be asked (or answered nothing readable)."""


@dataclass(frozen=True, slots=True)
class _User:
    name: str
    uid: str
    groups: tuple[str, ...]
    extra: tuple[tuple[str, tuple[str, ...]], ...]


class _Memo(Generic[V]):
    """At most ``size`` answers, each for ``ttl`` seconds; the oldest go first."""

    def __init__(self, ttl: float, size: int, clock: Callable[[], float]) -> None:
        self.ttl, self.size, self.clock = ttl, size, clock
        self._items: OrderedDict[object, tuple[float, V]] = OrderedDict()

    def get(self, key: object) -> tuple[bool, V | None]:
        hit = self._items.get(key)
        if hit is None or hit[0] < self.clock():
            return False, None
        return True, hit[1]

    def put(self, key: object, value: V) -> None:
        self._items[key] = (self.clock() + self.ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


class KubeAccess:
    def __init__(
        self,
        client: KubeClient,
        *,
        ttl: float = 30.0,
        max_entries: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self._users: _Memo[_User | None] = _Memo(ttl, max_entries, clock)
        self._verdicts: _Memo[bool] = _Memo(ttl, max_entries, clock)
        self.reviews = 0  # reviews asked of the API server

    async def readable(self, token: str, namespaces: Collection[str]) -> tuple[str | None, frozenset[str]]:
        """The user ``token`` stands for (None: not authenticated) and the ``namespaces`` it may read."""
        user = await self._user(token)
        if user is None:
            return None, frozenset()
        if await self._may_get(user, ""):
            return user.name, frozenset(namespaces)
        allowed = [ns for ns in sorted(set(namespaces)) if await self._may_get(user, ns)]
        return user.name, frozenset(allowed)

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.reviews += 1
        try:
            return await self.client.post(path, body)
        except (ApiError, OSError, TimeoutError) as e:
            raise AccessUnavailable(str(e)) from e

    async def _user(self, token: str) -> _User | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        known, user = self._users.get(key)
        if known:
            return user
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        status = (await self._post(TOKEN_REVIEWS, review)).get("status") or {}
        info = status.get("user") or {}
        user = None
        if status.get("authenticated") is True and isinstance(info, dict) and info.get("username"):
            raw_extra = info.get("extra")
            extra: dict[str, Any] = raw_extra if isinstance(raw_extra, dict) else {}
            user = _User(
                name=str(info["username"]),
                uid=str(info.get("uid") or ""),
                groups=tuple(str(g) for g in info.get("groups") or ()),
                extra=tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())),
            )
        self._users.put(key, user)
        return user

    async def _may_get(self, user: _User, namespace: str) -> bool:
        key = (user, namespace)
        known, allowed = self._verdicts.get(key)
        if known:
            return bool(allowed)
        spec: dict[str, Any] = {
            "resourceAttributes": {
                "namespace": namespace,
                "verb": "get",
                "group": "scheduling.volcano.sh",
                "resource": "podgroups",
            },
            "user": user.name,
            "groups": list(user.groups),
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        status = (await self._post(SUBJECT_ACCESS_REVIEWS, review)).get("status") or {}
        allowed = status.get("allowed") is True
        self._verdicts.put(key, allowed)
        return allowed
