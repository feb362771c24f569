"""The Helm chart (manifests/helm/pumice) renders, with Helm's own engine, the objects
``pumice manifests deploy`` prints: the same kinds and names, and the same objects field for field (the
scheduler config compared as the YAML it is, its hash checked to hash what the chart rendered). Neither holds
a certificate or a key (the certificate contract), so there is nothing left to set aside, and rendering twice
gives byte-identical output.

Beyond ``deploy``: the CRDs under ``crds/`` (a link to manifests/crds, one source), the values users
expect, the values schema (Helm enforces it: bad values fail the render), cert-manager, the ServiceMonitors,
the Grafana dashboards (every file of manifests/grafana), NOTES.txt, and a README generated from
values.yaml's comments.

Helm comes from helm-python-sdk (Helm's Go SDK as a shared library, on PyPI; in the test extra): no
``helm`` binary is needed. Without it these tests skip, saying so.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from admission.webhooks import webhook_configurations
from extender.api.versions import KubernetesVersion
from extender.deploy.chart_files import chart_files
from extender.deploy.manifests import deploy_manifests
from extender.deploy.names import tls_secret_names
from extender.plugins.registry import load_conf

helm = pytest.importorskip("helm_python", reason="helm-python-sdk (the test extra) is not installed")

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "pumice"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CONFIG_HASH = "pumice.dev/scheduler-config-sha256"

Key = tuple[str, str, str]


def render_text(namespace: str, release: str = "pumice", **values: Any) -> dict[str, str]:
    """Template path -> rendered text, as ``helm template`` prints it (NOTES.txt included)."""
    chart = helm.Chart.load(str(CHART))
    rendered: dict[str, str] = chart.render(values, name=release, namespace=namespace, is_install=True)
    return rendered


def render(namespace: str, release: str = "pumice", **values: Any) -> list[dict[str, Any]]:
    out = render_text(namespace, release, **values)
    return [
        d
        for path, text in out.items()
        if not path.endswith("NOTES.txt")
        for d in yaml.safe_load_all(text)
        if d
    ]


def by_key(docs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    out: dict[Key, dict[str, Any]] = {}
    for d in docs:
        key = (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
        assert key not in out, f"{key} twice"
        out[key] = d
    return out


def kinds(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def container(docs: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    [found] = kinds(docs, "Deployment")[deployment]["spec"]["template"]["spec"]["containers"]
    assert isinstance(found, dict)
    return found


def normalise(objs: dict[Key, dict[str, Any]], namespace: str, own: bool) -> None:
    """The scheduler config as YAML rather than text; its hash checked against the chart's own text."""
    config_map = objs[("ConfigMap", namespace, "pumice-scheduler-config")]
    text = config_map["data"]["scheduler-config.yaml"]
    config_map["data"]["scheduler-config.yaml"] = yaml.safe_load(text)
    template = objs[("Deployment", namespace, "pumice-kube-scheduler")]["spec"]["template"]["metadata"]
    found = template["annotations"].pop(CONFIG_HASH)
    if own:
        assert found == hashlib.sha256(text.encode()).hexdigest()


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
            mutual_tls=mtls,
            webhook_configurations=webhook_configurations,
            kubernetes_version=KubernetesVersion(1, minor),
        )
    )
    assert sorted(chart) == sorted(deploy)
    assert not [key for key in chart if key[0] == "Secret"]  # the certificate contract: pumice makes them
    normalise(chart, namespace, own=True)
    normalise(deploy, namespace, own=False)
    for key in deploy:
        assert chart[key] == deploy[key], key


@pytest.mark.parametrize(
    "values",
    [
        {"kubernetesVersion": "1.28"},
        {"kubernetesVersion": "1.24", "extender": {"mutualTLS": False}},
        {
            "kubernetesVersion": "1.28",
            "certManager": {"enabled": True},
            "metrics": {"serviceMonitor": {"enabled": True}},
            "grafana": {"dashboards": {"enabled": True}},
            "schedulerConf": "actions: enqueue, allocate\n",
            "queues": [{"name": "a", "spec": {"weight": 1}}],
        },
    ],
    ids=["defaults", "plain-http-1.24", "everything"],
)
def test_helm_template_twice_is_byte_identical(values: dict[str, Any]) -> None:
    """No random name, certificate or key anywhere: an upgrade with the same values changes nothing."""
    first = render_text("volcano-system", **values)
    assert render_text("volcano-system", **values) == first
    text = "".join(first.values())
    assert "BEGIN CERTIFICATE" not in text and "PRIVATE KEY" not in text


