"""``pumice serve``: the one process that runs the extender, the webhooks and the controllers.

Builds :class:`extender.wiring.Process` and serves one aiohttp application per listener (extender: plain
HTTP by default; webhooks: always TLS; metrics: plain HTTP for Prometheus, ``--metrics-bind``), each
serving ``/healthz``, ``/readyz`` and ``/metrics`` (extender.server.metrics), and owns every background
task in one TaskGroup: informers, the scheduling loop, the status writer and the controllers. If any of
them dies, the process exits non-zero rather than serve a stale cache; SIGTERM/SIGINT shut it down
cleanly. Start-up problems (a kubeconfig that is not there, a port taken, an unreachable API server) end
in one line on stderr and exit status 2, before anything is served.

Part of the composition root: only :mod:`extender.main` imports it, when the command is ``serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import ssl
import sys
import threading
from pathlib import Path

from aiohttp import web

from admission.server import make_admission_app
from admission.webhooks import webhook_configurations
from controllers.events import Ref
from controllers.kube.client import ApiError, KubeClient
from controllers.kube.kubeconfig import KubeConfigError, load_config
from controllers.reconcilers.bootstrap import ensure_queues, register_webhooks, server_features
from controllers.reconcilers.conf_reload import ConfWatcher
from extender.core.errors import ConfigError
from extender.plugins.registry import SchedulerConf, load_conf
from extender.process.logs import configure
from extender.process.preflight import kubeconfig_problem, listen_problem, one_line
from extender.process.settings import ServeSettings
from extender.process.tls import generate_serving_certs, mtls_server_context, server_ssl_context
from extender.server.app import make_extender_app
from extender.server.metrics import CONTENT_TYPE
from extender.wiring import Process

log = logging.getLogger("pumice")


def run(settings: ServeSettings) -> int:
    """``pumice serve`` with its settings parsed: logging, the scheduler conf, then the process until it
    stops; the exit status."""
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
        apply=proc.scheduler.loop.use_conf,
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
    ext_app = make_extender_app(proc.scheduler.verbs, proc.latency, max_body=settings.extender.max_body)
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
