"""``helm install`` of the chart alone into an empty control plane, and pumice running on what it installed.

A control plane of this module's own (etcd + kube-apiserver with RBAC, nothing else installed: no CRDs, no
pumice), so the chart is tried as an administrator would try it on a new cluster, and nothing it registers
(webhook configurations pointing at a Service, ClusterRoles) meets the shared plane's tests. The chart is
rendered with Helm's own engine (helm-python-sdk) for the server's release; the harness does what
``helm install`` does with it, with the control plane's own kubectl: the CRDs of ``crds/`` first (waited for
until established), then every other object, for real (no kube-controller-manager runs, so the Deployments
start nothing).

Then pumice runs as a local process (this harness has no kubelet that could run its image) with the flags
of the chart's Deployment and the chart's ServiceAccount's credentials (a token of that ServiceAccount, from
the TokenRequest API), and the second kube-scheduler likewise with the chart's configuration and its own
ServiceAccount: a gang vcjob (with the svc and ssh plugins, so pumice also creates a Service, ConfigMaps
and a Secret) runs, which shows the chart's RBAC is enough. What differs from a pod, and why: listen
addresses are on loopback; the API server reaches the webhooks by URL (``--webhook-url-base``) because this
harness has no cluster DNS or kube-proxy to reach a Service; and so the webhook and extender certificates are
pumice's self-signed ones for 127.0.0.1, with the extender on plain HTTP, rather than the certificate
contract's Secrets, which name the Service. Those Secrets have their own test, with the chart's TLS flags
unchanged (``--tls-secrets-prefix``).

Last, tenants: with kube-controller-manager's clusterrole-aggregation controller running, a user bound to
the built-in ``edit`` role in a namespace creates a vcjob there, one bound to ``view`` cluster-wide lists
queues, and a user with no binding is refused both (kubectl ``--as``, i.e. impersonation).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.e2e import kube
from tests.e2e.controlplane import (
    ControlPlane,
    ControlPlaneError,
    _http,
    assets_dir,
    controller_manager_skip_reason,
    find_binary,
    free_port,
    skip_reason,
)
from tests.e2e.fake_kubelet import FakeKubelet

pytestmark = pytest.mark.e2e
helm = pytest.importorskip("helm_python", reason="helm-python-sdk (the test extra) is not installed")

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "manifests" / "helm" / "pumice"
NAMESPACE = "pumice-system"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BATCH = "batch.volcano.sh/v1alpha1"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
TLS_FLAGS = ("--tls-secrets-prefix", "--extender-service")


@dataclass(frozen=True)
class Installed:
    plane: ControlPlane
    docs: list[dict[str, Any]]
    crds: list[dict[str, Any]]

    def object(self, kind: str, name: str) -> dict[str, Any]:
        [found] = [d for d in self.docs if d["kind"] == kind and d["metadata"]["name"] == name]
        return found

    def command(self) -> list[str]:
        spec = self.object("Deployment", "pumice")["spec"]["template"]["spec"]
        command: list[str] = spec["containers"][0]["command"]
        return command


def _kubectl() -> str:
    bundled = assets_dir() / "kubectl"
    if bundled.is_file():
        return str(bundled)
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip(f"no kubectl in {assets_dir()} or on PATH")
    return found


def _kubectl_run(
    plane: ControlPlane, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_kubectl(), f"--kubeconfig={plane.kubeconfig_path}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=plane.env(),
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    control_plane = ControlPlane()
    control_plane.start()
    try:
        yield control_plane
    finally:
        control_plane.stop()


def _established(plane: ControlPlane, name: str) -> bool:
    status, body = _http("GET", f"{plane.server_url}{CRDS}/{name}", plane.token)
    conditions = json.loads(body).get("status", {}).get("conditions", []) if status == 200 else []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


@pytest.fixture(scope="module")
def installed(plane: ControlPlane) -> Installed:
    """The chart rendered for this server and applied as ``helm install`` applies it."""
    chart = helm.Chart.load(str(CHART))
    values = {
        "kubernetesVersion": str(plane.version),
        "createNamespace": True,
        "image": {"repository": "example.com/pumice", "tag": "e2e"},
    }
    rendered = chart.render(values, name="pumice", namespace=NAMESPACE, is_install=True)
    docs = [
        d
        for path, text in rendered.items()
        if not path.endswith("NOTES.txt")
        for d in yaml.safe_load_all(text)
        if d
    ]
    crds = [yaml.safe_load(c["data"]) for c in chart.crds]
    result = _kubectl_run(plane, "apply", "-f", "-", stdin=yaml.safe_dump_all(crds))
    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 30
    for crd in crds:
        while not _established(plane, crd["metadata"]["name"]):
            assert time.monotonic() < deadline, f"CRD {crd['metadata']['name']} not established"
            time.sleep(0.1)
    # Helm's order where it matters: the namespace first, the webhook configurations (which would call
    # a Service with no pods behind it yet) last.
    first = [d for d in docs if d["kind"] == "Namespace"]
    last = [d for d in docs if d["kind"].endswith("WebhookConfiguration")]
    rest = [d for d in docs if d not in first and d not in last]
    result = _kubectl_run(plane, "apply", "-f", "-", stdin=yaml.safe_dump_all([*first, *rest, *last]))
    assert result.returncode == 0, f"kubectl apply on {plane.version}:\n{result.stderr}"
    return Installed(plane=plane, docs=docs, crds=crds)


def test_the_chart_installs_alone(installed: Installed) -> None:
    plane = installed.plane
    # Every CRD of crds/ is there and established (the fixture waited); all nine of them.
    assert len(installed.crds) == 9
    for crd in installed.crds:
        assert _established(plane, crd["metadata"]["name"])
    # Every object the chart renders exists, as rendered.
    for doc in installed.docs:
        kind, meta = doc["kind"], doc["metadata"]
        args = ["get", kind.lower(), meta["name"], "-o", "json"]
        if "namespace" in meta:
            args += ["-n", meta["namespace"]]
        result = _kubectl_run(plane, *args)
        assert result.returncode == 0, f"{kind}/{meta['name']}: {result.stderr}"
    # The webhook configurations are registered with every webhook the chart has for this release.
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        [rendered] = [d for d in installed.docs if d["kind"] == kind]
        name = rendered["metadata"]["name"]
        result = _kubectl_run(plane, "get", kind.lower(), name, "-o", "json")
        stored = json.loads(result.stdout)
        assert [w["name"] for w in stored["webhooks"]] == [w["name"] for w in rendered["webhooks"]]
        for webhook in stored["webhooks"]:
            assert webhook["clientConfig"]["service"] == {
                "namespace": NAMESPACE,
                "name": "pumice",
                "path": webhook["clientConfig"]["service"]["path"],
                "port": 443,
            }
    # The Deployments as the API server stored them: two replicas each, spread, rolled without a gap.
    for name in ("pumice", "pumice-kube-scheduler"):
        result = _kubectl_run(plane, "get", "deployment", name, "-n", NAMESPACE, "-o", "json")
        spec = json.loads(result.stdout)["spec"]
        assert spec["replicas"] == 2
        assert spec["template"]["spec"]["topologySpreadConstraints"]
    result = _kubectl_run(plane, "get", "deployment", "pumice", "-n", NAMESPACE, "-o", "json")
    assert json.loads(result.stdout)["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    # kube-scheduler's ServiceMonitor relies on its built-in role for delegated authn/authz of /metrics.
    result = _kubectl_run(plane, "get", "clusterrole", "system:kube-scheduler", "-o", "json")
    rules = json.loads(result.stdout)["rules"]
    for group, resource in (
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    ):
        assert any(
            group in r.get("apiGroups", []) and resource in r.get("resources", []) and "create" in r["verbs"]
            for r in rules
        ), resource


def _service_account_kubeconfig(plane: ControlPlane, name: str) -> Path:
    """A kubeconfig with a token of ServiceAccount ``name`` (the TokenRequest API): its RBAC, no more."""
    status, body = _http(
        "POST",
        f"{plane.server_url}/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{name}/token",
        plane.token,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 7200},
        },
    )
    assert status == 201, body
    token = json.loads(body)["status"]["token"]
    path = plane.workdir / f"{name}.kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "e2e", "cluster": {"server": plane.server_url, "insecure-skip-tls-verify": True}}
                ],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": name}}],
                "current-context": "e2e",
            }
        )
    )
    path.chmod(0o600)
    return path


def _local_argv(command: list[str], kubeconfig: Path, ports: dict[str, int], cert_dir: Path) -> list[str]:
    """The chart's ``pumice serve`` command as a local process: listen on loopback, write certificates in
    ``cert_dir``, use ``kubeconfig``."""
    assert command[:2] == ["pumice", "serve"], command
    local = {
        "--extender-bind": f"127.0.0.1:{ports['extender']}",
        "--webhook-bind": f"127.0.0.1:{ports['webhook']}",
        "--metrics-bind": "127.0.0.1:0",
        "--cert-dir": str(cert_dir),
    }
    args = list(command[2:])
    for flag, value in local.items():
        args[args.index(flag) + 1] = value
    return [sys.executable, "-m", "extender.main", "serve", f"--kubeconfig={kubeconfig}", *args]


def _without(args: list[str], *flags: str) -> list[str]:
    """``args`` without each of ``flags`` and the value after it."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        else:
            out.append(arg)
    return out


