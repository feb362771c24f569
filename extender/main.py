"""The composition root: the ``pumice`` command and the one process ``pumice serve`` runs.

The only module that imports the extender, admission and controllers packages together. ``serve`` builds
one aiohttp application per listener (extender: plain HTTP by default; webhooks: always TLS; metrics:
plain HTTP for Prometheus, ``--metrics-bind``), each serving ``/healthz``, ``/readyz`` and ``/metrics``
(extender.server.metrics), and owns every background task in one TaskGroup:
informers, the scheduling loop and the status writer. If any of them dies, the process exits non-zero
rather than serve a stale cache; SIGTERM/SIGINT shut it down cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import ssl
import sys
import tempfile
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

from aiohttp import web

from admission.lookup import LookupUnavailable
from admission.server import METRICS_KEY, make_admission_app
from admission.webhooks import webhook_configurations
from controllers.cli.parser import add_cli_parsers
from controllers.events import EventRecorder, Ref
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, KubeConfigError, load_config
from controllers.kube.informer import Informer, tee
from controllers.kube.version import cluster_version
from controllers.liveness import Liveness
from controllers.reconcilers.bootstrap import ensure_queues, register_webhooks, server_features
from controllers.reconcilers.conf_reload import ConfWatcher
from controllers.reconcilers.cronjobs import CRONJOBS_PATH, CronJobController
from controllers.reconcilers.flows import JOBFLOWS_PATH, JOBTEMPLATES_PATH, FlowController
from controllers.reconcilers.hypernode_problems import HyperNodeProblems
from controllers.reconcilers.jobs import COMMANDS_PATH, JOBS_PATH, JobController
from controllers.reconcilers.queue_commands import QueueCommandController
from controllers.reconcilers.status import StatusWriter
from controllers.reconcilers.workload_groups import WorkloadGroupController
from controllers.scheduling.executor import Executor
from controllers.scheduling.scheduler import Scheduler
from controllers.simulate.cli import add_simulate_parser
from controllers.state.cluster import cluster_state
from controllers.state.indexes import watched_objects
from controllers.watch_metrics import WatchMetrics
from extender.api import labels as L
from extender.api.limits import Limits
from extender.core.errors import ConfigError
from extender.core.model import PodGroup, Queue
from extender.deploy.cli import add_manifests_parser
from extender.families import register_families
from extender.jobs.rules import job_problems
from extender.plugins.registry import SchedulerConf, load_conf
from extender.process.logs import FORMATS, LEVELS, configure
from extender.process.preflight import kubeconfig_problem, listen_problem, one_line
from extender.process.settings import (
    ExtenderListener,
    MetricsListener,
    SchedulingSettings,
    ServeSettings,
    WebhookListener,
    split_host_port,
)
from extender.process.tls import generate_serving_certs, mtls_server_context, server_ssl_context
from extender.server.app import make_extender_app
from extender.server.metrics import CONTENT_TYPE, Metrics

log = logging.getLogger("pumice")

INFORMERS = (
    ("nodes", paths.NODES.collection()),
    ("pods", paths.PODS.collection()),
    ("podgroups", paths.PODGROUPS.collection()),
    ("queues", paths.QUEUES.collection()),
    ("priorityclasses", paths.PRIORITY_CLASSES.collection()),
    ("resourcequotas", paths.RESOURCE_QUOTAS.collection()),
    ("poddisruptionbudgets", paths.POD_DISRUPTION_BUDGETS.collection()),
    ("hypernodes", paths.HYPERNODES.collection()),
    ("numatopologies", paths.NUMATOPOLOGIES.collection()),
    ("jobs", JOBS_PATH),
    ("commands", COMMANDS_PATH),
    ("jobflows", JOBFLOWS_PATH),
    ("jobtemplates", JOBTEMPLATES_PATH),
    ("cronjobs", CRONJOBS_PATH),
)


class Process:
    """What the handlers and health endpoints read: the cache, the scheduler, readiness."""

    def __init__(
        self, settings: ServeSettings, conf: SchedulerConf, client: KubeClient, *, gates: bool = False
    ) -> None:
        self.settings = settings
        self.client = client
        self.gates = gates
        state = cluster_state(settings.scheduling.scheduler_names, settings.scheduling.default_queue)
        self.cache = state.cache
        # The raw objects the reconcilers read, fed once by the informers (controllers.state.store).
        self.watched = watched_objects(settings.scheduling.scheduler_names)
        self.executor = Executor(client)
        self.liveness = Liveness()
        self.events = EventRecorder(client)
        self.limits = Limits(max_replicas=settings.scheduling.max_job_replicas)
        self.jobs = JobController(
            client,
            self.watched,
            scheduler_names=settings.scheduling.scheduler_names,
            group_phase=self._group_phase,
            validate=lambda obj: job_problems(obj, self.limits),
            events=self.events,
        )
        self.queue_commands = QueueCommandController(client, self.watched)
        self.workload_groups = WorkloadGroupController(
            client, self.watched, scheduler_names=settings.scheduling.scheduler_names, events=self.events
        )
        self.flows = FlowController(client, self.watched, events=self.events)
        self.cronjobs = CronJobController(client, self.watched, events=self.events)
        # HyperNode members the scheduler leaves out, as Warning Events on the HyperNode.
        self.hypernode_problems = HyperNodeProblems(self.events, self.watched)
        self.metrics = Metrics(version=_version())
        # Binds and wait times are observed in the watch (see controllers.watch_metrics).
        self.watch_metrics = WatchMetrics(
            scheduler_names=settings.scheduling.scheduler_names,
            binds=self.metrics.binds.inc,
            job_wait=self.metrics.job_wait.observe,
            podgroup_wait=self.metrics.podgroup_wait.observe,
        )
        handlers = self.cache.handlers()
        for name, h in (*self.watched.handlers().items(), *self.watch_metrics.handlers().items()):
            handlers[name] = tee(handlers[name], h) if name in handlers else h
        self.informers = [Informer(client, path, handlers[name], name=name) for name, path in INFORMERS]
        # A loop that has not completed a pass for this long is reported unhealthy (see /healthz).
        self.scheduler = Scheduler(
            state,
            conf,
            self.executor,
            gates=gates,
            ready=lambda: self.ready,
            heartbeat=self.liveness.expect("scheduling loop", 60.0),
            admitted=self.jobs.group_admitted,
            events=self.events,
            on_cycle=self.metrics.observe_cycle,
        )
        self.status = StatusWriter(
            self.cache,
            self.scheduler,
            self.executor,
            heartbeat=self.liveness.expect("status writer", 120.0),
            events=self.events,
        )
        self.latency = self.metrics.extender

    def _group_phase(self, namespace: str, name: str) -> str | None:
        pg = self.cache.podgroup(namespace, name)
        return pg.phase.value if pg is not None else None

    @property
    def ready(self) -> bool:
        return all(i.synced.is_set() for i in self.informers)

    @property
    def scheduler_names(self) -> frozenset[str]:
        return self.settings.scheduling.scheduler_names

    # admission Lookup ------------------------------------------------------------------------------
    def lookup(self) -> Process:
        if not self.ready:
            raise LookupUnavailable("pumice cluster cache not synced yet")
        return self

    @property
    def default_queue(self) -> str:
        return self.settings.scheduling.default_queue

    @property
    def scheduling_gates(self) -> bool:
        return self.gates

    def queue(self, name: str) -> Queue | None:
        return self.cache.queue(name)

    def queue_children(self, name: str) -> list[Queue]:
        return [
            q
            for q in self.cache.all_queues()
            if (q.parent or (L.ROOT_QUEUE if q.name != L.ROOT_QUEUE else "")) == name
        ]

    def podgroup(self, namespace: str, name: str) -> PodGroup | None:
        return self.cache.podgroup(namespace, name)

    def queue_has_podgroups(self, name: str) -> bool:
        return self.cache.queue_has_podgroups(name)

    def job_template_exists(self, namespace: str, name: str) -> bool:
        return name in self.flows.templates.get(namespace, {})

    def register_metrics(self, admission_app: web.Application) -> None:
        """The families read at scrape time (see extender.families)."""
        register_families(
            self.metrics,
            scheduler=self.scheduler,
            status=self.status,
            events=self.events,
            informers=self.informers,
            cache=self.cache,
            jobs=self.jobs,
            flows=self.flows,
            cronjobs=self.cronjobs,
            admission=admission_app[METRICS_KEY],
        )


def _version() -> str:
    try:
        return metadata.version("pumice")
    except metadata.PackageNotFoundError:
        return "unknown"


def _health_routes(app: web.Application, proc: Process) -> None:
    async def healthz(_: web.Request) -> web.Response:
        problems = proc.liveness.problems()
        if problems:
            return web.Response(status=503, text="unhealthy: " + "; ".join(problems))
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if proc.ready:
            webhooks = proc.settings.webhooks
            if not (webhooks.url_base or webhooks.service):
                return web.Response(
                    text="ok; admission webhooks not registered by pumice (no --webhook-service or "
                    "--webhook-url-base): only existing configurations get the CA"
                )
            return web.Response(text="ok")
        waiting = [i.name for i in proc.informers if not i.synced.is_set()]
        return web.Response(status=503, text=f"waiting for first LIST of: {', '.join(waiting)}")

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=proc.metrics.render().encode(), headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)


def _webhook_tls(settings: ServeSettings) -> tuple[ssl.SSLContext, bytes]:
    """The webhook listener's TLS context and the CA PEM for caBundle: the given files, else a fresh
    self-signed CA and serving certificate."""
    if settings.webhooks.tls_cert and settings.webhooks.tls_key:
        return _ssl_context(settings.webhooks.tls_cert, settings.webhooks.tls_key), Path(
            settings.webhooks.tls_cert
        ).read_bytes()
    dns = ["localhost"]
    if settings.webhooks.service:
        ns, name = settings.webhooks.service
        dns += [name, f"{name}.{ns}", f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"]
    certs = generate_serving_certs(
        Path(settings.webhooks.cert_dir), dns_names=dns, ip_addresses=("127.0.0.1",)
    )
    return server_ssl_context(certs), certs.ca_pem


def _listeners(settings: ServeSettings) -> list[tuple[str, int, str]]:
    out = [
        (settings.extender.host, settings.extender.port, "--extender-bind"),
        (settings.webhooks.host, settings.webhooks.port, "--webhook-bind"),
    ]
    if settings.metrics is not None:
        out.append((settings.metrics.host, settings.metrics.port, "--metrics-bind"))
    return out


def _fail(problem: str) -> int:
    """A start-up problem: one line on stderr, exit status 2."""
    print(f"pumice: {one_line(problem)}", file=sys.stderr)
    return 2


def _conf_watcher(settings: ServeSettings, proc: Process, conf_text: str | None) -> ConfWatcher | None:
    """The live reload of ``--scheduler-conf`` (see controllers.reconcilers.conf_reload), with its metrics;
    None
    without a conf file or with ``--scheduler-conf-poll 0``."""
    path = settings.scheduling.conf_path
    if not path or conf_text is None or settings.scheduling.conf_poll <= 0:
        return None
    own = settings.scheduling.self_pod
    watch = ConfWatcher(
        path,
        initial=conf_text.encode(),
        apply=proc.scheduler.use_conf,
        events=proc.events,
        pod=Ref(api_version="v1", kind="Pod", namespace=own[0], name=own[1], uid="") if own else None,
        interval=settings.scheduling.conf_poll,
    )
    proc.metrics.scrape(
        "pumice_conf_reloads_total",
        "counter",
        "Scheduler conf versions read from --scheduler-conf, by result (ok: swapped in; error: rejected).",
        lambda: [(("ok",), watch.stats.ok), (("error",), watch.stats.error)],
        ("result",),
    )
    proc.metrics.scrape(
        "pumice_conf_generation",
        "gauge",
        "Generation of the running scheduler conf (1 at start, +1 per reload), by its sha256 prefix.",
        lambda: [((watch.digest[:12],), watch.generation)],
        ("sha256",),
    )
    return watch


async def serve(settings: ServeSettings, conf: SchedulerConf, conf_text: str | None = None) -> int:
    problem = kubeconfig_problem(settings.kubeconfig) or next(
        (p for h, port, flag in _listeners(settings) if (p := listen_problem(h, port, flag))), None
    )
    if problem:
        return _fail(problem)
    try:
        client = KubeClient(await load_config(settings.kubeconfig))
    except KubeConfigError as e:
        return _fail(str(e))
    try:
        features = await server_features(client)
    except (ApiError, OSError, TimeoutError) as e:
        await client.close()
        return _fail(f"cannot reach the API server ({settings.kubeconfig or 'in-cluster/$KUBECONFIG'}): {e}")
    if not (settings.webhooks.url_base or settings.webhooks.service):
        log.warning(
            "admission webhooks not registered by this process (neither --webhook-service nor "
            "--webhook-url-base): only the CA of existing pumice-mutating/pumice-validating "
            "configurations is patched; without them admission is off"
        )
    proc = Process(settings, conf, client, gates=features.scheduling_gates)
    conf_watch = _conf_watcher(settings, proc, conf_text)
    ext_app = make_extender_app(proc.scheduler, proc.latency, max_body=settings.extender.max_body)
    _health_routes(ext_app, proc)
    adm_app = make_admission_app(proc.lookup, proc.limits)
    _health_routes(adm_app, proc)
    proc.register_metrics(adm_app)

    wh_ssl, ca_pem = _webhook_tls(settings)
    ext_ssl = _extender_tls(settings)
    runners = [web.AppRunner(ext_app, access_log=None), web.AppRunner(adm_app, access_log=None)]
    sites: list[tuple[web.AppRunner, str, int, str, ssl.SSLContext | None]] = [
        (runners[0], settings.extender.host, settings.extender.port, "--extender-bind", ext_ssl),
        (runners[1], settings.webhooks.host, settings.webhooks.port, "--webhook-bind", wh_ssl),
    ]
    if settings.metrics is not None:
        # Plain HTTP for Prometheus: the other two listeners want TLS (or mTLS) or a NetworkPolicy hole.
        metrics_app = web.Application()
        _health_routes(metrics_app, proc)
        runners.append(web.AppRunner(metrics_app, access_log=None))
        sites.append((runners[2], settings.metrics.host, settings.metrics.port, "--metrics-bind", None))
    for r in runners:
        await r.setup()
    for runner, host, port, flag, ctx in sites:
        try:
            await web.TCPSite(runner, host, port, ssl_context=ctx).start()
        except OSError as e:  # taken since the preflight check
            for r in runners:
                await r.cleanup()
            await client.close()
            return _fail(f"cannot listen on {host}:{port} ({flag}): {e.strerror or e}")
    log.info(
        "serving",
        extra={
            "extender": f"{settings.extender.host}:{settings.extender.port}",
            "webhooks": settings.webhooks.port,
            "metrics": f"{settings.metrics.host}:{settings.metrics.port}" if settings.metrics else "off",
        },
    )

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():  # a second signal: the user means it
            os._exit(130)
        proc.liveness.stopping()
        _exit_after(SHUTDOWN_GRACE, 0)
        stop.set()

    def on_death(name: str) -> None:
        # The TaskGroup cancels the rest and serve() returns 1; should any task not honour its
        # cancellation, the process still ends (a zombie serving /healthz 200 is what this prevents).
        log.error("root task ended; exiting", extra={"task": name})
        _exit_after(SHUTDOWN_GRACE, 1)

    proc.liveness.on_death = on_death
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    code = 0
    try:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(i.run(), name=f"informer-{i.name}") for i in proc.informers]

            async def after_sync() -> None:
                await asyncio.gather(*(i.synced.wait() for i in proc.informers))
                log.info("caches synced")
                # Retried, not fatal: creating the queues goes through our own webhooks, which the API
                # server may not reach yet (a Service whose endpoints still lag this pod's readiness).
                delay = 0.5
                while True:
                    try:
                        await register_webhooks(
                            client, settings, ca_pem, webhook_configurations, features=features
                        )
                        await ensure_queues(client, proc.cache)
                        return
                    except (ApiError, OSError, TimeoutError) as e:
                        log.warning("bootstrap failed; retrying", extra={"error": str(e), "in_s": delay})
                        await asyncio.sleep(delay)
                        delay = min(delay * 2, 30.0)

            tasks.append(tg.create_task(proc.scheduler.run(), name="scheduler"))
            tasks.append(tg.create_task(proc.status.run(), name="status"))
            tasks.append(tg.create_task(proc.jobs.run(), name="jobs"))
            tasks.append(tg.create_task(proc.queue_commands.run(), name="queue-commands"))
            tasks.append(tg.create_task(proc.workload_groups.run(), name="workload-groups"))
            tasks.append(tg.create_task(proc.flows.run(), name="jobflows"))
            tasks.append(tg.create_task(proc.cronjobs.run(), name="cronjobs"))
            tasks.append(tg.create_task(proc.hypernode_problems.run(), name="hypernode-problems"))
            if conf_watch is not None:
                tasks.append(tg.create_task(conf_watch.run(), name="conf-reload"))
            tasks.append(tg.create_task(proc.events.run(), name="events"))
            for t in tasks:  # each runs forever: ending at all is a death
                proc.liveness.watch(t)
            tg.create_task(after_sync(), name="bootstrap")

            async def until_stop() -> None:
                await stop.wait()
                raise _Stop

            tg.create_task(until_stop())
    except* _Stop:
        log.info("shutting down")
    except* Exception as eg:
        for exc in eg.exceptions:
            log.error("root task died", exc_info=exc)
        code = 1
    finally:
        proc.liveness.stopping()
        await proc.scheduler.close()
        for r in runners:
            await r.cleanup()
        await client.close()
    return code


class _Stop(Exception):
    pass


# Seconds a shutdown (SIGTERM, or a root task's death) may take before the process ends regardless.
SHUTDOWN_GRACE = 10.0


def _exit_after(seconds: float, code: int) -> None:
    timer = threading.Timer(seconds, os._exit, (code,))
    timer.daemon = True
    timer.start()


def _extender_tls(settings: ServeSettings) -> ssl.SSLContext | None:
    """Plain HTTP (loopback), TLS, or mutual TLS when a client CA is given: then only a caller holding a
    certificate signed by it (the kube-scheduler that ``manifests deploy`` sets up) can reach the verbs."""
    cert, key = settings.extender.tls_cert, settings.extender.tls_key
    if not (cert and key):
        return None
    if settings.extender.client_ca:
        return mtls_server_context(cert, key, settings.extender.client_ca)
    return _ssl_context(cert, key)


def _ssl_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    return ctx


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each default, but not an absent one (None, False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False):
            return action.help
        return super()._get_help_string(action)


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run the extender, the webhooks and the controllers",
        formatter_class=_DefaultsFormatter,
    )
    p.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster, then $KUBECONFIG)")
    p.add_argument("--extender-bind", default="0.0.0.0:8888", help="HOST:PORT for the extender (plain HTTP)")
    p.add_argument(
        "--extender-tls-cert-file", default=None, help="serve the extender over TLS with this cert"
    )
    p.add_argument("--extender-tls-key-file", default=None, help="the key of --extender-tls-cert-file")
    p.add_argument(
        "--extender-client-ca-file",
        default=None,
        help="mTLS: accept only extender callers with a client certificate signed by this CA",
    )
    p.add_argument(
        "--extender-max-body-bytes",
        type=int,
        default=8 * 1024 * 1024,
        help="largest extender request accepted (413 beyond; default %(default)s)",
    )
    p.add_argument(
        "--max-job-replicas",
        type=int,
        default=10_000,
        help="admission refuses a vcjob with more replicas in a task or in all (default %(default)s)",
    )
    p.add_argument(
        "--webhook-bind", default="0.0.0.0:8443", help="HOST:PORT for the admission webhooks (TLS)"
    )
    p.add_argument(
        "--tls-cert-file", default=None, help="webhook serving cert (default: generate a self-signed CA)"
    )
    p.add_argument("--tls-key-file", default=None, help="the key of --tls-cert-file")
    p.add_argument("--cert-dir", default=None, help="where generated certs go (default: a temp dir)")
    p.add_argument(
        "--webhook-url-base",
        default=None,
        help="register our webhook configurations with this https://HOST:PORT (pumice outside the cluster)",
    )
    p.add_argument(
        "--webhook-service", default=None, help="register webhook configurations pointing at Service NS/NAME"
    )
    p.add_argument("--scheduler-conf", default=None, help="Volcano scheduler conf (actions + tiers)")
    p.add_argument(
        "--scheduler-conf-poll",
        type=float,
        default=1.0,
        help="seconds between reads of --scheduler-conf for a live reload; 0: off (default %(default)s)",
    )
    p.add_argument(
        "--scheduler-name",
        action="append",
        default=None,
        help="schedulerName(s) pumice schedules (default volcano)",
    )
    p.add_argument("--default-queue", default=L.DEFAULT_QUEUE, help="queue of a PodGroup that names none")
    p.add_argument(
        "--metrics-bind",
        "--metrics-listen",
        default="0.0.0.0:9090",
        help="HOST:PORT for /metrics, /healthz and /readyz over plain HTTP (Prometheus); '' for none",
    )
    p.add_argument(
        "--log-level", default="INFO", type=str.upper, choices=LEVELS, help="least severe level logged"
    )
    p.add_argument(
        "--log-format",
        default="text",
        choices=FORMATS,
        help="text: logfmt key=value lines; json: one JSON object per line",
    )


def _settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> ServeSettings:
    try:
        eh, ep = split_host_port(args.extender_bind)
        wh, wp = split_host_port(args.webhook_bind)
        metrics = None
        if args.metrics_bind:
            mh, mp = split_host_port(args.metrics_bind)
            metrics = MetricsListener(host=mh, port=mp)
    except ValueError as e:
        parser.error(str(e))
    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        parser.error("--tls-cert-file and --tls-key-file go together")
    if bool(args.extender_tls_cert_file) != bool(args.extender_tls_key_file):
        parser.error("--extender-tls-cert-file and --extender-tls-key-file go together")
    if args.extender_client_ca_file and not args.extender_tls_cert_file:
        parser.error("--extender-client-ca-file needs --extender-tls-cert-file and --extender-tls-key-file")
    if args.max_job_replicas < 1 or args.extender_max_body_bytes < 64 * 1024:
        parser.error("--max-job-replicas must be >= 1 and --extender-max-body-bytes >= 65536")
    service = None
    if args.webhook_service:
        ns, _, name = args.webhook_service.partition("/")
        if not ns or not name:
            parser.error("--webhook-service must be NAMESPACE/NAME")
        service = (ns, name)
    return ServeSettings(
        kubeconfig=args.kubeconfig,
        log_level=args.log_level,
        log_format=args.log_format,
        metrics=metrics,
        extender=ExtenderListener(
            host=eh,
            port=ep,
            tls_cert=args.extender_tls_cert_file,
            tls_key=args.extender_tls_key_file,
            client_ca=args.extender_client_ca_file,
            max_body=args.extender_max_body_bytes,
        ),
        webhooks=WebhookListener(
            host=wh,
            port=wp,
            tls_cert=args.tls_cert_file,
            tls_key=args.tls_key_file,
            cert_dir=args.cert_dir or tempfile.mkdtemp(prefix="pumice-certs-"),
            url_base=args.webhook_url_base,
            service=service,
        ),
        scheduling=SchedulingSettings(
            conf_path=args.scheduler_conf,
            scheduler_names=frozenset(args.scheduler_name or [L.DEFAULT_SCHEDULER_NAME]),
            default_queue=args.default_queue,
            max_job_replicas=args.max_job_replicas,
            conf_poll=args.scheduler_conf_poll,
            self_pod=(
                (os.environ["POD_NAMESPACE"], os.environ["POD_NAME"])
                if os.environ.get("POD_NAMESPACE") and os.environ.get("POD_NAME")
                else None
            ),
        ),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pumice", description="Volcano-style batch scheduling for stock Kubernetes"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    add_manifests_parser(sub, cluster_version=cluster_version, webhook_configurations=webhook_configurations)
    add_cli_parsers(sub)
    add_simulate_parser(sub)
    sub.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(metadata.version("pumice"))
        return 0
    if args.command != "serve":  # every other sub-command (manifests, job, queue, jobflow, ...) runs itself
        return int(args.func(args))
    settings = _settings(args, parser)
    configure(settings.log_level, settings.log_format)
    try:
        conf_text = Path(settings.scheduling.conf_path).read_text() if settings.scheduling.conf_path else None
        conf = load_conf(conf_text)
    except (ConfigError, OSError) as e:
        print(f"pumice: cannot load scheduler conf: {e}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(serve(settings, conf, conf_text))
    return 130


if __name__ == "__main__":
    sys.exit(main())
