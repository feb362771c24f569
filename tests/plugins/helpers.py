"""A session over builder-made objects, for calling one plugin's hooks directly."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from extender.core.model import PodGroup, Queue, group_key
from extender.framework.hooks import build_hooks
from extender.framework.plugin import Plugin
from extender.framework.session import Session
from tests.core.builders import Raw, snapshot


def session(
    plugins: Sequence[Plugin],
    nodes: Iterable[Raw] = (),
    pods: Iterable[Raw] = (),
    groups: Iterable[Raw] = (),
    queues: Iterable[Raw] | None = None,
    plans: Mapping[str, str] | None = None,
    priority_classes: Iterable[Raw] = (),
) -> Session:
    """A session with ``plugins`` as its one tier (``open`` already called)."""
    return Session(
        snapshot(nodes, pods, groups, queues, plans, priority_classes), build_hooks([list(plugins)])
    )


def args(**kw: Any) -> dict[str, Any]:
    """Plugin arguments with Volcano's dotted keys written as ``binpack__weight`` → ``binpack.weight``."""
    return {k.replace("__", "."): v for k, v in kw.items()}


def group(ssn: Session, name: str, namespace: str = "default") -> PodGroup:
    return ssn.snapshot.groups[group_key(namespace, name)]


def queue_of(ssn: Session, name: str) -> Queue:
    return ssn.snapshot.queues[name]
