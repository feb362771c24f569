"""The KubeSchedulerConfiguration that makes a stock kube-scheduler delegate batch decisions to pumice.

One profile per scheduler name (``volcano`` by default, optionally ``default-scheduler`` too, so one scheduler
process can serve every pod), one extender entry pointing at pumice's HTTP listener with every verb enabled.

Field names are the Go JSON names of ``kubescheduler.config.k8s.io`` v1beta2, v1beta3 and v1 (checked against
the Kubernetes sources: the ``Extender`` struct, ``percentageOfNodesToScore`` at the top level, and the
component-base ``clientConnection``/``leaderElection`` structs are spelled the same in all three), so one
builder serves every version and only ``apiVersion`` differs. Kubernetes 1.24 accepts v1beta2 and v1beta3;
v1 arrived in 1.25, and v1beta2 and v1beta3 were removed in 1.28 and 1.29 (which release reads which is
:func:`extender.api.versions.scheduler_config_api_versions`).

Invariants the scheduler's own validation enforces and we keep: a positive ``weight`` whenever
``prioritizeVerb`` is set, at most one extender implementing ``bind``, unique profile names.

Transport: plain HTTP (fine on loopback), or HTTPS with a ``tlsConfig`` of file paths (``ExtenderTLSConfig``:
``caFile``, ``certFile``, ``keyFile``, ``serverName``; v1beta2 reuses the struct of the older v1 package, so
the fields are the same in all three versions). An https URL always comes with a CA: kube-scheduler
(``makeTransport`` in pkg/scheduler/extender.go) turns ``enableHTTPS`` without ``caFile``/``caData`` into
``insecure``, i.e. it would not check pumice's certificate at all. A client certificate and key make it
mutual TLS, which ``pumice serve --extender-client-ca-file`` requires. kube-scheduler reads the files when it
starts, so the paths are where they are on its host.
"""

import posixpath
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from extender.api import versions
from extender.api.labels import DEFAULT_SCHEDULER_NAME
from extender.deploy import yamltext
from extender.deploy.yamltext import Manifest

KIND: Final = "KubeSchedulerConfiguration"
API_V1: Final = versions.SCHEDULER_CONFIG_V1
API_V1BETA3: Final = versions.SCHEDULER_CONFIG_V1BETA3
API_V1BETA2: Final = versions.SCHEDULER_CONFIG_V1BETA2
SUPPORTED_API_VERSIONS: Final = (API_V1, API_V1BETA3, API_V1BETA2)

DEFAULT_PROFILE: Final = "default-scheduler"
# Our own lease, so this scheduler never contends with the cluster's kube-scheduler for "kube-scheduler".
LEASE_NAME: Final = "pumice-kube-scheduler"

# kube-scheduler adds extender_score * weight * (MaxNodeScore 100 / MaxExtenderPriority 10) to the sum of its
# score plugins. With the v1beta3/v1 defaults those plugins weigh 3+2+2+2+1+1+1 = 12: at most 1200 in all.
# A weight of 200 makes one extender point worth 2000: pumice's node order (which already includes Volcano's
# nodeorder/binpack terms) is decisive and the default plugins only break ties between equally scored nodes.
DEFAULT_EXTENDER_WEIGHT: Final = 200
# One timeout covers every verb. bind makes an API call (pods/binding) that can queue behind a busy API
# server; filter and prioritize answer from memory, so in practice they never come near it.
DEFAULT_HTTP_TIMEOUT_SECONDS: Final = 30
# client-go's defaults (qps 50, burst 100) throttle binding and status updates of large gangs.
CLIENT_QPS: Final = 500
CLIENT_BURST: Final = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtenderTLS:
    """Where kube-scheduler finds the files for an https extender (absolute paths on its host).

    ``ca_file`` verifies pumice's serving certificate; ``cert_file`` and ``key_file`` (both or neither) are
    the client certificate kube-scheduler presents; ``server_name`` overrides the name checked against the
    serving certificate when the URL's host is not one of its names (an IP address, say).
    """

    ca_file: str
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        for field, path in (
            ("ca_file", self.ca_file),
            ("cert_file", self.cert_file),
            ("key_file", self.key_file),
        ):
            # Relative paths would resolve against kube-scheduler's working directory, not this config file.
            if path is not None and not posixpath.isabs(path):
                raise ValueError(f"{field} {path!r} must be an absolute path on kube-scheduler's host")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together (a client certificate needs its key)")
        if self.server_name == "":
            raise ValueError("server_name must not be empty (leave it out to check the URL's host)")

    def config(self) -> Manifest:
        """The ``tlsConfig`` object, Go JSON field names, unset fields left out."""
        out: Manifest = {"caFile": self.ca_file}
        if self.cert_file is not None and self.key_file is not None:
            out["certFile"] = self.cert_file
            out["keyFile"] = self.key_file
        if self.server_name is not None:
            out["serverName"] = self.server_name
        return out


