"""What ``pumice manifests`` prints, applied to the real API server of the control plane under test.

Run once per control plane (``KUBEBUILDER_ASSETS`` names its binaries: v1.28 and v1.24 in CI), so every
supported release is checked against what it actually accepts, not against what we believe it accepts:

- every CRD of ``manifests crds`` is created (201), or is already there (409) and ours may replace it (a
  server-side dry-run update); and, either way, is accepted as a fresh create (a dry-run create under a
  throwaway group), because an update may exempt unchanged CEL rules from the cost check a create applies;
- the HyperNode selector rule is live exactly where ``Features.cel_validation`` says the release enforces
  CEL rules (1.25+; 1.24 stores the rule and lets everything through);
- ``manifests deploy --kubernetes-version <the server's>`` passes ``kubectl apply --dry-run=server
  --validate=true`` (no unknown fields, no field the release lacks), its scheduler config loads in this
  control plane's kube-scheduler, and its kube-scheduler image is that release;
- ``--kubeconfig`` finds the same release: the output equals the one for ``--kubernetes-version``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.api.versions import KubernetesVersion, features, scheduler_image, version_from_info
from extender.process.tls import generate_mtls_bundle
from tests.e2e.controlplane import ControlPlane, _http, assets_dir, find_binary

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
SELECTOR_RULE_MESSAGE = "set exactly one of exactMatch, regexMatch or labelMatch"
# What `deploy` prints outside the namespace it is given.
CLUSTER_KINDS = {
    "ClusterRole",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}


def _pumice(control_plane: ControlPlane, *args: str) -> str:
    """``pumice <args>`` as a user runs it; its stdout, or the test fails with its stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "extender.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=control_plane.env(),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"pumice {' '.join(args)}: exit {result.returncode}\n{result.stderr}"
    return result.stdout


def _kubectl() -> str:
    """The control plane's own kubectl when it ships one, else the one on PATH."""
    bundled = assets_dir() / "kubectl"
    if bundled.is_file():
        return str(bundled)
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip(f"no kubectl in {assets_dir()} or on PATH")
    return found


def _server_version(control_plane: ControlPlane) -> tuple[KubernetesVersion, str]:
    """The API server's release as ``/version`` says it, and its gitVersion text."""
    status, body = _http("GET", f"{control_plane.server_url}/version", control_plane.token)
    assert status == 200, body
    info = json.loads(body)
    return version_from_info(info), str(info["gitVersion"])


def _call(
    control_plane: ControlPlane, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    status, raw = _http(method, f"{control_plane.server_url}{path}", control_plane.token, body, timeout=30)
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = {"message": raw[:300].decode(errors="replace")}
    return status, decoded if isinstance(decoded, dict) else {"message": repr(decoded)[:300]}


def _wait_established(control_plane: ControlPlane, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        status, crd = _call(control_plane, "GET", f"{CRDS}/{name}")
        conditions = crd.get("status", {}).get("conditions", []) if status == 200 else []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        assert time.monotonic() < deadline, f"CRD {name} not established: {conditions}"
        time.sleep(0.1)


def _under_throwaway_group(crd: dict[str, Any]) -> dict[str, Any]:
    """``crd`` moved to a group nobody serves, so a dry-run create validates it as new."""
    copy: dict[str, Any] = json.loads(json.dumps(crd))
    group = f"e2e{secrets.token_hex(3)}.{crd['spec']['group']}"
    copy["spec"]["group"] = group
    copy["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{group}"}
    return copy


def test_every_crd_is_accepted(control_plane: ControlPlane) -> None:
    version, git_version = _server_version(control_plane)
    docs = [d for d in yaml.safe_load_all(_pumice(control_plane, "manifests", "crds")) if d is not None]
    assert {d["kind"] for d in docs} == {"CustomResourceDefinition"} and len(docs) >= 7

    refused: list[str] = []
    for crd in docs:
        name = crd["metadata"]["name"]
        status, answer = _call(control_plane, "POST", f"{CRDS}?dryRun=All", _under_throwaway_group(crd))
        if status != 201:
            refused.append(f"{name} (as a new CRD): HTTP {status}: {answer.get('message')}")
            continue
        status, answer = _call(control_plane, "POST", CRDS, crd)
        if status == 409:
            # Already there (another test applied it): ours must be able to replace what is stored.
            status, current = _call(control_plane, "GET", f"{CRDS}/{name}")
            assert status == 200, current
            update = {
                **crd,
                "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
            }
            status, answer = _call(control_plane, "PUT", f"{CRDS}/{name}?dryRun=All", update)
            if status != 200:
                refused.append(f"{name} (replacing the stored one): HTTP {status}: {answer.get('message')}")
        elif status != 201:
            refused.append(f"{name}: HTTP {status}: {answer.get('message')}")
    assert refused == [], f"kube-apiserver {git_version} refused:\n" + "\n".join(refused)

    for crd in docs:
        _wait_established(control_plane, crd["metadata"]["name"])

    def hypernode(selector: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": f"e2e-{secrets.token_hex(3)}"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": selector}]},
        }

    status, answer = _call(
        control_plane, "POST", f"{HYPERNODES}?dryRun=All", hypernode({"exactMatch": {"name": "node-0"}})
    )
    assert status == 201, answer
    enforced = features(version).cel_validation
    for selector in ({"exactMatch": {"name": "node-0"}, "regexMatch": {"pattern": "^n"}}, {}):
        status, answer = _call(control_plane, "POST", f"{HYPERNODES}?dryRun=All", hypernode(selector))
        assert status == (422 if enforced else 201), (git_version, selector, answer)
        if enforced:
            assert SELECTOR_RULE_MESSAGE in str(answer.get("message")), answer


