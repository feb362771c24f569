"""A pod's scheduling constraints, from its spec into the frozen model: where it may go and what it prefers.

- :func:`node_constraints`: ``nodeSelector``, required node affinity (``matchExpressions`` and
  ``matchFields``) and tolerations, what kube-scheduler's NodeAffinity and TaintToleration filters read;
- :func:`pod_affinity`: inter-pod affinity and anti-affinity (required and preferred), topology spread
  constraints and preferred node affinity, with ``matchLabelKeys``/``mismatchLabelKeys`` merged into the
  label selector as kube-apiserver merges them, and each term's namespaces defaulted as kube-scheduler
  does (neither ``namespaces`` nor ``namespaceSelector``: the declaring pod's own namespace);
- :func:`label_selector` and :func:`requirement`: metav1.LabelSelector and its requirements, also read by
  other objects (PodDisruptionBudgets).

Like every parser of the core, each function raises :class:`InvalidObject` naming the field it cannot
read. Terms that do nothing in kube-scheduler (a zero weight, an empty preferred term) are dropped, and a
pod without any of these rules gets None, the cheap case every scheduling path tests first.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from extender.core.errors import InvalidObject
from extender.core.fields import Obj
from extender.core.fields import int_field as _int
from extender.core.fields import list_field as _list
from extender.core.fields import list_item as _item
from extender.core.fields import object_field as _map
from extender.core.model import (
    Affinity,
    LabelSelector,
    NodeConstraints,
    PodAffinityTerm,
    PreferredNodeTerm,
    Requirement,
    SpreadConstraint,
    Toleration,
    WeightedPodAffinityTerm,
)


def requirement(raw: object, is_field: bool, where: str) -> Requirement:
    """One requirement of a selector (``is_field``: of a node selector term's ``matchFields``)."""
    raw = _item(raw, where)
    key, op = raw.get("key"), raw.get("operator")
    if not isinstance(key, str) or not isinstance(op, str):
        raise InvalidObject(f"{where}: key and operator are required")
    values = _list(raw, "values", where)
    return Requirement(key=key, operator=op, values=tuple(str(v) for v in values), field=is_field)


def node_constraints(spec: Obj) -> NodeConstraints:
    """The pod's node selector, required node affinity and tolerations."""
    selector = tuple(sorted((str(k), str(v)) for k, v in _map(spec, "nodeSelector", "spec").items()))
    terms: tuple[tuple[Requirement, ...], ...] | None = None
    node_aff = _map(_map(spec, "affinity", "spec"), "nodeAffinity", "spec.affinity")
    required = _map(node_aff, "requiredDuringSchedulingIgnoredDuringExecution", "spec.affinity.nodeAffinity")
    if required:
        where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        parsed: list[tuple[Requirement, ...]] = []
        for j, raw_term in enumerate(_list(required, "nodeSelectorTerms", where)):
            at = f"{where}[{j}]"
            term = _item(raw_term, at)
            parsed.append(
                tuple(
                    [requirement(r, False, at) for r in _list(term, "matchExpressions", at)]
                    + [requirement(r, True, at) for r in _list(term, "matchFields", at)]
                )
            )
        terms = tuple(parsed)
    tolerations = _tolerations(
        tuple(
            (
                str(t.get("key") or ""),
                str(t.get("operator") or "Equal"),
                str(t.get("value") or ""),
                str(t.get("effect") or ""),
            )
            for t in (
                _item(t, f"spec.tolerations[{i}]") for i, t in enumerate(_list(spec, "tolerations", "spec"))
            )
        )
    )
    return _shared(NodeConstraints(node_selector=selector, affinity_terms=terms, tolerations=tolerations))


@functools.lru_cache(maxsize=1024)
def _tolerations(fields: tuple[tuple[str, str, str, str], ...]) -> tuple[Toleration, ...]:
    return tuple(Toleration(key=k, operator=o, value=v, effect=e) for k, o, v, e in fields)


# One instance per distinct value (they are frozen and hashable): the pods of a cluster share a handful of
# constraint sets (every pod carries the API server's default not-ready/unreachable tolerations), and a
# cache of 100 000 pods then holds each set once. A memo of a pure function: equal in, the same out.
@functools.lru_cache(maxsize=1024)
def _shared(constraints: NodeConstraints) -> NodeConstraints:
    return constraints


def label_selector(raw: object, where: str) -> LabelSelector | None:
    """A metav1.LabelSelector; None when absent (which pod affinity and spread read as "no pod")."""
    if raw is None:
        return None
    sel = _item(raw, where)
    labels = tuple(sorted((str(k), str(v)) for k, v in _map(sel, "matchLabels", where).items()))
    exprs = tuple(
        requirement(r, False, f"{where}.matchExpressions[{i}]")
        for i, r in enumerate(_list(sel, "matchExpressions", where))
    )
    return LabelSelector(match_labels=labels, match_expressions=exprs)


def _with_label_keys(
    sel: LabelSelector | None, pod_labels: Mapping[str, str], keys: list[Any], operator: str
) -> LabelSelector | None:
    """``sel`` narrowed by ``matchLabelKeys`` (In) or ``mismatchLabelKeys`` (NotIn): each key the pod
    has a label for becomes ``key <operator> (the pod's value)``, as kube-apiserver merges them."""
    if sel is None:
        return None
    extra = tuple(
        Requirement(key=str(k), operator=operator, values=(pod_labels[str(k)],))
        for k in keys
        if str(k) in pod_labels
    )
    if not extra:
        return sel
    return LabelSelector(match_labels=sel.match_labels, match_expressions=sel.match_expressions + extra)


def _pod_term(raw: object, namespace: str, pod_labels: Mapping[str, str], where: str) -> PodAffinityTerm:
    term = _item(raw, where)
    key = term.get("topologyKey")
    if not isinstance(key, str):
        raise InvalidObject(f"{where}.topologyKey: required")
    ns_selector = label_selector(term.get("namespaceSelector"), f"{where}.namespaceSelector")
    namespaces = frozenset(str(n) for n in _list(term, "namespaces", where))
    if not namespaces and ns_selector is None:
        namespaces = frozenset({namespace})  # neither given: the declaring pod's own namespace
    sel = label_selector(term.get("labelSelector"), f"{where}.labelSelector")
    sel = _with_label_keys(sel, pod_labels, _list(term, "matchLabelKeys", where), "In")
    sel = _with_label_keys(sel, pod_labels, _list(term, "mismatchLabelKeys", where), "NotIn")
    return PodAffinityTerm(
        topology_key=key, selector=sel, namespaces=namespaces, namespace_selector=ns_selector
    )


def _pod_terms(
    block: Obj, namespace: str, pod_labels: Mapping[str, str], where: str
) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
    req_where = f"{where}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_term(t, namespace, pod_labels, f"{req_where}[{i}]")
        for i, t in enumerate(_list(block, "requiredDuringSchedulingIgnoredDuringExecution", where))
    )
    preferred: list[WeightedPodAffinityTerm] = []
    pref_where = f"{where}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(_list(block, "preferredDuringSchedulingIgnoredDuringExecution", where)):
        at = f"{pref_where}[{i}]"
        w = _item(raw, at)
        term = _pod_term(w.get("podAffinityTerm"), namespace, pod_labels, f"{at}.podAffinityTerm")
        preferred.append(WeightedPodAffinityTerm(weight=_int(w, "weight", at, 0), term=term))
    return required, tuple(preferred)


