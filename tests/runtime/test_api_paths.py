"""Every Kubernetes REST path pumice builds, against the exact string, and nowhere else a path literal.

:mod:`controllers.kube.paths` is the one place paths are built. The table below is what kube-apiserver
serves (``kubectl get --raw`` spells the same strings); a change to the paths module that moves any of them
fails here. The scan keeps it the one place: a ``/apis/...`` or ``/api/v1...`` literal anywhere else in the
packages fails, so a new caller cannot slip an f-string path past the table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from controllers.kube import paths

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("extender", "admission", "controllers")
PATHS_MODULE = "controllers/kube/paths.py"
# Still to be switched to controllers.kube.paths (another change owns these files): drop each entry when its
# file is switched. Nothing else may hold a path literal.
PENDING: frozenset[str] = frozenset()

SCHED = "/apis/scheduling.volcano.sh/v1beta1"
BATCH = "/apis/batch.volcano.sh/v1alpha1"
BUS = "/apis/bus.volcano.sh/v1alpha1"
ADMREG = "/apis/admissionregistration.k8s.io/v1"

CASES: list[tuple[str, Callable[[], str], str]] = [
    # --- collections (LIST, WATCH, POST) ---
    ("nodes", lambda: paths.NODES.collection(), "/api/v1/nodes"),
    ("pods, all namespaces", lambda: paths.PODS.collection(), "/api/v1/pods"),
    ("pods", lambda: paths.PODS.collection("ns1"), "/api/v1/namespaces/ns1/pods"),
    ("services", lambda: paths.SERVICES.collection("ns1"), "/api/v1/namespaces/ns1/services"),
    ("configmaps", lambda: paths.CONFIG_MAPS.collection("ns1"), "/api/v1/namespaces/ns1/configmaps"),
    ("secrets", lambda: paths.SECRETS.collection("ns1"), "/api/v1/namespaces/ns1/secrets"),
    ("core events", lambda: paths.CORE_EVENTS.collection("ns1"), "/api/v1/namespaces/ns1/events"),
    (
        "leases",
        lambda: paths.LEASES.collection("ns1"),
        "/apis/coordination.k8s.io/v1/namespaces/ns1/leases",
    ),
    ("events", lambda: paths.EVENTS.collection("ns1"), "/apis/events.k8s.io/v1/namespaces/ns1/events"),
    (
        "priorityclasses",
        lambda: paths.PRIORITY_CLASSES.collection(),
        "/apis/scheduling.k8s.io/v1/priorityclasses",
    ),
    (
        "networkpolicies",
        lambda: paths.NETWORK_POLICIES.collection("ns1"),
        "/apis/networking.k8s.io/v1/namespaces/ns1/networkpolicies",
    ),
    (
        "resourcequotas",
        lambda: paths.RESOURCE_QUOTAS.collection("ns1"),
        "/api/v1/namespaces/ns1/resourcequotas",
    ),
    (
        "poddisruptionbudgets",
        lambda: paths.POD_DISRUPTION_BUDGETS.collection("ns1"),
        "/apis/policy/v1/namespaces/ns1/poddisruptionbudgets",
    ),
    (
        "hypernodes",
        lambda: paths.HYPERNODES.collection(),
        "/apis/topology.volcano.sh/v1alpha1/hypernodes",
    ),
    (
        "numatopologies",
        lambda: paths.NUMATOPOLOGIES.collection(),
        "/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies",
    ),
    (
        "replicasets",
        lambda: paths.REPLICA_SETS.collection("ns1"),
        "/apis/apps/v1/namespaces/ns1/replicasets",
    ),
    (
        "statefulsets",
        lambda: paths.STATEFUL_SETS.collection("ns1"),
        "/apis/apps/v1/namespaces/ns1/statefulsets",
    ),
    (
        "batch jobs",
        lambda: paths.BATCH_JOBS.collection("ns1"),
        "/apis/batch/v1/namespaces/ns1/jobs",
    ),
    (
        "mutating webhooks",
        lambda: paths.MUTATING_WEBHOOK_CONFIGURATIONS.collection(),
        f"{ADMREG}/mutatingwebhookconfigurations",
    ),
    (
        "validating webhooks",
        lambda: paths.VALIDATING_WEBHOOK_CONFIGURATIONS.collection(),
        f"{ADMREG}/validatingwebhookconfigurations",
    ),
    ("podgroups, all namespaces", lambda: paths.PODGROUPS.collection(), f"{SCHED}/podgroups"),
    ("podgroups", lambda: paths.PODGROUPS.collection("ns1"), f"{SCHED}/namespaces/ns1/podgroups"),
    ("queues", lambda: paths.QUEUES.collection(), f"{SCHED}/queues"),
    ("jobs, all namespaces", lambda: paths.JOBS.collection(), f"{BATCH}/jobs"),
    ("jobs", lambda: paths.JOBS.collection("ns1"), f"{BATCH}/namespaces/ns1/jobs"),
    ("commands, all namespaces", lambda: paths.COMMANDS.collection(), f"{BUS}/commands"),
    ("commands", lambda: paths.COMMANDS.collection("ns1"), f"{BUS}/namespaces/ns1/commands"),
    # --- objects (GET, PATCH, PUT, DELETE) ---
    ("node", lambda: paths.NODES.item("n1"), "/api/v1/nodes/n1"),
    ("pod", lambda: paths.PODS.item("p1", namespace="ns1"), "/api/v1/namespaces/ns1/pods/p1"),
    ("secret", lambda: paths.SECRETS.item("j-ssh", namespace="ns1"), "/api/v1/namespaces/ns1/secrets/j-ssh"),
    (
        "configmap",
        lambda: paths.CONFIG_MAPS.item("j-svc", namespace="ns1"),
        "/api/v1/namespaces/ns1/configmaps/j-svc",
    ),
    (
        "event",
        lambda: paths.EVENTS.item("p1.0a1b", namespace="ns1"),
        "/apis/events.k8s.io/v1/namespaces/ns1/events/p1.0a1b",
    ),
    (
        "mutating webhook",
        lambda: paths.MUTATING_WEBHOOK_CONFIGURATIONS.item("pumice-mutating"),
        f"{ADMREG}/mutatingwebhookconfigurations/pumice-mutating",
    ),
    (
        "validating webhook",
        lambda: paths.VALIDATING_WEBHOOK_CONFIGURATIONS.item("pumice-validating"),
        f"{ADMREG}/validatingwebhookconfigurations/pumice-validating",
    ),
    (
        "podgroup",
        lambda: paths.PODGROUPS.item("pg1", namespace="ns1"),
        f"{SCHED}/namespaces/ns1/podgroups/pg1",
    ),
    ("queue", lambda: paths.QUEUES.item("q1"), f"{SCHED}/queues/q1"),
    ("job", lambda: paths.JOBS.item("j1", namespace="ns1"), f"{BATCH}/namespaces/ns1/jobs/j1"),
    ("command", lambda: paths.COMMANDS.item("c1", namespace="ns1"), f"{BUS}/namespaces/ns1/commands/c1"),
    ("cronjobs", lambda: paths.CRONJOBS.collection("ns1"), f"{BATCH}/namespaces/ns1/cronjobs"),
    (
        "cronjob status",
        lambda: paths.CRONJOBS.status("c1", namespace="ns1"),
        f"{BATCH}/namespaces/ns1/cronjobs/c1/status",
    ),
    (
        "jobflows",
        lambda: paths.JOBFLOWS.collection("ns1"),
        "/apis/flow.volcano.sh/v1alpha1/namespaces/ns1/jobflows",
    ),
    (
        "jobflow status",
        lambda: paths.JOBFLOWS.status("f1", namespace="ns1"),
        "/apis/flow.volcano.sh/v1alpha1/namespaces/ns1/jobflows/f1/status",
    ),
    (
        "jobtemplates",
        lambda: paths.JOBTEMPLATES.collection("ns1"),
        "/apis/flow.volcano.sh/v1alpha1/namespaces/ns1/jobtemplates",
    ),
    # --- subresources ---
    ("pod binding", lambda: paths.pod_binding("ns1", "p1"), "/api/v1/namespaces/ns1/pods/p1/binding"),
    ("pod eviction", lambda: paths.pod_eviction("ns1", "p1"), "/api/v1/namespaces/ns1/pods/p1/eviction"),
    ("pod status", lambda: paths.PODS.status("p1", namespace="ns1"), "/api/v1/namespaces/ns1/pods/p1/status"),
    ("node status", lambda: paths.NODES.status("n1"), "/api/v1/nodes/n1/status"),
    ("queue status", lambda: paths.QUEUES.status("q1"), f"{SCHED}/queues/q1/status"),
    (
        "job status",
        lambda: paths.JOBS.status("j1", namespace="ns1"),
        f"{BATCH}/namespaces/ns1/jobs/j1/status",
    ),
    # --- what a user typed: quoted into one segment (the CLI) ---
    ("typed name", lambda: paths.QUEUES.item(paths.segment("a/b?c")), f"{SCHED}/queues/a%2Fb%3Fc"),
    ("typed valid name", lambda: paths.segment("team-a.x"), "team-a.x"),
]


@pytest.mark.parametrize(("what", "build", "expected"), CASES, ids=[c[0] for c in CASES])
def test_path(what: str, build: Callable[[], str], expected: str) -> None:
    assert build() == expected


@pytest.mark.parametrize(
    ("resource", "api_version"),
    [
        (paths.PODS, "v1"),
        (paths.EVENTS, "events.k8s.io/v1"),
        (paths.PODGROUPS, "scheduling.volcano.sh/v1beta1"),
        (paths.QUEUES, "scheduling.volcano.sh/v1beta1"),
        (paths.JOBS, "batch.volcano.sh/v1alpha1"),
        (paths.COMMANDS, "bus.volcano.sh/v1alpha1"),
    ],
)
def test_api_version(resource: paths.Resource, api_version: str) -> None:
    assert resource.api_version == api_version


def test_every_resource_of_the_table_is_checked() -> None:
    """A row added to the table gets its case above (its collection, at least)."""
    expected = {e for _, _, e in CASES}
    table = {name: r for name, r in vars(paths).items() if isinstance(r, paths.Resource)}
    unchecked = [n for n, r in table.items() if r.collection("ns1" if r.namespaced else None) not in expected]
    assert not unchecked


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: paths.QUEUES.collection("ns1"), "cluster-scoped"),
        (lambda: paths.NODES.item("n1", namespace="ns1"), "cluster-scoped"),
        (lambda: paths.PODS.item("p1"), "namespaced"),
        (lambda: paths.JOBS.status("j1"), "namespaced"),
        # Volcano's PodGroup has no status subresource: its status is written through the object.
        (lambda: paths.PODGROUPS.status("pg1", namespace="ns1"), "no 'status' subresource"),
        (lambda: paths.QUEUES.subresource("q1", "binding"), "no 'binding' subresource"),
    ],
)
def test_wrong_shapes_are_refused(build: Callable[[], str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


# A path literal: "/apis/" or "/api/" starting a path (not "extender/api/..." inside a file name).
_LITERAL = re.compile(r"(?<![\w.-])/apis?/")


def _literals() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == PATHS_MODULE:
                continue
            lines = [f"{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)]
            hits = [line for line in lines if _LITERAL.search(line)]
            if hits:
                found[rel] = hits
    return found


def test_no_path_literal_outside_the_paths_module() -> None:
    found = {rel: hits for rel, hits in _literals().items() if rel not in PENDING}
    assert not found, f"build these paths with controllers.kube.paths: {found}"


def test_the_scan_finds_a_literal() -> None:
    assert _LITERAL.search('path = f"/apis/{group}/{version}/queues"')
    assert _LITERAL.search('await client.get(f"/api/v1/namespaces/{ns}/pods/{name}")')
    assert not _LITERAL.search("directory as ``extender/api/crds`` (see the force-include)")
    assert (ROOT / PATHS_MODULE).is_file()
