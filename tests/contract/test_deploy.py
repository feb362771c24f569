"""What ``pumice manifests`` prints: scheduler config per version, deploy manifests, the CLI.

Field names are checked against the Go JSON tags in the Kubernetes sources when they are present
(/opt/k8s-src, or a 1.28 build tree for v1 and v1beta3), and the v1beta2/v1beta3 configs against a real
kube-scheduler 1.24 when its binary is present.
"""

import argparse
import asyncio
import base64
import functools
import re
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from admission.webhooks import webhook_configurations
from controllers.kube import version as kube_version
from controllers.kube.client import KubeClient
from controllers.reconcilers import bootstrap
from extender.api import crds
from extender.api.versions import (
    ClusterUnreachable,
    Features,
    KubernetesVersion,
    check_supported,
    features,
    parse_version,
    scheduler_config_api_versions,
    scheduler_image,
    version_from_info,
)
from extender.deploy import yamltext
from extender.deploy.args import VersionReader, add_manifests_parser, run_manifests
from extender.deploy.manifests import deploy_manifests
from extender.deploy.names import tls_secret_names
from extender.deploy.rbac import pumice_rules
from extender.deploy.scheduler_config import (
    API_V1,
    API_V1BETA2,
    API_V1BETA3,
    SUPPORTED_API_VERSIONS,
    ExtenderTLS,
    scheduler_config,
    scheduler_config_yaml,
)
from extender.deploy.webhooks import WebhookBuilder, webhook_manifests
from extender.main import main as pumice_main
from extender.process.tls import MutualTLSBundle, generate_mtls_bundle, service_dns_names
from tests.fakeapi import FakeApiServer

K8S_SRC_DIRS = (
    Path("/opt/k8s-src/staging/src/k8s.io/kube-scheduler/config"),
    Path("/opt/k8s-build/k8s-1.28.7/staging/src/k8s.io/kube-scheduler/config"),
)
KUBE_SCHEDULER = Path("/usr/local/kubebuilder/bin/kube-scheduler")
URL = "http://pumice.volcano-system.svc:8888"
HTTPS_URL = "https://pumice.volcano-system.svc:8888"
CLIENT_TLS = ExtenderTLS(
    ca_file="/etc/pumice-extender-client/ca.crt",
    cert_file="/etc/pumice-extender-client/tls.crt",
    key_file="/etc/pumice-extender-client/tls.key",
)

EXTENDER_KEYS = {
    "urlPrefix",
    "filterVerb",
    "prioritizeVerb",
    "preemptVerb",
    "bindVerb",
    "weight",
    "enableHTTPS",
    "nodeCacheCapable",
    "httpTimeout",
    "ignorable",
}
NAMESPACED_KINDS = {
    "PodDisruptionBudget",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Service",
    "Deployment",
    "NetworkPolicy",
}
CLUSTER_KINDS = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}
BUILT_IN_ROLES = {
    ("ClusterRole", "system:kube-scheduler"),
    ("ClusterRole", "system:volume-scheduler"),
    ("Role", "extension-apiserver-authentication-reader"),
}


# --- scheduler config ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("api_version", SUPPORTED_API_VERSIONS)
def test_scheduler_config_shape(api_version: str) -> None:
    config: Any = scheduler_config(extender_url=URL, api_version=api_version, bind_verb=True)

    assert config["apiVersion"] == api_version
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["profiles"] == [{"schedulerName": "volcano"}]
    assert config["percentageOfNodesToScore"] == 100
    assert config["leaderElection"] == {"leaderElect": True, "resourceName": "pumice-kube-scheduler"}
    client = config["clientConnection"]
    assert isinstance(client, dict)
    assert "kubeconfig" not in client  # in-cluster
    assert client["qps"] >= 100
    assert client["burst"] >= client["qps"]

    [extender] = config["extenders"]
    assert set(extender) == EXTENDER_KEYS
    assert extender["urlPrefix"] == URL
    assert (extender["filterVerb"], extender["prioritizeVerb"]) == ("filter", "prioritize")
    assert (extender["preemptVerb"], extender["bindVerb"]) == ("preempt", "bind")
    assert extender["enableHTTPS"] is False
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is False
    assert re.fullmatch(r"[1-9][0-9]*s", extender["httpTimeout"])
    # A planned node's 10 must outweigh the default score plugins (v1 weights sum to 12, 100 points each).
    assert 10 * extender["weight"] * 10 > 12 * 100


