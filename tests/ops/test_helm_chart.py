"""The Helm chart (manifests/helm/pumice) renders, with Helm's own engine, the objects
``pumice manifests deploy`` prints: the same kinds and names, and the same objects field for field, but
for what is generated afresh on every render (the mutual-TLS certificates, and the hashes of them and of
the scheduler config text, which are checked to hash what the chart rendered).

Helm comes from helm-python-sdk (Helm's Go SDK as a shared library, on PyPI; in the test extra): no
``helm`` binary is needed. Without it these tests skip, saying so.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from admission.webhooks import webhook_configurations
from extender.api.versions import KubernetesVersion
from extender.deploy.chart_files import chart_files
from extender.deploy.manifests import deploy_manifests, generate_extender_tls
from extender.plugins.registry import load_conf

helm = pytest.importorskip("helm_python", reason="helm-python-sdk (the test extra) is not installed")

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "pumice"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CA_HASH = "pumice.dev/extender-ca-sha256"
CONFIG_HASH = "pumice.dev/scheduler-config-sha256"

Key = tuple[str, str, str]


def render(namespace: str, **values: Any) -> list[dict[str, Any]]:
    chart = helm.Chart.load(str(CHART))
    out = chart.render(values, name="pumice", namespace=namespace, is_install=True)
    return [d for text in out.values() for d in yaml.safe_load_all(text) if d]


def by_key(docs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    out: dict[Key, dict[str, Any]] = {}
    for d in docs:
        key = (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
        assert key not in out, f"{key} twice"
        out[key] = d
    return out


def cert(pem_b64: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(pem_b64))


def signed_by(child: x509.Certificate, ca: x509.Certificate) -> bool:
    key = ca.public_key()
    assert isinstance(key, rsa.RSAPublicKey)
    assert child.signature_hash_algorithm is not None
    key.verify(
        child.signature, child.tbs_certificate_bytes, padding.PKCS1v15(), child.signature_hash_algorithm
    )
    return child.issuer == ca.subject


def check_tls(chart: dict[Key, dict[str, Any]], namespace: str) -> str:
    """The chart's generated pair chains to its CA, names pumice's Service, and has the right key usage.
    Returns the CA's hash (what both pod templates must carry); strips what differs every render."""
    server = chart[("Secret", namespace, "pumice-extender-tls")].pop("data")
    client = chart[("Secret", namespace, "pumice-kube-scheduler-extender-client")].pop("data")
    assert server["ca.crt"] == client["ca.crt"]
    ca = cert(server["ca.crt"])
    serving, calling = cert(server["tls.crt"]), cert(client["tls.crt"])
    assert signed_by(serving, ca) and signed_by(calling, ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"pumice.{namespace}.svc" in names.get_values_for_type(x509.DNSName)
    usage = calling.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usage
    assert base64.b64decode(server["tls.key"]) and base64.b64decode(client["tls.key"])
    return hashlib.sha256(base64.b64decode(server["ca.crt"])).hexdigest()


def normalise(objs: dict[Key, dict[str, Any]], namespace: str, ca_hash: str | None, own: bool) -> None:
    """Take out of both sides what is made afresh per render, checking the chart's own (``own``)."""
    config_map = objs[("ConfigMap", namespace, "pumice-scheduler-config")]
    text = config_map["data"]["scheduler-config.yaml"]
    config_map["data"]["scheduler-config.yaml"] = yaml.safe_load(text)
    for name in ("pumice", "pumice-kube-scheduler"):
        template = objs[("Deployment", namespace, name)]["spec"]["template"]["metadata"]
        annotations = template.get("annotations", {})
        if name == "pumice-kube-scheduler" and own:
            assert annotations.pop(CONFIG_HASH) == hashlib.sha256(text.encode()).hexdigest()
        else:
            annotations.pop(CONFIG_HASH, None)
        found = annotations.pop(CA_HASH, None)
        if own:
            assert found == ca_hash, name
        if not annotations:
            template.pop("annotations", None)
    for secret in ("pumice-extender-tls", "pumice-kube-scheduler-extender-client"):
        objs.get(("Secret", namespace, secret), {}).pop("data", None)


@pytest.mark.parametrize("minor", [24, 27, 28])
@pytest.mark.parametrize("mtls", [True, False], ids=["mtls", "plain-http"])
@pytest.mark.parametrize("namespace", ["volcano-system", "batch-system"])
def test_chart_renders_what_manifests_deploy_prints(minor: int, mtls: bool, namespace: str) -> None:
    chart = by_key(
        render(
            namespace,
            kubernetesVersion=f"1.{minor}",
            createNamespace=True,
            extender={"mutualTLS": mtls},
        )
    )
    deploy = by_key(
        deploy_manifests(
            namespace=namespace,
            image=f"pumice:{VERSION}",
            extender_tls=generate_extender_tls(namespace) if mtls else None,
            webhook_configurations=webhook_configurations,
            kubernetes_version=KubernetesVersion(1, minor),
        )
    )
    assert sorted(chart) == sorted(deploy)
    ca_hash = check_tls(chart, namespace) if mtls else None
    normalise(chart, namespace, ca_hash, own=True)
    normalise(deploy, namespace, None, own=False)
    for key in deploy:
        assert chart[key] == deploy[key], key


def test_chart_files_are_generated_from_the_code() -> None:
    """files/ holds what extender/deploy/chart_files.py makes now (else: run hack/helm-chart-files.py)."""
    for path, text in chart_files(webhook_configurations).items():
        assert (CHART / path).read_text() == text, f"{path} is stale: run hack/helm-chart-files.py"


def test_chart_lints_clean() -> None:
    report = helm.lint(str(CHART), {"kubernetesVersion": "1.28"}, strict=True)
    assert not report["errors"]
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_values_add_the_service_monitor_queues_and_scheduler_conf() -> None:
    conf = "actions: enqueue, allocate, backfill\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n"
    objs = by_key(
        render(
            "ns1",
            kubernetesVersion="1.28",
            metrics={"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
            queues=[{"name": "team-a", "spec": {"weight": 2, "capability": {"cpu": "8"}}}],
            schedulerConf=conf,
            logFormat="json",
            resources={"requests": {"cpu": "1"}},
        )
    )
    monitor = objs[("ServiceMonitor", "ns1", "pumice")]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "30s"}
    ]
    service = objs[("Service", "ns1", "pumice")]
    assert {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"} in service["spec"][
        "ports"
    ]
    assert monitor["spec"]["selector"]["matchLabels"] == service["metadata"]["labels"]
    assert objs[("Queue", "", "team-a")]["spec"] == {"weight": 2, "capability": {"cpu": "8"}}
    mounted = objs[("ConfigMap", "ns1", "pumice-scheduler-conf")]["data"]["volcano-scheduler.conf"]
    assert load_conf(mounted).spec.actions  # pumice itself accepts the conf the chart mounts
    [container] = objs[("Deployment", "ns1", "pumice")]["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("--scheduler-conf") + 1] == "/etc/pumice-conf/volcano-scheduler.conf"
    assert command[command.index("--log-format") + 1] == "json"
    # Helm merges values: the cpu request changes, the rest stays as values.yaml has it.
    assert container["resources"] == {
        "requests": {"cpu": "1", "memory": "512Mi"},
        "limits": {"memory": "2Gi"},
    }


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"kubernetesVersion": "1.28", "replicas": 2}, "replicas must be 1"),
        ({"kubernetesVersion": "1.21"}, "older than pumice supports"),
        ({"kubernetesVersion": "1.28", "queues": [{"spec": {}}]}, "queues[].name is required"),
    ],
)
def test_bad_values_fail_the_render_with_a_reason(values: dict[str, Any], says: str) -> None:
    with pytest.raises(helm.HelmError, match=says.replace("[", r"\[").replace("]", r"\]")):
        render("ns1", **values)
