"""The per-queue metric families, under pumice's names and under Volcano's, read from one computation of
:mod:`extender.queue_figures` per scrape. Part of the composition root (:mod:`extender.families` calls
:func:`register_queue_families`); nothing else imports it.

pumice's names carry ``queue`` and ``resource`` labels and base units: cpu in cores, memory in bytes, every
other resource in its accounted unit. Volcano's (``volcano_queue_*``, label ``queue_name``) split each figure
as Volcano's scheduler does: ``*_milli_cpu`` in milli-cpu, ``*_memory_bytes`` in bytes, and every other
resource but the pods slot in ``*_scalar_resources{resource}``; Volcano's queue controller's PodGroup counts
are ``volcano_queue_pod_group_<phase>_count``. The mapping between the two is in docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Final

from controllers.state.cache import ClusterCache
from extender.core.model import GroupKey, GroupPhase, QueueState
from extender.gpu_figures import CardFigures
from extender.plugins.registry import SchedulerConf
from extender.queue_figures import Amounts, Memo, QueueFigures, queue_figures
from extender.server.metrics import Metrics, Sample, one

Pick = Callable[[QueueFigures], Amounts | None]
UNITS: Final = " (cpu in cores, memory in bytes, others in their unit)"
# Volcano's scheduler splits cpu and memory out of a resource list; the rest are its scalar resources.
_SPLIT: Final = ("cpu", "memory")


def register_queue_families(
    m: Metrics,
    cache: ClusterCache,
    conf: Callable[[], SchedulerConf],
    waiting: Callable[[], Collection[GroupKey]],
) -> Memo:
    """Register every per-queue family; the figures are computed once per scrape (the returned Memo)."""
    figures = Memo(lambda: queue_figures(cache, conf(), waiting()))
    _pumice(m, figures)
    _gpus(m, figures)
    _volcano(m, figures)
    return figures


def _gpus(m: Metrics, figures: Memo) -> None:
    """Card by card, and the cluster's GPU fragmentation and stranded asks (see extender.gpu_figures)."""
    card = ["node", "card", "family"]
    for name, help_text, read in (
        ("memory", "Each GPU card's memory (the device plugin's unit).", lambda c: c.memory),
        ("memory_used", "Memory of each GPU card its pods hold (a card held whole: all).", lambda c: c.used),
        ("pods", "Pods sharing each GPU card.", lambda c: c.pods),
    ):
        m.scrape(
            f"pumice_gpu_card_{name}",
            "gauge",
            help_text,
            _per_card(figures, read),
            card,
        )
    m.scrape(
        "pumice_gpu_fragmentation",
        "gauge",
        "Free GPU memory on cards partly in use, over all free GPU memory (0..1).",
        lambda: one(figures().gpus.fragmentation),
    )
    m.scrape(
        "pumice_gpu_pending_asks",
        "gauge",
        "Pending pods asking GPUs (volcano.sh/gpu-memory, gpu-number or vGPU).",
        lambda: one(figures().gpus.pending),
    )
    m.scrape(
        "pumice_gpu_stranded_asks",
        "gauge",
        "Pending GPU asks the free GPUs could hold in total but no single card (gpu-memory) or node "
        "(gpu-number) can.",
        lambda: one(figures().gpus.stranded),
    )


def _per_card(figures: Memo, read: Callable[[CardFigures], int]) -> Callable[[], list[Sample]]:
    return lambda: [((c.node, c.card, c.family), float(read(c))) for c in figures().gpus.cards]


def _pumice(m: Metrics, figures: Memo) -> None:
    def per_resource(pick: Pick) -> Callable[[], list[Sample]]:
        return lambda: [
            ((q.name, r), v) for q in figures().queues for r, v in sorted(_units(pick(q) or {}).items())
        ]

    for name, pick, help_text in (
        ("allocated", lambda q: q.allocated, "Requests of the bound, unfinished pods of each queue"),
        ("deserved", lambda q: q.deserved, "What each queue deserves by the conf's share plugin"),
        ("capability", lambda q: q.capability, "Each queue's spec.capability, for the resources it limits"),
        ("guarantee", lambda q: q.guarantee, "Each queue's spec.guarantee"),
        (
            "real_capability",
            lambda q: q.real_capability,
            "The most each queue may hold by the conf's share plugin (capability less others' guarantees)",
        ),
        ("pending", lambda q: q.pending, "Requests of each queue's pods waiting for a node"),
        ("inqueue", lambda q: q.inqueue, "What each queue's admitted (Inqueue) PodGroups are promised"),
        ("running", lambda q: q.running, "Requests of each queue's Running pods"),
    ):
        m.scrape(
            f"pumice_queue_{name}",
            "gauge",
            help_text + UNITS + ".",
            per_resource(pick),
            ["queue", "resource"],
        )
    m.scrape(
        "pumice_queue_share",
        "gauge",
        "Each queue's share: the largest allocated/deserved over its resources (Volcano's proportion).",
        lambda: [((q.name,), q.share) for q in figures().queues],
        ["queue"],
    )
    m.scrape(
        "pumice_queue_weight",
        "gauge",
        "Each queue's spec.weight.",
        lambda: [((q.name,), float(q.weight)) for q in figures().queues],
        ["queue"],
    )
    m.scrape(
        "pumice_queue_state",
        "gauge",
        "Each queue's state: 1 for the state it is in (Open, Closing, Closed, Unknown), 0 for the others.",
        lambda: [
            ((q.name, s.value), float(q.state == s.value)) for q in figures().queues for s in QueueState
        ],
        ["queue", "state"],
    )
    m.scrape(
        "pumice_queue_podgroups",
        "gauge",
        "PodGroups of each queue by phase (Pending, Inqueue, Running, ...).",
        lambda: [((q.name, p), n) for q in figures().queues for p, n in sorted(q.podgroups.items())],
        ["queue", "phase"],
    )
    m.scrape(
        "pumice_cluster_allocatable",
        "gauge",
        "The nodes' allocatable, summed" + UNITS + ".",
        lambda: [((r,), v) for r, v in sorted(_units(figures().allocatable).items())],
        ["resource"],
    )


