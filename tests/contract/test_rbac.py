"""pumice's ClusterRole and Role against the code that needs it (extender/deploy/rbac.py).

Three directions: everything the rendered ClusterRole grants is a row of the table; every row names code
that exists and still mentions the resource it is granted for; and every resource pumice's own API paths
name has a row (the paths it builds with :mod:`controllers.kube.paths`, and any literal path left). Plus the
things least privilege rules out whatever the table says: ``*``, escalation verbs, grants on Secrets beyond
create/get, the grants removed on purpose.

The Role in pumice's namespace (its Lease, the certificate contract's TLS Secrets) is granted for
``pumice serve`` flags the runtime implements: each flag must be in ``pumice serve --help`` and the
service account's code must build a path for the granted resource.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from admission.webhooks import webhook_configurations
from controllers.kube import paths
from extender.deploy.manifests import deploy_manifests
from extender.deploy.names import tls_secret_names
from extender.deploy.rbac import (
    GRANTS,
    NAMESPACE_GRANTS,
    VERB_ORDER,
    Grant,
    NamespaceGrant,
    granted_triples,
    namespace_rules,
    pumice_rules,
)

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "batch-system"


def _docs(tls: bool) -> list[Any]:
    docs: list[Any] = deploy_manifests(
        namespace=NAMESPACE,
        image="example/pumice:1",
        mutual_tls=tls,
        webhook_configurations=webhook_configurations,
    )
    return docs


@pytest.fixture(params=[True, False], ids=["mtls", "plain-http"])
def docs(request: pytest.FixtureRequest) -> list[Any]:
    return _docs(bool(request.param))


def _cluster_role(docs: list[Any]) -> list[dict[str, Any]]:
    [role] = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "pumice"]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def _triples(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (g, r, v)
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def _resolve(ref: str) -> object:
    module_name, _, qualname = ref.partition(":")
    obj: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        assert hasattr(obj, part), f"{ref}: {part!r} not found (renamed or removed? update the RBAC table)"
        obj = getattr(obj, part)
    return obj


def _text(ref: str) -> str:
    obj = _resolve(ref)
    if inspect.isfunction(obj) or inspect.isclass(obj):
        return inspect.getsource(obj)
    assert isinstance(obj, str | tuple | dict), f"{ref}: neither a function nor a constant holding API paths"
    return repr(obj)


def _mentions(text: str, fragment: str) -> bool:
    """Whether code mentions a resource, ignoring case and underscores: callers name resources through
    controllers.kube.paths (``paths.NETWORK_POLICIES``, ``paths.pod_binding``)."""

    def norm(s: str) -> str:
        return s.lower().replace("_", "")

    return norm(fragment) in norm(text)


# --- (1) granted => in the table --------------------------------------------------------------------------


def test_every_granted_triple_is_in_the_table(docs: list[Any]) -> None:
    granted = _triples(_cluster_role(docs))
    assert granted <= granted_triples(), sorted(granted - granted_triples())
    # And the table is all the role grants: no row is left out of the rendered role.
    assert granted == granted_triples()


def test_pumice_is_bound_to_its_cluster_role_and_namespace_role_only(docs: list[Any]) -> None:
    bindings = [
        d
        for d in docs
        if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
        and any(s["name"] == "pumice" for s in d["subjects"])
    ]
    assert [(b["kind"], b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings] == [
        ("ClusterRoleBinding", "ClusterRole", "pumice"),
        ("RoleBinding", "Role", "pumice"),
    ]
    [binding] = [b for b in bindings if b["kind"] == "RoleBinding"]
    assert binding["metadata"]["namespace"] == NAMESPACE
    # The leader-election Role no code used is gone.
    assert not [d for d in docs if d["metadata"]["name"] == "pumice-leader-election"]


# --- (2) every row names code that exists and mentions the resource ---------------------------------------


@pytest.mark.parametrize(
    "grant", GRANTS, ids=lambda g: f"{g.group or 'core'}/{g.resource}:{','.join(g.verbs)}"
)
def test_table_row_names_code_that_uses_the_resource(grant: Grant) -> None:
    assert grant.code, "a row without code grants for nobody"
    assert grant.why.strip()
    # The first name is where the call is made (or the informers' path table): a function or a constant.
    text = "\n".join(_text(ref) for ref in grant.code)
    for fragment in grant.fragments():
        assert _mentions(text, fragment), f"none of {grant.code} mentions {fragment!r} any more"


def test_table_verbs_are_kubernetes_verbs() -> None:
    for grant in GRANTS:
        assert grant.verbs and set(grant.verbs) <= set(VERB_ORDER), grant
        assert "*" not in (grant.group, grant.resource)


def test_grants_through_helpers_name_the_caller_first() -> None:
    """The first code name of a row is where the request is sent from, never only the constant."""
    for grant in GRANTS:
        first = _resolve(grant.code[0])
        if not inspect.isfunction(first):
            assert grant.code[0] == "extender.wiring:INFORMERS", grant  # the one table of watched paths


# --- (3) every resource pumice's API paths name has a row -------------------------------------------------

# Resource plurals pumice's code could plausibly call; a path segment outside this list is not a resource.
_KNOWN_RESOURCES = {
    "nodes",
    "pods",
    "binding",
    "eviction",
    "status",
    "events",
    "secrets",
    "configmaps",
    "services",
    "endpoints",
    "persistentvolumeclaims",
    "leases",
    "networkpolicies",
    "priorityclasses",
    "podgroups",
    "queues",
    "jobs",
    "commands",
    "jobflows",
    "jobtemplates",
    "cronjobs",
    "customresourcedefinitions",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
}
# The pumice CLI (controllers/cli) runs with the user's credentials, not the ServiceAccount's. The paths
# module is the table of every resource, the CLI's too: what counts is which of them the code uses.
_PATHS_MODULE = ROOT / "controllers" / "kube" / "paths.py"
_SERVICE_ACCOUNT_CODE = [
    *sorted(
        p
        for p in (ROOT / "controllers").rglob("*.py")
        if "cli" not in p.relative_to(ROOT).parts and p != _PATHS_MODULE
    ),
    ROOT / "extender" / "main.py",
    ROOT / "extender" / "serve.py",
    ROOT / "extender" / "wiring.py",
]
_RESOURCES = {name: r for name, r in vars(paths).items() if isinstance(r, paths.Resource)}


def _built_paths(text: str) -> Iterator[tuple[str, str]]:
    """(apiGroup, resource) of every path ``text`` builds through controllers.kube.paths: a table row
    (``paths.QUEUES``, ``paths.QUEUES.status``) or a subresource helper (``paths.pod_binding``)."""
    for m in re.finditer(r"\bpaths\.([A-Z][A-Z_]*)\b(\.status\b)?", text):
        assert m[1] in _RESOURCES, f"paths.{m[1]} is not a resource of controllers.kube.paths"
        resource = _RESOURCES[m[1]]
        yield resource.group, resource.plural + ("/status" if m[2] else "")
    for m in re.finditer(r"\bpaths\.pod_([a-z]+)\b", text):
        yield paths.PODS.group, f"pods/{m[1]}"


def test_every_resource_the_code_builds_a_path_for_has_a_row() -> None:
    table = {(g.group, g.resource) for g in GRANTS} | {(g.group, g.resource) for g in NAMESPACE_GRANTS}
    seen: dict[tuple[str, str], str] = {}
    for path in _SERVICE_ACCOUNT_CODE:
        text = path.read_text()
        # Imported as a module, so every use reads ``paths.<NAME>`` and the scan below sees it.
        assert "from controllers.kube.paths import" not in text, (
            f"{path}: use `from controllers.kube import paths`"
        )
        for built in _built_paths(text):
            seen.setdefault(built, str(path.relative_to(ROOT)))
    assert ("", "pods/binding") in seen, (
        "found no paths built through controllers.kube.paths: the scan is broken"
    )
    missing = {f"{g or 'core'}/{r}": where for (g, r), where in seen.items() if (g, r) not in table}
    assert not missing, missing


def test_the_scan_sees_what_a_new_caller_builds() -> None:
    text = "await c.post(paths.pod_binding(ns, n), b)\nawait c.merge_patch(paths.NODES.status(q), s)\n"
    assert list(_built_paths(text)) == [("", "nodes/status"), ("", "pods/binding")]
    assert ("", "nodes/status") not in {(g.group, g.resource) for g in GRANTS}  # so a caller would fail


# --- least privilege, whatever the table says -------------------------------------------------------------


def test_no_wildcards_or_escalation_anywhere(docs: list[Any]) -> None:
    for doc in docs:
        if doc["kind"] not in ("Role", "ClusterRole"):
            continue
        for rule in doc["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), (doc["metadata"]["name"], rule)
            assert not {"escalate", "bind", "impersonate", "deletecollection"} & set(rule["verbs"]), rule
            assert rule.get("resourceNames", None) != [], rule  # an empty list would mean every name


def test_secrets_only_create_and_get(docs: list[Any]) -> None:
    granted = _triples(_cluster_role(docs))
    assert {v for g, r, v in granted if r == "secrets"} == {"create", "get"}
    assert not [t for t in granted if t[1].startswith("secrets/")]


@pytest.mark.parametrize(
    ("group", "resource"),
    [
        ("", "events"),
        ("coordination.k8s.io", "leases"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("scheduling.volcano.sh", "podgroups/status"),
        ("", "nodes/status"),
    ],
)
def test_removed_grants_stay_removed(group: str, resource: str) -> None:
    granted = _triples(_cluster_role(_docs(tls=True)))
    assert not [t for t in granted if t[:2] == (group, resource)]


def test_no_update_or_delete_of_plugin_objects_and_no_node_writes() -> None:
    granted = _triples(_cluster_role(_docs(tls=True)))
    assert {v for g, r, v in granted if r == "events"} == {"create", "patch"}  # new ones and their series
    for resource in ("services", "configmaps", "secrets", "networkpolicies"):
        assert not {v for _, r, v in granted if r == resource} & {"update", "delete", "list", "watch"}
    assert {v for _, r, v in granted if r == "nodes"} == {"get", "list", "watch"}


def test_webhook_configurations_by_name_except_create() -> None:
    rules = _cluster_role(_docs(tls=True))
    webhook_rules = [r for r in rules if r["apiGroups"] == ["admissionregistration.k8s.io"]]
    assert webhook_rules
    for rule in webhook_rules:
        if rule["verbs"] == ["create"]:
            assert "resourceNames" not in rule  # cannot be limited by name: the object does not exist yet
        else:
            assert rule["verbs"] == ["get", "update"]
            assert rule["resourceNames"] == ["pumice-mutating", "pumice-validating"]


def test_table_scope_matches_the_deployed_serve_flags() -> None:
    """The table leaves out register_webhooks' patch path because deploy always passes --webhook-service."""
    deployment = next(
        d for d in _docs(tls=True) if d["kind"] == "Deployment" and d["metadata"]["name"] == "pumice"
    )
    command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--webhook-service") + 1] == f"{NAMESPACE}/pumice"
    assert ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch") not in granted_triples()