@pytest.fixture(scope="module")
def pumice_as_chart(installed: Installed) -> Iterator[str]:
    """pumice with the chart Deployment's flags and ServiceAccount, and kube-scheduler with the chart's
    config and ServiceAccount; yields pumice's extender URL."""
    plane = installed.plane
    ports = {"extender": free_port(), "webhook": free_port()}
    argv = _local_argv(
        installed.command(),
        _service_account_kubeconfig(plane, "pumice"),
        ports,
        plane.workdir / "pumice-certs",
    )
    # The API server reaches pumice by URL here (no cluster DNS, no kube-proxy), with pumice's
    # certificate for that address; the contract's Secrets name the Service (see the last test).
    service = argv[argv.index("--webhook-service") + 1]
    assert service == f"{NAMESPACE}/pumice"
    argv = _without(argv, "--webhook-service", *TLS_FLAGS)
    argv.append(f"--webhook-url-base=https://127.0.0.1:{ports['webhook']}")
    extender_url = f"http://127.0.0.1:{ports['extender']}"
    plane.start_process(
        "pumice",
        argv,
        cwd=REPO,
        # What the downward API gives the pod: its name and namespace (the Lease's namespace).
        env={"POD_NAME": "pumice-e2e-0", "POD_NAMESPACE": NAMESPACE, "POD_IP": "127.0.0.1"},
        ready_url=f"{extender_url}/readyz",
        timeout=90,
    )
    deadline = time.monotonic() + 30
    while _http("GET", f"{plane.server_url}{QUEUES}/default", plane.token)[0] != 200:
        assert time.monotonic() < deadline, "pumice did not create the default queue\n" + plane.log_tails()
        time.sleep(0.2)

    config = yaml.safe_load(
        installed.object("ConfigMap", "pumice-scheduler-config")["data"]["scheduler-config.yaml"]
    )
    config["clientConnection"]["kubeconfig"] = str(
        _service_account_kubeconfig(plane, "pumice-kube-scheduler")
    )
    [extender] = config["extenders"]
    extender.update(urlPrefix=extender_url, enableHTTPS=False)
    extender.pop("tlsConfig", None)
    assert config["leaderElection"] == {
        "leaderElect": True,
        "resourceName": "pumice-kube-scheduler",
        "resourceNamespace": NAMESPACE,
    }
    plane.start_scheduler(config, timeout=60)
    yield extender_url
    plane.stop_scheduler()
    plane.stop_process("pumice")


