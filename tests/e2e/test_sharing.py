"""Queues sharing a full cluster, preempt and reclaim, end to end: vcjobs on a real kube-apiserver +
kube-scheduler with fake nodes and a fake kubelet, pumice running Volcano's CI conf (``enqueue, allocate,
backfill, preempt, reclaim`` with proportion).

What is asserted is what a user sees: which pods run, which stay Pending, which were evicted (the
``DisruptionTarget`` condition pumice sets on a victim before the Eviction, the victims' deletion, and the
``Preempted``/``Reclaimed`` Events), all read from the API server; never pumice's internals. A watch on the
test's namespace keeps every pod's history (:class:`PodHistory`), so an eviction is seen even when the pod
is gone a few milliseconds later, and a failure message carries the timeline.

An evicted vcjob pod is deleted (Eviction API), and pumice's job controller re-creates the missing pod
Pending (no lifecycle policy reacts to a deletion): a job's demand does not change when it loses pods, so
the scenarios settle instead of shrinking.

The hierarchy tests run the ``capacity`` plugin with ``enableHierarchy: true`` instead of proportion; they
come last in the file since they restart pumice with that conf (the ``pumice`` fixture of later tests
restarts it with the default again).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.core.builders import VOLCANO_CI_CONF
from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice
from tests.plugins.test_elastic import CAPACITY_TREE_CONF  # issue #22's conf, the unit tests' own

pytestmark = pytest.mark.e2e

BATCH = "batch.volcano.sh/v1alpha1"
SCHEDULING = "scheduling.volcano.sh/v1beta1"
JOB_LABEL = "volcano.sh/job-name"

# Volcano's CI conf (its e2e suites run the scheduler with it), and the same with capacity and the queue
# tree in proportion's place.
CI_CONF = VOLCANO_CI_CONF
HIERARCHY_CONF = CI_CONF.replace("  - name: proportion\n", "  - name: capacity\n    enableHierarchy: true\n")


def _capacity_plugin_missing() -> str | None:
    """Why the hierarchy test cannot run here, or None: the capacity plugin must load from a conf."""
    try:
        # Imported here: a plugin being written must not stop the other tests from being collected.
        from extender.plugins.registry import load_conf

        load_conf(HIERARCHY_CONF)
    except Exception as err:  # whatever fails to load is the missing piece
        return f"the capacity plugin with enableHierarchy does not load yet: {err}"
    return None


# --- pumice, queues, jobs ------------------------------------------------------------------------------


@pytest.fixture
def ci_pumice(control_plane: ControlPlane) -> None:
    """pumice on Volcano's CI conf (restarted only when it ran with another conf)."""
    ensure_pumice(control_plane, scheduler_conf=CI_CONF)


Cleanup = Callable[[], Awaitable[None]]


@pytest_asyncio.fixture(loop_scope="function")
async def cluster_objects(kube_api: client.ApiClient, namespace: str) -> AsyncIterator[list[str]]:
    """Paths of cluster-scoped objects (Queues, PriorityClasses) to delete after the test, last first.

    A Queue that still has PodGroups cannot be deleted, so the namespace is emptied first (its own
    fixture's teardown does it again, harmlessly); pumice may take a moment to see the PodGroups gone.
    """
    paths: list[str] = []
    yield paths
    await kube.delete_namespace(kube_api, namespace)
    for path in reversed(paths):
        await kube.delete_when_admitted(kube_api, path)


async def create_queue(api: client.ApiClient, objects: list[str], name: str, spec: Mapping[str, Any]) -> None:
    body = {"apiVersion": SCHEDULING, "kind": "Queue", "metadata": {"name": name}, "spec": dict(spec)}
    await kube.request(api, "POST", kube.collection_path(SCHEDULING, "queues"), body=body)
    objects.append(f"{kube.collection_path(SCHEDULING, 'queues')}/{name}")


async def create_priority_class(api: client.ApiClient, objects: list[str], name: str, value: int) -> None:
    path = "/apis/scheduling.k8s.io/v1/priorityclasses"
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
    await kube.request(api, "POST", path, body={**body, "value": value})
    objects.append(f"{path}/{name}")