def test_pumice_rules_refuses_an_empty_name_list() -> None:
    with pytest.raises(ValueError, match="every name"):
        pumice_rules([])


# --- the Role in pumice's namespace ----------------------------------------------------------------------


def _role(docs: list[Any]) -> list[dict[str, Any]]:
    [role] = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "pumice"]
    assert role["metadata"]["namespace"] == NAMESPACE
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def test_namespace_role_is_the_table_limited_by_name(docs: list[Any]) -> None:
    rules = _role(docs)
    assert rules == namespace_rules(tls_secrets=tls_secret_names(), lease="pumice")
    assert _triples(rules) == {(g.group, g.resource, v) for g in NAMESPACE_GRANTS for v in g.verbs}
    for rule in rules:
        # Only create goes without names: the object does not exist yet when it is authorized.
        assert ("resourceNames" in rule) is (rule["verbs"] != ["create"]), rule
    secrets = [r for r in rules if r["resources"] == ["secrets"] and "resourceNames" in r]
    assert [r["resourceNames"] for r in secrets] == [
        ["pumice-ca", "pumice-webhook-tls", "pumice-extender-tls", "pumice-kube-scheduler-tls"]
    ]
    leases = [r for r in rules if r["resources"] == ["leases"] and "resourceNames" in r]
    assert [(r["verbs"], r["resourceNames"]) for r in leases] == [(["get", "watch", "update"], ["pumice"])]


