"""Network topology domains: HyperNode objects (and node labels) resolved into tiers of node rows.

Mirrors Volcano's ``topology.volcano.sh/v1alpha1`` HyperNode and how its scheduler reads them
(``pkg/scheduler/api/hyper_node_info.go``): a HyperNode is one domain of the network (a leaf switch, a
spine, a block) at ``spec.tier`` (1 nearest the nodes), whose ``spec.members`` are nodes (``type: Node``)
or lower HyperNodes (``type: HyperNode``), each picked by exactly one selector: ``exactMatch.name``,
``regexMatch.pattern`` (Go's ``regexp.MatchString``: the pattern may match anywhere in the name; we use
Python's ``re.search``, the same for the RE2 subset people write) or ``labelMatch`` (a meta/v1
LabelSelector over the member's labels). A domain holds the nodes of its node members and, through
nested HyperNodes, theirs.

Two choices of ours, both a superset of what Volcano accepts: ``regexMatch`` and ``labelMatch`` also pick
HyperNode members (matched against HyperNode names and labels), and a cluster without HyperNode objects
can name node labels instead (:func:`discover`, the plugin's ``hypernode.discovery.labels`` argument):
each label is one tier, lowest first, and every value of it one domain (Volcano's hypernode controller
does the same from node labels, writing the objects; we keep them in memory, so nothing is written).

Invariants: resolution never raises. An object that cannot be read is skipped by the cache with why
(:func:`parse_hypernode` raises :class:`InvalidObject` naming the field); a member that cannot be resolved
(a bad regex, an unknown HyperNode, a child at the same or a higher tier, a cycle) is left out and named in
:attr:`Tree.problems`, the rest of the object stands. Each problem is also kept as a :class:`Problem` (in
:attr:`Tree.issues`): the object it concerns (the HyperNode, or a Node), a reason (``InvalidMember``,
``OverlappingMember``) and a message saying what to fix, so it can be reported on that object
(:mod:`controllers.reconcilers.hypernode_problems` writes Events; ``pumice hypernode get`` prints them).
Domains are
sorted by (tier, name); a domain's rows are sorted node rows, never empty (a domain without nodes can hold
nothing and is dropped).

The resolved tree depends only on the HyperNode objects, the discovery labels and the node table:
:class:`HyperNodeSet` memoizes it per node table (the cache passes the same set to every snapshot until a
HyperNode changes, and the node table is rebuilt only when nodes change), so a cycle pays nothing for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.core.errors import InvalidObject
from extender.core.model import LabelSelector, NetworkTopology, Node, Requirement
from extender.core.selector import selector_matches

Obj = Mapping[str, Any]
Rows = npt.NDArray[np.intp]

NODE: Final = "Node"
HYPERNODE: Final = "HyperNode"
# Volcano's annotations for workloads other than vcjobs and PodGroups (read from the PodGroup, which
# inherits its owner's volcano.sh/* annotations): "hard" or "soft", and the highest tier allowed.
MODE_ANNOTATION: Final = "volcano.sh/network-topology-mode"
HIGHEST_TIER_ANNOTATION: Final = "volcano.sh/network-topology-highest-tier"
# Reasons of problems (Event reasons): a member that cannot be resolved, a node in two domains of a tier.
INVALID_MEMBER: Final = "InvalidMember"
OVERLAPPING_MEMBER: Final = "OverlappingMember"


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """One ``spec.members`` entry: its type and exactly one of the three selectors."""

    type: str
    exact: str | None = None
    regex: str | None = None
    labels: LabelSelector | None = None

    def describe(self) -> str:
        if self.exact is not None:
            return f"{self.type} {self.exact}"
        if self.regex is not None:
            return f"{self.type} matching /{self.regex}/"
        return f"{self.type}s by labels"


@dataclass(frozen=True, slots=True, kw_only=True)
class HyperNode:
    name: str
    tier: int
    tier_name: str = ""
    members: tuple[Member, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    # HyperNodes are cluster-scoped: an empty namespace keys them by name in the cache.
    namespace: str = ""


# --- parsing -------------------------------------------------------------------------------------------
def _mapping(obj: Obj, key: str, where: str) -> Obj:
    v = obj.get(key)
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise InvalidObject(f"{where}.{key}: must be an object")
    return v


def _label_selector(raw: Obj, where: str) -> LabelSelector:
    labels = raw.get("matchLabels") or {}
    exprs = raw.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(exprs, list):
        raise InvalidObject(f"{where}: matchLabels must be a map and matchExpressions a list")
    reqs: list[Requirement] = []
    for i, r in enumerate(exprs):
        at = f"{where}.matchExpressions[{i}]"
        if not isinstance(r, Mapping) or not isinstance(r.get("key"), str):
            raise InvalidObject(f"{at}: key and operator are required")
        op = r.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise InvalidObject(f"{at}.operator: must be In, NotIn, Exists or DoesNotExist, got {op!r}")
        values = r.get("values") or []
        if not isinstance(values, list):
            raise InvalidObject(f"{at}.values: must be a list")
        reqs.append(Requirement(key=r["key"], operator=op, values=tuple(str(v) for v in values)))
    return LabelSelector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())), match_expressions=tuple(reqs)
    )


def _member(raw: object, where: str) -> Member:
    if not isinstance(raw, Mapping):
        raise InvalidObject(f"{where}: must be an object")
    kind = raw.get("type")
    if kind not in (NODE, HYPERNODE):
        raise InvalidObject(f"{where}.type: must be Node or HyperNode, got {kind!r}")
    sel = _mapping(raw, "selector", where)
    given = [k for k in ("exactMatch", "regexMatch", "labelMatch") if sel.get(k) is not None]
    if len(given) != 1:
        raise InvalidObject(f"{where}.selector: set exactly one of exactMatch, regexMatch or labelMatch")
    at = f"{where}.selector.{given[0]}"
    body = _mapping(sel, given[0], f"{where}.selector")
    if given[0] == "exactMatch":
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidObject(f"{at}.name: required")
        return Member(type=kind, exact=name)
    if given[0] == "regexMatch":
        pattern = body.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise InvalidObject(f"{at}.pattern: required")
        return Member(type=kind, regex=pattern)
    return Member(type=kind, labels=_label_selector(body, at))


def parse_hypernode(obj: Obj) -> HyperNode:
    """A HyperNode object; raises :class:`InvalidObject` naming the field it cannot read."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InvalidObject("HyperNode: metadata.name is required")
    spec = _mapping(obj, "spec", "HyperNode")
    tier = spec.get("tier")
    if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
        raise InvalidObject(f"spec.tier: must be a whole number >= 0, got {tier!r}")
    members = spec.get("members") or []
    if not isinstance(members, list):
        raise InvalidObject("spec.members: must be a list")
    labels = meta.get("labels") or {}
    return HyperNode(
        name=meta["name"],
        tier=tier,
        tier_name=str(spec.get("tierName") or ""),
        members=tuple(_member(m, f"spec.members[{i}]") for i, m in enumerate(members)),
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {},
    )


