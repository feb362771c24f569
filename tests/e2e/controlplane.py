"""A throwaway Kubernetes control plane for end-to-end tests: etcd, kube-apiserver, kube-scheduler.

Everything runs as child processes of the test process, on free loopback ports, in a private temporary
directory. There is no kube-controller-manager and no kubelet: tests create fake Nodes and run a fake
kubelet (see ``fake_kubelet.py``). Consequences worth knowing when you write a test:

- no namespace controller: a deleted namespace stays ``Terminating`` (``kube.delete_namespace`` empties it);
- no garbage collector: ownerReferences do not cascade;
- no service-account controller: the ServiceAccount admission plugin is disabled so pods need no SA;
- no node-lifecycle controller: the TaintNodesByCondition admission plugin is disabled, otherwise every new
  Node would carry ``node.kubernetes.io/not-ready:NoSchedule`` forever.

``start_controller_manager()`` adds kube-controller-manager where the assets hold one, with
only the workload controllers and the garbage collector (``KCM_CONTROLLERS``); tests that need it skip with
``controller_manager_skip_reason()`` elsewhere.

Invariants: every process is started in its own session (so its whole process group can be signalled), dies
with the test process (``PR_SET_PDEATHSIG`` on Linux, plus an ``atexit`` hook), and writes stdout+stderr to
``<workdir>/logs/<name>.log``; ``log_tails()`` renders the tails for failure reports. ``stop()`` is
idempotent and kills everything even after a failed ``start()``.

The binaries come from ``$KUBEBUILDER_ASSETS`` (default ``/usr/local/kubebuilder/bin``); etcd may also be
found on ``PATH``. ``missing_binaries()`` tells a caller what is absent so it can skip.

Versions: the harness runs v1.24 and v1.28 control planes alike. It asks each binary for its version
(``kube-apiserver --version``, checked against the running server's ``/version``) and adapts: the
KubeSchedulerConfiguration ``apiVersion`` follows the kube-scheduler binary (``v1`` from 1.25 on, ``v1beta3``
before; see ``scheduler_config_api_versions``), and only flags every supported version accepts are passed
(the klog flags such as ``--logtostderr`` are gone from 1.26 on; logging to stderr is the default anyway).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

if TYPE_CHECKING:
    from tests.e2e.pumice import Pumice

DEFAULT_ASSETS = "/usr/local/kubebuilder/bin"
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler")
SCHEDULER_API_V1 = "kubescheduler.config.k8s.io/v1"
SCHEDULER_API_V1BETA3 = "kubescheduler.config.k8s.io/v1beta3"
SCHEDULER_API_V1BETA2 = "kubescheduler.config.k8s.io/v1beta2"

_PR_SET_PDEATHSIG = 1


class ControlPlaneError(RuntimeError):
    """A component failed to start or become ready; the message carries its log tail."""


def assets_dir() -> Path:
    return Path(os.environ.get("KUBEBUILDER_ASSETS") or DEFAULT_ASSETS)


def find_binary(name: str) -> Path | None:
    """``$KUBEBUILDER_ASSETS/<name>`` if executable; etcd alone may also come from ``PATH``."""
    candidate = assets_dir() / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    if name == "etcd":
        found = shutil.which("etcd")
        if found:
            return Path(found)
    return None


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if find_binary(name) is None]


def skip_reason() -> str | None:
    """A human sentence naming what is missing, or None when the control plane can run."""
    missing = missing_binaries()
    if not missing:
        return None
    return f"e2e needs {', '.join(missing)}: not found in KUBEBUILDER_ASSETS={assets_dir()}" + (
        " (etcd is also looked up on PATH)" if "etcd" in missing else ""
    )


# Only the workload controllers and the garbage collector: the node-lifecycle controller would taint the
# fake nodes unreachable (the fake kubelet renews no leases), and no service-account tokens are needed.
KCM_CONTROLLERS = ("deployment", "replicaset", "statefulset", "job", "garbagecollector")


def controller_manager_skip_reason() -> str | None:
    """Why kube-controller-manager cannot run here (kubebuilder's assets do not ship one), or None."""
    if find_binary("kube-controller-manager") is None:
        return f"kube-controller-manager not found in {assets_dir()}"
    return None


@dataclass(frozen=True, order=True, slots=True)
class KubeVersion:
    """A Kubernetes release as ``--version`` or ``/version`` tells it; compares as (major, minor, patch)."""

    major: int
    minor: int
    patch: int = 0
    #: the text it was parsed from, e.g. ``v1.28.7``; not compared
    git_version: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str) -> KubeVersion:
        """``Kubernetes v1.28.7``, ``v1.24.17-dirty`` or ``1.25`` -> KubeVersion; ValueError otherwise."""
        match = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?\S*", text)
        if match is None:
            raise ValueError(f"no Kubernetes version in {text.strip()[:200]!r}")
        major, minor, patch = match.group(1, 2, 3)
        return cls(int(major), int(minor), int(patch or 0), git_version=match.group(0))

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)

    def __str__(self) -> str:
        return self.git_version or f"v{self.major}.{self.minor}.{self.patch}"