def test_scheduler_config_options() -> None:
    config: Any = scheduler_config(
        extender_url=URL + "/",
        api_version=API_V1BETA3,
        kubeconfig="/etc/kubernetes/scheduler.conf",
        scheduler_name="batch",
        with_default_profile=True,
        leader_elect=False,
        weight=7,
        http_timeout_seconds=12,
        lease_namespace="volcano-system",
    )
    assert [p["schedulerName"] for p in config["profiles"]] == ["batch", "default-scheduler"]
    assert config["clientConnection"]["kubeconfig"] == "/etc/kubernetes/scheduler.conf"
    assert config["leaderElection"] == {
        "leaderElect": False,
        "resourceName": "pumice-kube-scheduler",
        "resourceNamespace": "volcano-system",
    }
    [extender] = config["extenders"]
    assert extender["urlPrefix"] == URL  # kube-scheduler appends "/" + verb itself
    assert extender["weight"] == 7
    assert extender["httpTimeout"] == "12s"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"api_version": "kubescheduler.config.k8s.io/v1alpha1"}, "not supported"),
        ({"api_version": "v1beta3"}, "not supported"),
        ({"extender_url": "pumice:8888"}, "extender_url"),
        ({"extender_url": "http://pumice:8888/?x=1"}, "query"),
        ({"scheduler_name": ""}, "scheduler_name"),
        ({"scheduler_name": "default-scheduler", "with_default_profile": True}, "default profile"),
        ({"weight": 0}, "weight"),
        ({"http_timeout_seconds": 0}, "http_timeout_seconds"),
    ],
)
def test_scheduler_config_rejects(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        scheduler_config(**{"extender_url": URL, **kwargs})


def _go_json_tags(types_go: str, struct: str) -> set[str]:
    body = re.search(rf"type {struct} struct \{{(.*?)\n\}}", types_go, re.S)
    assert body is not None, struct
    return set(re.findall(r'json:"([A-Za-z]+)', body.group(1)))


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta3"])
def test_field_names_match_go_json_tags(version: str) -> None:
    found = [d / version / "types.go" for d in K8S_SRC_DIRS if (d / version / "types.go").exists()]
    if not found:
        pytest.skip(f"Kubernetes sources for {version} not found under {', '.join(map(str, K8S_SRC_DIRS))}")
    source = found[0].read_text()
    config: Any = scheduler_config(
        extender_url=HTTPS_URL,
        api_version=f"kubescheduler.config.k8s.io/{version}",
        bind_verb=True,
        tls=ExtenderTLS(ca_file="/ca.crt", cert_file="/tls.crt", key_file="/tls.key", server_name="pumice"),
    )

    assert set(config["extenders"][0]) <= _go_json_tags(source, "Extender")
    assert set(config["extenders"][0]["tlsConfig"]) <= _go_json_tags(source, "ExtenderTLSConfig")
    top_level = _go_json_tags(source, "KubeSchedulerConfiguration") | {"apiVersion", "kind"}
    assert set(config) <= top_level
    assert set(config["profiles"][0]) <= _go_json_tags(source, "KubeSchedulerProfile")


@pytest.mark.parametrize("api_version", SUPPORTED_API_VERSIONS)
def test_scheduler_config_mutual_tls(api_version: str) -> None:
    config: Any = scheduler_config(extender_url=HTTPS_URL, api_version=api_version, tls=CLIENT_TLS)

    assert config["apiVersion"] == api_version
    [extender] = config["extenders"]
    assert set(extender) == EXTENDER_KEYS - {"bindVerb"} | {"tlsConfig"}
    assert extender["urlPrefix"] == HTTPS_URL
    assert extender["enableHTTPS"] is True
    # File paths only: no inline *Data, and never insecure.
    assert extender["tlsConfig"] == {
        "caFile": "/etc/pumice-extender-client/ca.crt",
        "certFile": "/etc/pumice-extender-client/tls.crt",
        "keyFile": "/etc/pumice-extender-client/tls.key",
    }
    # What kube-scheduler reads back from the YAML text.
    assert yaml.safe_load(scheduler_config_yaml(config)) == config


@pytest.mark.parametrize("api_version", SUPPORTED_API_VERSIONS)
def test_scheduler_config_server_tls_only_and_server_name(api_version: str) -> None:
    tls = ExtenderTLS(ca_file="/etc/ca.pem", server_name="pumice.volcano-system.svc")
    config: Any = scheduler_config(extender_url="https://10.0.0.5:8888", api_version=api_version, tls=tls)
    assert config["extenders"][0]["tlsConfig"] == {
        "caFile": "/etc/ca.pem",
        "serverName": "pumice.volcano-system.svc",
    }


@pytest.mark.parametrize("api_version", SUPPORTED_API_VERSIONS)
def test_scheduler_config_plain_http_has_no_tls(api_version: str) -> None:
    config: Any = scheduler_config(extender_url=URL, api_version=api_version)
    [extender] = config["extenders"]
    assert "tlsConfig" not in extender
    assert extender["enableHTTPS"] is False


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"extender_url": HTTPS_URL}, "no CA file"),
        ({"extender_url": URL, "tls": CLIENT_TLS}, "need an https://"),
    ],
)
def test_scheduler_config_rejects_tls_mismatch(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        scheduler_config(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ca_file": "ca.crt"}, "absolute"),
        ({"ca_file": "/ca.crt", "cert_file": "tls.crt", "key_file": "/tls.key"}, "absolute"),
        ({"ca_file": "/ca.crt", "cert_file": "/tls.crt"}, "go together"),
        ({"ca_file": "/ca.crt", "key_file": "/tls.key"}, "go together"),
        ({"ca_file": "/ca.crt", "server_name": ""}, "server_name"),
    ],
)
def test_extender_tls_rejects(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ExtenderTLS(**kwargs)


@pytest.mark.parametrize("tls", [False, True], ids=["http", "mtls"])
@pytest.mark.parametrize("api_version", [API_V1BETA2, API_V1BETA3])
def test_kube_scheduler_1_24_accepts_config(api_version: str, tls: bool, tmp_path: Path) -> None:
    if not KUBE_SCHEDULER.exists():
        pytest.skip(f"{KUBE_SCHEDULER} not found")
    # A kubeconfig is only parsed, never dialled: --write-config-to exits after loading and validating.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    extender_tls = None
    if tls:
        bundle = _tls("volcano-system")
        for name, data in (
            ("ca.crt", bundle.ca_cert),
            ("tls.crt", bundle.client_cert),
            ("tls.key", bundle.client_key),
        ):
            (tmp_path / name).write_bytes(data)
        extender_tls = ExtenderTLS(
            ca_file=str(tmp_path / "ca.crt"),
            cert_file=str(tmp_path / "tls.crt"),
            key_file=str(tmp_path / "tls.key"),
        )
    url = HTTPS_URL if tls else URL
    config_file = tmp_path / "config.yaml"
    config_file.write_text(
        scheduler_config_yaml(
            scheduler_config(
                extender_url=url,
                api_version=api_version,
                kubeconfig=str(kubeconfig),
                with_default_profile=True,
                lease_namespace="volcano-system",
                bind_verb=True,
                tls=extender_tls,
            )
        )
    )
    written = tmp_path / "written.yaml"
    result = subprocess.run(
        [str(KUBE_SCHEDULER), f"--config={config_file}", f"--write-config-to={written}", "--secure-port=0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    effective = yaml.safe_load(written.read_text())
    [extender] = effective["extenders"]
    assert extender["urlPrefix"] == url
    assert extender.get("enableHTTPS", False) is tls  # false is omitted (omitempty) in what it writes
    if extender_tls is not None:
        assert extender["tlsConfig"]["caFile"] == extender_tls.ca_file
        assert extender["tlsConfig"]["certFile"] == extender_tls.cert_file
    assert extender["bindVerb"] == "bind"
    assert extender["nodeCacheCapable"] is True
    assert extender["httpTimeout"] == "30s"
    assert effective["percentageOfNodesToScore"] == 100
    assert effective["leaderElection"]["resourceName"] == "pumice-kube-scheduler"
    assert [p["schedulerName"] for p in effective["profiles"]] == ["volcano", "default-scheduler"]


# --- deploy manifests ---------------------------------------------------------------------------------------


def _fake_webhooks(calls: list[dict[str, Any]]) -> WebhookBuilder:
    """A webhook builder that records its calls and makes one webhook per configuration."""

    def webhook_configurations(
        *,
        ca_bundle: bytes,
        url_base: str | None = None,
        service: tuple[str, str] | None = None,
        port: int = 443,
        scheduling_gates: bool = True,
        match_conditions: bool = True,
        scheduler_names: Sequence[str] = ("volcano",),
    ) -> list[dict[str, Any]]:
        calls.append(
            {
                "ca_bundle": ca_bundle,
                "url_base": url_base,
                "service": service,
                "port": port,
                "scheduling_gates": scheduling_gates,
                "match_conditions": match_conditions,
                "scheduler_names": list(scheduler_names),
            }
        )
        if service is not None:
            client: dict[str, Any] = {"service": {"namespace": service[0], "name": service[1], "port": port}}
        else:
            client = {"url": f"{url_base}/validate"}
        client["caBundle"] = ca_bundle.hex()
        return [
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name},
                "webhooks": [{"name": "x.pumice.dev", "clientConfig": client}],
            }
            for kind, name in [
                ("MutatingWebhookConfiguration", "pumice-mutating"),
                ("ValidatingWebhookConfiguration", "pumice-validating"),
            ]
        ]

    return webhook_configurations


def _by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


@functools.cache
def _tls(namespace: str) -> MutualTLSBundle:
    """Certificates for pumice's Service in ``namespace``, as pumice makes them at start-up (for the
    kube-scheduler that loads a config naming their files)."""
    return generate_mtls_bundle(dns_names=service_dns_names("pumice", namespace))


# A release whose kube-scheduler reads each config version, and takes it by default.
READS = {
    API_V1: parse_version("v1.28.7"),
    API_V1BETA3: parse_version("1.24"),
    API_V1BETA2: parse_version("1.22"),
}


def _deploy(*, tls: bool = True, **kwargs: Any) -> list[Any]:
    """deploy_manifests with mutual TLS (the CLI's default) unless ``tls=False``, and the real webhook
    builder (what ``pumice`` passes in) unless ``webhook_configurations`` says otherwise."""
    docs: list[Any] = deploy_manifests(
        **{
            "image": "example/pumice:1",
            "mutual_tls": tls,
            "webhook_configurations": webhook_configurations,
            **kwargs,
        }
    )
    return docs


@pytest.mark.parametrize("tls", [True, False], ids=["mtls", "plain-http"])
@pytest.mark.parametrize("api_version", SUPPORTED_API_VERSIONS)
def test_deploy_objects_are_well_formed(api_version: str, tls: bool) -> None:
    docs = _deploy(
        webhook_configurations=None, tls=tls, namespace="batch-system", kubernetes_version=READS[api_version]
    )
    # What `kubectl apply` reads back is what was built.
    assert list(yaml.safe_load_all(yamltext.dump_all(docs))) == docs

    seen = set()
    for doc in docs:
        assert isinstance(doc["apiVersion"], str) and doc["apiVersion"]
        meta = doc["metadata"]
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9.:]*[a-z0-9])?", meta["name"]), meta
        if doc["kind"] in NAMESPACED_KINDS:
            assert meta["namespace"] in ("batch-system", "kube-system"), doc["kind"]
        else:
            assert doc["kind"] in CLUSTER_KINDS
            assert "namespace" not in meta
        key = (doc["kind"], meta.get("namespace"), meta["name"])
        assert key not in seen
        seen.add(key)
    assert docs[0] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "batch-system", "labels": docs[0]["metadata"]["labels"]},
    }


