"""The actions a conf may name, in Volcano's names, and their arguments (``configurations``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from extender.core.errors import ConfigError
from extender.framework import actions, evict
from extender.framework.arguments import Duration, parse_arguments
from extender.framework.session import Session

Action = Callable[[Session], None]

# Volcano actions pumice does not run: named so a user's config fails with a clear message.
NOT_YET: Final = frozenset({"shuffle"})


def _allocate(arguments: Mapping[str, Any]) -> Action:
    spec = {"fairWindow": (Duration, 2.0), "reserveAfter": (Duration, 0.0)}
    a = parse_arguments("allocate", arguments, spec, kind="action")
    args = actions.AllocateArgs(fair_window=a["fairWindow"], reserve_after=a["reserveAfter"])
    return functools.partial(actions.allocate, args=args)


def _evicting(
    name: str, fn: Callable[[Session, evict.EvictArgs], None], spec: Mapping[str, tuple[type, Any]]
) -> Callable[[Mapping[str, Any]], Action]:
    def build(arguments: Mapping[str, Any]) -> Action:
        a = parse_arguments(name, arguments, {"minRuntime": (Duration, 0.0), **spec}, kind="action")
        args = evict.EvictArgs(
            min_runtime=a["minRuntime"], topology_aware=a.get(TOPOLOGY_AWARE_PREEMPTION, False)
        )
        return lambda ssn: fn(ssn, args)

    return build


# preempt's switch for victims judged by the inter-pod rules with them gone (and reprieved when not needed).
TOPOLOGY_AWARE_PREEMPTION: Final = "enableTopologyAwarePreemption"


def _plain(fn: Action, name: str) -> Callable[[Mapping[str, Any]], Action]:
    def build(arguments: Mapping[str, Any]) -> Action:
        parse_arguments(name, arguments, {}, kind="action")
        return fn

    return build


ACTIONS: Final[Mapping[str, Callable[[Mapping[str, Any]], Action]]] = {
    "enqueue": _plain(actions.enqueue, "enqueue"),
    "allocate": _allocate,
    "backfill": _plain(actions.backfill, "backfill"),
    "preempt": _evicting("preempt", evict.preempt, {TOPOLOGY_AWARE_PREEMPTION: (bool, False)}),
    "reclaim": _evicting("reclaim", evict.reclaim, {}),
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
