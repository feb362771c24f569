"""The queue tree's shape: parents through ``spec.parent``, ``root`` above every queue without one.

Pure. Admission refuses a ``spec.parent`` that would close a loop, but objects written while it was absent
(or before it existed) can still form one; the scheduler must then say so rather than walk forever
(:func:`parent_loop`), and plugins that read the tree see such queues flat (:class:`QueueTree`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.api import labels as L
from extender.core.model import Queue


def parent_loop(queues: Mapping[str, Queue], name: str) -> list[str] | None:
    """The loop ``name``'s parent chain runs into (``[a, b, a]``), or None when it ends at a root."""
    seen: list[str] = []
    at = name
    while at in queues:
        if at in seen:
            return [*seen[seen.index(at) :], at]
        seen.append(at)
        parent = queues[at].parent
        if not parent:
            return None
        at = parent
    return None


def tree_parent(queues: Mapping[str, Queue], name: str) -> str | None:
    """``name``'s parent in the tree the scheduler uses, or None for a top queue.

    Volcano's ``root`` queue, when it exists, is the top of every chain: a queue without ``spec.parent``,
    or whose parent does not exist (deleted after admission checked it), hangs below it. A queue whose
    chain runs into a loop is set flat below the top the same way, so a walk up the tree always ends.
    """
    if name == L.ROOT_QUEUE:
        return None
    top = L.ROOT_QUEUE if L.ROOT_QUEUE in queues else None
    q = queues.get(name)
    if q is None or not q.parent or q.parent not in queues or parent_loop(queues, name) is not None:
        return top
    return q.parent


@dataclass(frozen=True, slots=True)
class QueueTree:
    """The queue forest as :func:`tree_parent` shapes it: loop-free, every name of ``queues`` in it."""

    parent: Mapping[str, str | None]
    children: Mapping[str, tuple[str, ...]]

    @staticmethod
    def of(queues: Mapping[str, Queue]) -> QueueTree:
        parent = {name: tree_parent(queues, name) for name in sorted(queues)}
        children: dict[str, list[str]] = {name: [] for name in parent}
        for name, up in parent.items():
            if up is not None:
                children[up].append(name)
        return QueueTree(parent=parent, children={k: tuple(v) for k, v in children.items()})

    def ancestors(self, name: str) -> tuple[str, ...]:
        """``name``'s ancestors, nearest first (empty for a top queue or an unknown name)."""
        out: list[str] = []
        up = self.parent.get(name)
        while up is not None:
            out.append(up)
            up = self.parent[up]
        return tuple(out)

    def subtree(self, name: str) -> tuple[str, ...]:
        """``name`` and every queue below it, parents before their children."""
        out = [name]
        i = 0
        while i < len(out):
            out.extend(self.children.get(out[i], ()))
            i += 1
        return tuple(out)

    def top_down(self) -> tuple[str, ...]:
        """Every queue, each after its parent (tops in name order)."""
        out: list[str] = []
        for name, up in self.parent.items():
            if up is None:
                out.extend(self.subtree(name))
        return tuple(out)