def _job(name: str, replicas: int, *, cpu: str = "1", min_available: int | None = None) -> dict[str, Any]:
    return {
        "apiVersion": BATCH,
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": min_available or replicas,
            "schedulerName": "volcano",
            "queue": "default",
            "plugins": {"svc": [], "ssh": [], "env": []},
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                            ],
                        }
                    },
                }
            ],
        },
    }


async def test_a_gang_job_runs_as_the_chart_service_accounts(
    installed: Installed, pumice_as_chart: str
) -> None:
    plane = installed.plane
    api = await kube.new_api_client(plane.kubeconfig_path)
    async with api:
        await kube.create_namespace(api, "gang")
        # Three pods of 1 CPU on two nodes of 2: the gang fits only across both.
        nodes = await kube.create_fake_nodes(api, 2, prefix="chart-node", cpu="2")
        async with FakeKubelet(api):
            await kube.request(api, "POST", kube.collection_path(BATCH, "jobs", "gang"), body=_job("gang", 3))

            async def running() -> dict[str, Any] | None:
                job: dict[str, Any] = await kube.request(
                    api, "GET", f"{kube.collection_path(BATCH, 'jobs', 'gang')}/gang"
                )
                return job if job.get("status", {}).get("state", {}).get("phase") == "Running" else None

            try:
                job = await kube.wait_for(running, 90, message="the gang job Running")
            except TimeoutError as err:
                raise AssertionError(f"{err}\n{plane.log_tails(60)}") from err
            assert job["status"]["running"] == 3
            pods = await kube.list_objects(
                api, kube.collection_path("v1", "pods", "gang"), labelSelector="volcano.sh/job-name=gang"
            )
            placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods["items"]}
            assert sorted(placed) == ["gang-worker-0", "gang-worker-1", "gang-worker-2"]
            assert set(placed.values()) == set(nodes)
            # What the job plugins made, with pumice's credentials.
            await kube.request(api, "GET", "/api/v1/namespaces/gang/services/gang")
            await kube.request(api, "GET", "/api/v1/namespaces/gang/secrets/gang-ssh")
    # Nothing pumice did was refused: its log has no 403.
    log = plane.processes["pumice"].log_path.read_text(errors="replace")
    assert " 403" not in log and "forbidden" not in log.lower(), plane.log_tails(80, ["pumice"])