def test_chart_files_are_generated_from_the_code() -> None:
    """files/ holds what extender/deploy/chart_files.py makes now (else: run hack/helm-chart-files.py)."""
    for path, text in chart_files(webhook_configurations).items():
        assert (CHART / path).read_text() == text, f"{path} is stale: run hack/helm-chart-files.py"


def test_chart_crds_are_manifests_crds() -> None:
    """crds/ is manifests/crds (a link, so one source): what Helm loads is those files byte for byte."""
    chart = helm.Chart.load(str(CHART))
    loaded = {Path(c["filename"]).name: c["data"] for c in chart.crds}
    expected = {p.name: p.read_text() for p in sorted((ROOT / "manifests" / "crds").glob("*.yaml"))}
    assert len(expected) == 9
    assert loaded == expected


def test_packaged_chart_holds_the_crds_and_dashboards(tmp_path: Path) -> None:
    """``helm package`` (hack/helm-package.sh) resolves the links: the archive stands alone."""
    archive = Path(helm.package(str(CHART), destination=str(tmp_path)))
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        for source, under in (("crds", "crds"), ("grafana", "dashboards")):
            for path in (ROOT / "manifests" / source).iterdir():
                member = members[f"pumice/{under}/{path.name}"]
                assert member.isfile(), member.name
                extracted = tar.extractfile(member)
                assert extracted is not None and extracted.read() == path.read_bytes()
        assert "pumice/README.md" in members and "pumice/values.schema.json" in members
        assert "pumice/README.md.gotmpl" not in members
    reloaded = helm.Chart.load_archive(archive.read_bytes())
    assert len(reloaded.crds) == 9


def test_chart_lints_clean() -> None:
    report = helm.lint(str(CHART), {"kubernetesVersion": "1.28"}, strict=True)
    assert not report["errors"]
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_readme_is_generated_from_values_comments() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "helm-readme.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_readme_documents_every_value() -> None:
    readme = (CHART / "README.md").read_text()
    for key in ("imagePullSecrets", "kubeScheduler.tolerations", "webhooks.namespaceSelector", "replicas"):
        assert f"| `{key}` |" in readme, key


