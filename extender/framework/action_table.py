"""The actions a conf may name, in Volcano's names, and their arguments (``configurations``).

Every argument Volcano's actions read is accepted (``predicateErrorCacheEnable``, preempt's
``enableTopologyAwarePreemption`` and candidate-node bounds), beside pumice's own (``fairWindow``,
``reserveAfter``, ``minRuntime``); what pumice does with each is in the README's table of conf keys.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from extender.core.errors import ConfigError
from extender.framework import actions, evict
from extender.framework.arguments import NO_ARGUMENTS, ArgumentTable, Duration
from extender.framework.session import Session

Action = Callable[[Session], None]

# Volcano actions pumice does not run: named so a user's config fails with a clear message.
NOT_YET: Final = frozenset({"shuffle", "gangpreempt", "gangreclaim"})
# ``configurations`` entries Volcano reads that pumice does not: Volcano's other actions' arguments, and
# ``init-params`` (deviceshare's Ascend vNPU). Accepted as written, unchecked (nothing reads them).
UNREAD_CONFIGURATIONS: Final = NOT_YET | {"init-params"}

# preempt's switch for victims judged by the inter-pod rules with them gone (and reprieved when not needed).
TOPOLOGY_AWARE_PREEMPTION: Final = "enableTopologyAwarePreemption"
# Volcano's on/off switch for its predicate error cache (pumice caches fit per request shape always).
_CACHE: Final = {"predicateErrorCacheEnable": (bool, True)}
# Each action's arguments: Volcano's, then pumice's own (see the README's table of conf keys).
ACTION_ARGUMENTS: Final[Mapping[str, ArgumentTable]] = {
    "enqueue": NO_ARGUMENTS,
    "allocate": ArgumentTable({**_CACHE, "fairWindow": (Duration, 2.0), "reserveAfter": (Duration, 0.0)}),
    "backfill": ArgumentTable(_CACHE),
    "preempt": ArgumentTable(
        {
            **_CACHE,
            TOPOLOGY_AWARE_PREEMPTION: (bool, False),
            "topologyAwarePreemptWorkerNum": (int, 16),
            "minCandidateNodesPercentage": (int, 10),
            "minCandidateNodesAbsolute": (int, 1),
            "maxCandidateNodesAbsolute": (int, 100),
            "minRuntime": (Duration, 0.0),
        }
    ),
    "reclaim": ArgumentTable({**_CACHE, "minRuntime": (Duration, 0.0)}),
}


def _allocate(arguments: Mapping[str, Any]) -> Action:
    a = ACTION_ARGUMENTS["allocate"].parse("allocate", arguments, kind="action")
    args = actions.AllocateArgs(fair_window=a["fairWindow"], reserve_after=a["reserveAfter"])
    return functools.partial(actions.allocate, args=args)


class _Evicting(Protocol):
    def __call__(self, ssn: Session, args: evict.EvictArgs = ...) -> None: ...


def _evicting(name: str, fn: _Evicting) -> Callable[[Mapping[str, Any]], Action]:
    def build(arguments: Mapping[str, Any]) -> Action:
        a = ACTION_ARGUMENTS[name].parse(name, arguments, kind="action")
        args = evict.EvictArgs(
            min_runtime=a["minRuntime"], topology_aware=a.get(TOPOLOGY_AWARE_PREEMPTION, False)
        )
        return functools.partial(fn, args=args)

    return build


def _plain(fn: Action, name: str) -> Callable[[Mapping[str, Any]], Action]:
    def build(arguments: Mapping[str, Any]) -> Action:
        ACTION_ARGUMENTS[name].parse(name, arguments, kind="action")
        return fn

    return build


ACTIONS: Final[Mapping[str, Callable[[Mapping[str, Any]], Action]]] = {
    "enqueue": _plain(actions.enqueue, "enqueue"),
    "allocate": _allocate,
    "backfill": _plain(actions.backfill, "backfill"),
    "preempt": _evicting("preempt", evict.preempt),
    "reclaim": _evicting("reclaim", evict.reclaim),
}


def resolve_actions(
    names: Sequence[str], configurations: Sequence[Mapping[str, Any]] = ()
) -> tuple[Action, ...]:
    """The actions ``names`` in order, each with its arguments from ``configurations`` (Volcano's
    ``configurations: [{name: preempt, arguments: {...}}]``)."""
    args: dict[str, Mapping[str, Any]] = {}
    for i, c in enumerate(configurations):
        name = c.get("name") if isinstance(c, Mapping) else None
        if not isinstance(name, str):
            raise ConfigError(f"scheduler conf: configurations[{i}] needs a 'name'")
        if name in UNREAD_CONFIGURATIONS:
            continue
        if name not in ACTIONS:
            raise ConfigError(f"scheduler conf: configurations[{i}]: unknown action {name!r}")
        given = c.get("arguments") or {}
        if not isinstance(given, Mapping):
            raise ConfigError(f"scheduler conf: configurations[{i}].arguments must be a mapping")
        args[name] = given
    out: list[Action] = []
    for n in names:
        if n in NOT_YET:
            raise ConfigError(f"action {n!r} is a Volcano action pumice does not implement yet; remove it")
        if n not in ACTIONS:
            raise ConfigError(f"unknown action {n!r}; known actions: {', '.join(ACTIONS)}")
        try:
            out.append(ACTIONS[n](args.get(n, {})))
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if "enqueue" not in names:
        out.insert(0, actions.admit_pending)
    return tuple(out)
