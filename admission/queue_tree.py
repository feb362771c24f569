"""Rules that place a Queue in the queue hierarchy, checked against the cluster's other queues.

Mirrors Volcano's hierarchical-queue admission: ``spec.parent`` names an existing queue other than itself
and the tree stays at most :data:`MAX_DEPTH` levels below ``root``; a child's capability stays within its
nearest ancestor's capability (per resource, ancestors that do not set it are skipped); the guarantees and
the deserved shares of a parent's children sum to no more than the parent's own (a resource the parent does
not list counts as zero); a parent's capability is at least each child subtree's capability. ``root`` and
an empty parent are the top of the tree and carry no limits. All amounts are accounted integers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from admission.lookup import Lookup, QueueView
from extender.api import labels as L
from extender.core.quantity import format_units
from extender.core.resource_maps import add
from extender.core.validation import FieldError

# Volcano's default --max-queue-depth: levels below root, the queue itself included.
MAX_DEPTH = 5

_TOP = ("", L.ROOT_QUEUE)


def _show(resource: str, amount: int) -> str:
    return format_units(resource, amount)


def check_parent(name: str, parent: str, lookup: Lookup) -> list[FieldError]:
    """``spec.parent`` exists, is not the queue itself, and the chain above it is short and loop-free."""
    if parent in _TOP:
        return []
    if parent == name:
        return [FieldError(field="spec.parent", message=f"queue {name!r} cannot be its own parent")]
    depth, current = 1, parent
    while current not in _TOP:
        depth += 1
        if depth > MAX_DEPTH:
            return [
                FieldError(
                    field="spec.parent",
                    message=f"queue {name!r} would be more than {MAX_DEPTH} levels below root; "
                    "choose a parent higher in the tree",
                )
            ]
        q = lookup.queue(current)
        if q is None:
            if current == parent:
                msg = f"parent queue {parent!r} does not exist; create it first"
            else:
                msg = f"queue {current!r}, an ancestor of parent {parent!r}, does not exist"
            return [FieldError(field="spec.parent", message=msg)]
        if q.parent == name:
            return [
                FieldError(
                    field="spec.parent",
                    message=f"parent {parent!r} is below queue {name!r}: the hierarchy would form a loop",
                )
            ]
        current = q.parent
    return []


def _ancestor_capability(parent: str, resource: str, lookup: Lookup) -> tuple[str, int] | None:
    """The nearest ancestor (from ``parent`` up, root excluded) that caps ``resource``, and its cap."""
    current, hops = parent, 0
    while current not in _TOP and hops <= MAX_DEPTH:
        q = lookup.queue(current)
        if q is None:
            return None
        cap = q.capability.get(resource, 0)
        if cap > 0:
            return q.name, cap
        current, hops = q.parent, hops + 1
    return None


def _subtree_capability(q: QueueView, resource: str, lookup: Lookup, depth: int = 0) -> tuple[str, int]:
    """The largest cap on ``resource`` in ``q``'s subtree: ``q``'s own when set, else its children's."""
    own = q.capability.get(resource, 0)
    if own > 0 or depth > MAX_DEPTH:
        return q.name, own
    best = (q.name, 0)
    for child in lookup.queue_children(q.name):
        found = _subtree_capability(child, resource, lookup, depth + 1)
        if found[1] > best[1]:
            best = found
    return best


def _sum_errors(
    *,
    field: str,
    what: str,
    parent: str,
    limit: Mapping[str, int],
    total: Mapping[str, int],
) -> list[FieldError]:
    return [
        FieldError(
            field=f"{field}[{r}]",
            message=f"the {what} of the children of queue {parent!r} would sum to {_show(r, v)}, "
            f"more than its own {what} {_show(r, limit.get(r, 0))}",
        )
        for r, v in sorted(total.items())
        if v > limit.get(r, 0)
    ]


def _total(amounts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for a in amounts:
        out = add(out, a)
    return out


def check_resources(
    *,
    name: str,
    parent: str,
    capability: Mapping[str, int],
    deserved: Mapping[str, int],
    guarantee: Mapping[str, int],
    lookup: Lookup,
) -> list[FieldError]:
    """The queue's resources fit its parent's, and its own resources cover its children's."""
    errors: list[FieldError] = []
    if parent not in _TOP:
        pq = lookup.queue(parent)
        if pq is None:
            return [FieldError(field="spec.parent", message=f"parent queue {parent!r} does not exist")]
        for r, v in sorted(capability.items()):
            found = _ancestor_capability(parent, r, lookup)
            if found is not None and v > found[1]:
                errors.append(
                    FieldError(
                        field=f"spec.capability[{r}]",
                        message=f"{_show(r, v)} exceeds the capability {_show(r, found[1])} "
                        f"of ancestor queue {found[0]!r}",
                    )
                )
        siblings = [q for q in lookup.queue_children(parent) if q.name != name]
        errors += _sum_errors(
            field="spec.guarantee.resource",
            what="guarantee",
            parent=parent,
            limit=pq.guarantee,
            total=add(_total(q.guarantee for q in siblings), guarantee),
        )
        errors += _sum_errors(
            field="spec.deserved",
            what="deserved",
            parent=parent,
            limit=pq.deserved,
            total=add(_total(q.deserved for q in siblings), deserved),
        )
    children = [q for q in lookup.queue_children(name) if q.name != name]
    if not children:
        return errors
    for r, v in sorted(capability.items()):
        biggest = max((_subtree_capability(c, r, lookup) for c in children), key=lambda t: t[1])
        if v < biggest[1]:
            errors.append(
                FieldError(
                    field=f"spec.capability[{r}]",
                    message=f"{_show(r, v)} is below the capability {_show(r, biggest[1])} "
                    f"of descendant queue {biggest[0]!r}",
                )
            )
    errors += _sum_errors(
        field="spec.guarantee.resource",
        what="guarantee",
        parent=name,
        limit=guarantee,
        total=_total(q.guarantee for q in children),
    )
    errors += _sum_errors(
        field="spec.deserved",
        what="deserved",
        parent=name,
        limit=deserved,
        total=_total(q.deserved for q in children),
    )
    return errors