def test_namespace_rules_refuse_empty_names() -> None:
    with pytest.raises(ValueError, match="every name"):
        namespace_rules(tls_secrets=[], lease="pumice")
    with pytest.raises(ValueError, match="every name"):
        namespace_rules(tls_secrets=tls_secret_names(), lease="")


def test_namespace_grants_are_for_flags_the_deployment_runs_with(docs: list[Any]) -> None:
    """Each row's flag is on in the deployed pumice: passed (--tls-secrets-prefix) or on by default and
    not turned off (--leader-elect)."""
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "pumice")
    command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--tls-secrets-prefix") + 1] == "pumice"
    assert "--leader-elect=false" not in command
    assert {g.flag for g in NAMESPACE_GRANTS} == {"--tls-secrets-prefix", "--leader-elect"}


@functools.cache
def _serve_help() -> str:
    result = subprocess.run(
        [sys.executable, "-m", "extender.main", "serve", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return result.stdout


@pytest.mark.parametrize("grant", NAMESPACE_GRANTS, ids=lambda g: f"{g.resource}:{','.join(g.verbs)}")
def test_namespace_grant_is_used_by_the_runtime_once_it_has_the_flag(grant: NamespaceGrant) -> None:
    """``pumice serve`` has the row's flag, and the service account's code builds a path for the row's
    resource (through controllers.kube.paths), so a grant nobody uses shows up here."""
    assert grant.flag in _serve_help(), f"`pumice serve --help` has no {grant.flag}: drop the grant"
    built = {b for path in _SERVICE_ACCOUNT_CODE for b in _built_paths(path.read_text())}
    assert (grant.group, grant.resource) in built, (
        f"{grant.flag} exists but no service-account code builds a path for {grant.group or 'core'}/"
        f"{grant.resource}: drop the grant or name the code"
    )
