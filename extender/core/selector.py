"""Label selectors and the namespaces of pod affinity terms, evaluated against labels.

Kubernetes semantics: every ``matchLabels`` pair and every expression must hold; ``NotIn`` and
``DoesNotExist`` hold for an absent key; an unknown operator matches nothing (the API server rejects it,
so only a hand-made object carries one). A missing selector (None) matches nothing, the empty selector
everything.

A term's namespaces: the pod's namespace is in ``namespaces``, or the ``namespaceSelector`` matches the
namespace's labels (``{}`` matches every namespace). Namespace labels are known only when the snapshot was
given them; without them a selector can still be decided when it reads nothing but
``kubernetes.io/metadata.name``, which the API server sets on every namespace to its name. Otherwise the
answer is "unknown" and each caller picks the side that cannot make kube-scheduler's own filter stricter
than ours (a plan kube-scheduler refuses is re-planned elsewhere; a node we wrongly rule out is never tried).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from extender.core.model import LabelSelector, Pod, PodAffinityTerm, Requirement

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"


def requirement_holds(req: Requirement, actual: str | None) -> bool:
    """Whether a label (or field) value, None when absent, satisfies one requirement."""
    op = req.operator
    if op == "In":
        return actual is not None and actual in req.values
    if op == "NotIn":
        return actual is None or actual not in req.values
    if op == "Exists":
        return actual is not None
    if op == "DoesNotExist":
        return actual is None
    if op in ("Gt", "Lt"):  # node selectors only
        if actual is None or len(req.values) != 1:
            return False
        try:
            a, b = int(actual), int(req.values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def selector_matches(sel: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    if sel is None:
        return False
    for k, v in sel.match_labels:
        if labels.get(k) != v:
            return False
    return all(
        r.operator in ("In", "NotIn", "Exists", "DoesNotExist") and requirement_holds(r, labels.get(r.key))
        for r in sel.match_expressions
    )


def namespace_selected(
    term: PodAffinityTerm, namespace: str, namespace_labels: Mapping[str, Mapping[str, str]] | None
) -> bool | None:
    """Whether ``term`` covers pods of ``namespace``; None when that depends on labels we do not have."""
    if namespace in term.namespaces:
        return True
    sel = term.namespace_selector
    if sel is None:
        return False
    if namespace_labels is not None:
        labels = dict(namespace_labels.get(namespace, {}))
        labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
        return selector_matches(sel, labels)
    keys = {k for k, _ in sel.match_labels} | {r.key for r in sel.match_expressions}
    if keys <= {NAMESPACE_NAME_LABEL}:
        return selector_matches(sel, {NAMESPACE_NAME_LABEL: namespace})
    return None


def term_matches(
    term: PodAffinityTerm,
    namespace: str,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, Mapping[str, str]] | None,
    *,
    unknown: bool,
) -> bool:
    """Whether a pod (its namespace and labels) matches ``term``; ``unknown`` is the answer when the
    namespaceSelector cannot be evaluated (see the module docstring)."""
    if not selector_matches(term.selector, labels):
        return False
    selected = namespace_selected(term, namespace, namespace_labels)
    return unknown if selected is None else selected


def describe_selector(sel: LabelSelector | None) -> str:
    """``app=web,tier in (a,b)`` for a reason message."""
    if sel is None:
        return "<no selector>"
    parts = [f"{k}={v}" for k, v in sel.match_labels]
    for r in sel.match_expressions:
        if r.operator == "Exists":
            parts.append(r.key)
        elif r.operator == "DoesNotExist":
            parts.append(f"!{r.key}")
        else:
            parts.append(f"{r.key} {r.operator.lower()} ({','.join(r.values)})")
    return ",".join(parts) or "<all pods>"


@dataclass(frozen=True, slots=True)
class PodMatcher:
    """Which pods on nodes a rule counts: those matching every term (namespace and selector; the
    topology key plays no part). Hashable, so per-node counts are kept once per distinct matcher."""

    terms: tuple[PodAffinityTerm, ...]
    # What an undecidable namespaceSelector counts as (see term_matches).
    unknown: bool = False
    # Topology spread skips pods being deleted; inter-pod affinity counts them.
    skip_deleting: bool = False

    @staticmethod
    def of(terms: tuple[PodAffinityTerm, ...], *, unknown: bool = False) -> PodMatcher:
        """A matcher for ``terms`` whatever their topology keys (terms differing only there share counts)."""
        return PodMatcher(
            tuple(
                PodAffinityTerm(
                    topology_key="",
                    selector=t.selector,
                    namespaces=t.namespaces,
                    namespace_selector=t.namespace_selector,
                )
                for t in terms
            ),
            unknown,
        )

    @staticmethod
    def spread(selector: LabelSelector | None, namespace: str) -> PodMatcher:
        """Topology spread counts pods of the incoming pod's own namespace only."""
        term = PodAffinityTerm(topology_key="", selector=selector, namespaces=frozenset({namespace}))
        return PodMatcher((term,), skip_deleting=True)

    def namespaces(self) -> frozenset[str] | None:
        """The only namespaces whose pods can match, or None when a namespaceSelector may add any."""
        out: frozenset[str] | None = None
        for t in self.terms:
            if t.namespace_selector is not None:
                return None
            out = t.namespaces if out is None else out & t.namespaces
        return out

    def namespace_ok(self, namespace: str, namespace_labels: Mapping[str, Mapping[str, str]] | None) -> bool:
        for t in self.terms:
            selected = namespace_selected(t, namespace, namespace_labels)
            if not (self.unknown if selected is None else selected):
                return False
        return bool(self.terms)

    def labels_ok(self, pod: Pod) -> bool:
        if self.skip_deleting and pod.deleting:
            return False
        return all(selector_matches(t.selector, pod.labels) for t in self.terms)

    def matches(self, pod: Pod, namespace_labels: Mapping[str, Mapping[str, str]] | None) -> bool:
        return self.namespace_ok(pod.namespace, namespace_labels) and self.labels_ok(pod)