@pytest.mark.parametrize("tls", [True, False], ids=["mtls", "plain-http"])
def test_deploy_references_resolve(tls: bool) -> None:
    docs = _deploy(webhook_configurations=None, tls=tls, namespace="batch-system")
    secrets = _by_kind(docs, "Secret")
    config_maps = _by_kind(docs, "ConfigMap")
    accounts = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    roles = {(d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] in ("Role", "ClusterRole")}
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        ref = binding["roleRef"]
        assert (ref["kind"], ref["name"]) in roles | BUILT_IN_ROLES, binding["metadata"]["name"]
        for subject in binding["subjects"]:
            assert subject["name"] in accounts and subject["namespace"] == "batch-system"
    # No Secret is printed (the certificate contract): volumes mount the ones pumice creates.
    assert not secrets
    for deployment in _by_kind(docs, "Deployment").values():
        spec = deployment["spec"]
        assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
        assert spec["template"]["spec"]["serviceAccountName"] in accounts
        assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
        volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
        for volume in volumes.values():
            if "secret" in volume:
                assert volume["secret"]["secretName"] in tls_secret_names()
            if "configMap" in volume:
                assert volume["configMap"]["name"] in config_maps
        for container in spec["template"]["spec"]["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["resources"]["requests"]
            assert {m["name"] for m in container["volumeMounts"]} <= set(volumes)
    service = _by_kind(docs, "Service")["pumice"]
    pumice = _by_kind(docs, "Deployment")["pumice"]
    assert service["spec"]["selector"] == pumice["spec"]["selector"]["matchLabels"]
    assert {(p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {
        (8888, "extender"),
        (443, "webhook"),
        (9090, "metrics"),
    }
    container_ports = {
        p["name"]: p["containerPort"] for p in pumice["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    assert container_ports == {"extender": 8888, "webhook": 8443, "metrics": 9090}


def test_deploy_plain_http_pumice_and_scheduler_containers() -> None:
    """--extender-plain-http: what deploy printed before mutual TLS."""
    docs = _deploy(
        webhook_configurations=None,
        tls=False,
        namespace="batch-system",
        scheduler_image="example/ks:1",
        scheduler_name="batch",
    )
    deployments = _by_kind(docs, "Deployment")
    [pumice] = deployments["pumice"]["spec"]["template"]["spec"]["containers"]
    assert pumice["image"] == "example/pumice:1"
    command = pumice["command"]
    assert command[:2] == ["pumice", "serve"]
    assert command[command.index("--extender-bind") + 1] == "0.0.0.0:8888"
    assert command[command.index("--webhook-bind") + 1] == "0.0.0.0:8443"
    assert command[command.index("--scheduler-name") + 1] == "batch"
    assert not [arg for arg in command if arg.startswith("--extender-tls") or arg.endswith("-ca-file")]
    assert not _by_kind(docs, "Secret")
    assert pumice["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "extender"}
    assert pumice["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "extender"}

    scheduler_pod = deployments["pumice-kube-scheduler"]["spec"]["template"]["spec"]
    [scheduler] = scheduler_pod["containers"]
    assert scheduler["image"] == "example/ks:1"
    assert scheduler["command"] == ["kube-scheduler", "--config=/etc/pumice/scheduler-config.yaml", "--v=2"]
    assert scheduler_pod["volumes"] == [{"name": "config", "configMap": {"name": "pumice-scheduler-config"}}]
    assert scheduler["volumeMounts"][0]["mountPath"] == "/etc/pumice"

    config = yaml.safe_load(
        _by_kind(docs, "ConfigMap")["pumice-scheduler-config"]["data"]["scheduler-config.yaml"]
    )
    assert config["apiVersion"] == API_V1
    assert config["profiles"] == [{"schedulerName": "batch"}]
    assert config["extenders"][0]["urlPrefix"] == "http://pumice.batch-system.svc:8888"
    assert "tlsConfig" not in config["extenders"][0]
    assert "kubeconfig" not in config["clientConnection"]
    assert config["leaderElection"]["resourceNamespace"] == "batch-system"


# --- deploy: extender mutual TLS ----------------------------------------------------------------------------


def _secret_files(secret: dict[str, Any]) -> dict[str, bytes]:
    return {k: base64.b64decode(v, validate=True) for k, v in secret["data"].items()}


def _mounted(pod: dict[str, Any], secret: str) -> str:
    """Where the pod's (only) container mounts ``secret``; fails if it does not, or not read-only."""
    [volume] = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == secret]
    assert volume["secret"]["defaultMode"] == 0o440  # readable by the pod's fsGroup, not by the world
    [container] = pod["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["readOnly"] is True
    path: str = mount["mountPath"]
    return path


def _flag(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


@pytest.mark.parametrize("api_version", SUPPORTED_API_VERSIONS)
def test_deploy_mutual_tls_wiring(api_version: str) -> None:
    docs = _deploy(
        webhook_configurations=None, namespace="batch-system", kubernetes_version=READS[api_version]
    )
    # The certificate contract: nothing secret is printed; pumice fills the Secrets it is pointed at.
    assert not _by_kind(docs, "Secret")
    deployments = _by_kind(docs, "Deployment")
    pumice_pod = deployments["pumice"]["spec"]["template"]["spec"]
    assert pumice_pod["securityContext"]["fsGroup"] == pumice_pod["securityContext"]["runAsGroup"]
    [pumice] = pumice_pod["containers"]
    command = pumice["command"]
    assert _flag(command, "--tls-secrets-prefix") == "pumice"
    # The Service names its certificates carry, and with --extender-service the extender serves mTLS.
    assert _flag(command, "--webhook-service") == "batch-system/pumice"
    assert _flag(command, "--extender-service") == "batch-system/pumice"
    assert _flag(command, "--extender-bind") == "0.0.0.0:8888"
    assert not [arg for arg in command if arg.startswith("--extender-tls") or arg.endswith("-ca-file")]
    assert not [m for m in pumice["volumeMounts"] if m["name"] != "tmp"]
    # The kubelet presents no client certificate: probes use the webhook listener's TLS port.
    for probe in ("readinessProbe", "livenessProbe"):
        assert pumice[probe]["httpGet"]["port"] == "webhook"
        assert pumice[probe]["httpGet"]["scheme"] == "HTTPS"

    scheduler_pod = deployments["pumice-kube-scheduler"]["spec"]["template"]["spec"]
    client_dir = _mounted(scheduler_pod, "pumice-kube-scheduler-tls")
    config = yaml.safe_load(
        _by_kind(docs, "ConfigMap")["pumice-scheduler-config"]["data"]["scheduler-config.yaml"]
    )
    assert config["apiVersion"] == api_version
    [extender] = config["extenders"]
    assert extender["urlPrefix"] == "https://pumice.batch-system.svc:8888"
    assert extender["enableHTTPS"] is True
    assert extender["tlsConfig"] == {
        "caFile": f"{client_dir}/ca.crt",
        "certFile": f"{client_dir}/tls.crt",
        "keyFile": f"{client_dir}/tls.key",
    }
    assert "insecure" not in extender["tlsConfig"]
    # No hash of a CA in either pod template: nothing rolls unless the objects change.
    for deployment in deployments.values():
        annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
        assert "pumice.dev/extender-ca-sha256" not in annotations


def test_deploy_plain_http_keeps_the_webhook_certificates() -> None:
    """--extender-plain-http: the extender is plain HTTP (no --extender-service, nothing mounted by
    kube-scheduler), the webhooks still serve the contract's certificate (every replica the same)."""
    docs = _deploy(webhook_configurations=None, tls=False, namespace="batch-system")
    deployments = _by_kind(docs, "Deployment")
    [pumice] = deployments["pumice"]["spec"]["template"]["spec"]["containers"]
    assert _flag(pumice["command"], "--tls-secrets-prefix") == "pumice"
    assert _flag(pumice["command"], "--webhook-service") == "batch-system/pumice"
    assert "--extender-service" not in pumice["command"]
    scheduler_pod = deployments["pumice-kube-scheduler"]["spec"]["template"]["spec"]
    assert not [v for v in scheduler_pod["volumes"] if "secret" in v]


@pytest.mark.parametrize("tls", [True, False], ids=["mtls", "plain-http"])
def test_deploy_is_deterministic_and_holds_no_key(tls: bool) -> None:
    """The same arguments print the same text (so re-applying restarts nothing), and no PEM at all."""
    first = yamltext.dump_all(_deploy(tls=tls))
    assert yamltext.dump_all(_deploy(tls=tls)) == first
    assert "BEGIN" not in first and "PRIVATE KEY" not in first


def test_deploy_runs_two_leader_elected_replicas_of_each() -> None:
    """Issue #23: two replicas each, rolled without a gap, spread over nodes, a budget each, and pumice
    told its own Pod (the leader-election identity and namespace)."""
    docs = _deploy(webhook_configurations=None, namespace="batch-system")
    deployments = _by_kind(docs, "Deployment")
    budgets = _by_kind(docs, "PodDisruptionBudget")
    for name, deployment in deployments.items():
        spec = deployment["spec"]
        assert spec["replicas"] == 2, name
        [spread] = spec["template"]["spec"]["topologySpreadConstraints"]
        assert spread == {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": spec["selector"]["matchLabels"]},
        }
        assert budgets[name]["spec"] == {"minAvailable": 1, "selector": spec["selector"]}
    pumice = deployments["pumice"]["spec"]
    assert pumice["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    assert pumice["template"]["spec"]["terminationGracePeriodSeconds"] >= 30
    [container] = pumice["template"]["spec"]["containers"]
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]} == {
        "POD_NAME": "metadata.name",
        "POD_NAMESPACE": "metadata.namespace",
        "POD_IP": "status.podIP",
    }
    config = yaml.safe_load(
        _by_kind(docs, "ConfigMap")["pumice-scheduler-config"]["data"]["scheduler-config.yaml"]
    )
    assert config["leaderElection"] == {
        "leaderElect": True,
        "resourceName": "pumice-kube-scheduler",
        "resourceNamespace": "batch-system",
    }


def test_config_change_rolls_the_scheduler() -> None:
    def config_hash(api_version: str) -> str:
        docs = _deploy(webhook_configurations=None, api_version=api_version)
        template = _by_kind(docs, "Deployment")["pumice-kube-scheduler"]["spec"]["template"]
        return str(template["metadata"]["annotations"]["pumice.dev/scheduler-config-sha256"])

    assert config_hash(API_V1) == config_hash(API_V1)
    assert config_hash(API_V1) != config_hash(API_V1BETA3)


def _rules(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (d["metadata"]["name"], r) for d in docs if d["kind"] in ("Role", "ClusterRole") for r in d["rules"]
    ]


def _grants(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


def test_rbac_is_least_privilege() -> None:
    """The shape of the rules; tests/contract/test_rbac.py holds them against the code that uses them."""
    docs = _deploy(webhook_configurations=None, namespace="batch-system")
    for role, granted in _rules(docs):
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in granted[field], (role, granted)
        assert (
            "escalate" not in granted["verbs"]
            and "bind" not in granted["verbs"]
            and "impersonate" not in granted["verbs"]
        )
    cluster_role = _by_kind(docs, "ClusterRole")["pumice"]["rules"]
    assert _grants(cluster_role, "", "pods/binding", "create")
    assert _grants(cluster_role, "", "pods", "delete")
    # Volcano's PodGroup has no status subresource: its status is patched through the object.
    assert _grants(cluster_role, "scheduling.volcano.sh", "podgroups", "patch")
    assert _grants(cluster_role, "scheduling.volcano.sh", "queues/status", "patch")
    assert not _grants(cluster_role, "scheduling.volcano.sh", "podgroups/status", "patch")
    # Preempt and reclaim evict through the Eviction API and mark the victim; nothing more of pods.
    assert _grants(cluster_role, "", "pods/eviction", "create")
    assert _grants(cluster_role, "", "pods/status", "patch")
    assert not _grants(cluster_role, "", "pods/eviction", "delete")
    assert not _grants(cluster_role, "", "nodes", "update")
    # The ssh plugin reads and creates <job>-ssh, nothing more.
    for verb in ("list", "watch", "update", "patch", "delete", "deletecollection"):
        assert not _grants(cluster_role, "", "secrets", verb), verb
    assert _grants(cluster_role, "", "secrets", "create") and _grants(cluster_role, "", "secrets", "get")
    assert not any("clusterroles" in r["resources"] or "roles" in r["resources"] for r in cluster_role)
    # Webhook configurations: named ones only, except create (which cannot be limited by name).
    for rule in cluster_role:
        if "validatingwebhookconfigurations" in rule["resources"]:
            assert rule["verbs"] == ["create"] or rule["resourceNames"] == [
                "pumice-mutating",
                "pumice-validating",
            ]
    # pumice's Role in its namespace: its Lease and the contract's four Secrets by name, create unnamed.
    pumice_role = _by_kind(docs, "Role")["pumice"]
    assert pumice_role["metadata"]["namespace"] == "batch-system"
    for rule in pumice_role["rules"]:
        assert rule["verbs"] == ["create"] or rule.get("resourceNames") in (
            ["pumice"],
            ["pumice-ca", "pumice-webhook-tls", "pumice-extender-tls", "pumice-kube-scheduler-tls"],
        ), rule
    assert _grants(pumice_role["rules"], "coordination.k8s.io", "leases", "update")
    assert _grants(pumice_role["rules"], "", "secrets", "watch")
    # The scheduler's lease: its own name, in our namespace.
    lease_role = _by_kind(docs, "Role")["pumice-kube-scheduler-leader-election"]
    assert lease_role["metadata"]["namespace"] == "batch-system"
    assert {"get", "update"} <= {v for r in lease_role["rules"] if r.get("resourceNames") for v in r["verbs"]}
    assert all(
        r.get("resourceNames") == ["pumice-kube-scheduler"] or r["verbs"] == ["create"]
        for r in lease_role["rules"]
    )


def test_pumice_rules_take_webhook_names() -> None:
    rules: list[Any] = pumice_rules(["a", "b"])
    named = [r for r in rules if isinstance(r, dict) and "resourceNames" in r]
    assert [(r["resources"], r["resourceNames"]) for r in named] == [
        (["mutatingwebhookconfigurations"], ["a", "b"]),
        (["validatingwebhookconfigurations"], ["a", "b"]),
    ]


def test_network_policy_guards_extender_port() -> None:
    docs = _deploy(webhook_configurations=None)
    [policy] = _by_kind(docs, "NetworkPolicy").values()
    scheduler_labels = _by_kind(docs, "Deployment")["pumice-kube-scheduler"]["spec"]["template"]["metadata"][
        "labels"
    ]
    extender_rule, webhook_rule, metrics_rule = policy["spec"]["ingress"]
    assert extender_rule["ports"] == [{"protocol": "TCP", "port": 8888}]
    assert extender_rule["from"][0]["podSelector"]["matchLabels"].items() <= scheduler_labels.items()
    assert webhook_rule == {"ports": [{"protocol": "TCP", "port": 8443}]}
    # Prometheus, from the monitoring namespace only, reaches the plain-HTTP metrics port only.
    assert metrics_rule == {
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ports": [{"protocol": "TCP", "port": 9090}],
    }
    assert not _by_kind(_deploy(webhook_configurations=None, network_policy=False), "NetworkPolicy")


def test_deploy_without_a_webhook_builder_has_none() -> None:
    kinds = {d["kind"] for d in _deploy(webhook_configurations=None)}
    assert not kinds & {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def test_deploy_includes_webhooks_last_without_ca_bundle() -> None:
    calls: list[dict[str, Any]] = []
    docs = _deploy(namespace="batch-system", webhook_configurations=_fake_webhooks(calls))
    [call] = calls
    assert call["ca_bundle"]  # a stand-in: webhook_configurations refuses an empty bundle
    assert (call["url_base"], call["service"], call["port"]) == (None, ("batch-system", "pumice"), 443)
    # The default release (1.28) has both, and only pods of our scheduler reach the pod webhooks.
    assert (call["scheduling_gates"], call["match_conditions"]) == (True, True)
    assert call["scheduler_names"] == ["volcano"]
    assert [d["kind"] for d in docs[-2:]] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    for config in docs[-2:]:
        for webhook in config["webhooks"]:
            assert "caBundle" not in webhook["clientConfig"]  # pumice patches it in; apply must not reset it
            assert webhook["clientConfig"]["service"] == {
                "namespace": "batch-system",
                "name": "pumice",
                "port": 443,
            }
    assert not _by_kind(_deploy(webhook_configurations=None), "MutatingWebhookConfiguration")


def test_real_webhook_configurations_in_deploy_output() -> None:
    docs = _deploy(namespace="batch-system")
    configs = [d for d in docs if d["kind"].endswith("WebhookConfiguration")]
    assert configs and docs[-len(configs) :] == configs
    # The names pumice's RBAC is limited to.
    assert {c["metadata"]["name"] for c in configs} <= {"pumice-mutating", "pumice-validating"}
    for config in configs:
        for webhook in config["webhooks"]:
            client = webhook["clientConfig"]
            assert "caBundle" not in client
            assert client["service"]["namespace"] == "batch-system"
            assert client["service"]["name"] == "pumice"
            assert client["service"]["port"] == 443
    assert list(yaml.safe_load_all(yamltext.dump_all(docs))) == docs


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"namespace": ""}, "namespace"),
        ({"namespace": "Batch_System"}, "namespace"),
        ({"image": ""}, "image"),
        ({"api_version": "kubescheduler.config.k8s.io/v2"}, "not supported"),
        ({"namespace": "Not_A_Label", "mutual_tls": True}, "namespace"),
    ],
)
def test_deploy_rejects(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        deploy_manifests(
            **{"image": "example/pumice:1", "mutual_tls": False, "webhook_configurations": None, **kwargs}
        )


# --- CLI ----------------------------------------------------------------------------------------------------


def _no_cluster(kubeconfig: str) -> KubernetesVersion:
    raise AssertionError(f"this test reads no cluster, yet {kubeconfig} was asked")


def _parse(
    argv: list[str],
    *,
    cluster_version: VersionReader = _no_cluster,
    webhook_configurations: WebhookBuilder | None = webhook_configurations,
) -> argparse.Namespace:
    """Parse as ``pumice`` does, with the given dependencies (default: the real webhook builder and no
    cluster)."""
    parser = argparse.ArgumentParser(prog="pumice")
    add_manifests_parser(
        parser.add_subparsers(dest="command", required=True),
        cluster_version=cluster_version,
        webhook_configurations=webhook_configurations,
    )
    return parser.parse_args(argv)


def _run(
    argv: list[str], capsys: pytest.CaptureFixture[str], **dependencies: Any
) -> tuple[int, list[Any], str]:
    args = _parse(argv, **dependencies)
    assert args.func.func is run_manifests
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d is not None], err


@pytest.mark.parametrize(
    ("flag", "expected"), [("v1beta2", API_V1BETA2), (API_V1BETA3, API_V1BETA3), ("v1", API_V1)]
)
def test_cli_scheduler_config(flag: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(
        [
            "manifests",
            "scheduler-config",
            "--extender-url",
            URL,
            "--api-version",
            flag,
            "--kubeconfig",
            "/k.conf",
            "--with-default-profile",
            "--no-leader-elect",
        ],
        capsys,
    )
    assert code == 0
    [config] = docs
    assert config["apiVersion"] == expected
    assert [p["schedulerName"] for p in config["profiles"]] == ["volcano", "default-scheduler"]
    assert config["clientConnection"]["kubeconfig"] == "/k.conf"
    assert config["leaderElection"]["leaderElect"] is False
    assert config["extenders"][0]["urlPrefix"] == URL


def test_cli_deploy(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(
        ["manifests", "deploy", "--namespace", "ns1", "--image", "img:1", "--api-version", "v1beta3"],
        capsys,
        webhook_configurations=None,
    )
    assert code == 0
    assert docs == deploy_manifests(
        webhook_configurations=None,
        namespace="ns1",
        image="img:1",
        api_version=API_V1BETA3,
        mutual_tls=True,
    )


def test_cli_deploy_plain_http(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(
        ["manifests", "deploy", "--namespace", "ns1", "--image", "img:1", "--extender-plain-http"],
        capsys,
        webhook_configurations=None,
    )
    assert code == 0
    assert docs == deploy_manifests(
        webhook_configurations=None, namespace="ns1", image="img:1", mutual_tls=False
    )


def test_cli_deploy_prints_the_same_output_every_run(capsys: pytest.CaptureFixture[str]) -> None:
    def output() -> str:
        args = _parse(["manifests", "deploy", "--image", "img:1"])
        assert args.func(args) == 0
        return capsys.readouterr().out

    first = output()
    assert output() == first
    assert "kind: Secret" not in first


def test_cli_deploy_help_documents_the_certificates(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse(["manifests", "deploy", "--help"])
    out = capsys.readouterr().out
    text = " ".join(out.split())
    assert "No certificate or key is printed" in text
    # argparse wraps at hyphens too: compare the names without whitespace.
    secrets = "pumice-ca,pumice-webhook-tls,pumice-extender-tls,pumice-kube-scheduler-tls"
    assert secrets in "".join(out.split())
    assert "the same arguments print the same output" in text
    assert "--extender-plain-http" in text


@pytest.mark.parametrize("api_version", ["v1", "v1beta3", "v1beta2"])
def test_cli_scheduler_config_mutual_tls(api_version: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(
        [
            "manifests",
            "scheduler-config",
            "--extender-url",
            HTTPS_URL,
            "--api-version",
            api_version,
            "--tls-ca-file",
            "/etc/pumice-extender-client/ca.crt",
            "--tls-client-cert-file",
            "/etc/pumice-extender-client/tls.crt",
            "--tls-client-key-file",
            "/etc/pumice-extender-client/tls.key",
        ],
        capsys,
    )
    assert code == 0
    [config] = docs
    assert config["apiVersion"].endswith("/" + api_version)
    [extender] = config["extenders"]
    assert extender["urlPrefix"] == HTTPS_URL
    assert extender["enableHTTPS"] is True
    assert extender["tlsConfig"] == CLIENT_TLS.config()


def test_cli_scheduler_config_plain_http_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(["manifests", "scheduler-config", "--extender-url", URL], capsys)
    assert code == 0
    assert docs == [scheduler_config(extender_url=URL)]


def test_cli_webhooks_by_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n")
    calls: list[dict[str, Any]] = []
    code, docs, _ = _run(
        ["manifests", "webhooks", "--url-base", "https://10.0.0.5:8443", "--ca-file", str(ca)],
        capsys,
        webhook_configurations=_fake_webhooks(calls),
    )
    assert code == 0
    assert calls[0]["url_base"] == "https://10.0.0.5:8443"
    assert calls[0]["ca_bundle"] == ca.read_bytes()
    assert all(w["clientConfig"]["caBundle"] for d in docs for w in d["webhooks"])


def test_cli_webhooks_by_service(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    code, docs, _ = _run(
        ["manifests", "webhooks", "--service", "ns1/pumice"],
        capsys,
        webhook_configurations=_fake_webhooks(calls),
    )
    assert code == 0
    assert calls[0]["service"] == ("ns1", "pumice")
    assert len(docs) == 2


def test_cli_webhooks_without_a_builder(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, err = _run(
        ["manifests", "webhooks", "--service", "ns1/pumice"], capsys, webhook_configurations=None
    )
    assert (code, docs) == (1, [])
    assert "admission.webhooks" in err and "Traceback" not in err


def test_pumice_passes_the_real_dependencies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``pumice manifests`` as installed: the composition root hands the CLI admission's webhook builder and
    controllers' reader of ``/version``."""
    assert pumice_main(["manifests", "webhooks", "--service", "ns1/pumice"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d is not None]
    assert docs == webhook_manifests(webhook_configurations, service=("ns1", "pumice"))
    missing = tmp_path / "no-kubeconfig"
    assert pumice_main(["manifests", "deploy", "--kubeconfig", str(missing)]) == 1
    err = capsys.readouterr().err
    assert f"pumice manifests deploy: cannot read the Kubernetes version from {missing}: " in err


def test_cli_crds(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: queues.x}\n"
    monkeypatch.setattr(crds, "crd_yaml", lambda: text)
    code, docs, _ = _run(["manifests", "crds"], capsys)
    assert code == 0
    assert docs == [yaml.safe_load(text)]


@pytest.mark.parametrize(
    "argv",
    [
        ["manifests"],
        ["manifests", "nope"],
        ["manifests", "scheduler-config"],
        ["manifests", "scheduler-config", "--extender-url", "pumice:8888"],
        ["manifests", "scheduler-config", "--extender-url", URL, "--api-version", "v1alpha1"],
        ["manifests", "scheduler-config", "--extender-url", URL, "--weight", "0"],
        ["manifests", "webhooks"],
        ["manifests", "webhooks", "--service", "pumice"],
        ["manifests", "webhooks", "--service", "a/b", "--url-base", "https://x"],
        ["manifests", "deploy", "--api-version", "v9"],
    ],
)
def test_cli_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse(argv)
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [
            "manifests",
            "scheduler-config",
            "--extender-url",
            URL,
            "--scheduler-name",
            "default-scheduler",
            "--with-default-profile",
        ],
        ["manifests", "webhooks", "--url-base", "https://x"],
        ["manifests", "webhooks", "--url-base", "https://x", "--ca-file", "/nonexistent/ca.pem"],
        ["manifests", "deploy", "--namespace", "Not_A_Label"],
        ["manifests", "deploy", "--namespace", "Not_A_Label", "--extender-plain-http"],
        # https without a CA: kube-scheduler would skip verification altogether.
        ["manifests", "scheduler-config", "--extender-url", HTTPS_URL],
        ["manifests", "scheduler-config", "--extender-url", URL, "--tls-ca-file", "/ca.crt"],
        ["manifests", "scheduler-config", "--extender-url", URL, "--tls-server-name", "pumice"],
        ["manifests", "scheduler-config", "--extender-url", HTTPS_URL, "--tls-ca-file", "ca.crt"],
        [
            "manifests",
            "scheduler-config",
            "--extender-url",
            HTTPS_URL,
            "--tls-ca-file",
            "/ca.crt",
            "--tls-client-cert-file",
            "/tls.crt",
        ],
        [
            "manifests",
            "scheduler-config",
            "--extender-url",
            HTTPS_URL,
            "--tls-ca-file",
            "/ca.crt",
            "--tls-client-key-file",
            "/tls.key",
        ],
    ],
)
def test_cli_bad_values_after_parsing_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = _parse(argv)
    with pytest.raises(SystemExit) as exit_info:
        args.func(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"pumice manifests {argv[1]}: error:" in err
    assert "Traceback" not in err


def test_cli_crds_with_real_module(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(["manifests", "crds"], capsys)
    assert code == 0
    assert docs and all(d["kind"] == "CustomResourceDefinition" for d in docs)
    assert "podgroups.scheduling.volcano.sh" in {d["metadata"]["name"] for d in docs}


def test_kube_scheduler_binds_unless_bind_is_delegated() -> None:
    from extender.deploy.scheduler_config import scheduler_config as make

    with_bind: Any = make(extender_url="http://pumice:8888", bind_verb=True)["extenders"]
    without: Any = make(extender_url="http://pumice:8888")["extenders"]
    assert with_bind[0]["bindVerb"] == "bind"
    assert "bindVerb" not in without[0]
    assert without[0]["filterVerb"] == "filter"


# --- Kubernetes versions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.24", KubernetesVersion(1, 24)),
        ("v1.24", KubernetesVersion(1, 24)),
        ("v1.28.7", KubernetesVersion(1, 28, 7)),
        (" 1.28.0\n", KubernetesVersion(1, 28, 0)),
        ("v1.30.0-gke.1", KubernetesVersion(1, 30, 0)),
        ("v1.29.0-rc.1", KubernetesVersion(1, 29, 0)),
        ("v1.27.4+k3s1", KubernetesVersion(1, 27, 4)),
        ("v1.24.17-dirty", KubernetesVersion(1, 24, 17)),
    ],
)
def test_parse_version(text: str, expected: KubernetesVersion) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "1", "v1", "1.x", "latest", "v1.28.7.1", "1.028", "Kubernetes v1.28.7"])
def test_parse_version_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        parse_version(text)


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        ({"major": "1", "minor": "28", "gitVersion": "v1.28.7"}, KubernetesVersion(1, 28, 7)),
        ({"major": "1", "minor": "30+", "gitVersion": "v1.30.0-gke.1"}, KubernetesVersion(1, 30, 0)),
        # Providers' minor fields carry a "+"; an unparsable gitVersion falls back to them.
        ({"major": "1", "minor": "27+", "gitVersion": "custom-build"}, KubernetesVersion(1, 27)),
        ({"major": "1", "minor": "24"}, KubernetesVersion(1, 24)),
    ],
)
def test_version_from_info(info: dict[str, str], expected: KubernetesVersion) -> None:
    assert version_from_info(info) == expected


@pytest.mark.parametrize("info", [{}, {"gitVersion": "custom"}, {"major": "1", "minor": ""}])
def test_version_from_info_rejects(info: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="no Kubernetes version"):
        version_from_info(info)


@pytest.mark.parametrize(
    ("version", "gates", "match", "cel", "config"),
    [
        ("1.21", False, False, False, None),
        ("1.22", False, False, False, API_V1BETA2),
        ("1.23", False, False, False, API_V1BETA3),
        ("1.24", False, False, False, API_V1BETA3),
        ("1.25", False, False, True, API_V1),
        ("1.26", False, False, True, API_V1),
        ("1.27", True, False, True, API_V1),
        ("v1.28.7", True, True, True, API_V1),
        ("1.31", True, True, True, API_V1),
        ("2.0", True, True, True, API_V1),
    ],
)
def test_features_by_release(version: str, gates: bool, match: bool, cel: bool, config: str | None) -> None:
    assert features(parse_version(version)) == Features(
        scheduling_gates=gates,
        match_conditions=match,
        cel_validation=cel,
        scheduler_config_api_version=config,
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.22", (API_V1BETA2,)),
        ("1.24", (API_V1BETA3, API_V1BETA2)),
        ("1.25", (API_V1, API_V1BETA3, API_V1BETA2)),
        ("1.28", (API_V1, API_V1BETA3)),
        ("1.29", (API_V1,)),
    ],
)
def test_scheduler_config_versions_each_release_reads(version: str, expected: tuple[str, ...]) -> None:
    assert scheduler_config_api_versions(parse_version(version)) == expected


@pytest.mark.parametrize(
    ("version", "image"),
    [
        ("1.24", "registry.k8s.io/kube-scheduler:v1.24.0"),
        ("v1.24.17", "registry.k8s.io/kube-scheduler:v1.24.17"),
        ("v1.28.7", "registry.k8s.io/kube-scheduler:v1.28.7"),
        ("v1.30.0-gke.1", "registry.k8s.io/kube-scheduler:v1.30.0"),
    ],
)
def test_scheduler_image_of_release(version: str, image: str) -> None:
    assert scheduler_image(parse_version(version)) == image


def test_version_spelling_and_support() -> None:
    assert str(parse_version("1.24")) == "v1.24"
    assert str(parse_version("v1.30.0-gke.1")) == "v1.30.0"
    assert check_supported(parse_version("1.22")) == KubernetesVersion(1, 22)
    with pytest.raises(ValueError, match=r"v1\.21 is older than pumice supports"):
        check_supported(parse_version("1.21"))


@pytest.mark.parametrize(
    ("answer", "gates", "match"),
    [
        ({"major": "1", "minor": "26", "gitVersion": "v1.26.3"}, False, False),
        ({"major": "1", "minor": "27+", "gitVersion": "v1.27.2-eks-1"}, True, False),
        ({"major": "1", "minor": "28", "gitVersion": "v1.28.7"}, True, True),
        ({"major": "2", "minor": "0"}, True, True),
        # Unreadable: assume the oldest supported release, so nothing is registered it would refuse.
        ({"major": "one"}, False, False),
        (403, False, False),  # forbidden
    ],
)
async def test_serve_reads_features_by_the_same_rule(
    answer: dict[str, str] | int, gates: bool, match: bool, fake_api: FakeApiServer, kube: KubeClient
) -> None:
    if isinstance(answer, int):
        fake_api.fail["/version"] = answer
    else:
        fake_api.version = answer
    got = await bootstrap.server_features(kube)
    assert (got.scheduling_gates, got.match_conditions) == (gates, match)
    assert [r.path for r in fake_api.requests] == ["/version"]


# --- per-release output -------------------------------------------------------------------------------------


def _find_key(value: Any, key: str) -> list[Any]:
    """Every value under ``key`` anywhere in ``value``."""
    if isinstance(value, dict):
        return [v for k, v in value.items() if k == key] + [
            x for v in value.values() for x in _find_key(v, key)
        ]
    if isinstance(value, list):
        return [x for v in value for x in _find_key(v, key)]
    return []


def _webhooks(docs: list[Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]}


def _pod_webhooks(docs: list[Any]) -> list[str]:
    return [n for n, w in _webhooks(docs).items() for r in w["rules"] if "pods" in r["resources"]]


def _scheduler(docs: list[Any]) -> tuple[str, str]:
    """(config apiVersion, image) of the deployed kube-scheduler."""
    config = yaml.safe_load(
        _by_kind(docs, "ConfigMap")["pumice-scheduler-config"]["data"]["scheduler-config.yaml"]
    )
    [container] = _by_kind(docs, "Deployment")["pumice-kube-scheduler"]["spec"]["template"]["spec"][
        "containers"
    ]
    return config["apiVersion"], container["image"]


@pytest.mark.parametrize("version", ["1.24", "v1.24.17"])
def test_deploy_for_1_24(version: str) -> None:
    docs = _deploy(kubernetes_version=parse_version(version))
    assert _webhooks(docs), "the job, queue and PodGroup webhooks stay"
    assert _find_key(docs, "matchConditions") == []
    assert _pod_webhooks(docs) == []
    api_version, image = _scheduler(docs)
    assert api_version == API_V1BETA3
    assert re.fullmatch(r"registry\.k8s\.io/kube-scheduler:v1\.24\.\d+", image)
    assert image.endswith("v1.24.17" if version == "v1.24.17" else "v1.24.0")


def test_deploy_for_1_27_has_gates_but_no_match_conditions() -> None:
    docs = _deploy(kubernetes_version=parse_version("1.27"))
    # Without matchConditions the pod webhooks would see every pod in the cluster: left out.
    assert _find_key(docs, "matchConditions") == []
    assert _pod_webhooks(docs) == []
    assert _scheduler(docs) == (API_V1, "registry.k8s.io/kube-scheduler:v1.27.0")


@pytest.mark.parametrize("version", [None, "1.28", "v1.28.7"])
def test_deploy_for_1_28(version: str | None) -> None:
    kwargs: dict[str, Any] = {} if version is None else {"kubernetes_version": parse_version(version)}
    docs = _deploy(scheduler_name="batch", **kwargs)
    hooks = _webhooks(docs)
    assert sorted(_pod_webhooks(docs)) == ["mutate-pod.pumice.dev", "validate-pod.pumice.dev"]
    for name in _pod_webhooks(docs):
        [condition] = hooks[name]["matchConditions"]
        assert "'batch'" in condition["expression"]  # the deployed scheduler's pods, no others
    api_version, image = _scheduler(docs)
    assert api_version == API_V1
    assert image == f"registry.k8s.io/kube-scheduler:{'v1.28.0' if version == '1.28' else 'v1.28.7'}"


def test_deploy_explicit_config_version_must_suit_the_default_image() -> None:
    with pytest.raises(ValueError, match=r"not supported by kube-scheduler v1\.24"):
        _deploy(kubernetes_version=parse_version("1.24"), api_version=API_V1)
    # With an image of their own, the caller knows what it reads.
    docs = _deploy(kubernetes_version=parse_version("1.24"), api_version=API_V1, scheduler_image="ks:1.25")
    assert _scheduler(docs) == (API_V1, "ks:1.25")
    with pytest.raises(ValueError, match="older than pumice supports"):
        _deploy(kubernetes_version=parse_version("1.21"))


# --- CLI: --kubernetes-version and --kubeconfig -------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.24", "v1.28.7", "1.27"])
def test_cli_deploy_for_a_release(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(["manifests", "deploy", "--image", "img:1", "--kubernetes-version", version], capsys)
    assert code == 0
    assert docs == deploy_manifests(
        image="img:1",
        mutual_tls=True,
        webhook_configurations=webhook_configurations,
        kubernetes_version=parse_version(version),
    )


def test_cli_deploy_defaults_to_the_newest_tested_release(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(["manifests", "deploy", "--image", "img:1"], capsys)
    assert code == 0
    assert _scheduler(docs) == (API_V1, "registry.k8s.io/kube-scheduler:v1.28.7")
    assert _pod_webhooks(docs)


def test_cli_deploy_explicit_choices_win(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _run(
        [
            "manifests",
            "deploy",
            "--kubernetes-version",
            "1.24",
            "--api-version",
            "v1beta2",
            "--scheduler-image",
            "mirror/ks:v1.24.17",
        ],
        capsys,
    )
    assert code == 0
    assert _scheduler(docs) == (API_V1BETA2, "mirror/ks:v1.24.17")


@pytest.mark.parametrize(
    ("version", "api_version", "expected"),
    [
        ("1.24", None, API_V1BETA3),
        ("1.22", None, API_V1BETA2),
        ("1.25", None, API_V1),
        (None, None, API_V1),
        ("1.24", "v1beta2", API_V1BETA2),
    ],
)
def test_cli_scheduler_config_for_a_release(
    version: str | None, api_version: str | None, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["manifests", "scheduler-config", "--extender-url", URL]
    argv += ["--kubernetes-version", version] if version else []
    argv += ["--api-version", api_version] if api_version else []
    code, [config], _ = _run(argv, capsys)
    assert code == 0
    assert config["apiVersion"] == expected


@pytest.mark.parametrize(
    ("version", "pods"),
    [("1.24", []), ("1.27", []), ("1.28", ["mutate-pod.pumice.dev", "validate-pod.pumice.dev"])],
)
def test_cli_webhooks_for_a_release(
    version: str, pods: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, _ = _run(
        [
            "manifests",
            "webhooks",
            "--service",
            "ns1/pumice",
            "--kubernetes-version",
            version,
            "--scheduler-name",
            "a",
            "--scheduler-name",
            "b",
        ],
        capsys,
    )
    assert code == 0
    assert sorted(_pod_webhooks(docs)) == pods
    conditions = _find_key(docs, "matchConditions")
    assert len(conditions) == len(pods)
    for [condition] in conditions:
        assert "'a'" in condition["expression"] and "'b'" in condition["expression"]


@pytest.mark.parametrize("command", ["deploy", "webhooks"])
def test_cli_reads_the_release_from_the_cluster(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    asked: list[str] = []

    def cluster_version(kubeconfig: str) -> KubernetesVersion:
        asked.append(kubeconfig)
        return parse_version("v1.24.17")

    extra = ["--service", "ns1/pumice"] if command == "webhooks" else []
    code, docs, _ = _run(
        ["manifests", command, *extra, "--kubeconfig", "/k.conf"], capsys, cluster_version=cluster_version
    )
    assert code == 0
    assert asked == ["/k.conf"]
    assert _find_key(docs, "matchConditions") == [] and _pod_webhooks(docs) == []
    if command == "deploy":
        assert _scheduler(docs) == (API_V1BETA3, "registry.k8s.io/kube-scheduler:v1.24.17")


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        (
            ClusterUnreachable("connection refused"),
            "cannot read the Kubernetes version from /k.conf",
        ),
        (ValueError("no Kubernetes version in /version: {}"), "no Kubernetes version"),
        (parse_version("v1.21.14"), "older than pumice supports"),
    ],
)
def test_cli_cluster_version_failures_exit_1(
    outcome: Exception | KubernetesVersion,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def cluster_version(kubeconfig: str) -> KubernetesVersion:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    code, docs, err = _run(
        ["manifests", "deploy", "--kubeconfig", "/k.conf"], capsys, cluster_version=cluster_version
    )
    assert (code, docs) == (1, [])
    assert err.startswith("pumice manifests deploy: ") and message in err
    assert "Traceback" not in err


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


async def test_cluster_version_asks_the_api_server(fake_api: FakeApiServer, tmp_path: Path) -> None:
    """The real I/O path (kubeconfig, client, GET /version) that ``pumice`` hands the CLI, against the
    in-process API server."""
    fake_api.version = {"major": "1", "minor": "27", "gitVersion": "v1.27.3"}
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", fake_api.url)
    # The CLI runs its own event loop, as under `pumice`: off this test's loop.
    got = await asyncio.to_thread(kube_version.cluster_version, str(kubeconfig))
    assert got == KubernetesVersion(1, 27, 3)
    seen = [(r.path, r.authorization) for r in fake_api.requests]
    assert seen == [("/version", "Bearer t")]


async def test_cluster_version_unreachable(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the call: nothing listens
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    with pytest.raises(ClusterUnreachable):
        await asyncio.to_thread(kube_version.cluster_version, str(kubeconfig))
    with pytest.raises(ClusterUnreachable, match="does-not-exist"):
        await asyncio.to_thread(kube_version.cluster_version, str(tmp_path / "does-not-exist"))


@pytest.mark.parametrize(
    "argv",
    [
        ["manifests", "deploy", "--kubernetes-version", "1.21"],
        ["manifests", "deploy", "--kubernetes-version", "latest"],
        ["manifests", "webhooks", "--service", "a/b", "--kubernetes-version", "v1"],
        ["manifests", "scheduler-config", "--extender-url", URL, "--kubernetes-version", "1.20"],
        # One source for the release.
        ["manifests", "deploy", "--kubernetes-version", "1.24", "--kubeconfig", "/k.conf"],
        ["manifests", "webhooks", "--service", "a/b", "--kubernetes-version", "1.24", "--kubeconfig", "/k"],
    ],
)
def test_cli_bad_kubernetes_versions_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse(argv)
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_config_version_the_default_image_cannot_read_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    args = _parse(["manifests", "deploy", "--kubernetes-version", "1.24", "--api-version", "v1"])
    with pytest.raises(SystemExit) as exit_info:
        args.func(args)
    assert exit_info.value.code == 2
    assert "not supported by kube-scheduler v1.24" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["deploy", "webhooks", "scheduler-config"])
def test_cli_help_names_the_default_release(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse(["manifests", command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--kubernetes-version VERSION" in text
    assert "Default: v1.28.7, the newest release pumice is tested against" in text
    assert ("--kubeconfig PATH read the Kubernetes release" in text) is (command != "scheduler-config")