def parse_network_topology(spec: Obj, annotations: Mapping[str, str]) -> NetworkTopology | None:
    """A PodGroup's ``spec.networkTopology``, else Volcano's two annotations; None when neither is set.
    An unreadable value raises :class:`InvalidObject` naming it (the webhook refuses it first)."""
    raw = spec.get("networkTopology")
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise InvalidObject("spec.networkTopology: must be an object")
        mode, tier, name = (
            raw.get("mode") or "hard",
            raw.get("highestTierAllowed"),
            raw.get("highestTierName"),
        )
        at_mode, at_tier = "spec.networkTopology.mode", "spec.networkTopology.highestTierAllowed"
    elif MODE_ANNOTATION in annotations or HIGHEST_TIER_ANNOTATION in annotations:
        mode, tier, name = (
            annotations.get(MODE_ANNOTATION) or "hard",
            annotations.get(HIGHEST_TIER_ANNOTATION),
            None,
        )
        at_mode, at_tier = f"annotation {MODE_ANNOTATION}", f"annotation {HIGHEST_TIER_ANNOTATION}"
        if isinstance(tier, str):
            tier = int(tier) if tier.strip().isdigit() else tier
    else:
        return None
    if mode not in ("hard", "soft"):
        raise InvalidObject(f"{at_mode}: must be hard or soft, got {mode!r}")
    if tier is not None and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 0):
        raise InvalidObject(f"{at_tier}: must be a whole number >= 0, got {tier!r}")
    if name is not None and not isinstance(name, str):
        raise InvalidObject("spec.networkTopology.highestTierName: must be a string")
    return NetworkTopology(hard=mode == "hard", highest_tier=tier, highest_tier_name=name or "")


