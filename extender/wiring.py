"""The composition root's object graph: what ``pumice serve`` builds, wired once in :class:`Process`.

Every object is built here with its dependencies passed to its constructor: the cluster state, the
executor, the controllers, the scheduler, the status writer, the metrics and the informers that feed them
(:data:`INFORMERS`, the one table of watched paths). Nothing is set on an object after it is built. Part of
the composition root (with :mod:`extender.main`, :mod:`extender.serve`, :mod:`extender.serve_args` and
:mod:`extender.families`): nothing else imports it. :mod:`extender.serve` runs what this builds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from importlib import metadata

from aiohttp import web

from admission.lookup import LookupUnavailable
from admission.server import METRICS_KEY
from controllers.events import EventRecorder
from controllers.forecast.access import KubeAccess
from controllers.forecast.finished import runtime_handler
from controllers.forecast.runner import Forecaster, in_thread
from controllers.forecast.worker import ForecastProcess
from controllers.kube import paths
from controllers.kube.client import KubeClient
from controllers.kube.informer import Informer, tee
from controllers.leader.decide import Timing
from controllers.leader.elector import Elector, LeaseApi
from controllers.leader.fence import FencedExecutor, fenced_client
from controllers.leader.leadership import Leadership
from controllers.leader.terms import Duty
from controllers.liveness import Liveness
from controllers.reconcilers.cronjobs import CRONJOBS_PATH, CronJobController
from controllers.reconcilers.flows import JOBFLOWS_PATH, JOBTEMPLATES_PATH, FlowController
from controllers.reconcilers.hypernode_problems import HyperNodeProblems
from controllers.reconcilers.jobs import COMMANDS_PATH, JOBS_PATH, JobController
from controllers.reconcilers.queue_commands import QueueCommandController
from controllers.reconcilers.status import StatusWriter
from controllers.reconcilers.workload_groups import WorkloadGroupController
from controllers.scheduling.kube_executor import KubeExecutor
from controllers.scheduling.scheduler import build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.simulate.forecast import ForecastSettings
from controllers.state.cluster import cluster_state
from controllers.state.indexes import watched_objects
from controllers.watch_metrics import WatchMetrics
from extender.api import labels as L
from extender.api.limits import Limits
from extender.core.model import PodGroup, Queue
from extender.families import register_families
from extender.forecast.runtimes import RuntimeBook
from extender.forecast_families import register_forecast_families
from extender.jobs.rules import job_problems
from extender.observers import Observers
from extender.plugins.registry import SchedulerConf
from extender.process.settings import ServeSettings
from extender.server.metrics import Metrics

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


# The loops that beat the liveness check and run only while this replica leads.
_LEADER_LOOPS = ("scheduling loop", "status writer")
# Seconds a new leader waits before its first cycle: what its predecessor set in motion shows meanwhile.
TAKEOVER_GRACE = 0.5
# Seconds after which a planned pod kube-scheduler has not taken is touched again (LoopSettings.retouch).
RETOUCH = 15.0


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
        # It packs the raw PodGroups with the cache's packer: both hold every one, as the same bytes.
        self.watched = watched_objects(settings.scheduling.scheduler_names, state.cache.packer)
        election = settings.leader
        self.leadership = Leadership(
            identity=election.identity or "pumice",
            timing=Timing(
                lease_duration=election.lease_duration,
                renew_deadline=election.renew_deadline,
                retry_period=election.retry_period,
            ),
            enabled=election.enabled,
        )
        # Every leader-only write is fenced (controllers.leader.fence): the scheduling room's through its
        # Executor, the reconcilers', the Events' and the start-up writes through this client.
        self.writer = fenced_client(client, self.leadership)
        # The executor's own requests go through the fenced client too: checked again as they are sent.
        self.executor = FencedExecutor(KubeExecutor(self.writer), self.leadership)
        self.elector = (
            Elector(
                LeaseApi(
                    client,
                    election.resource_namespace,
                    election.resource_name,
                    timeout=max(1.0, election.retry_period),
                ),
                self.leadership,
                url=election.advertise_url,
                ready=lambda: self.ready,
            )
            if election.enabled
            else None
        )
        self.liveness = Liveness()
        self.events = EventRecorder(self.writer, instance=election.identity)
        self.limits = Limits(max_replicas=settings.scheduling.max_job_replicas)
        self.jobs = JobController(
            self.writer,
            self.watched,
            scheduler_names=settings.scheduling.scheduler_names,
            group_phase=self._group_phase,
            validate=lambda obj: job_problems(obj, self.limits),
            events=self.events,
        )
        self.queue_commands = QueueCommandController(self.writer, self.watched)
        self.workload_groups = WorkloadGroupController(
            self.writer, self.watched, scheduler_names=settings.scheduling.scheduler_names, events=self.events
        )
        self.flows = FlowController(self.writer, self.watched, events=self.events)
        self.cronjobs = CronJobController(self.writer, self.watched, events=self.events)
        # HyperNode members the scheduler leaves out, as Warning Events on the HyperNode.
        self.hypernode_problems = HyperNodeProblems(self.events, self.watched)
        self.metrics = Metrics(version=_version())
        # What the loop and the watch report, observed under pumice's and Volcano's names.
        self.observers = Observers(self.metrics)
        # Binds, wait times and jobs that end are observed in the watch (see controllers.watch_metrics).
        self.watch_metrics = WatchMetrics(
            scheduler_names=settings.scheduling.scheduler_names,
            default_queue=settings.scheduling.default_queue,
            bound=self.observers.bound,
            waited=self.observers.waited,
            finished=self.observers.finished,
            gone=self.observers.gone,
        )
        # Runtimes of finished vcjobs, learned from the jobs watch (controllers.forecast.finished).
        self.runtimes = RuntimeBook()
        handlers = self.cache.handlers()
        for name, h in (
            *self.watched.handlers().items(),
            *self.watch_metrics.handlers().items(),
            ("jobs", runtime_handler(self.runtimes, settings.scheduling.default_queue)),
        ):
            handlers[name] = tee(handlers[name], h) if name in handlers else h
        self.informers = [Informer(client, path, handlers[name], name=name) for name, path in INFORMERS]
        # A loop that has not completed a pass for this long is reported unhealthy (see /healthz).
        self.scheduler = build_scheduler(
            state,
            conf,
            self.executor,
            # Replicas hand kube-scheduler's retries to one another: a touch it never took is made again.
            settings=LoopSettings(retouch=RETOUCH),
            gates=gates,
            ready=lambda: self.ready,
            heartbeat=self.liveness.expect(_LEADER_LOOPS[0], 60.0),
            admitted=self.jobs.group_admitted,
            events=self.events,
            on_cycle=self.observers.cycle,
        )
        # When waiting jobs will start: forecast off the scheduling path (controllers.forecast), shown by the
        # status writer, the forecast endpoint and the metrics; who may read which namespace's, the API
        # server says.
        # In a worker process by default (another core; closed by extender.serve when the process stops).
        self.forecast_worker = ForecastProcess() if settings.scheduling.forecast_in == "process" else None
        self.forecaster = Forecaster(
            self.cache,
            self.scheduler.shared,
            self.runtimes,
            interval=settings.scheduling.forecast_interval,
            settings=ForecastSettings(max_steps=settings.scheduling.forecast_max_steps),
            run=self.forecast_worker or in_thread,
        )
        self.access = KubeAccess(client)
        self.status = StatusWriter(
            self.cache,
            self.scheduler.shared,
            self.executor,
            heartbeat=self.liveness.expect(_LEADER_LOOPS[1], 120.0),
            events=self.events,
            estimates=self.forecaster.forecast,
        )
        self.latency = self.metrics.extender
        if election.enabled:  # a standby's leader-only loops do not beat; checked again when it leads
            for name in _LEADER_LOOPS:
                self.liveness.pause(name)

    # --- leadership terms (controllers.leader.terms) ------------------------------------------------------
    def duties(self) -> list[Duty]:
        """What only the leader runs (the start-up writes are the composition root's: see extender.serve)."""
        return [
            Duty("scheduler", self.scheduler.run),
            Duty("status", self.status.run),
            Duty("jobs", self.jobs.run),
            Duty("queue-commands", self.queue_commands.run),
            Duty("workload-groups", self.workload_groups.run),
            Duty("jobflows", self.flows.run),
            Duty("cronjobs", self.cronjobs.run),
            Duty("hypernode-problems", self.hypernode_problems.run),
        ]

    async def listed(self) -> None:
        """Returns once every informer has listed (its first LIST handed over)."""
        await asyncio.gather(*(i.synced.wait() for i in self.informers))

    async def begin_term(self) -> None:
        """A term begins, once every informer has listed: after a grace for what the previous leader set
        in motion (a bind kube-scheduler was making on its answer) to show in the watch, rebuild from the
        cluster what was in flight (pods kube-scheduler holds as unschedulable), cycle, and have every
        reconciler look at every object."""
        await self.listed()
        if self.leadership.enabled and not self.leadership.predecessor_quiet:
            # Taken from a release (or a free Lease): the last binds of the replica that let go may still
            # be on their way to the watch. From a lapsed lease there is nothing to wait for: its holder
            # stopped writing seconds ago (Leadership.predecessor_quiet), and a kill -9 costs no more.
            await asyncio.sleep(min(TAKEOVER_GRACE, self.leadership.timing.retry_period))
        self.scheduler.shared.begin_term()
        self.scheduler.loop.new_term()
        self.status.reset()
        self.watched.resync()
        for name in _LEADER_LOOPS:
            self.liveness.resume(name)

    async def end_term(self) -> None:
        """A term ended (its duties stopped): the writes still under way are cancelled, and what the term
        held in memory only is dropped (see SchedulingState.end_term), so the next starts from the cluster."""
        for name in _LEADER_LOOPS:
            self.liveness.pause(name)
        await self.scheduler.writes.close()
        self.scheduler.shared.end_term()
        self.cache.forget_admissions()
        self.status.reset()

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

    def register_metrics(
        self,
        admission_app: web.Application,
        certificates: Callable[[], Iterable[tuple[str, float]]] = lambda: (),
    ) -> None:
        """The families read at scrape time (see extender.families); ``certificates``: each certificate
        served or presented, with its expiry (epoch seconds), as the TLS in use says when scraped."""
        register_families(
            self.metrics,
            leadership=self.leadership,
            certificates=certificates,
            scheduler=self.scheduler,
            status=self.status,
            events=self.events,
            informers=self.informers,
            cache=self.cache,
            jobs=self.jobs,
            flows=self.flows,
            cronjobs=self.cronjobs,
            admission=admission_app[METRICS_KEY],
            observers=self.observers,
        )
        register_forecast_families(self.metrics, self.forecaster, time.time, self.forecast_worker)


def _version() -> str:
    try:
        return metadata.version("pumice")
    except metadata.PackageNotFoundError:
        return "unknown"