def _schema_keys(schema: dict[str, Any], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, sub in schema.get("properties", {}).items():
        keys.add(prefix + name)
        if sub.get("type") == "object" and "properties" in sub:
            keys |= _schema_keys(sub, f"{prefix}{name}.")
    return keys


def _value_keys(values: dict[str, Any], schema: dict[str, Any], prefix: str = "") -> set[str]:
    """values.yaml's keys, as deep as the schema describes objects key by key."""
    keys: set[str] = set()
    for name, value in values.items():
        keys.add(prefix + name)
        sub = schema.get("properties", {}).get(name, {})
        if isinstance(value, dict) and "properties" in sub:
            keys |= _value_keys(value, sub, f"{prefix}{name}.")
    return keys


def test_schema_and_values_name_the_same_keys() -> None:
    """Every value is in the schema; every key the schema names is in values.yaml, unless it belongs to
    an object values.yaml leaves empty (``prometheusServiceAccount: {}`` may take a name and namespace)."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    in_values, in_schema = _value_keys(values, schema), _schema_keys(schema) - {"global"}
    assert in_values - in_schema == set()

    def under_an_empty_default(key: str) -> bool:
        node: Any = values
        for part in key.split(".")[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
            if node == {}:
                return True
        return False

    assert [k for k in sorted(in_schema - in_values) if not under_an_empty_default(k)] == []


def test_default_values_pass_the_schema() -> None:
    chart = helm.Chart.load(str(CHART))
    chart.validate_schema(chart.merge_values({"kubernetesVersion": "1.28"}))


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"kubernetesVersion": "1.21"}, "older than pumice supports"),
        # The schema, which Helm checks before it renders anything.
        ({"replicas": 0}, "/replicas': minimum: got 0, want 1"),
        ({"replica": 2}, "additional properties 'replica' not allowed"),
        ({"queues": [{"spec": {}}]}, "/queues/0': missing property 'name'"),
        ({"imagePullSecrets": ["regcred"]}, "/imagePullSecrets/0': got string, want object"),
        ({"logFormat": "xml"}, "/logFormat"),
        ({"kubeScheduler": {"replicas": "two"}}, "/kubeScheduler/replicas': got string, want integer"),
        ({"webhooks": {"namespaceSelector": {"matchLabel": {}}}}, "/webhooks/namespaceSelector"),
        ({"topologySpreadConstraints": [{"maxSkew": 1}]}, "/topologySpreadConstraints/0'"),
        ({"certManager": {"duration": "1 year"}}, "/certManager/duration"),
        ({"fullnameOverride": "Pumice_1"}, "/fullnameOverride"),
    ],
)
def test_bad_values_fail_the_render_with_a_reason(values: dict[str, Any], says: str) -> None:
    with pytest.raises(helm.HelmError) as failure:
        render("ns1", **{"kubernetesVersion": "1.28", **values})
    assert says in str(failure.value)


def test_values_add_the_service_monitors_queues_and_scheduler_conf() -> None:
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
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    # kube-scheduler: its secure port, with Prometheus' token, through a Service of its own.
    scheduler_monitor = objs[("ServiceMonitor", "ns1", "pumice-kube-scheduler")]
    [endpoint] = scheduler_monitor["spec"]["endpoints"]
    assert endpoint["port"] == "https" and endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    scheduler_service = objs[("Service", "ns1", "pumice-kube-scheduler")]
    assert scheduler_service["spec"]["ports"] == [
        {"name": "https", "port": 10259, "targetPort": "https", "protocol": "TCP"}
    ]
    scheduler = objs[("Deployment", "ns1", "pumice-kube-scheduler")]["spec"]
    assert scheduler_monitor["spec"]["selector"]["matchLabels"] == scheduler_service["spec"]["selector"]
    assert scheduler_service["spec"]["selector"] == scheduler["selector"]["matchLabels"]
    [scheduler_container] = scheduler["template"]["spec"]["containers"]
    assert {"name": "https", "containerPort": 10259, "protocol": "TCP"} in scheduler_container["ports"]

    assert objs[("Queue", "", "team-a")]["spec"] == {"weight": 2, "capability": {"cpu": "8"}}
    mounted = objs[("ConfigMap", "ns1", "pumice-scheduler-conf")]["data"]["volcano-scheduler.conf"]
    assert load_conf(mounted).spec.actions  # pumice itself accepts the conf the chart mounts
    pumice = container(list(objs.values()), "pumice")
    command = pumice["command"]
    assert command[command.index("--scheduler-conf") + 1] == "/etc/pumice-conf/volcano-scheduler.conf"
    assert command[command.index("--log-format") + 1] == "json"
    # Helm merges values: the cpu request changes, the rest stays as values.yaml has it.
    assert pumice["resources"] == {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}


def test_prometheus_service_account_is_granted_metrics() -> None:
    objs = by_key(
        render(
            "ns1",
            kubernetesVersion="1.28",
            metrics={
                "serviceMonitor": {
                    "enabled": True,
                    "kubeScheduler": {"prometheusServiceAccount": {"name": "prom", "namespace": "mon"}},
                }
            },
        )
    )
    role = objs[("ClusterRole", "", "pumice-metrics-reader")]
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = objs[("ClusterRoleBinding", "", "pumice-metrics-reader")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prom", "namespace": "mon"}]


def test_the_values_users_expect_reach_both_deployments() -> None:
    placement: dict[str, Any] = {
        "priorityClassName": "system-cluster-critical",
        "nodeSelector": {"pool": "system"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]
                }
            }
        },
        "podAnnotations": {"example.com/owner": "platform"},
        "podLabels": {"tier": "control"},
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        "resources": {"requests": {"cpu": "2"}},
    }
    docs = render(
        "ns1",
        kubernetesVersion="1.28",
        imagePullSecrets=[{"name": "regcred"}],
        extraLabels={"team": "batch"},
        image={"repository": "registry.example/pumice", "tag": "v9", "pullPolicy": "Always"},
        **placement,
        kubeScheduler={**placement, "image": "registry.example/kube-scheduler:v1.28.7"},
    )
    for name in ("pumice", "pumice-kube-scheduler"):
        deployment = kinds(docs, "Deployment")[name]
        pod = deployment["spec"]["template"]
        spec = pod["spec"]
        assert spec["imagePullSecrets"] == [{"name": "regcred"}]
        for field in ("priorityClassName", "nodeSelector", "tolerations", "affinity"):
            assert spec[field] == placement[field], (name, field)
        # A spread constraint without a labelSelector gets the pods' own.
        [spread] = spec["topologySpreadConstraints"]
        assert spread["topologyKey"] == "topology.kubernetes.io/zone"
        assert spread["labelSelector"] == {"matchLabels": deployment["spec"]["selector"]["matchLabels"]}
        assert pod["metadata"]["annotations"]["example.com/owner"] == "platform"
        assert pod["metadata"]["labels"]["tier"] == "control"
        assert pod["metadata"]["labels"]["team"] == "batch"
        assert "tier" not in deployment["spec"]["selector"]["matchLabels"]  # selectors never change
        assert spec["containers"][0]["resources"]["requests"]["cpu"] == "2"
    assert container(docs, "pumice")["image"] == "registry.example/pumice:v9"
    assert container(docs, "pumice")["imagePullPolicy"] == "Always"
    assert container(docs, "pumice-kube-scheduler")["image"] == "registry.example/kube-scheduler:v1.28.7"
    # extraLabels: on every object.
    for doc in docs:
        assert doc["metadata"].get("labels", {}).get("team") == "batch", (
            doc["kind"],
            doc["metadata"]["name"],
        )


def test_fullname_names_every_object_and_every_reference() -> None:
    """Release "prod": every object is prod-pumice…, and everything that names another follows."""
    docs = render("batch", release="prod", kubernetesVersion="1.28", createNamespace=True)
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for kind, name in names:
        if kind not in ("Namespace", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            assert name.startswith("prod-pumice"), (kind, name)
    # The webhook configurations keep the names pumice registers; they call the release's Service.
    webhooks = [w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]]
    assert {d["metadata"]["name"] for d in docs if d["kind"].endswith("WebhookConfiguration")} == {
        "pumice-mutating",
        "pumice-validating",
    }
    assert {w["clientConfig"]["service"]["name"] for w in webhooks} == {"prod-pumice"}
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        ref = binding["roleRef"]
        assert (ref["kind"], ref["name"]) in names or ref["name"].startswith(("system:", "extension-"))
        for subject in binding["subjects"]:
            assert ("ServiceAccount", subject["name"]) in names
    pumice = kinds(docs, "Deployment")["prod-pumice"]["spec"]["template"]["spec"]
    command = pumice["containers"][0]["command"]
    assert command[command.index("--webhook-service") + 1] == "batch/prod-pumice"
    assert command[command.index("--extender-service") + 1] == "batch/prod-pumice"
    assert command[command.index("--tls-secrets-prefix") + 1] == "prod-pumice"
    assert command[command.index("--leader-elect-resource-name") + 1] == "prod-pumice"
    role = kinds(docs, "Role")["prod-pumice"]
    named = [n for r in role["rules"] for n in r.get("resourceNames", [])]
    assert named == ["prod-pumice", *tls_secret_names("prod-pumice")]
    scheduler = kinds(docs, "Deployment")["prod-pumice-kube-scheduler"]["spec"]["template"]["spec"]
    assert scheduler["serviceAccountName"] == "prod-pumice-kube-scheduler"
    volumes = {v["name"]: v for v in scheduler["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "prod-pumice-scheduler-config"
    assert volumes["extender-client"]["secret"]["secretName"] == "prod-pumice-kube-scheduler-tls"
    config = yaml.safe_load(
        kinds(docs, "ConfigMap")["prod-pumice-scheduler-config"]["data"]["scheduler-config.yaml"]
    )
    assert config["extenders"][0]["urlPrefix"] == "https://prod-pumice.batch.svc:8888"
    assert config["leaderElection"]["resourceName"] == "prod-pumice-kube-scheduler"
    lease_role = kinds(docs, "Role")["prod-pumice-kube-scheduler-leader-election"]
    assert ["prod-pumice-kube-scheduler"] in [r.get("resourceNames") for r in lease_role["rules"]]
    # The release name "pumice" (what deploy prints) passes no lease name: pumice's default is "pumice".
    default = container(render("batch", kubernetesVersion="1.28"), "pumice")["command"]
    assert "--leader-elect-resource-name" not in default
    override = render("batch", release="x", kubernetesVersion="1.28", fullnameOverride="sched")
    assert {d["metadata"]["name"] for d in override if d["kind"] == "Deployment"} == {
        "sched",
        "sched-kube-scheduler",
    }


def test_one_replica_has_no_disruption_budget() -> None:
    """minAvailable 1 of one replica would block every node drain."""
    docs = render("ns1", kubernetesVersion="1.28", replicas=1, kubeScheduler={"replicas": 1})
    assert not kinds(docs, "PodDisruptionBudget")
    assert kinds(docs, "Deployment")["pumice"]["spec"]["replicas"] == 1
    docs = render("ns1", kubernetesVersion="1.28", podDisruptionBudget={"enabled": False})
    assert not kinds(docs, "PodDisruptionBudget")


def test_webhook_selectors_narrow_every_webhook() -> None:
    docs = render(
        "ns1",
        kubernetesVersion="1.28",
        webhooks={
            "namespaceSelector": {
                "matchLabels": {"batch": "on"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["system"]}],
            },
            "objectSelector": {"matchLabels": {"pumice": "yes"}},
        },
    )
    webhooks = [w for d in docs if d["kind"].endswith("WebhookConfiguration") for w in d["webhooks"]]
    assert webhooks
    for webhook in webhooks:
        assert webhook["objectSelector"] == {"matchLabels": {"pumice": "yes"}}
        if webhook["rules"][0]["scope"] == "Cluster":
            assert "namespaceSelector" not in webhook  # it does not apply to cluster-scoped objects
            continue
        selector = webhook["namespaceSelector"]
        assert selector["matchLabels"] == {"batch": "on"}
        # The webhook's own exclusion stays, the user's expression is added to it.
        assert selector["matchExpressions"] == [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "ns1"]},
            {"key": "tier", "operator": "NotIn", "values": ["system"]},
        ]


def test_cert_manager_issues_the_contract_secrets() -> None:
    docs = render("ns1", kubernetesVersion="1.28", certManager={"enabled": True})
    certificates = kinds(docs, "Certificate")
    assert {c["spec"]["secretName"] for c in certificates.values()} == set(tls_secret_names())
    issuers = kinds(docs, "Issuer")
    ca = next(c for c in certificates.values() if c["spec"]["secretName"] == "pumice-ca")
    assert ca["spec"]["isCA"] is True
    assert issuers[ca["spec"]["issuerRef"]["name"]]["spec"] == {"selfSigned": {}}
    service_names = ["pumice", "pumice.ns1", "pumice.ns1.svc", "pumice.ns1.svc.cluster.local"]
    for certificate in certificates.values():
        spec = certificate["spec"]
        if spec["secretName"] == "pumice-ca":
            continue
        # Signed by the CA Issuer, whose key is the CA Secret's: every ca.crt is the CA's certificate.
        assert issuers[spec["issuerRef"]["name"]]["spec"] == {"ca": {"secretName": "pumice-ca"}}
        if spec["secretName"] == "pumice-kube-scheduler-tls":
            assert "client auth" in spec["usages"] and "dnsNames" not in spec
        else:
            assert "server auth" in spec["usages"] and spec["dnsNames"] == service_names
    # pumice reads them as it would its own; nothing else changes.
    without = by_key(render("ns1", kubernetesVersion="1.28"))
    assert by_key([d for d in docs if d["kind"] not in ("Certificate", "Issuer")]) == without
    # Plain HTTP: only the CA and the webhooks' certificate.
    plain = render(
        "ns1", kubernetesVersion="1.28", certManager={"enabled": True}, extender={"mutualTLS": False}
    )
    assert {c["spec"]["secretName"] for c in kinds(plain, "Certificate").values()} == {
        "pumice-ca",
        "pumice-webhook-tls",
    }


def test_dashboards_are_every_grafana_file_as_sidecar_configmaps() -> None:
    docs = render(
        "ns1",
        kubernetesVersion="1.28",
        grafana={"dashboards": {"enabled": True, "namespace": "monitoring", "annotations": {"f": "pumice"}}},
    )
    maps = [d for d in docs if d["kind"] == "ConfigMap" and "-dashboard-" in d["metadata"]["name"]]
    files = sorted((ROOT / "manifests" / "grafana").glob("*.json"))
    assert files and len(maps) == len(files)
    by_file = {name: m for m in maps for name in m["data"]}
    for path in files:
        config_map = by_file[path.name]
        assert config_map["metadata"]["namespace"] == "monitoring"
        assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert config_map["metadata"]["annotations"] == {"f": "pumice"}
        assert json.loads(config_map["data"][path.name]) == json.loads(path.read_text())
    custom = render(
        "ns1",
        kubernetesVersion="1.28",
        grafana={"dashboards": {"enabled": True, "label": "dash", "labelValue": "yes"}},
    )
    [labelled] = [d for d in custom if "-dashboard-" in d["metadata"]["name"]][:1]
    assert labelled["metadata"]["labels"]["dash"] == "yes"
    assert not [d for d in render("ns1", kubernetesVersion="1.28") if "-dashboard-" in d["metadata"]["name"]]


def test_notes_say_what_was_installed_and_how_crds_upgrade() -> None:
    notes = render_text("ns1", kubernetesVersion="1.28")["pumice/templates/NOTES.txt"]
    assert "rollout status deployment/pumice" in notes
    assert "helm show crds" in notes and "never upgrades them" in notes
    assert "pumice-ca" in notes
    with_cert_manager = render_text("ns1", kubernetesVersion="1.28", certManager={"enabled": True})
    assert "get certificates" in with_cert_manager["pumice/templates/NOTES.txt"]