def scheduler_config(
    *,
    extender_url: str,
    api_version: str = API_V1,
    kubeconfig: str | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    with_default_profile: bool = False,
    leader_elect: bool = True,
    weight: int = DEFAULT_EXTENDER_WEIGHT,
    http_timeout_seconds: int = DEFAULT_HTTP_TIMEOUT_SECONDS,
    lease_namespace: str | None = None,
    bind_verb: bool = False,
    tls: ExtenderTLS | None = None,
) -> Manifest:
    """A KubeSchedulerConfiguration for ``api_version`` whose extender is pumice at ``extender_url``.

    By default kube-scheduler binds pods itself: pumice has already decided the node at filter time,
    learns binds from its watch and keeps the reservation until then, so delegating the bind would only
    add an HTTP hop and a Python-side API call per pod (measured: 1.3-1.4x the throughput of delegating,
    on a CPU-bound 2-core machine). ``bind_verb=True`` delegates it to pumice's ``/bind`` (idempotent,
    releases a gang's plans when a bind fails), for setups that want pumice to act at bind time.

    ``kubeconfig=None`` leaves ``clientConnection.kubeconfig`` unset, i.e. in-cluster credentials.
    ``lease_namespace=None`` keeps kube-scheduler's default lease namespace (kube-system).
    ``tls`` goes with an ``https://`` URL and only with one (see the module docstring).
    Raises ValueError naming the offending argument.
    """
    if api_version not in SUPPORTED_API_VERSIONS:
        raise ValueError(
            f"api_version {api_version!r} is not supported; use one of {', '.join(SUPPORTED_API_VERSIONS)}"
        )
    url = urlsplit(extender_url)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise ValueError(f"extender_url {extender_url!r} must be an absolute http:// or https:// URL")
    if url.query or url.fragment:
        raise ValueError(f"extender_url {extender_url!r} must not carry a query or fragment")
    if url.scheme == "https" and tls is None:
        raise ValueError(
            f"extender_url {extender_url!r} is https but no CA file is given: kube-scheduler would not "
            "verify pumice's certificate (give tls=ExtenderTLS(ca_file=...), or use http:// on loopback)"
        )
    if url.scheme == "http" and tls is not None:
        raise ValueError(f"extender_url {extender_url!r} is http://: TLS files need an https:// URL")
    if not scheduler_name:
        raise ValueError("scheduler_name must not be empty")
    if with_default_profile and scheduler_name == DEFAULT_PROFILE:
        raise ValueError(f"scheduler_name {DEFAULT_PROFILE!r} already is the default profile")
    if weight <= 0:
        raise ValueError(f"weight must be positive (kube-scheduler rejects {weight} with prioritizeVerb set)")
    if http_timeout_seconds <= 0:
        raise ValueError(f"http_timeout_seconds must be positive, got {http_timeout_seconds}")

    profile_names = [scheduler_name, DEFAULT_PROFILE] if with_default_profile else [scheduler_name]
    client_connection: Manifest = {"qps": CLIENT_QPS, "burst": CLIENT_BURST}
    if kubeconfig is not None:
        client_connection = {"kubeconfig": kubeconfig, **client_connection}
    leader_election: Manifest = {"leaderElect": leader_elect, "resourceName": LEASE_NAME}
    if lease_namespace is not None:
        leader_election["resourceNamespace"] = lease_namespace
    extender: Manifest = {
        # kube-scheduler joins urlPrefix + "/" + verb, so a trailing slash would double up.
        "urlPrefix": extender_url.rstrip("/"),
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "preemptVerb": "preempt",
        "weight": weight,
        "enableHTTPS": url.scheme == "https",
        # Only node names cross the wire; pumice has every Node in its own cache.
        "nodeCacheCapable": True,
        "httpTimeout": f"{http_timeout_seconds}s",
        # Gang placement must not silently fall back to the default plugins when pumice is unreachable.
        "ignorable": False,
    }
    if bind_verb:
        extender["bindVerb"] = "bind"
    if tls is not None:
        extender["tlsConfig"] = tls.config()
    return {
        "apiVersion": api_version,
        "kind": KIND,
        "clientConnection": client_connection,
        "leaderElection": leader_election,
        # kube-scheduler stops filtering once it has found this share of feasible nodes; at 100 the node
        # pumice planned is always among the nodes sent to filter and prioritize.
        "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": name} for name in profile_names],
        "extenders": [extender],
    }


def scheduler_config_yaml(config: Manifest) -> str:
    """The YAML text of a config built by :func:`scheduler_config` (key order kept)."""
    return yamltext.dump(config)
