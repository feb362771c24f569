"""Finding the cluster and the default namespace the way kubectl does, and reporting API errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controllers.cli import kubeconfig as kc
from controllers.kube.client import ApiError
from controllers.kube.kubeconfig import KubeConfigError


def _write(path: Path, current: str | None, contexts: dict[str, str | None]) -> Path:
    doc: dict[str, object] = {
        "contexts": [
            {"name": name, "context": {"cluster": "c", **({"namespace": ns} if ns else {})}}
            for name, ns in contexts.items()
        ]
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def test_paths_explicit_then_env_then_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert kc.kubeconfig_paths("/x/kc", {"KUBECONFIG": "/a"}, home) == [Path("/x/kc")]
    assert kc.kubeconfig_paths(None, {"KUBECONFIG": "/a::/b"}, home) == [Path("/a"), Path("/b")]
    assert kc.kubeconfig_paths(None, {}, home) == [home / ".kube" / "config"]


def test_context_namespace_merges_like_kubectl() -> None:
    first = {"contexts": [{"name": "dev", "context": {"namespace": "team-a"}}]}
    second = {
        "current-context": "dev",
        "contexts": [{"name": "dev", "context": {"namespace": "ignored"}}, {"name": "other"}],
    }
    # current-context comes from the second file; the first definition of "dev" wins.
    assert kc.context_namespace([first, second]) == "team-a"
    assert kc.context_namespace([second]) == "ignored"
    assert kc.context_namespace([{**second, "current-context": "other"}]) is None
    assert kc.context_namespace([{"contexts": []}]) is None


def test_resolve_target_reads_namespace_from_kubeconfig(tmp_path: Path) -> None:
    path = _write(tmp_path / "kc", "dev", {"dev": "team-a"})
    assert kc.resolve_target(str(path), None, environ={}) == kc.Target(
        kubeconfig=str(path), namespace="team-a"
    )
    assert kc.resolve_target(str(path), "mine", environ={}).namespace == "mine"


def test_resolve_target_env_skips_missing_files_and_defaults_namespace(tmp_path: Path) -> None:
    real = _write(tmp_path / "real", "dev", {"dev": None})
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}:{real}", "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    target = kc.resolve_target(None, None, environ=env, home=tmp_path)
    # A kubeconfig beats in-cluster credentials, as with kubectl.
    assert target == kc.Target(kubeconfig=str(real), namespace="default")


def test_resolve_target_home_config(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    path = _write(tmp_path / ".kube" / "config", "dev", {"dev": "ns-home"})
    assert kc.resolve_target(None, None, environ={}, home=tmp_path).kubeconfig == str(path)


def test_resolve_target_in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sa = tmp_path / "namespace"
    sa.write_text("pumice-system\n")
    monkeypatch.setattr(kc, "SERVICE_ACCOUNT_NAMESPACE", sa)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    assert kc.resolve_target(None, None, environ=env, home=tmp_path) == kc.Target(
        kubeconfig=None, namespace="pumice-system"
    )


def test_resolve_target_errors(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="does not exist"):
        kc.resolve_target(str(tmp_path / "nope"), None, environ={})
    with pytest.raises(KubeConfigError, match="no cluster credentials"):
        kc.resolve_target(None, None, environ={}, home=tmp_path)
    bad = tmp_path / "bad"
    bad.write_text("a: [")
    with pytest.raises(KubeConfigError, match="cannot read kubeconfig"):
        kc.resolve_target(str(bad), None, environ={})


def test_api_error_message_prefers_the_servers_words() -> None:
    status = {"kind": "Status", "message": 'jobs.batch.volcano.sh "x" not found', "code": 404}
    assert (
        kc.api_error_message(ApiError(404, status, "GET", "/apis/x")) == 'jobs.batch.volcano.sh "x" not found'
    )
    bare = ApiError(404, "404 page not found", "GET", "/apis/batch.volcano.sh/v1alpha1/jobs")
    assert kc.api_error_message(bare) == (
        "the server could not find the requested resource (GET /apis/batch.volcano.sh/v1alpha1/jobs); "
        "are the CRDs installed?"
    )
    assert "HTTP 500" in kc.api_error_message(ApiError(500, "boom", "GET", "/x"))
