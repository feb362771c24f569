"""How long jobs run: learned from jobs that finished, per job name, namespace and queue.

A :class:`RuntimeBook` keeps, for each job name (its *family*: a generated suffix such as a CronJob's
``-28571430`` or a ``generateName``'s ``-x7k2p`` left out, so reruns of one job share figures), each
namespace and each queue, the runtimes of the last ``window`` jobs of it seen finishing. An estimate is
the median of the most specific of them that has enough samples (a job name needs one, a namespace or a
queue ``min_samples``), with a range from its spread: the 10th to the 90th percentile from five samples
on, the smallest to the largest before. Samples older than ``max_age`` no longer count (workloads change).

A group's expected runtime (:func:`group_runtime`): its pods' ``pumice.dev/expected-runtime`` where given
(what the user declared is taken as exact), else its PodGroup's (a vcjob's, copied from its tasks'
templates, before its pods exist), else the book's estimate, else None ("unknown"); a running
group's start (:func:`group_start`): when its gang turned whole.

Pure: the clock is passed in (``now``, ``at``); memory is bounded (``window`` samples per key, at most
``max_keys`` job names, the least recently updated forgotten first). A job is counted once (by UID) per key,
so a re-list that shows a finished job again adds nothing.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from extender.api import labels as L
from extender.core.model import Pod, PodGroup
from extender.core.timestamps import epoch

ANNOTATION: Final = "annotation"
JOB_NAME: Final = "job name"
NAMESPACE: Final = "namespace"
QUEUE: Final = "queue"

# A generated suffix: digits (a CronJob's schedule time), or generateName's five characters with a digit.
_SUFFIX = re.compile(r"-(\d+|(?=[a-z0-9]*\d)[a-z0-9]{5})$")


def job_family(name: str) -> str:
    """``name`` without a generated suffix (``nightly-28571430`` and ``nightly-28571490`` are one job)."""
    stripped = _SUFFIX.sub("", name)
    return stripped or name


@dataclass(frozen=True, slots=True, kw_only=True)
class Runtime:
    """How long a job is expected to run, in seconds: ``seconds`` (the median), the range ``low`` to
    ``high``, where the figure comes from (``basis``: ANNOTATION, JOB_NAME, NAMESPACE, QUEUE) and how many
    finished jobs it was learned from."""

    seconds: float
    low: float
    high: float
    basis: str
    samples: int = 0

    @staticmethod
    def declared(seconds: float) -> Runtime:
        return Runtime(seconds=seconds, low=seconds, high=seconds, basis=ANNOTATION)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """A job seen finishing: its UID, where it ran, how long it ran (seconds) and when it ended."""

    uid: str
    queue: str
    namespace: str
    name: str
    seconds: float
    at: float


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (``q`` in 0..100)."""
    rank = max(1, -(-len(sorted_values) * q // 100))
    return sorted_values[int(rank) - 1]


class _Samples:
    def __init__(self, window: int) -> None:
        self.runs: deque[tuple[str, float, float]] = deque(maxlen=window)  # (uid, seconds, at)

    def add(self, f: Finished) -> bool:
        if any(uid == f.uid for uid, _, _ in self.runs):
            return False
        self.runs.append((f.uid, f.seconds, f.at))
        return True

    def recent(self, since: float) -> list[float]:
        return sorted(s for _, s, at in self.runs if at >= since)


class RuntimeBook:
    """Runtimes of finished jobs by job name, namespace and queue; estimates from them."""

    def __init__(
        self,
        *,
        window: int = 50,
        min_samples: int = 3,
        max_age: float = 14 * 86400.0,
        max_keys: int = 10_000,
    ) -> None:
        self.window = window
        self.min_samples = min_samples
        self.max_age = max_age
        self.max_keys = max_keys
        self._by: dict[tuple[str, ...], _Samples] = {}
        # Bumped by every sample taken: a forecast computed before is stale.
        self.version = 0

    def observe(self, f: Finished) -> bool:
        """Count a finished job; False when it was counted already or its runtime is not a runtime."""
        if not f.seconds > 0:
            return False
        added = False
        for key in _keys(f.queue, f.namespace, f.name):
            samples = self._by.pop(key, None) or _Samples(self.window)
            self._by[key] = samples  # re-inserted: the most recently updated last
            added |= samples.add(f)
        self._forget()
        if added:
            self.version += 1
        return added

    def _forget(self) -> None:
        jobs = [k for k in self._by if k[0] == JOB_NAME]
        for key in jobs[: max(0, len(jobs) - self.max_keys)]:
            del self._by[key]

    def estimate(self, *, queue: str, namespace: str, name: str, now: float) -> Runtime | None:
        """The most specific estimate with enough samples, or None."""
        since = now - self.max_age
        for key in _keys(queue, namespace, name):
            samples = self._by.get(key)
            values = samples.recent(since) if samples is not None else []
            if not values or (key[0] != JOB_NAME and len(values) < self.min_samples):
                continue
            if len(values) >= 5:
                low, high = _percentile(values, 10), _percentile(values, 90)
            else:
                low, high = values[0], values[-1]
            n = len(values)
            median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
            return Runtime(seconds=median, low=low, high=high, basis=key[0], samples=n)
        return None

    def __len__(self) -> int:
        return len(self._by)


def _keys(queue: str, namespace: str, name: str) -> tuple[tuple[str, ...], ...]:
    """The book's keys for a job, most specific first."""
    return ((JOB_NAME, namespace, job_family(name)), (NAMESPACE, namespace), (QUEUE, queue))


def job_name(group: PodGroup, pods: Iterable[Pod]) -> str:
    """The name a group's runtimes are learned under: its Volcano Job's (the pods' ``volcano.sh/job-name``
    label), else the PodGroup's own."""
    for p in pods:
        name = p.labels.get(L.JOB_NAME_KEY)
        if name:
            return name
    return group.name


def group_runtime(group: PodGroup, pods: Iterable[Pod], book: RuntimeBook, now: float) -> Runtime | None:
    """How long ``group`` is expected to run once started: the longest ``pumice.dev/expected-runtime`` of
    its pods, else the group's own (its job's, before its pods exist), else the book's estimate for its job
    name, namespace or queue, else None."""
    members = list(pods)
    declared = [p.expected_runtime for p in members if p.expected_runtime is not None]
    if declared:
        return Runtime.declared(max(declared))
    if group.expected_runtime is not None:
        return Runtime.declared(group.expected_runtime)
    return book.estimate(queue=group.queue, namespace=group.namespace, name=job_name(group, members), now=now)


def group_start(group: PodGroup | None, pods: Iterable[Pod]) -> float | None:
    """When a running group started (epoch seconds): its ``Scheduled`` condition's time (the status writer
    sets it as the gang turns whole), else the latest of its pods' scheduling (or creation) times."""
    if group is not None:
        for c in group.conditions:
            if c.type == "Scheduled" and c.status == "True" and (at := epoch(c.last_transition_time)):
                return at
    times = [p.scheduled_at or epoch(p.created) for p in pods if p.holds_resources]
    return max(times) if times and max(times) > 0 else None