def _volcano(m: Metrics, figures: Memo) -> None:
    for what, pick, always, help_text in (
        (
            "allocated",
            lambda q: q.allocated,
            True,
            "Allocated {} for one queue (pumice: pumice_queue_allocated)",
        ),
        ("request", lambda q: q.request, True, "Request {} for one queue: allocated and pending (pumice)"),
        ("deserved", lambda q: q.deserved, True, "Deserved {} for one queue (pumice: pumice_queue_deserved)"),
        (
            "capacity",
            lambda q: q.capability,
            False,
            "Capacity {} for one queue: its spec.capability (pumice)",
        ),
        (
            "real_capacity",
            lambda q: q.real_capability,
            False,
            "Real capacity {} for one queue: what its share plugin lets it hold (pumice)",
        ),
        ("inqueue", lambda q: q.inqueue, True, "Inqueue {} for admitted but not yet running jobs (pumice)"),
    ):
        _volcano_split(m, figures, what, pick, always, help_text)
    for name, help_text, read in (
        ("share", "Share for one queue (pumice: pumice_queue_share).", lambda q: q.share),
        ("weight", "Weight for one queue (pumice: pumice_queue_weight).", lambda q: float(q.weight)),
        ("overused", "If one queue is overused: 1 or 0 (pumice).", lambda q: float(q.overused)),
    ):
        m.scrape(
            f"volcano_queue_{name}",
            "gauge",
            help_text,
            _each_queue(figures, read),
            ["queue_name"],
        )
    for phase in GroupPhase:
        m.scrape(
            f"volcano_queue_pod_group_{phase.value.lower()}_count",
            "gauge",
            f"The number of {phase.value} PodGroup in this queue (pumice: pumice_queue_podgroups).",
            _each_queue(figures, _podgroups_in(phase.value)),
            ["queue_name"],
        )


def _podgroups_in(phase: str) -> Callable[[QueueFigures], float]:
    return lambda q: float(q.podgroups.get(phase, 0))


def _each_queue(figures: Memo, read: Callable[[QueueFigures], float]) -> Callable[[], list[Sample]]:
    return lambda: [((q.name,), read(q)) for q in figures().queues]


def _volcano_split(m: Metrics, figures: Memo, what: str, pick: Pick, always: bool, help_text: str) -> None:
    """``volcano_queue_<what>_milli_cpu``, ``..._memory_bytes`` and ``..._scalar_resources{resource}``.
    ``always``: a queue without the figure shows 0 (as Volcano's scheduler sets it), else it is left out
    (a queue with no capability has no capacity series)."""

    def part(resource: str) -> Callable[[], Iterable[Sample]]:
        def read() -> Iterable[Sample]:
            for q in figures().queues:
                amounts = pick(q)
                if amounts is None or (not always and resource not in amounts):
                    continue
                yield ((q.name,), float(amounts.get(resource, 0)))

        return read

    def scalars() -> Iterable[Sample]:
        for q in figures().queues:
            for r, v in sorted((pick(q) or {}).items()):
                if r not in _SPLIT:
                    yield ((q.name, r), float(v))

    m.scrape(
        f"volcano_queue_{what}_milli_cpu",
        "gauge",
        help_text.format("CPU (milli-cpu)"),
        part("cpu"),
        ["queue_name"],
    )
    m.scrape(
        f"volcano_queue_{what}_memory_bytes",
        "gauge",
        help_text.format("memory (bytes)"),
        part("memory"),
        ["queue_name"],
    )
    m.scrape(
        f"volcano_queue_{what}_scalar_resources",
        "gauge",
        help_text.format("scalar resources"),
        scalars,
        ["queue_name", "resource"],
    )


def _units(amounts: Amounts) -> dict[str, float]:
    return {r: (v / 1000 if r == "cpu" else float(v)) for r, v in amounts.items() if r != "pods"}