def job_spec(
    *,
    queue: str,
    replicas: int,
    min_available: int,
    selector: Mapping[str, str],
    priority_class: str | None = None,
) -> dict[str, Any]:
    """One task of ``replicas`` pods of 1 cpu each; a gang of ``min_available``."""
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": queue,
        "minAvailable": min_available,
        "tasks": [
            {
                "name": "w",
                "replicas": replicas,
                "minAvailable": min_available,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 1,
                        "nodeSelector": dict(selector),
                        "containers": [
                            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                        ],
                    }
                },
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return spec


async def create_job(api: client.ApiClient, ns: str, name: str, spec: Mapping[str, Any]) -> None:
    body = {"apiVersion": BATCH, "kind": "Job", "metadata": {"name": name}, "spec": dict(spec)}
    await kube.request(api, "POST", kube.collection_path(BATCH, "jobs", ns), body=body)


async def delete_job(api: client.ApiClient, ns: str, name: str) -> None:
    try:
        await kube.request(api, "DELETE", f"{kube.collection_path(BATCH, 'jobs', ns)}/{name}")
    except ApiException as err:
        if err.status != 404:
            raise


async def pods_of(api: client.ApiClient, ns: str) -> list[dict[str, Any]]:
    listing = await kube.list_objects(api, kube.collection_path("v1", "pods", ns))
    return list(listing.get("items") or [])


def running(pod: Mapping[str, Any]) -> bool:
    return pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def job_of(pod: Mapping[str, Any]) -> str:
    return str((pod["metadata"].get("labels") or {}).get(JOB_LABEL, ""))


async def running_by_job(api: client.ApiClient, ns: str, jobs: tuple[str, ...]) -> tuple[int, ...]:
    """How many pods of each job run now (Running, not on their way out)."""
    pods = await pods_of(api, ns)
    return tuple(sum(running(p) and job_of(p) == j for p in pods) for j in jobs)


async def eviction_events(api: client.ApiClient, ns: str) -> dict[str, str]:
    """The reason (``Preempted``/``Reclaimed``) of pumice's Events, by the uid of the pod they are about."""
    listing = await kube.list_objects(api, kube.collection_path("events.k8s.io/v1", "events", ns))
    return {
        str(e.get("regarding", {}).get("uid")): str(e["reason"])
        for e in listing.get("items") or []
        if e.get("reason") in ("Preempted", "Reclaimed")
    }


async def eviction_events_about(
    api: client.ApiClient, ns: str, uids: set[str], within: float = 30.0
) -> dict[str, str]:
    """:func:`eviction_events` once each of ``uids`` has one, or after ``within`` seconds (the caller
    asserts): pumice writes its Events in the background, a moment after the eviction."""
    seen: list[dict[str, str]] = []

    async def all_there() -> bool:
        seen.append(await eviction_events(api, ns))
        return uids <= set(seen[-1])

    with contextlib.suppress(TimeoutError):
        await kube.wait_for(all_there, within, interval=0.3)
    return seen[-1]


# --- what happened to every pod ---------------------------------------------------------------------------