@functools.cache
def _binary_version(path: Path) -> KubeVersion:
    try:
        result = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ControlPlaneError(f"cannot run {path} --version: {err}") from err
    try:
        return KubeVersion.parse(result.stdout + result.stderr)
    except ValueError as err:
        raise ControlPlaneError(f"{path} --version (exit {result.returncode}): {err}") from err


def binary_version(name: str) -> KubeVersion:
    """What ``<name> --version`` reports (cached per path); ControlPlaneError when absent or unclear."""
    binary = find_binary(name)
    if binary is None:
        raise ControlPlaneError(skip_reason() or f"{name} not found")
    return _binary_version(binary.resolve())


def scheduler_config_api_versions(version: KubeVersion) -> tuple[str, ...]:
    """The KubeSchedulerConfiguration apiVersions kube-scheduler ``version`` loads, preferred first.

    v1beta2: 1.22 to 1.27; v1beta3: 1.23 to 1.28; v1: from 1.25 on. The newest accepted one is preferred, so
    the harness never leans on a deprecated version a later release removes.
    """
    accepted = []
    if version.at_least(1, 25):
        accepted.append(SCHEDULER_API_V1)
    if version.at_least(1, 23) and not version.at_least(1, 29):
        accepted.append(SCHEDULER_API_V1BETA3)
    if version.at_least(1, 22) and not version.at_least(1, 28):
        accepted.append(SCHEDULER_API_V1BETA2)
    if not accepted:
        raise ControlPlaneError(f"kube-scheduler {version} is older than any release this harness supports")
    return tuple(accepted)


def scheduler_config_api_version(version: KubeVersion | None = None) -> str:
    """The apiVersion to write for kube-scheduler ``version`` (default: the binary in KUBEBUILDER_ASSETS)."""
    return scheduler_config_api_versions(version or binary_version("kube-scheduler"))[0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stock_scheduler_config(*, api_version: str | None = None, **overrides: Any) -> dict[str, Any]:
    """A KubeSchedulerConfiguration with the single ``default-scheduler`` profile.

    ``api_version`` defaults to the one the kube-scheduler binary prefers (``scheduler_config_api_version``).
    ``clientConnection.kubeconfig`` and ``leaderElection`` are filled in by ``ControlPlane.start_scheduler``.
    """
    config: dict[str, Any] = {
        "apiVersion": api_version or scheduler_config_api_version(),
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}],
    }
    config.update(overrides)
    return config


