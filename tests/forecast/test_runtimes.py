"""Runtimes learned from finished jobs: families, medians and spreads, which key answers, memory bounds."""

from __future__ import annotations

import pytest

from extender.core.parse import parse_pod, parse_podgroup
from extender.forecast.runtimes import (
    ANNOTATION,
    JOB_NAME,
    NAMESPACE,
    QUEUE,
    Finished,
    Runtime,
    RuntimeBook,
    group_runtime,
    group_start,
    job_family,
)
from tests.core.builders import pod, podgroup

DAY = 86400.0


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("nightly-28571430", "nightly"),  # a CronJob's run
        ("train-x7k2p", "train"),  # generateName
        ("train-model", "train-model"),  # no digit: a word, not a suffix
        ("bert-large", "bert-large"),
        ("job-2", "job"),
        ("123", "123"),  # nothing left: kept
    ],
)
def test_job_family(name: str, family: str) -> None:
    assert job_family(name) == family


def done(
    uid: str, seconds: float, *, name: str = "train", ns: str = "a", queue: str = "q", at: float = 0.0
) -> Finished:
    return Finished(uid=uid, queue=queue, namespace=ns, name=name, seconds=seconds, at=at)


def test_the_most_specific_key_with_enough_samples_answers() -> None:
    book = RuntimeBook(min_samples=3)
    assert book.estimate(queue="q", namespace="a", name="train-1", now=0) is None
    book.observe(done("1", 100, name="train-28571430"))
    # One run of the same job name is enough; a namespace or a queue needs three.
    est = book.estimate(queue="q", namespace="a", name="train-28571490", now=0)
    assert est == Runtime(seconds=100, low=100, high=100, basis=JOB_NAME, samples=1)
    assert book.estimate(queue="q", namespace="a", name="other", now=0) is None
    book.observe(done("2", 200, name="x"))
    book.observe(done("3", 600, name="y"))
    est = book.estimate(queue="q", namespace="a", name="other", now=0)
    assert est is not None and (est.basis, est.seconds, est.low, est.high) == (NAMESPACE, 200, 100, 600)
    est = book.estimate(queue="q", namespace="b", name="other", now=0)
    assert est is not None and est.basis == QUEUE


def test_median_and_spread_from_five_samples_on() -> None:
    book = RuntimeBook()
    for i, s in enumerate([10, 20, 30, 40, 50, 60, 70, 80, 90, 1000]):
        book.observe(done(str(i), s))
    est = book.estimate(queue="q", namespace="a", name="train", now=0)
    assert est is not None
    assert (est.seconds, est.low, est.high, est.samples) == (55, 10, 90, 10)


def test_a_job_counts_once_and_old_samples_age_out() -> None:
    book = RuntimeBook(max_age=DAY)
    assert book.observe(done("1", 100, at=0))
    assert not book.observe(done("1", 100, at=0))  # a re-list shows it again
    assert not book.observe(done("2", 0, at=0))  # not a runtime
    assert book.version == 1
    assert book.estimate(queue="q", namespace="a", name="train", now=DAY) is not None
    assert book.estimate(queue="q", namespace="a", name="train", now=DAY + 1) is None


def test_memory_is_bounded() -> None:
    book = RuntimeBook(window=3, max_keys=2)
    for i in range(5):
        book.observe(done(str(i), 10 + i, name=f"job{i}a"))
    assert len([k for k in book._by if k[0] == JOB_NAME]) == 2  # the two most recent job names
    est = book.estimate(queue="q", namespace="a", name="zzz", now=0)
    assert est is not None and est.samples == 3  # the namespace keeps its last three


def test_a_declared_runtime_comes_first() -> None:
    book = RuntimeBook()
    book.observe(done("1", 100, name="j", ns="default", queue="default"))
    pg = parse_podgroup(podgroup("j-123", 2))
    declared = parse_pod(
        {
            **pod("p", group="j-123"),
            "metadata": {**pod("p")["metadata"], "annotations": {"pumice.dev/expected-runtime": "90s"}},
        }
    )
    plain = parse_pod(pod("q", group="j-123", labels={"volcano.sh/job-name": "j"}))
    assert group_runtime(pg, [declared, plain], book, 0) == Runtime(
        seconds=90, low=90, high=90, basis=ANNOTATION
    )
    # Without a declaration, the job's name (from its pods' label) finds what the book learned.
    est = group_runtime(pg, [plain], book, 0)
    assert est is not None and (est.basis, est.seconds) == (JOB_NAME, 100)
    assert group_runtime(parse_podgroup(podgroup("solo", 1, namespace="z", queue="zq")), [], book, 0) is None
    # No pods yet (a vcjob's before it is Inqueue): what its PodGroup says.
    said = podgroup("j-123", 2)
    said["metadata"]["annotations"] = {"pumice.dev/expected-runtime": "2m"}
    assert group_runtime(parse_podgroup(said), [], book, 0) == Runtime(
        seconds=120, low=120, high=120, basis=ANNOTATION
    )


def test_group_start() -> None:
    raw = podgroup("g", 1, phase="Running")
    raw["status"]["conditions"] = [
        {"type": "Scheduled", "status": "True", "lastTransitionTime": "2024-01-01T01:00:00Z"}
    ]
    bound = parse_pod(pod("p", group="g", node="n1", phase="Running"))
    assert group_start(parse_podgroup(raw), [bound]) == 1704070800.0
    # No condition: the pod's creation.
    assert group_start(parse_podgroup(podgroup("g", 1)), [bound]) == 1704067200.0
    assert group_start(None, [parse_pod(pod("w", group="g"))]) is None