@dataclass
class PodHistory:
    """Every pod of a namespace as a watch shows it: when each started running, which got the
    ``DisruptionTarget`` condition (and its reason), which were deleted; and a timeline for messages."""

    api: client.ApiClient
    namespace: str
    t0: float = field(default_factory=time.monotonic)
    names: dict[str, str] = field(default_factory=dict)  # uid -> name
    jobs: dict[str, str] = field(default_factory=dict)  # uid -> job
    started: dict[str, float] = field(default_factory=dict)
    disrupted: dict[str, str] = field(default_factory=dict)  # uid -> reason
    deleted: dict[str, float] = field(default_factory=dict)
    timeline: list[str] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None
    _synced: asyncio.Event = field(default_factory=asyncio.Event)
    _phases: dict[str, str] = field(default_factory=dict)

    async def __aenter__(self) -> PodHistory:
        self._task = asyncio.create_task(self._run(), name=f"pod-history-{self.namespace}")
        synced = asyncio.create_task(self._synced.wait())
        done, _ = await asyncio.wait({synced, self._task}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        if synced not in done:
            synced.cancel()
            await self.__aexit__()
            raise TimeoutError("the pod watch did not sync")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def check(self) -> None:
        if self._task is not None and self._task.done() and not self._task.cancelled():
            self._task.result()  # re-raise a crash of the watch

    async def _run(self) -> None:
        path = kube.collection_path("v1", "pods", self.namespace)
        while True:
            listing = await kube.list_objects(self.api, path)
            version = listing["metadata"]["resourceVersion"]
            for pod in listing.get("items") or []:
                self._see("LISTED", pod)
            self._synced.set()
            try:
                async for event in kube.watch_events(self.api, path, resource_version=version):
                    obj = event["object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self._see(event["type"], obj)
            except kube.WatchExpired:
                continue

    def _see(self, kind: str, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        uid, name = str(meta["uid"]), str(meta["name"])
        now = time.monotonic() - self.t0
        self.names[uid] = name
        self.jobs[uid] = job_of(pod)
        status = pod.get("status") or {}
        phase = str(status.get("phase", "Pending"))
        node = pod.get("spec", {}).get("nodeName") or "-"
        notes = []
        if phase == "Running" and uid not in self.started:
            self.started[uid] = now
        condition = kube.pod_condition(pod, "DisruptionTarget")
        if condition is not None and condition.get("status") == "True" and uid not in self.disrupted:
            self.disrupted[uid] = str(condition.get("reason"))
            notes.append(f"DisruptionTarget {condition.get('reason')}: {condition.get('message')}")
        if meta.get("deletionTimestamp") and "deleting" not in self._phases.get(uid, ""):
            notes.append("deleting")
            phase += " deleting"
        if kind == "DELETED":
            self.deleted[uid] = now
            notes.append("deleted")
        if kind != "MODIFIED" or notes or self._phases.get(uid) != f"{phase} {node}":
            self.timeline.append(f"{now:7.2f}s {kind:8} {name} uid {uid[:8]} {phase} on {node} {notes or ''}")
        self._phases[uid] = f"{phase} {node}"

    def victims(self, job: str | None = None) -> dict[str, str]:
        """Names of the pods (of ``job``) that got the DisruptionTarget condition -> its reason."""
        return {
            self.names[u]: why for u, why in self.disrupted.items() if job is None or self.jobs.get(u) == job
        }

    def uids_of(self, job: str) -> set[str]:
        return {u for u, j in self.jobs.items() if j == job}

    def tail(self, n: int = 60) -> str:
        return "\n".join(self.timeline[-n:])


async def hold(
    what: str,
    seconds: float,
    check: Callable[[], Awaitable[str | None]],
    history: PodHistory | None = None,
    interval: float = 0.5,
) -> None:
    """Assert ``check()`` (a problem, or None) holds for ``seconds``, looking every ``interval``."""
    deadline = time.monotonic() + seconds
    while True:
        problem = await check()
        if history is not None:
            history.check()
        assert problem is None, f"{what}: {problem}" + (f"\ntimeline:\n{history.tail()}" if history else "")
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(interval)


async def wait_split(
    api: client.ApiClient,
    ns: str,
    jobs: tuple[str, ...],
    want: tuple[int, ...],
    within: float,
    history: PodHistory | None = None,
) -> None:
    seen: list[tuple[int, ...]] = []

    async def check() -> bool:
        if history is not None:
            history.check()
        seen.append(await running_by_job(api, ns, jobs))
        return seen[-1] == want

    try:
        await kube.wait_for(check, within, interval=0.2)
    except TimeoutError:
        timeline = f"\ntimeline:\n{history.tail()}" if history is not None else ""
        raise AssertionError(
            f"running pods of {jobs} never were {want} within {within:.0f}s; last {seen[-1:]}{timeline}"
        ) from None


async def reclaim_to_even(
    api: client.ApiClient,
    ns: str,
    queue: str,
    sel: Mapping[str, str],
    history: PodHistory,
    what: str,
    quiet: float,
) -> tuple[float, dict[str, str]]:
    """Submit job ``a`` (4 x 1 cpu, minAvailable 1) to ``queue`` while job ``b`` holds the room: the
    split must reach 2/2 within 60 s and stay so, with no further eviction, for ``quiet`` seconds. How
    long the reclaim took, and its victims."""
    t0 = time.monotonic()
    await create_job(api, ns, "a", job_spec(queue=queue, replicas=4, min_available=1, selector=sel))
    await wait_split(api, ns, ("a", "b"), (2, 2), 60, history)
    reclaimed_in = time.monotonic() - t0
    victims_then = history.victims()

    async def steady() -> str | None:
        split = await running_by_job(api, ns, ("a", "b"))
        if split != (2, 2):
            return f"running (a, b) {split}"
        if history.victims() != victims_then:
            return f"more evictions: {history.victims()} (were {victims_then})"
        return None

    await hold(what, quiet, steady, history, interval=1.0)
    return reclaimed_in, victims_then


def short_id() -> str:
    return secrets.token_hex(3)


# --- the tests --------------------------------------------------------------------------------------------


async def test_two_equal_queues_submitted_together_split_a_full_cluster_evenly_every_time(
    ci_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="2", labels=sel)
    sid = short_id()
    qa, qb = f"share-a-{sid}", f"share-b-{sid}"
    for q in (qa, qb):
        await create_queue(kube_api, cluster_objects, q, {"weight": 1, "reclaimable": True})
    splits: list[tuple[int, int]] = []
    took: list[float] = []
    uneven: list[str] = []  # the timeline of each run that did not split 2/2
    async with PodHistory(kube_api, namespace) as history:
        for run in range(10):
            t0, mark = time.monotonic(), len(history.timeline)
            a, b = f"a{run}", f"b{run}"
            await asyncio.gather(
                create_job(
                    kube_api, namespace, a, job_spec(queue=qa, replicas=4, min_available=1, selector=sel)
                ),
                create_job(
                    kube_api, namespace, b, job_spec(queue=qb, replicas=4, min_available=1, selector=sel)
                ),
            )

            async def four_running(a: str = a, b: str = b) -> tuple[int, int] | None:
                history.check()
                na, nb = await running_by_job(kube_api, namespace, (a, b))
                return (na, nb) if na + nb == 4 else None

            split = await kube.wait_for(
                four_running, 30, interval=0.1, message=lambda: f"4 running pods\n{history.tail()}"
            )
            splits.append(split)
            took.append(time.monotonic() - t0)
            if split != (2, 2):
                uneven.append(f"run {run}: {split}\n" + "\n".join(history.timeline[mark:]))
            await asyncio.gather(delete_job(kube_api, namespace, a), delete_job(kube_api, namespace, b))

            async def emptied() -> bool:
                pods = await pods_of(kube_api, namespace)
                groups = await kube.list_objects(
                    kube_api, kube.collection_path(SCHEDULING, "podgroups", namespace)
                )
                return not pods and not groups.get("items")

            await kube.wait_for(emptied, 30, interval=0.2, message="the run's pods and PodGroups gone")
    print(f"\nsplits {splits}; seconds to 4 running per run {[round(t, 1) for t in took]}")
    assert splits == [(2, 2)] * 10, f"splits per run {splits}\n" + "\n".join(uneven)
    assert not history.victims(), f"pods were evicted on the way to an even split: {history.victims()}"


async def test_a_queue_capability_holds_on_an_idle_cluster(
    ci_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="2", labels=sel)
    q = f"capped-{short_id()}"
    await create_queue(kube_api, cluster_objects, q, {"weight": 1, "capability": {"cpu": "2"}})
    await create_job(
        kube_api, namespace, "capped", job_spec(queue=q, replicas=4, min_available=1, selector=sel)
    )
    await wait_split(kube_api, namespace, ("capped",), (2,), 30)

    async def two_run_two_wait() -> str | None:
        pods = await pods_of(kube_api, namespace)
        states = sorted(
            (p["metadata"]["name"], p.get("status", {}).get("phase"), p["spec"].get("nodeName")) for p in pods
        )
        n_running = sum(running(p) for p in pods)
        unbound = sum(not p["spec"].get("nodeName") for p in pods)
        return None if (len(pods), n_running, unbound) == (4, 2, 2) else f"pods {states}"

    await hold("2 of 4 run under capability cpu 2, 2 stay Pending unbound", 5, two_run_two_wait)


async def test_a_queue_below_its_share_reclaims_it_and_the_split_then_holds_without_ping_pong(
    ci_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="2", labels=sel)
    sid = short_id()
    qa, qb = f"reclaim-a-{sid}", f"reclaim-b-{sid}"
    for q in (qa, qb):
        await create_queue(kube_api, cluster_objects, q, {"weight": 1, "reclaimable": True})
    async with PodHistory(kube_api, namespace) as history:
        await create_job(
            kube_api, namespace, "b", job_spec(queue=qb, replicas=4, min_available=1, selector=sel)
        )
        await wait_split(kube_api, namespace, ("a", "b"), (0, 4), 30, history)
        b_first = history.uids_of("b")

        reclaimed_in, victims_then = await reclaim_to_even(
            kube_api, namespace, qa, sel, history, "the split stays 2/2 with no further eviction", 30
        )

    print(f"\nreclaimed to 2/2 in {reclaimed_in:.1f}s; victims {victims_then}")
    detail = f"\ntimeline:\n{history.tail()}"
    assert set(victims_then.values()) == {"Reclaimed"}, f"{victims_then}{detail}"
    assert len(victims_then) == 2 and not history.victims("a"), f"victims {victims_then}{detail}"
    victim_uids = set(history.disrupted)
    assert victim_uids <= b_first, f"only pods that ran for b before a came are victims{detail}"
    assert victim_uids <= set(history.deleted), f"every victim is gone{detail}"
    assert set(history.deleted) == victim_uids, f"no pod but the victims was deleted{detail}"
    events = await eviction_events_about(kube_api, namespace, victim_uids)
    assert {u: events.get(u) for u in victim_uids} == dict.fromkeys(victim_uids, "Reclaimed"), events


async def test_a_high_priority_job_preempts_a_low_priority_gang_whole(
    ci_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="2", labels=sel)
    sid = short_id()
    q, high, low = f"prio-{sid}", f"high-{sid}", f"low-{sid}"
    await create_queue(kube_api, cluster_objects, q, {"weight": 1})
    await create_priority_class(kube_api, cluster_objects, low, 10)
    await create_priority_class(kube_api, cluster_objects, high, 1000)
    async with PodHistory(kube_api, namespace) as history:
        await create_job(
            kube_api,
            namespace,
            "low",
            job_spec(queue=q, replicas=4, min_available=4, selector=sel, priority_class=low),
        )
        await wait_split(kube_api, namespace, ("low", "high"), (4, 0), 30, history)
        low_first = history.uids_of("low")
        t0 = time.monotonic()
        await create_job(
            kube_api,
            namespace,
            "high",
            job_spec(queue=q, replicas=2, min_available=2, selector=sel, priority_class=high),
        )
        await wait_split(kube_api, namespace, ("low", "high"), (0, 2), 60, history)
        preempted_in = time.monotonic() - t0

        async def low_stays_out() -> str | None:
            split = await running_by_job(kube_api, namespace, ("low", "high"))
            return None if split == (0, 2) else f"running (low, high) {split}"

        # The low gang (4 of 4) cannot run on the 2 cpu left: none of it may run alone.
        await hold("the low gang stays out whole while the high job runs", 3, low_stays_out, history)

        # The high job needed only half the gang's room: the other victims may still be on their way out
        # (evicted, then deleted by the kubelet). Wait while the watch records; the checks below judge.
        async def victims_gone() -> bool:
            return low_first <= set(history.deleted)

        with contextlib.suppress(TimeoutError):
            await kube.wait_for(victims_gone, 30, interval=0.2)

    print(f"\nhigh job running {preempted_in:.1f}s after it was submitted")
    detail = f"\ntimeline:\n{history.tail()}"
    victims = {u for u in history.disrupted if u in low_first}
    assert victims == low_first, f"the whole low gang was evicted, not part of it{detail}"
    assert set(history.disrupted.values()) == {"Preempted"}, f"{history.disrupted}{detail}"
    assert not set(history.disrupted) - low_first, f"only the low gang's pods were victims{detail}"
    assert low_first <= set(history.deleted), f"every victim is gone{detail}"
    events = await eviction_events_about(kube_api, namespace, low_first)
    assert {u: events.get(u) for u in low_first} == dict.fromkeys(low_first, "Preempted"), events


# The CI conf with the starvation guard on: a job that cannot start for 3 s gets nodes held for it.
GUARD_CONF = CI_CONF + "configurations:\n- name: allocate\n  arguments: {reserveAfter: 3s}\n"


@pytest.fixture
def guard_pumice(control_plane: ControlPlane) -> None:
    ensure_pumice(control_plane, scheduler_conf=GUARD_CONF)


async def test_a_starving_large_job_gets_its_reservation_while_small_jobs_backfill_around_it(
    guard_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    """Half the cluster busy, a 4-cpu gang waits past reserveAfter: a small job that does not say how
    long it runs may not take the held room (it would delay the gang); one that says it ends first
    backfills; when the busy job ends the gang runs, and the small one that waited never overtook it."""
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="2", labels=sel)
    q = f"starve-{short_id()}"
    await create_queue(kube_api, cluster_objects, q, {"weight": 1})
    await create_job(
        kube_api, namespace, "busy", job_spec(queue=q, replicas=2, min_available=2, selector=sel)
    )
    await wait_split(kube_api, namespace, ("busy",), (2,), 30)
    await create_job(
        kube_api, namespace, "large", job_spec(queue=q, replicas=4, min_available=4, selector=sel)
    )
    seen: list[Any] = []

    async def reserved() -> bool:
        # Past reserveAfter (3 s) from the PodGroup's creation, which the job controller does when it can:
        # the reservation shows on the large group's reason. (A fixed 5 s sleep raced a slow controller.)
        groups = await kube.list_objects(kube_api, kube.collection_path(SCHEDULING, "podgroups", namespace))
        large = [g for g in groups.get("items") or [] if g["metadata"]["name"].startswith("large-")]
        seen[:] = [g.get("status", {}).get("conditions") for g in large]
        messages = [str(c.get("message")) for g in large for c in g.get("status", {}).get("conditions") or []]
        return any("reserved for starving job" in m for m in messages)

    await kube.wait_for(reserved, 30, interval=0.3, message=lambda: f"the large job's reservation; {seen}")
    await create_job(
        kube_api, namespace, "slow", job_spec(queue=q, replicas=1, min_available=1, selector=sel)
    )
    quick = job_spec(queue=q, replicas=1, min_available=1, selector=sel)
    quick["tasks"][0]["template"]["metadata"] = {"annotations": {"pumice.dev/expected-runtime": "1m"}}
    await create_job(kube_api, namespace, "quick", quick)
    await wait_split(kube_api, namespace, ("quick", "slow", "large"), (1, 0, 0), 30)
    await asyncio.sleep(3)
    assert await running_by_job(kube_api, namespace, ("quick", "slow", "large")) == (1, 0, 0)
    for name in ("busy-w-0", "busy-w-1", "quick-w-0"):
        await fake_kubelet.succeed(namespace, name)
    await wait_split(kube_api, namespace, ("large", "slow"), (4, 0), 60)


async def test_a_three_level_queue_tree_lends_idle_room_and_reclaims_it(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    missing = _capacity_plugin_missing()
    if missing:
        pytest.skip(missing)
    ensure_pumice(control_plane, scheduler_conf=HIERARCHY_CONF)
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="2", labels=sel)
    sid = short_id()
    org_a, org_b = f"org-a-{sid}", f"org-b-{sid}"
    team_a, team_b = f"team-a-{sid}", f"team-b-{sid}"
    # root -> org-a (deserved 2) -> team-a (deserved 2); root -> org-b (deserved 2, capability 3) -> team-b
    # (deserved 2, no capability of its own: it inherits org-b's 3).
    await create_queue(kube_api, cluster_objects, org_a, {"parent": "root", "deserved": {"cpu": "2"}})
    await create_queue(
        kube_api,
        cluster_objects,
        org_b,
        {"parent": "root", "deserved": {"cpu": "2"}, "capability": {"cpu": "3"}},
    )
    await create_queue(kube_api, cluster_objects, team_a, {"parent": org_a, "deserved": {"cpu": "2"}})
    await create_queue(kube_api, cluster_objects, team_b, {"parent": org_b, "deserved": {"cpu": "2"}})
    async with PodHistory(kube_api, namespace) as history:
        # team-b borrows team-a's idle share, up to what its ancestor org-b allows (3), not the cluster (4).
        await create_job(
            kube_api, namespace, "b", job_spec(queue=team_b, replicas=4, min_available=1, selector=sel)
        )
        await wait_split(kube_api, namespace, ("a", "b"), (0, 3), 30, history)

        async def capped() -> str | None:
            split = await running_by_job(kube_api, namespace, ("a", "b"))
            return None if split == (0, 3) else f"running (a, b) {split}"

        await hold("team-b holds org-b's capability 3 of the 4 idle cpu", 3, capped, history)
        b_first = history.uids_of("b")

        # team-a wants its deserved share back: the idle cpu, and one reclaimed from team-b.
        reclaimed_in, victims_then = await reclaim_to_even(
            kube_api,
            namespace,
            team_a,
            sel,
            history,
            "the tree's split stays 2/2 with no further eviction",
            10,
        )

    print(f"\ntree: reclaimed to 2/2 in {reclaimed_in:.1f}s; victims {victims_then}")
    detail = f"\ntimeline:\n{history.tail()}"
    assert len(victims_then) == 1 and set(victims_then.values()) == {"Reclaimed"}, f"{victims_then}{detail}"
    assert set(history.disrupted) <= b_first, f"the victim is one of team-b's borrowed pods{detail}"


async def test_a_queue_tree_gives_back_what_an_elastic_job_borrowed(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    """Issue #22, item 1: org (capability and deserved cpu 4) has ta and tb (deserved 2 each), on two 2-cpu
    nodes. ta's job (4 x 1 cpu, minAvailable 1) runs all 4, borrowing tb's share; tb's job (2 x 1 cpu,
    minAvailable 2) is admitted because 3 of ta's cpu are elastic (Volcano's jobEnqueueable), reclaim takes
    two of ta's pods, and tb runs 2/2 within 30 s and stays so, ta keeping at least its minimum."""
    ensure_pumice(control_plane, scheduler_conf=CAPACITY_TREE_CONF)
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="2", labels=sel)
    sid = short_id()
    org, ta, tb = f"org-{sid}", f"ta-{sid}", f"tb-{sid}"
    await create_queue(
        kube_api,
        cluster_objects,
        org,
        {"parent": "root", "deserved": {"cpu": "4"}, "capability": {"cpu": "4"}},
    )
    await create_queue(kube_api, cluster_objects, ta, {"parent": org, "deserved": {"cpu": "2"}})
    await create_queue(kube_api, cluster_objects, tb, {"parent": org, "deserved": {"cpu": "2"}})
    async with PodHistory(kube_api, namespace) as history:
        await create_job(
            kube_api, namespace, "ta", job_spec(queue=ta, replicas=4, min_available=1, selector=sel)
        )
        await wait_split(kube_api, namespace, ("ta", "tb"), (4, 0), 60, history)
        ta_first = history.uids_of("ta")

        t0 = time.monotonic()
        await create_job(
            kube_api, namespace, "tb", job_spec(queue=tb, replicas=2, min_available=2, selector=sel)
        )
        seen: list[tuple[int, ...]] = []

        async def tb_runs() -> bool:
            history.check()
            seen.append(await running_by_job(kube_api, namespace, ("ta", "tb")))
            return seen[-1][1] == 2

        try:
            await kube.wait_for(tb_runs, 30, interval=0.2)
        except TimeoutError:
            raise AssertionError(
                f"tb never ran 2/2 within 30 s; last (ta, tb) {seen[-1:]}\n{history.tail()}"
            ) from None
        took = time.monotonic() - t0
        victims_then = history.victims()

        async def steady() -> str | None:
            split = await running_by_job(kube_api, namespace, ("ta", "tb"))
            if split[1] != 2 or split[0] < 1:
                return f"running (ta, tb) {split}"
            if history.victims() != victims_then:
                return f"more evictions: {history.victims()} (were {victims_then})"
            return None

        await hold("tb keeps 2/2 and ta at least its minimum", 10, steady, history, interval=1.0)

    print(f"\nelastic tree: tb ran 2/2 {took:.1f}s after its job was created; victims {victims_then}")
    detail = f"\ntimeline:\n{history.tail()}"
    assert len(victims_then) == 2 and set(victims_then.values()) == {"Reclaimed"}, f"{victims_then}{detail}"
    assert set(history.disrupted) <= ta_first, f"the victims are ta's borrowed pods{detail}"