def _die_with_parent() -> None:
    """preexec_fn: ask the kernel to SIGKILL the child when the forking thread exits (Linux only)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_LIVE: set[ManagedProcess] = set()
_WORKDIR_PREFIX = "pumice-e2e-"
_ETCD_PREFIX = "pumice-e2e-etcd-"
_OWNER_FILE = "owner.pid"


def _claim(directory: Path) -> None:
    (directory / _OWNER_FILE).write_text(str(os.getpid()))


def _sweep_dead_runs() -> None:
    """Remove work dirs (and tmpfs etcd dirs, which cost RAM) left by a run that was SIGKILLed.

    Only directories carrying an ``owner.pid`` of a process that no longer exists are touched.
    """
    for base in (Path(tempfile.gettempdir()), Path("/dev/shm")):
        if not base.is_dir():
            continue
        for directory in base.glob(f"{_WORKDIR_PREFIX}*"):
            try:
                owner = int((directory / _OWNER_FILE).read_text())
            except (OSError, ValueError):
                continue
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                shutil.rmtree(directory, ignore_errors=True)
            except PermissionError:
                pass


@atexit.register
def _kill_leftovers() -> None:
    for proc in list(_LIVE):
        proc.stop(timeout=2.0)


@dataclass(eq=False)
class ManagedProcess:
    """One child process in its own process group, with its output in a log file."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    #: seconds between SIGTERM and SIGKILL
    stop_timeout: float = 10.0
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        if self.running:
            raise ControlPlaneError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"==> {time.strftime('%H:%M:%S')} starting: {' '.join(self.argv)}\n".encode())
            log.flush()
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen else None

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout``; safe to call twice."""
        timeout = self.stop_timeout if timeout is None else timeout
        popen = self.popen
        if popen is None:
            return
        if popen.poll() is None:
            self._signal_group(popen, signal.SIGTERM)
            try:
                popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(popen, signal.SIGKILL)
                popen.wait(5.0)
        # The leader may be gone while children it forked linger in its group.
        self._signal_group(popen, signal.SIGKILL)
        _LIVE.discard(self)

    @staticmethod
    def _signal_group(popen: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, sig)

    def tail(self, lines: int = 40) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - 256 * lines))
                data = log.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""
        return "\n".join(line[:500] for line in data.splitlines()[-lines:])

    def check_alive(self) -> None:
        if not self.running:
            raise ControlPlaneError(
                f"{self.name} exited with code {self.returncode}; log {self.log_path}:\n{self.tail(60)}"
            )


def _http(
    method: str,
    url: str,
    token: str | None = None,
    body: Any = None,
    timeout: float = 5.0,
    *,
    raw: bytes | None = None,
    content_type: str = "application/json",
) -> tuple[int, bytes]:
    """One loopback request with the standard library (usable before and outside any event loop)."""
    data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", content_type)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    # An empty ProxyHandler: a proxy from the environment must never see loopback traffic.
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    try:
        with opener.open(request, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read()


def wait_until(
    check: Callable[[], bool], *, timeout: float, what: str, proc: ManagedProcess | None = None
) -> None:
    """Poll ``check`` until true; fail fast when ``proc`` dies, with its log tail."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        if proc is not None:
            proc.check_alive()
        try:
            if check():
                return
        except (OSError, ValueError) as err:
            last_error = err
        time.sleep(0.2)
    tail = f"\nlog {proc.log_path}:\n{proc.tail(60)}" if proc else ""
    raise ControlPlaneError(
        f"timed out after {timeout:.0f}s waiting for {what} (last error: {last_error}){tail}"
    )


