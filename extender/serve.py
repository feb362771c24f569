"""``pumice serve``: the one process that runs the extender, the webhooks and the controllers.

Builds :class:`extender.wiring.Process` and serves one aiohttp application per listener (extender: plain
HTTP, TLS or mutual TLS; webhooks: always TLS; metrics: plain HTTP for Prometheus, ``--metrics-bind``), each
serving ``/healthz``, ``/readyz`` and ``/metrics`` (extender.server.metrics), with the TLS of
:mod:`extender.serve_tls` (the webhook listener also serves the read-only forecast endpoint,
extender.server.forecast_api), and owns every background task in one TaskGroup: the informers, the Event
writer, the forecaster (its worker process ended when serve() ends), the TLS reload, the conf reload, the
heap's freezes (extender.process.heap), leader election and the leader-only tasks, which run per term
(:class:`controllers.leader.terms.Terms`: the scheduling loop, the status writer, the controllers, the
start-up writes). If any root task dies, the process exits non-zero rather than serve a stale cache.
CPython's switch interval (``--switch-interval``) is set in :func:`run`, once, before any thread starts.

SIGTERM/SIGINT is a handover: every ``/readyz`` turns 503, a leader stops its leader-only tasks and
releases the Lease at once (a standby takes over without waiting out the lease), and admission and
forwarding go on for ``--shutdown-delay`` before the process exits, so a Service stops sending here first.
Start-up problems (a kubeconfig that is not there, a port taken, an unreachable API server, TLS Secrets
that cannot be made) end in one line on stderr and exit status 2, before anything is served.

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
import time
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler

from admission.server import make_admission_app
from admission.webhooks import webhook_configurations
from controllers.events import Ref
from controllers.kube.client import ApiError, KubeClient
from controllers.kube.kubeconfig import KubeConfigError, load_config
from controllers.leader.terms import Duty, Terms
from controllers.reconcilers.bootstrap import ensure_queues, register_webhooks, server_features
from controllers.reconcilers.conf_reload import ConfWatcher
from extender import serve_tls
from extender.core.errors import ConfigError
from extender.plugins.registry import SchedulerConf, load_conf
from extender.process import heap
from extender.process.logs import configure
from extender.process.preflight import kubeconfig_problem, listen_problem, one_line
from extender.process.settings import ServeSettings
from extender.serve_tls import serving_tls
from extender.server.app import make_extender_app
from extender.server.forecast_api import add_forecast_routes
from extender.server.forward import Forwarder
from extender.server.metrics import CONTENT_TYPE
from extender.wiring import Process

log = logging.getLogger("pumice")


def run(settings: ServeSettings) -> int:
    """``pumice serve`` with its settings parsed: logging, the scheduler conf, then the process until it
    stops; the exit status."""
    configure(settings.log_level, settings.log_format)
    # Process-wide, so set here, once, before any thread starts: how long the event loop may wait for the
    # interpreter while the cycle's thread runs (see --switch-interval).
    sys.setswitchinterval(settings.switch_interval)
    try:
        conf_text = Path(settings.scheduling.conf_path).read_text() if settings.scheduling.conf_path else None
        conf = load_conf(conf_text)
    except (ConfigError, OSError) as e:
        print(f"pumice: cannot load scheduler conf: {e}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(serve(settings, conf, conf_text))
    return 130


class Drain:
    """Set once a shutdown began: every listener's ``/readyz`` answers 503 from then on, and every answer
    carries ``Connection: close``. A client (kube-apiserver calling a webhook, kube-scheduler) then opens its
    next connection through the Service, to a replica that stays, instead of sending on a kept-alive one
    that the exit closes under it: a POST cut that way is not retried, and kube-apiserver would refuse the
    create it was admitting."""

    def __init__(self) -> None:
        self.draining = False


def _health_routes(
    app: web.Application, proc: Process, drain: Drain | None = None, *, extender: bool = False
) -> None:
    """``/healthz``, ``/readyz`` and ``/metrics`` on a listener. ``/readyz`` is 503 while the informers have
    not listed, once a shutdown began, and, on the extender's listener with leader election, while no leader
    is known (nobody to answer or forward to)."""
    drain = drain if drain is not None else Drain()

    @web.middleware
    async def close_when_draining(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        if drain.draining:
            response.force_close()
        return response

    app.middlewares.append(close_when_draining)

    async def healthz(_: web.Request) -> web.Response:
        problems = proc.liveness.problems()
        if problems:
            return web.Response(status=503, text="unhealthy: " + "; ".join(problems))
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if drain.draining:
            return web.Response(status=503, text="shutting down")
        if not proc.ready:
            waiting = [i.name for i in proc.informers if not i.synced.is_set()]
            return web.Response(status=503, text=f"waiting for first LIST of: {', '.join(waiting)}")
        lead = proc.leadership
        if extender and lead.enabled and not (lead.serving or lead.leader_url()):
            return web.Response(status=503, text="no leader known yet: the extender cannot answer")
        webhooks = proc.settings.webhooks
        if not (webhooks.url_base or webhooks.service):
            return web.Response(
                text="ok; admission webhooks not registered by pumice (no --webhook-service or "
                "--webhook-url-base): only existing configurations get the CA"
            )
        return web.Response(text="ok")

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=proc.metrics.render().encode(), headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)


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
    try:
        tls = await serving_tls(settings, client)
    except (ApiError, OSError, TimeoutError, ValueError) as e:
        await client.close()
        return _fail(f"cannot set up TLS: {e}")
    if not (settings.webhooks.url_base or settings.webhooks.service):
        log.warning(
            "admission webhooks not registered by this process (neither --webhook-service nor "
            "--webhook-url-base): only the CA of existing pumice-mutating/pumice-validating "
            "configurations is patched; without them admission is off"
        )
    proc = Process(settings, conf, client, gates=features.scheduling_gates)
    conf_watch = _conf_watcher(settings, proc, conf_text)
    ext_app = make_extender_app(
        proc.scheduler.verbs,
        proc.latency,
        max_body=settings.extender.max_body,
        leader=proc.leadership if settings.leader.enabled else None,
        forwarder=Forwarder(ssl_context=tls.forward, server_hostname=tls.forward_hostname),
    )
    drain = Drain()
    _health_routes(ext_app, proc, drain, extender=True)
    adm_app = make_admission_app(proc.lookup, proc.limits)
    _health_routes(adm_app, proc, drain)
    # The forecast endpoint rides the webhook listener: always TLS (callers send their bearer tokens), and
    # already reachable in-cluster through its Service; the extender listener is kube-scheduler's alone.
    add_forecast_routes(adm_app, proc.forecaster.forecast, proc.access, time.time)
    proc.register_metrics(adm_app, lambda: tls.expiry)

    runners = [web.AppRunner(ext_app, access_log=None), web.AppRunner(adm_app, access_log=None)]
    sites: list[tuple[web.AppRunner, str, int, str, ssl.SSLContext | None]] = [
        (runners[0], settings.extender.host, settings.extender.port, "--extender-bind", tls.extender),
        (runners[1], settings.webhooks.host, settings.webhooks.port, "--webhook-bind", tls.webhook),
    ]
    if settings.metrics is not None:
        # Plain HTTP for Prometheus: the other two listeners want TLS (or mTLS) or a NetworkPolicy hole.
        metrics_app = web.Application()
        _health_routes(metrics_app, proc, drain)
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
            "leader_election": (
                f"{settings.leader.resource_namespace}/{settings.leader.resource_name} as "
                f"{settings.leader.identity}"
                if settings.leader.enabled
                else "off"
            ),
        },
    )

    async def bootstrap() -> None:
        """The leader's start-up writes (webhook configurations with the CA, the built-in queues), once
        per term, retried rather than fatal: creating the queues goes through our own webhooks, which the
        API server may not reach yet (a Service whose endpoints still lag this pod's readiness). Then the
        webhook configurations again whenever the CA changes (the Secrets rotated)."""
        await proc.listed()
        log.info("caches synced")
        first = True
        while True:
            delay = 0.5
            while True:
                try:
                    await register_webhooks(
                        proc.writer, settings, tls.ca_pem, webhook_configurations, features=features
                    )
                    if first:
                        await ensure_queues(proc.writer, proc.cache)
                    break
                except (ApiError, OSError, TimeoutError) as e:
                    log.warning("bootstrap failed; retrying", extra={"error": str(e), "in_s": delay})
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 30.0)
            first = False
            tls.ca_changed.clear()
            await tls.ca_changed.wait()

    terms = Terms(
        proc.leadership,
        [*proc.duties(), Duty("bootstrap", bootstrap)],
        begin=proc.begin_term,
        end=proc.end_term,
        stop_timeout=max(5.0, settings.leader.renew_deadline),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():  # a second signal: the user means it
            os._exit(130)
        proc.liveness.stopping()
        _exit_after(settings.shutdown_delay + SHUTDOWN_GRACE, 0)
        stop.set()

    def on_death(name: str) -> None:
        # The TaskGroup cancels the rest and serve() returns 1; should any task not honour its
        # cancellation, the process still ends (a zombie serving /healthz 200 is what this prevents).
        log.error("root task ended; exiting", extra={"task": name})
        _exit_after(SHUTDOWN_GRACE, 1)

    async def handover() -> None:
        """SIGTERM: /readyz 503 everywhere, leadership given up (the leader-only tasks stopped first,
        then the Lease released so a standby takes over at once), and admission and forwarding served for
        --shutdown-delay more, so a Service stops sending here before the process goes."""
        await stop.wait()
        drain.draining = True
        terms.close()
        if proc.elector is not None:
            proc.elector.resign()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(terms.stop_timeout):
                    await terms.idle.wait()
            await proc.elector.release()
        log.info("draining", extra={"for_s": settings.shutdown_delay})
        await asyncio.sleep(settings.shutdown_delay)
        raise _Stop

    proc.liveness.on_death = on_death
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    code = 0
    try:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(i.run(), name=f"informer-{i.name}") for i in proc.informers]
            tasks.append(tg.create_task(terms.run(), name="leader-duties"))
            if proc.elector is not None:
                tasks.append(tg.create_task(proc.elector.run(), name="leader-election"))
            tasks.append(tg.create_task(serve_tls.watch(tls), name="tls-reload"))
            if conf_watch is not None:
                tasks.append(tg.create_task(conf_watch.run(), name="conf-reload"))
            tasks.append(tg.create_task(proc.events.run(), name="events"))
            tasks.append(tg.create_task(heap.keep_settled(proc.listed), name="heap"))
            if settings.scheduling.forecast_interval > 0:
                tasks.append(tg.create_task(proc.forecaster.run(), name="forecaster"))
            for t in tasks:  # each runs forever: ending at all is a death
                proc.liveness.watch(t)
            tg.create_task(handover(), name="handover")
    except* _Stop:
        log.info("shutting down")
    except* Exception as eg:
        for exc in eg.exceptions:
            log.error("root task died", exc_info=exc)
        code = 1
    finally:
        proc.liveness.stopping()
        if proc.forecast_worker is not None:
            proc.forecast_worker.close()
        await proc.scheduler.close()
        for r in runners:
            await r.cleanup()
        await client.close()
    return code


class _Stop(Exception):
    pass


# Seconds a shutdown (SIGTERM after its drain, or a root task's death) may take before the process ends
# regardless.
SHUTDOWN_GRACE = 10.0


def _exit_after(seconds: float, code: int) -> None:
    timer = threading.Timer(seconds, os._exit, (code,))
    timer.daemon = True
    timer.start()