def _aggregation(plane: ControlPlane) -> None:
    """kube-controller-manager's clusterrole-aggregation controller, until ``edit`` holds our rules."""
    reason = controller_manager_skip_reason()
    if reason:
        pytest.skip(reason)
    binary = find_binary("kube-controller-manager")
    assert binary is not None
    proc = plane.start_process(
        "kube-controller-manager",
        [
            str(binary),
            f"--kubeconfig={plane.kubeconfig_path}",
            "--controllers=clusterrole-aggregation",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            "--secure-port=0",
        ],
        stop_timeout=2.0,
    )
    deadline = time.monotonic() + 60
    while True:
        proc.check_alive()
        result = _kubectl_run(plane, "get", "clusterrole", "edit", "-o", "json")
        # An aggregated role's rules are null until the controller first fills them.
        rules = (json.loads(result.stdout).get("rules") or []) if result.returncode == 0 else []
        if any(BATCH.split("/")[0] in r.get("apiGroups", []) and "create" in r["verbs"] for r in rules):
            return
        if time.monotonic() > deadline:
            raise ControlPlaneError("the built-in edit role never aggregated pumice's rules\n" + proc.tail())
        time.sleep(0.5)


def _as(
    plane: ControlPlane, user: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return _kubectl_run(plane, "--as", user, *args, stdin=stdin)


def test_tenants_submit_and_read_with_the_builtin_roles(installed: Installed, pumice_as_chart: str) -> None:
    plane = installed.plane
    _aggregation(plane)
    setup: list[tuple[str, ...]] = [
        ("create", "namespace", "team-a"),
        ("create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice", "-n", "team-a"),
        ("create", "clusterrolebinding", "bob-view", "--clusterrole=view", "--user=bob"),
    ]
    for step in setup:
        result = _kubectl_run(plane, *step)
        assert result.returncode == 0, result.stderr
    job = yaml.safe_dump(_job("tenant", 1, cpu="100m"))

    # edit, in its namespace: submits a vcjob (through pumice's admission) and reads it back.
    created = _as(plane, "alice", "create", "-n", "team-a", "-f", "-", stdin=job)
    assert created.returncode == 0, created.stderr
    assert "job.batch.volcano.sh/tenant created" in created.stdout
    listed = _as(plane, "alice", "get", "jobs.batch.volcano.sh", "-n", "team-a", "-o", "name")
    assert listed.returncode == 0 and "tenant" in listed.stdout, listed.stderr
    # ...but a RoleBinding reaches no cluster-scoped kind: no queues, and no vcjobs elsewhere.
    assert _as(plane, "alice", "get", "queues.scheduling.volcano.sh").returncode != 0
    elsewhere = _as(plane, "alice", "create", "-n", "default", "-f", "-", stdin=job)
    assert elsewhere.returncode != 0 and "forbidden" in elsewhere.stderr.lower(), elsewhere.stderr

    # view, cluster-wide: lists queues and vcjobs, writes nothing.
    queues = _as(plane, "bob", "get", "queues.scheduling.volcano.sh", "-o", "name")
    assert queues.returncode == 0, queues.stderr
    assert "queue.scheduling.volcano.sh/default" in queues.stdout
    assert _as(plane, "bob", "get", "jobs.batch.volcano.sh", "-A").returncode == 0
    refused = _as(plane, "bob", "create", "-n", "team-a", "-f", "-", stdin=job)
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), refused.stderr

    # Nobody's user: refused both (the roles grant nothing on their own).
    attempts: list[tuple[tuple[str, ...], str | None]] = [
        (("get", "queues.scheduling.volcano.sh"), None),
        (("create", "-n", "team-a", "-f", "-"), job),
    ]
    for args, stdin in attempts:
        result = _as(plane, "mallory", *args, stdin=stdin)
        assert result.returncode != 0 and "forbidden" in result.stderr.lower(), (args, result.stderr)
    plane.stop_process("kube-controller-manager")