# --- resolution ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One thing resolution left out, on the object it concerns: ``kind`` HyperNode (or Node) ``name``.
    ``message`` is the whole sentence (it names the object and says what to fix)."""

    kind: str
    name: str
    reason: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class Domain:
    """A resolved HyperNode: its tier and the node rows under it (sorted, never empty)."""

    name: str
    tier: int
    tier_name: str
    rows: Rows


@dataclass(frozen=True, slots=True)
class Tree:
    """Every domain with nodes, by (tier, name), and what could not be resolved.

    ``segments`` serves per-domain sums over nodes in one call: ``np.add.reduceat(values[concat], starts)``
    gives, for each domain in ``domains`` order, the sum of ``values`` over its rows."""

    domains: tuple[Domain, ...]
    issues: tuple[Problem, ...]
    concat: Rows
    starts: Rows

    @property
    def problems(self) -> tuple[str, ...]:
        """The problems as lines (the messages of :attr:`issues`)."""
        return tuple(p.message for p in self.issues)

    @property
    def tiers(self) -> tuple[int, ...]:
        return tuple(sorted({d.tier for d in self.domains}))

    def tier_named(self, name: str) -> int | None:
        """The tier whose domains carry ``tierName`` ``name`` (the lowest, if several do)."""
        return min((d.tier for d in self.domains if d.tier_name == name), default=None)

    def sums(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Per domain, the sum of ``values`` (one per node row) over its rows."""
        if not self.domains:
            return np.zeros(0, dtype=values.dtype)
        out: npt.NDArray[Any] = np.add.reduceat(values[self.concat], self.starts)
        return out


EMPTY_TREE: Final = Tree((), (), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))


def _matches(m: Member, name: str, labels: Mapping[str, str], rx: re.Pattern[str] | None) -> bool:
    if m.exact is not None:
        return m.exact == name
    if rx is not None:
        return rx.search(name) is not None
    return selector_matches(m.labels, labels)


def resolve(hypernodes: Sequence[HyperNode], nodes: Sequence[Node]) -> tuple[dict[str, Rows], list[str]]:
    """Each HyperNode's node rows (into ``nodes``), and a problem line per member that was left out."""
    rows, problems = resolve_members(hypernodes, nodes)
    return rows, [p.message for p in problems]


def resolve_members(
    hypernodes: Sequence[HyperNode], nodes: Sequence[Node]
) -> tuple[dict[str, Rows], list[Problem]]:
    """Each HyperNode's node rows (into ``nodes``), and a :class:`Problem` on the HyperNode per member
    that was left out (each distinct problem once)."""
    by_name = {h.name: h for h in sorted(hypernodes, key=lambda h: h.name)}
    node_pos = {n.name: i for i, n in enumerate(nodes)}
    problems: list[Problem] = []
    regexes: dict[str, re.Pattern[str] | str] = {}  # a pattern's compiled form, or why it does not compile

    def invalid(h: HyperNode, message: str) -> None:
        problems.append(Problem(kind=HYPERNODE, name=h.name, reason=INVALID_MEMBER, message=message))

    def compiled(h: HyperNode, m: Member) -> re.Pattern[str] | None:
        if m.regex is None:
            return None
        if m.regex not in regexes:
            try:
                regexes[m.regex] = re.compile(m.regex)
            except re.error as e:
                regexes[m.regex] = str(e)
        rx = regexes[m.regex]
        if isinstance(rx, str):  # said on every HyperNode that uses it, not only the first
            invalid(
                h,
                f"hypernode {h.name}: regexMatch {m.regex!r} is not a valid pattern ({rx}); its "
                f"{m.type} members are left out until the pattern is fixed",
            )
            return None
        return rx

    out: dict[str, Rows] = {}
    visiting: set[str] = set()

    def rows_of(h: HyperNode) -> Rows:
        done = out.get(h.name)
        if done is not None:
            return done
        visiting.add(h.name)
        parts: list[Rows] = []
        for m in h.members:
            rx = compiled(h, m)
            if m.regex is not None and rx is None:
                continue
            if m.type == NODE:
                if m.exact is not None:
                    row = node_pos.get(m.exact)
                    picked = [] if row is None else [row]
                else:
                    picked = [i for i, n in enumerate(nodes) if _matches(m, n.name, n.labels, rx)]
                parts.append(np.asarray(picked, dtype=np.intp))
                continue
            children = (
                ([by_name[m.exact]] if m.exact in by_name else [])
                if m.exact is not None
                else [c for c in by_name.values() if c.name != h.name and _matches(m, c.name, c.labels, rx)]
            )
            if m.exact is not None and not children:
                invalid(
                    h,
                    f"hypernode {h.name}: member HyperNode {m.exact} does not exist; create it or "
                    "remove the member",
                )
            for c in children:
                if c.tier >= h.tier:
                    invalid(
                        h,
                        f"hypernode {h.name} (tier {h.tier}): member {c.name} is at tier {c.tier}, "
                        "not below it; left out (a member HyperNode needs a lower tier)",
                    )
                elif c.name in visiting:
                    invalid(
                        h,
                        f"hypernode {h.name}: member {c.name} contains it (a cycle); left out (fix the "
                        "tiers so members are below their parents)",
                    )
                else:
                    parts.append(rows_of(c))
        visiting.discard(h.name)
        rows = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.intp)
        out[h.name] = rows.astype(np.intp, copy=False)
        return out[h.name]

    for h in by_name.values():
        rows_of(h)
    return out, list(dict.fromkeys(problems))