def _spread(raw: object, pod_labels: Mapping[str, str], where: str) -> SpreadConstraint:
    c = _item(raw, where)
    key = c.get("topologyKey")
    if not isinstance(key, str):
        raise InvalidObject(f"{where}.topologyKey: required")
    sel = label_selector(c.get("labelSelector"), f"{where}.labelSelector")
    return SpreadConstraint(
        max_skew=_int(c, "maxSkew", where, 1),
        topology_key=key,
        selector=_with_label_keys(sel, pod_labels, _list(c, "matchLabelKeys", where), "In"),
        hard=c.get("whenUnsatisfiable", "DoNotSchedule") != "ScheduleAnyway",
        min_domains=_int(c, "minDomains", where, 1),
        honor_node_affinity=c.get("nodeAffinityPolicy", "Honor") != "Ignore",
        honor_taints=c.get("nodeTaintsPolicy", "Ignore") == "Honor",
    )


def pod_affinity(spec: Obj, namespace: str, pod_labels: Mapping[str, str]) -> Affinity | None:
    """Inter-pod (anti-)affinity, topology spread and preferred node affinity; None when the pod has none."""
    if spec.get("affinity") is None and spec.get("topologySpreadConstraints") is None:
        return None  # (what the rest finds for such a pod, without looking: most pods)
    aff = _map(spec, "affinity", "spec")
    required, preferred = _pod_terms(
        _map(aff, "podAffinity", "spec.affinity"), namespace, pod_labels, "spec.affinity.podAffinity"
    )
    required_anti, preferred_anti = _pod_terms(
        _map(aff, "podAntiAffinity", "spec.affinity"), namespace, pod_labels, "spec.affinity.podAntiAffinity"
    )
    spread = tuple(
        _spread(c, pod_labels, f"spec.topologySpreadConstraints[{i}]")
        for i, c in enumerate(_list(spec, "topologySpreadConstraints", "spec"))
    )
    node_aff = _map(aff, "nodeAffinity", "spec.affinity")
    where = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    preferred_nodes: list[PreferredNodeTerm] = []
    for i, raw in enumerate(_list(node_aff, "preferredDuringSchedulingIgnoredDuringExecution", where)):
        at = f"{where}[{i}]"
        w = _item(raw, at)
        pref = _map(w, "preference", at)
        reqs = tuple(
            [requirement(r, False, f"{at}.preference") for r in _list(pref, "matchExpressions", at)]
            + [requirement(r, True, f"{at}.preference") for r in _list(pref, "matchFields", at)]
        )
        weight = _int(w, "weight", at, 0)
        if weight and reqs:  # a zero weight or an empty term is a no-op, as in kube-scheduler
            preferred_nodes.append(PreferredNodeTerm(weight=weight, requirements=reqs))
    out = Affinity(
        required=required,
        required_anti=required_anti,
        preferred=tuple(t for t in preferred if t.weight),
        preferred_anti=tuple(t for t in preferred_anti if t.weight),
        spread=spread,
        preferred_nodes=tuple(preferred_nodes),
    )
    return None if out == Affinity() else out