class ControlPlane:
    """etcd + kube-apiserver (+ kube-scheduler on demand) + arbitrary extra processes.

    Usage::

        cp = ControlPlane()
        cp.start()                      # etcd, kube-apiserver, admin kubeconfig
        cp.version                      # KubeVersion of the running API server
        cp.start_scheduler(stock_scheduler_config())  # or any config in cp.scheduler_config_api_version
        cp.start_process("pumice", ["pumice", "serve", ...], ready_url="https://127.0.0.1:PORT/readyz")
        ...
        cp.stop()                       # kills everything, removes the work dir (unless keep_dir)
    """

    # Set by tests.e2e.pumice.ensure_pumice once pumice runs on this control plane (absent before): the
    # running pumice and the scheduler conf it was started with.
    _pumice: Pumice
    _pumice_scheduler_conf: str | None

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        keep_dir: bool | None = None,
        users: Sequence[str] = (),
        audit_users: Sequence[str] = (),
    ) -> None:
        """``users``: more admin users (system:masters) beside ``admin``, each with its own token and
        kubeconfig (:meth:`kubeconfig_for`), so a test can tell their requests apart; ``audit_users``: whose
        writes (create, update, patch, delete) kube-apiserver logs (:meth:`audited_writes`)."""
        reason = skip_reason()
        if reason:
            raise ControlPlaneError(reason)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=_WORKDIR_PREFIX))
        self.keep_dir = bool(os.environ.get("PUMICE_E2E_KEEP")) if keep_dir is None else keep_dir
        self.logs_dir = self.workdir / "logs"
        self._token = secrets.token_hex(16)
        self._etcd_data: Path | None = None
        self._apiserver_port = 0
        self._processes: dict[str, ManagedProcess] = {}
        self._scheduler_config_text: str | None = None
        self._etcd_url = ""
        self._apiserver_version = binary_version("kube-apiserver")
        self._scheduler_version = binary_version("kube-scheduler")
        self._users = {user: secrets.token_hex(16) for user in users}
        self._audit_users = tuple(audit_users)

    # -- public properties -------------------------------------------------------------------------

    @property
    def server_url(self) -> str:
        return f"https://127.0.0.1:{self._apiserver_port}"

    @property
    def token(self) -> str:
        return self._token

    @property
    def kubeconfig_path(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def scheduler_config_path(self) -> Path:
        return self.workdir / "scheduler-config.yaml"

    @property
    def version(self) -> KubeVersion:
        """The API server's version: its ``/version`` once started, ``kube-apiserver --version`` before."""
        return self._apiserver_version

    @property
    def scheduler_version(self) -> KubeVersion:
        return self._scheduler_version

    @property
    def scheduler_config_api_version(self) -> str:
        """The KubeSchedulerConfiguration apiVersion to generate for this control plane's kube-scheduler."""
        return scheduler_config_api_version(self._scheduler_version)

    def describe(self) -> str:
        """One line for logs and test reports: versions and where the binaries come from."""
        return (
            f"kube-apiserver {self.version}, kube-scheduler {self.scheduler_version} "
            f"(scheduler config {self.scheduler_config_api_version}) from {assets_dir()}"
        )

    @property
    def processes(self) -> Mapping[str, ManagedProcess]:
        return dict(self._processes)

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The test process's environment plus ``KUBECONFIG`` for this control plane, without proxies."""
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env["KUBECONFIG"] = str(self.kubeconfig_path)
        env.update(extra or {})
        return env

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, *, timeout: float = 60.0) -> None:
        _sweep_dead_runs()
        try:
            self.logs_dir.mkdir(parents=True, exist_ok=True)
            if self._own_workdir:
                _claim(self.workdir)
            self._start_etcd(timeout)
            self._start_apiserver(timeout)
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        # Reverse start order: clients first, etcd last.
        for name in reversed(list(self._processes)):
            self._processes[name].stop()
        if self.keep_dir:
            print(f"pumice e2e: kept control-plane dir {self.workdir}", file=sys.stderr)
        else:
            if self._etcd_data is not None:
                shutil.rmtree(self._etcd_data, ignore_errors=True)
            if self._own_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scheduler ---------------------------------------------------------------------------------

    def start_scheduler(
        self,
        config: Path | str | Mapping[str, Any],
        *,
        force: bool = False,
        verbosity: int = 2,
        timeout: float = 30.0,
    ) -> ManagedProcess:
        """(Re)start kube-scheduler with a KubeSchedulerConfiguration.

        ``config`` is a path to a YAML file, YAML text, or a mapping. ``apiVersion`` defaults to
        ``scheduler_config_api_version``; one this kube-scheduler does not load fails here, naming those it
        does. ``clientConnection.kubeconfig`` is set to the admin kubeconfig and
        ``leaderElection.leaderElect`` to false unless given. A no-op when the same rendered config is
        already running, unless ``force``. Returns once the scheduler has processed a probe pod (so its
        informers are synced) or raises with its log tail.
        """
        if isinstance(config, Path):
            loaded = yaml.safe_load(config.read_text())
        elif isinstance(config, str):
            loaded = yaml.safe_load(config)
        else:
            loaded = json.loads(json.dumps(config))
        if not isinstance(loaded, dict):
            raise ControlPlaneError("scheduler config must be a YAML mapping")
        loaded.setdefault("apiVersion", self.scheduler_config_api_version)
        accepted = scheduler_config_api_versions(self._scheduler_version)
        if loaded["apiVersion"] not in accepted:
            raise ControlPlaneError(
                f"kube-scheduler {self._scheduler_version} does not load a KubeSchedulerConfiguration of "
                f"apiVersion {loaded['apiVersion']}; it takes {', '.join(accepted)} "
                "(use ControlPlane.scheduler_config_api_version)"
            )
        loaded.setdefault("kind", "KubeSchedulerConfiguration")
        loaded.setdefault("clientConnection", {}).setdefault("kubeconfig", str(self.kubeconfig_path))
        loaded.setdefault("leaderElection", {}).setdefault("leaderElect", False)
        text = yaml.safe_dump(loaded, sort_keys=False)

        current = self._processes.get("kube-scheduler")
        if current is not None and current.running and not force and text == self._scheduler_config_text:
            return current
        self.stop_scheduler()
        self.scheduler_config_path.write_text(text)
        self._scheduler_config_text = text
        binary = find_binary("kube-scheduler")
        assert binary is not None
        proc = self.start_process(
            "kube-scheduler",
            [
                str(binary),
                f"--config={self.scheduler_config_path}",
                "--secure-port=0",
                f"-v={verbosity}",
                # No --logtostderr: 1.26 removed the klog flags, and stderr is the default in every release.
            ],
            # 1.24's scheduler deadlocks on SIGTERM when its queue is empty (scheduleOne blocks in Pop
            # and the queue is only closed after it returns); it holds no state worth a graceful exit.
            stop_timeout=0.5,
        )
        profiles = loaded.get("profiles") or [{}]
        scheduler_name = profiles[0].get("schedulerName", "default-scheduler")
        self._wait_scheduler_live(proc, scheduler_name, timeout)
        return proc

    def _wait_scheduler_live(self, proc: ManagedProcess, scheduler_name: str, timeout: float) -> None:
        """Readiness by behaviour: kube-scheduler has no sync log line and, with --secure-port=0, no healthz.

        A probe pod whose nodeSelector matches no node gets a PodScheduled=False condition once the
        scheduler has synced its informers and runs the profile; no extender is called for it (extenders
        only see nodes that passed the filter plugins) and it can never bind, even on a populated cluster.
        """
        name = f"scheduler-probe-{secrets.token_hex(4)}"
        pods = f"{self.server_url}/api/v1/namespaces/default/pods"
        probe = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"pumice.e2e/probe": "scheduler"}},
            "spec": {
                "schedulerName": scheduler_name,
                "nodeSelector": {"pumice.e2e/probe": "matches-no-node"},
                "containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.7"}],
            },
        }
        status, body = _http("POST", pods, self._token, probe)
        if status != 201:
            raise ControlPlaneError(f"cannot create scheduler probe pod: HTTP {status} {body[:300]!r}")

        def scheduled_condition() -> bool:
            status, body = _http("GET", f"{pods}/{name}", self._token)
            if status != 200:
                return False
            conditions = json.loads(body).get("status", {}).get("conditions") or []
            return any(c.get("type") == "PodScheduled" for c in conditions)

        try:
            wait_until(
                scheduled_condition,
                timeout=timeout,
                what=f"kube-scheduler to process a probe pod (schedulerName {scheduler_name})",
                proc=proc,
            )
        finally:
            _http("DELETE", f"{pods}/{name}", self._token, {"gracePeriodSeconds": 0})

    def stop_scheduler(self) -> None:
        self.stop_process("kube-scheduler")
        self._scheduler_config_text = None

    def start_controller_manager(
        self, *, controllers: Sequence[str] = KCM_CONTROLLERS, timeout: float = 60.0
    ) -> ManagedProcess:
        """kube-controller-manager running only ``controllers`` (a no-op when it already runs), on the admin
        kubeconfig, without leader election, service-account credentials or a serving port. Returns once
        its log says the ReplicaSet and Deployment controllers' caches synced, or raises with its log tail."""
        current = self._processes.get("kube-controller-manager")
        if current is not None and current.running:
            return current
        reason = controller_manager_skip_reason()
        if reason:
            raise ControlPlaneError(reason)
        binary = find_binary("kube-controller-manager")
        assert binary is not None
        proc = self.start_process(
            "kube-controller-manager",
            [
                str(binary),
                f"--kubeconfig={self.kubeconfig_path}",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
                "--secure-port=0",
                "--v=2",
            ],
            stop_timeout=2.0,
        )

        def synced() -> bool:
            text = proc.log_path.read_text(errors="replace") if proc.log_path.exists() else ""
            return all(f"Caches are synced for {c}" in text for c in ("ReplicaSet", "deployment"))

        wait_until(synced, timeout=timeout, what="kube-controller-manager caches", proc=proc)
        return proc

    # -- arbitrary processes -----------------------------------------------------------------------

    def start_process(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        ready_url: str | None = None,
        ready_check: Callable[[], bool] | None = None,
        timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> ManagedProcess:
        """Start ``argv`` with ``KUBECONFIG`` pointing at this cluster; logs go to ``logs/<name>.log``.

        Readiness: ``ready_url`` (http or https, TLS unverified, bearer token sent) must answer 200, and/or
        ``ready_check()`` must return true; without either, it returns as soon as the process is spawned.
        A process of the same name that is still registered is stopped first. ``stop_timeout`` is the grace
        between SIGTERM and SIGKILL of its process group.
        """
        self.stop_process(name)
        proc = ManagedProcess(
            name=name,
            argv=[str(arg) for arg in argv],
            log_path=self.logs_dir / f"{name}.log",
            env=self.env(env),
            cwd=cwd,
            stop_timeout=stop_timeout,
        )
        self._processes[name] = proc
        proc.start()
        if ready_url is not None:
            url = ready_url
            wait_until(
                lambda: _http("GET", url, self._token)[0] == 200,
                timeout=timeout,
                what=f"{name} at {url}",
                proc=proc,
            )
        if ready_check is not None:
            wait_until(ready_check, timeout=timeout, what=f"{name} readiness", proc=proc)
        return proc

    def stop_process(self, name: str, *, timeout: float | None = None) -> None:
        proc = self._processes.pop(name, None)
        if proc is not None:
            proc.stop(timeout)

    def log_tails(self, lines: int = 40, names: Sequence[str] | None = None) -> str:
        chunks = []
        for name, proc in self._processes.items():
            if names is not None and name not in names:
                continue
            state = "running" if proc.running else f"exited {proc.returncode}"
            chunks.append(f"----- {name} ({state}) {proc.log_path} -----\n{proc.tail(lines)}")
        return "\n".join(chunks)

    def check_alive(self) -> None:
        """Raise with the log tail if any managed process has died."""
        for proc in self._processes.values():
            proc.check_alive()

    # -- components --------------------------------------------------------------------------------

    def _start_etcd(self, timeout: float) -> None:
        # tmpfs makes etcd's fsyncs free (etcd 3.4 has no --unsafe-no-fsync).
        shm = Path("/dev/shm")
        base = shm if shm.is_dir() and os.access(shm, os.W_OK) else self.workdir
        self._etcd_data = Path(tempfile.mkdtemp(prefix=_ETCD_PREFIX, dir=base))
        _claim(self._etcd_data)
        client_port, peer_port = free_port(), free_port()
        client_url = f"http://127.0.0.1:{client_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        binary = find_binary("etcd")
        assert binary is not None
        proc = self.start_process(
            "etcd",
            [
                str(binary),
                "--name=e2e",
                f"--data-dir={self._etcd_data / 'data'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=e2e={peer_url}",
                "--initial-cluster-state=new",
                "--logger=zap",
                "--log-outputs=stderr",
                "--snapshot-count=100000",
            ],
        )
        self._etcd_url = client_url

        def healthy() -> bool:
            status, body = _http("GET", f"{client_url}/health")
            return status == 200 and json.loads(body).get("health") == "true"

        wait_until(healthy, timeout=timeout, what="etcd /health", proc=proc)

    def _start_apiserver(self, timeout: float) -> None:
        certs = self.workdir / "apiserver-certs"
        certs.mkdir(parents=True, exist_ok=True)
        token_file = self.workdir / "tokens.csv"
        token_file.write_text(
            f'{self._token},admin,admin-uid,"system:masters"\n'
            + "".join(f'{t},{u},{u}-uid,"system:masters"\n' for u, t in self._users.items())
        )
        audit: list[str] = []
        if self._audit_users:
            policy = self.workdir / "audit-policy.yaml"
            policy.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "audit.k8s.io/v1",
                        "kind": "Policy",
                        "omitStages": ["RequestReceived"],
                        "rules": [
                            {
                                "level": "Metadata",
                                "users": list(self._audit_users),
                                "verbs": ["create", "update", "patch", "delete"],
                            },
                            {"level": "None"},
                        ],
                    }
                )
            )
            audit = [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log_path}"]
        sa_key = self.workdir / "sa.key"
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        sa_key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        sa_key.chmod(0o600)
        # The same port across a restart (restart_apiserver): clients keep their kubeconfig.
        self._apiserver_port = self._apiserver_port or free_port()
        binary = find_binary("kube-apiserver")
        assert binary is not None
        proc = self.start_process(
            "kube-apiserver",
            [
                str(binary),
                f"--etcd-servers={self._etcd_url}",
                f"--secure-port={self._apiserver_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--cert-dir={certs}",
                f"--token-auth-file={token_file}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={sa_key}",
                f"--service-account-signing-key-file={sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                "--v=1",
                *audit,
            ],
        )

        def ready() -> bool:
            # /readyz waits for the RBAC and priority-class bootstrap hooks; the default namespace is
            # created by a controller a moment later and some clients assume it exists.
            if _http("GET", f"{self.server_url}/readyz", self._token)[0] != 200:
                return False
            return _http("GET", f"{self.server_url}/api/v1/namespaces/default", self._token)[0] == 200

        wait_until(ready, timeout=timeout, what="kube-apiserver /readyz", proc=proc)
        status, body = _http("GET", f"{self.server_url}/version", self._token)
        if status == 200:
            # The server's own word wins over the binary's (a wrapper script may report something else).
            with contextlib.suppress(ValueError):
                self._apiserver_version = KubeVersion.parse(str(json.loads(body).get("gitVersion", "")))

    @property
    def audit_log_path(self) -> Path:
        return self.workdir / "audit.log"

    def audited_writes(self, user: str | None = None) -> list[dict[str, Any]]:
        """The writes kube-apiserver logged for the ``audit_users`` (optionally one of them), in order."""
        if not self.audit_log_path.exists():
            return []
        out = []
        for line in self.audit_log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if user is None or (event.get("user") or {}).get("username") == user:
                    out.append(event)
        return out

    def kubeconfig_for(self, user: str) -> Path:
        """A kubeconfig for one of the ``users`` given at construction."""
        path = self.workdir / f"{user}.kubeconfig"
        if not path.exists():
            self._write_kubeconfig(path, self._users[user], user)
        return path

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM, as a control-plane upgrade does); etcd and every client stay."""
        self.stop_process("kube-apiserver")

    def start_apiserver(self, *, timeout: float = 60.0) -> None:
        """Start kube-apiserver again on the same port, certificates and etcd."""
        self._start_apiserver(timeout)

    def _write_kubeconfig(
        self, path: Path | None = None, token: str | None = None, user: str = "admin"
    ) -> None:
        path = path or self.kubeconfig_path
        token = token or self._token
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    # The apiserver signs its serving cert with a CA it generates in memory only.
                    "cluster": {"server": self.server_url, "insecure-skip-tls-verify": True},
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
            "current-context": "e2e",
        }
        path.write_text(yaml.safe_dump(kubeconfig, sort_keys=False))
        path.chmod(0o600)