def _secret(plane: ControlPlane, name: str) -> dict[str, Any] | None:
    status, body = _http(
        "GET", f"{plane.server_url}/api/v1/namespaces/{NAMESPACE}/secrets/{name}", plane.token
    )
    return json.loads(body) if status == 200 else None


def _certificate(secret: dict[str, Any], key: str = "tls.crt") -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key]))


async def test_pumice_fills_the_contract_secrets_as_the_chart_service_account(installed: Installed) -> None:
    """The certificate contract with the chart's flags unchanged (only the listen addresses): the first
    replica creates the four Secrets as the chart's ServiceAccount, a second uses the same ones, and the
    webhook configurations carry the CA."""
    plane = installed.plane
    kubeconfig = await asyncio.to_thread(_service_account_kubeconfig, plane, "pumice")
    prefix = installed.command()[installed.command().index("--tls-secrets-prefix") + 1]
    names = [
        f"{prefix}-ca",
        f"{prefix}-webhook-tls",
        f"{prefix}-extender-tls",
        f"{prefix}-kube-scheduler-tls",
    ]
    replicas = ("pumice-tls-0", "pumice-tls-1")
    # The module's other pumice leads on the chart's Lease: stopped (it releases the Lease), one of these two
    # leads, and it is the leader that registers the webhook configurations with the Secrets' CA.
    plane.stop_process("pumice")
    try:
        for index, replica in enumerate(replicas):
            ports = {"extender": free_port(), "webhook": free_port()}
            argv = _local_argv(installed.command(), kubeconfig, ports, plane.workdir / replica)
            plane.start_process(
                replica,
                argv,
                cwd=REPO,
                env={"POD_NAME": replica, "POD_NAMESPACE": NAMESPACE, "POD_IP": "127.0.0.1"},
            )

            async def all_there(replica: str = replica) -> list[dict[str, Any]] | None:
                plane.processes[replica].check_alive()
                found = [await asyncio.to_thread(_secret, plane, n) for n in names]
                return None if None in found else [s for s in found if s is not None]

            try:
                secrets = await kube.wait_for(all_there, 90, interval=0.5, message="the four TLS Secrets")
            except TimeoutError as err:
                raise AssertionError(f"{err}\n{plane.log_tails(60)}") from err
            if index == 0:
                first = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in secrets}
            else:
                await asyncio.sleep(5)  # time to have made (and lost) a race, if it were going to
                again = [await asyncio.to_thread(_secret, plane, n) for n in names]
                assert {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in again if s} == first
        first_bundle = secrets[0]["data"]["ca.crt"]

        def registered() -> bool:
            for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
                got = _kubectl_run(plane, "get", kind, f"pumice-{kind.split('webhook')[0]}", "-o", "json")
                hooks = json.loads(got.stdout)["webhooks"] if got.returncode == 0 else []
                if not hooks or any(h["clientConfig"].get("caBundle") != first_bundle for h in hooks):
                    return False
            return True

        await kube.wait_for(
            lambda: asyncio.to_thread(registered), 60, interval=0.5, message="the CA registered"
        )
    finally:
        for replica in replicas:
            plane.stop_process(replica)

    by_name = {s["metadata"]["name"]: s for s in secrets}
    for secret in secrets:
        assert secret["type"] == "kubernetes.io/tls"
        assert set(secret["data"]) >= {"tls.crt", "tls.key", "ca.crt"}
    ca = _certificate(by_name[names[0]])
    assert by_name[names[0]]["data"]["ca.crt"] == by_name[names[0]]["data"]["tls.crt"]
    service_names = [
        "pumice",
        f"pumice.{NAMESPACE}",
        f"pumice.{NAMESPACE}.svc",
        f"pumice.{NAMESPACE}.svc.cluster.local",
    ]
    for name in names[1:]:
        leaf = _certificate(by_name[name])
        leaf.verify_directly_issued_by(ca)
        assert _certificate(by_name[name], "ca.crt") == ca
        usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        if name.endswith("-kube-scheduler-tls"):
            assert ExtendedKeyUsageOID.CLIENT_AUTH in usage
        else:
            assert ExtendedKeyUsageOID.SERVER_AUTH in usage
            sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            assert set(service_names) <= set(sans.get_values_for_type(x509.DNSName)), name
    bundle = by_name[names[0]]["data"]["ca.crt"]
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        result = _kubectl_run(plane, "get", kind, f"pumice-{kind.split('webhook')[0]}", "-o", "json")
        assert result.returncode == 0, result.stderr
        hooks = json.loads(result.stdout)["webhooks"]
        assert hooks and all(h["clientConfig"].get("caBundle") == bundle for h in hooks), kind