def _kubectl_apply_dry_run(control_plane: ControlPlane, manifests: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            _kubectl(),
            f"--kubeconfig={control_plane.kubeconfig_path}",
            "apply",
            "--dry-run=server",
            # true: strict in kubectl 1.25+ (server-side field validation); a boolean before.
            "--validate=true",
            "-f",
            "-",
        ],
        input=manifests,
        capture_output=True,
        text=True,
        env=control_plane.env(),
        timeout=120,
        check=False,
    )


def _unique_cluster_names(docs: Sequence[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    """``docs`` with their cluster-scoped objects renamed (and references to them followed).

    The control plane is shared: a pumice started by another test has registered ``pumice-mutating`` with a
    URL, and ``kubectl apply`` would merge our Service-based clientConfig into it (url *and* service, which
    the API server rightly refuses). Renamed, every object is validated as the create it is on a new cluster.
    """
    renamed = {d["metadata"]["name"] for d in docs if d["kind"] in CLUSTER_KINDS}
    out: list[dict[str, Any]] = json.loads(json.dumps(list(docs)))
    for doc in out:
        if doc["kind"] in CLUSTER_KINDS:
            doc["metadata"]["name"] += suffix
        ref = doc.get("roleRef")
        if isinstance(ref, dict) and ref.get("kind") == "ClusterRole" and ref.get("name") in renamed:
            ref["name"] += suffix
    return out


def _by_kind(docs: Sequence[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _scheduler_config_loads(
    control_plane: ControlPlane, docs: Sequence[dict[str, Any]], tmp_path: Path
) -> dict[str, Any]:
    """The deployed scheduler config as this control plane's kube-scheduler reads it (--write-config-to).

    Only the paths change: the admin kubeconfig for in-cluster credentials, and for the files of the
    mounted client Secret (which pumice fills at start-up: nothing secret is in the manifests) a client
    pair made here the way pumice makes it."""
    binary = find_binary("kube-scheduler")
    assert binary is not None
    config_map = _by_kind(docs, "ConfigMap")["pumice-scheduler-config"]
    config = yaml.safe_load(config_map["data"]["scheduler-config.yaml"])
    config["clientConnection"]["kubeconfig"] = str(control_plane.kubeconfig_path)
    [extender] = config["extenders"]
    if "tlsConfig" in extender:
        bundle = generate_mtls_bundle(dns_names=["pumice"])
        for key, data in (
            ("ca.crt", bundle.ca_cert),
            ("tls.crt", bundle.client_cert),
            ("tls.key", bundle.client_key),
        ):
            (tmp_path / key).write_bytes(data)
        tls = extender["tlsConfig"]
        for field in ("caFile", "certFile", "keyFile"):
            tls[field] = str(tmp_path / Path(tls[field]).name)
    config_file, written = tmp_path / "config.yaml", tmp_path / "effective.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    result = subprocess.run(
        [str(binary), f"--config={config_file}", f"--write-config-to={written}", "--secure-port=0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    effective: dict[str, Any] = yaml.safe_load(written.read_text())
    return effective


async def test_deploy_output_applies(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    version, git_version = _server_version(control_plane)
    output = await asyncio.to_thread(
        _pumice,
        control_plane,
        "manifests",
        "deploy",
        "--namespace",
        namespace,
        "--image",
        "example.com/pumice:e2e",
        "--kubernetes-version",
        git_version,
    )
    docs = [d for d in yaml.safe_load_all(output) if d is not None]
    unique = _unique_cluster_names(docs, f"-{namespace}")
    result = await asyncio.to_thread(
        _kubectl_apply_dry_run, control_plane, yaml.safe_dump_all(unique, sort_keys=False)
    )
    assert result.returncode == 0, f"kubectl apply --dry-run=server on {git_version}:\n{result.stderr}"
    applied = result.stdout.splitlines()
    # The Namespace is the test's own, so it exists; everything else is new.
    assert len(applied) == len(docs) and all(line.endswith("(server dry run)") for line in applied), (
        result.stdout
    )
    assert [line for line in applied if " created " not in line] == [
        line for line in applied if line.startswith(f"namespace/{namespace} ")
    ], result.stdout
    assert "unknown field" not in result.stderr, result.stderr

    # What this release accepts, and only that.
    release = features(version)
    hooks = [w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]]
    assert hooks
    assert any("matchConditions" in w for w in hooks) is release.match_conditions
    pod_hooks = [w["name"] for w in hooks if any("pods" in r["resources"] for r in w["rules"])]
    assert bool(pod_hooks) is release.match_conditions
    assert ("mutate-pod.pumice.dev" in pod_hooks) is (release.match_conditions and release.scheduling_gates)

    [scheduler] = _by_kind(docs, "Deployment")["pumice-kube-scheduler"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert scheduler["image"] == scheduler_image(version)
    effective = await asyncio.to_thread(_scheduler_config_loads, control_plane, docs, tmp_path)
    assert effective["apiVersion"] == release.scheduler_config_api_version
    [extender] = effective["extenders"]
    assert extender["urlPrefix"] == f"https://pumice.{namespace}.svc:8888"


@pytest.mark.parametrize(
    "args",
    [
        # Nothing random in it (no certificates): the same release gives the same text, mutual TLS and all.
        ("deploy", "--image", "example.com/pumice:e2e"),
        ("webhooks", "--service", "volcano-system/pumice"),
    ],
    ids=["deploy", "webhooks"],
)
def test_kubeconfig_reads_the_release(control_plane: ControlPlane, args: tuple[str, ...]) -> None:
    _, git_version = _server_version(control_plane)
    told = _pumice(control_plane, "manifests", *args, "--kubernetes-version", git_version)
    asked = _pumice(control_plane, "manifests", *args, "--kubeconfig", str(control_plane.kubeconfig_path))
    assert asked == told
