"""The queue tree's shape: parents through ``spec.parent``, ``root`` above every queue without one.

Pure. Admission refuses a ``spec.parent`` that would close a loop, but objects written while it was absent
(or before it existed) can still form one; the scheduler must then say so rather than walk forever.
"""

from __future__ import annotations

from collections.abc import Mapping

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