def discover(labels: Sequence[str], nodes: Sequence[Node]) -> list[tuple[HyperNode, Rows]]:
    """Domains from node labels: ``labels[i]`` is tier ``i + 1``; every value of it is one domain named
    ``<label>=<value>`` holding the nodes that carry it."""
    out: list[tuple[HyperNode, Rows]] = []
    for tier, key in enumerate(labels, start=1):
        by_value: dict[str, list[int]] = {}
        for i, n in enumerate(nodes):
            v = n.labels.get(key)
            if v is not None:
                by_value.setdefault(v, []).append(i)
        for v, rows in sorted(by_value.items()):
            h = HyperNode(name=f"{key}={v}", tier=tier, tier_name=key)
            out.append((h, np.asarray(rows, dtype=np.intp)))
    return out


def build_tree(
    hypernodes: Sequence[HyperNode], nodes: Sequence[Node], discovery_labels: Sequence[str] = ()
) -> Tree:
    """The domains of ``hypernodes`` plus those discovered from ``discovery_labels``, over ``nodes``."""
    rows, problems = resolve_members(hypernodes, nodes)
    found: dict[str, tuple[HyperNode, Rows]] = {}
    for h, r in discover(discovery_labels, nodes):
        found[h.name] = (h, r)
    for h in hypernodes:
        found[h.name] = (h, rows[h.name])  # an object of the same name wins over a discovered domain
    domains = tuple(
        Domain(h.name, h.tier, h.tier_name, r)
        for h, r in sorted(found.values(), key=lambda hr: (hr[0].tier, hr[0].name))
        if len(r)
    )
    # A node in two domains of one tier: placement still works (each domain is tried by itself), but the
    # topology is not a tree, which is worth a line.
    # Said on the later HyperNode object by name (else the earlier: a discovered domain is no object; else
    # on the node), naming both.
    objects = {h.name for h in hypernodes}
    seen: dict[tuple[int, int], str] = {}
    for d in domains:
        for r in d.rows.tolist():
            other = seen.setdefault((d.tier, r), d.name)
            if other != d.name:
                node = nodes[r].name
                kind, name = next(((HYPERNODE, x) for x in (d.name, other) if x in objects), (NODE, node))
                problems.append(
                    Problem(
                        kind=kind,
                        name=name,
                        reason=OVERLAPPING_MEMBER,
                        message=f"node {node} is in both {other} and {d.name} at tier {d.tier}: a node "
                        "belongs to one HyperNode per tier; remove it from one of them",
                    )
                )
                break
    lengths = [len(d.rows) for d in domains]
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.intp) if domains else EMPTY_TREE.starts
    concat = np.concatenate([d.rows for d in domains]).astype(np.intp) if domains else EMPTY_TREE.concat
    return Tree(domains, tuple(problems), concat, starts)


class HyperNodeSet:
    """The cluster's HyperNode objects, immutable, with the tree they resolve to memoized per node table
    and discovery labels (one entry: the latest)."""

    __slots__ = ("_memo", "hypernodes")

    def __init__(self, hypernodes: Iterable[HyperNode] = ()) -> None:
        self.hypernodes: tuple[HyperNode, ...] = tuple(sorted(hypernodes, key=lambda h: h.name))
        self._memo: tuple[tuple[Node, ...], tuple[str, ...], Tree] | None = None

    def tree(self, nodes: tuple[Node, ...], discovery_labels: Sequence[str] = ()) -> Tree:
        labels = tuple(discovery_labels)
        memo = self._memo
        # The node tuple is the snapshot's node table, shared until a node changes: identity suffices.
        if memo is not None and memo[0] is nodes and memo[1] == labels:
            return memo[2]
        if not self.hypernodes and not labels:
            return EMPTY_TREE
        tree = build_tree(self.hypernodes, nodes, labels)
        self._memo = (nodes, labels, tree)
        return tree

    def __len__(self) -> int:
        return len(self.hypernodes)
