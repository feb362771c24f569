"""The composition root's object graph: what ``pumice serve`` builds, wired once in :class:`Process`.

Every object is built here with its dependencies passed to its constructor: the cluster state, the
executor, the controllers, the scheduler, the status writer, the metrics and the informers that feed them
(:data:`INFORMERS`, the one table of watched paths). Nothing is set on an object after it is built. Part of
the composition root (with :mod:`extender.main`, :mod:`extender.serve`, :mod:`extender.serve_args` and
:mod:`extender.families`): nothing else imports it. :mod:`extender.serve` runs what this builds.
"""

from __future__ import annotations

from importlib import metadata

from aiohttp import web

from admission.lookup import LookupUnavailable
from admission.server import METRICS_KEY
from controllers.events import EventRecorder
from controllers.kube import paths
from controllers.kube.client import KubeClient
from controllers.kube.informer import Informer, tee
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
from controllers.state.cluster import cluster_state
from controllers.state.indexes import watched_objects
from controllers.watch_metrics import WatchMetrics
from extender.api import labels as L
from extender.api.limits import Limits
from extender.core.model import PodGroup, Queue
from extender.families import register_families
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
        self.executor = KubeExecutor(client)
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
        handlers = self.cache.handlers()
        for name, h in (*self.watched.handlers().items(), *self.watch_metrics.handlers().items()):
            handlers[name] = tee(handlers[name], h) if name in handlers else h
        self.informers = [Informer(client, path, handlers[name], name=name) for name, path in INFORMERS]
        # A loop that has not completed a pass for this long is reported unhealthy (see /healthz).
        self.scheduler = build_scheduler(
            state,
            conf,
            self.executor,
            gates=gates,
            ready=lambda: self.ready,
            heartbeat=self.liveness.expect("scheduling loop", 60.0),
            admitted=self.jobs.group_admitted,
            events=self.events,
            on_cycle=self.observers.cycle,
        )
        self.status = StatusWriter(
            self.cache,
            self.scheduler.shared,
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
            observers=self.observers,
        )


def _version() -> str:
    try:
        return metadata.version("pumice")
    except metadata.PackageNotFoundError:
        return "unknown"
