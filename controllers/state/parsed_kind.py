"""The kinds of watched object the cluster cache keeps parsed and by key, with no index of their own: nodes,
queues, PriorityClasses, ResourceQuotas, PodDisruptionBudgets, HyperNodes, Numatopologies
(:class:`ClusterKinds`, one :class:`ParsedKind` each).

:class:`ParsedKind` is what the informer's handler does with such a kind: parse each object once (an
unreadable one is skipped and remembered with why, in the cache's :class:`~controllers.state.unreadable.
Unreadable` book; the others stand), store it by name (``namespace/name`` for a namespaced kind), and say
when something changed. Pods and PodGroups are not kept here: their changes feed the reservation ledger and
the pending set, and the cache indexes them (:mod:`controllers.state.cache_ingest`).

Invariants: ``objects`` (and ``raw``) are one dict each for the cache's life, changed in place, so the
cache may hold them as its own attributes; an object equal to the stored one changes nothing; a re-list
replaces every object and always counts as a change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from controllers.kube.informer import Handler
from controllers.state.meta import ObjectMeta, read_meta
from controllers.state.staged import Staged
from controllers.state.unreadable import Failure, Unreadable, ref
from extender.core.budgets import DisruptionBudget
from extender.core.hypernodes import HyperNode, parse_hypernode
from extender.core.model import Node, PriorityClass, Queue
from extender.core.numa import NumaTopology, parse_numatopology
from extender.core.parse import (
    parse_node,
    parse_pod_disruption_budget,
    parse_priority_class,
    parse_queue,
    parse_resource_quota,
)
from extender.core.quota import ResourceQuota

Obj = dict[str, Any]
T = TypeVar("T")


class HasName(Protocol):
    @property
    def name(self) -> str: ...


class HasNamespacedName(HasName, Protocol):
    @property
    def namespace(self) -> str: ...


N = TypeVar("N", bound=HasName)
NS = TypeVar("NS", bound=HasNamespacedName)


class ParsedKind(Generic[T]):
    def __init__(
        self,
        kind: str,
        parse: Callable[[Obj], T],
        key: Callable[[T], str],
        *,
        unreadable: Unreadable,
        changed: Callable[[], None],
        meta_key: Callable[[ObjectMeta], str] = lambda meta: meta.name,
        keep_raw: bool = False,
        report_listed: bool = True,
    ) -> None:
        """``key`` names a parsed object, ``meta_key`` a removed one (by its metadata: it may not parse).
        ``keep_raw``: keep each object as the API server sent it too (what a status write starts from).
        ``report_listed``: record the objects a LIST showed by name only as unreadable."""
        self.kind = kind
        self._parse_fn = parse
        self._key = key
        self._meta_key = meta_key
        self._unreadable = unreadable
        self._changed = changed
        self._keep_raw = keep_raw
        self._report_listed = report_listed
        self.objects: dict[str, T] = {}
        self.raw: dict[str, Obj] = {}

    def _parse(self, obj: Obj) -> T | None:
        parsed: T | None = self._unreadable.parse(self._parse_fn, obj, self.kind)
        return parsed

    def upsert(self, obj: Obj) -> None:
        parsed = self._parse(obj)
        if parsed is None:
            return
        key = self._key(parsed)
        if self._keep_raw:
            self.raw[key] = obj
        if self.objects.get(key) != parsed:
            self.objects[key] = parsed
            self._changed()

    def remove(self, obj: Obj) -> None:
        meta = read_meta(obj)
        self._unreadable.removed(self.kind, meta)
        key = self._meta_key(meta)
        self.raw.pop(key, None)
        if self.objects.pop(key, None) is not None:
            self._changed()

    def replace(self, objs: Sequence[Obj]) -> None:
        self._unreadable.relisting(self.kind)
        self.objects.clear()
        self.raw.clear()
        for o in objs:
            parsed = self._parse(o)
            if parsed is not None:
                key = self._key(parsed)
                self.objects[key] = parsed
                if self._keep_raw:
                    self.raw[key] = o
        self._changed()

    def listing(self) -> Staged[T]:
        """A LIST parsed page by page and swapped in at its end (:mod:`controllers.state.staged`): 5 000
        Nodes are never all held raw at once."""
        return Staged(self.kind, self._parse_fn, self._relisted)

    def _relisted(self, parsed: list[T], failures: list[Failure]) -> None:
        self._unreadable.relisting(self.kind)
        for f in failures:
            self._unreadable.record(f)
        self.objects.clear()
        self.raw.clear()
        for p in parsed:
            self.objects[self._key(p)] = p
        self._changed()

    def handler(self) -> Handler:
        # A kind that keeps its raw objects takes the whole LIST at once (replace): the raw objects are
        # kept anyway, and Staged holds only the parsed ones.
        listing = None if self._keep_raw else self.listing
        if self._report_listed:
            listed = self._unreadable.listed(self.kind)
            return Handler(self.replace, self.upsert, self.remove, listed, listing)
        return Handler(self.replace, self.upsert, self.remove, listing=listing)


def namespaced(
    kind: str, parse: Callable[[Obj], NS], *, unreadable: Unreadable, changed: Callable[[], None]
) -> ParsedKind[NS]:
    """A namespaced kind (ResourceQuota, PodDisruptionBudget) or one kept as if it were (HyperNode,
    Numatopology): by ``namespace/name``, the name alone when the object has no namespace."""
    return ParsedKind(
        kind,
        parse,
        lambda o: f"{o.namespace}/{o.name}".lstrip("/"),
        meta_key=lambda meta: ref(kind, meta)[1],
        unreadable=unreadable,
        changed=changed,
    )


def by_name(
    kind: str,
    parse: Callable[[Obj], N],
    *,
    unreadable: Unreadable,
    changed: Callable[[], None],
    keep_raw: bool = False,
    report_listed: bool = True,
) -> ParsedKind[N]:
    """A cluster-scoped kind, by name."""
    return ParsedKind(
        kind,
        parse,
        lambda o: o.name,
        unreadable=unreadable,
        changed=changed,
        keep_raw=keep_raw,
        report_listed=report_listed,
    )


@dataclass(frozen=True, slots=True)
class ClusterKinds:
    """Every kind the cluster cache keeps by key; ``handlers`` feed them from the informers."""

    nodes: ParsedKind[Node]
    queues: ParsedKind[Queue]  # the raw objects too: the status writer patches from them
    priority_classes: ParsedKind[PriorityClass]
    quotas: ParsedKind[ResourceQuota]  # the resourcequota, drf and pdb plugins
    budgets: ParsedKind[DisruptionBudget]
    hypernodes: ParsedKind[HyperNode]  # network-topology-aware
    numatopologies: ParsedKind[NumaTopology]  # numa-aware: each node's NUMA cells and free cpus

    @classmethod
    def build(cls, unreadable: Unreadable, changed: Callable[[str], None]) -> ClusterKinds:
        """The kinds, each telling ``changed`` its change name (``node``, ``queue``, ...) on a change."""

        def on(change: str) -> Callable[[], None]:
            return lambda: changed(change)

        def ns(kind: str, parse: Callable[[Obj], NS], change: str) -> ParsedKind[NS]:
            return namespaced(kind, parse, unreadable=unreadable, changed=on(change))

        return cls(
            nodes=by_name("Node", parse_node, unreadable=unreadable, changed=on("node")),
            queues=by_name("Queue", parse_queue, unreadable=unreadable, changed=on("queue"), keep_raw=True),
            # (A LIST of PriorityClasses that shows some by name only is not reported: it never was.)
            priority_classes=by_name(
                "PriorityClass",
                parse_priority_class,
                unreadable=unreadable,
                changed=on("priorityclass"),
                report_listed=False,
            ),
            quotas=ns("ResourceQuota", parse_resource_quota, "resourcequota"),
            budgets=ns("PodDisruptionBudget", parse_pod_disruption_budget, "poddisruptionbudget"),
            hypernodes=ns("HyperNode", parse_hypernode, "hypernode"),
            numatopologies=ns("Numatopology", parse_numatopology, "numatopology"),
        )

    def handlers(self) -> dict[str, Handler]:
        """The informers' handlers, by the name of the watched collection."""
        return {
            "nodes": self.nodes.handler(),
            "queues": self.queues.handler(),
            "priorityclasses": self.priority_classes.handler(),
            "resourcequotas": self.quotas.handler(),
            "poddisruptionbudgets": self.budgets.handler(),
            "hypernodes": self.hypernodes.handler(),
            "numatopologies": self.numatopologies.handler(),
        }
