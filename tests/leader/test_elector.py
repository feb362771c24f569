"""Leader election against the in-process API server: two replicas' electors on one Lease (short timings).

One leads and advertises its extender; the other stands by and knows where to forward. A release hands over
at once (the standby watches the Lease); a leader that stops renewing (killed) is replaced after the lease
duration; a leader whose Lease is taken over steps down at once; one that cannot renew stops leading at its
renew deadline, whatever its requests do.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from controllers.kube import paths
from controllers.kube.client import KubeClient
from controllers.leader.decide import Timing
from controllers.leader.elector import Elector, LeaseApi
from controllers.leader.leadership import Leadership, NotLeading
from controllers.leader.record import LeaseRecord, lease_object, micro_time, read_lease
from tests.fakeapi import FakeApiServer, serving

FAST = Timing(lease_duration=1.0, renew_deadline=0.7, retry_period=0.2)
NS, NAME = "kube-system", "pumice"
LEASE = paths.LEASES.item(NAME, namespace=NS)


def replica(client: KubeClient, name: str) -> Elector:
    lead = Leadership(identity=name, timing=FAST)
    return Elector(LeaseApi(client, NS, NAME, timeout=1.0), lead, url=f"http://{name}:8888")


@asynccontextmanager
async def running(*electors: Elector) -> AsyncIterator[dict[str, asyncio.Task[None]]]:
    tasks = {e.identity: asyncio.get_running_loop().create_task(e.run()) for e in electors}
    try:
        yield tasks
    finally:
        for t in tasks.values():
            t.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)


async def until(check: Callable[[], bool], within: float = 5.0) -> float:
    """Seconds until ``check()`` held (fails after ``within``)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < within, "timed out"
        await asyncio.sleep(0.01)
    return time.monotonic() - start


async def test_one_leads_the_other_stands_by_and_knows_where_to_forward() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        a, b = replica(client, "a"), replica(client, "b")
        async with running(a):
            await until(lambda: a.leadership.leading)
            assert not a.leadership.predecessor_quiet  # the first term: no Lease before it
            async with running(b):
                await until(lambda: b.leadership.holder == "a")
                await asyncio.sleep(3 * FAST.lease_duration)  # renewals keep b standing by
                assert a.leadership.leading and not b.leadership.leading
                assert b.leadership.leader_url() == "http://a:8888"
                assert a.leadership.leader_url() is None  # the leader forwards to nobody
        record = read_lease(fake.objects[LEASE])
        assert (record.holder, record.leader_url, record.lease_duration) == ("a", "http://a:8888", 1)


async def test_a_release_hands_over_at_once() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        a, b = replica(client, "a"), replica(client, "b")
        async with running(a, b):
            await until(lambda: a.leadership.leading or b.leadership.leading)
            leader, standby = (a, b) if a.leadership.leading else (b, a)
            await until(lambda: standby.leadership.holder == leader.identity)
            leader.resign()
            assert not leader.leadership.leading
            assert await leader.release()
            took = await until(lambda: standby.leadership.leading)
            assert took < FAST.lease_duration / 2, took  # not after the lease duration: at once
            # Released, not lapsed: the new term waits for the old leader's last writes to show.
            assert not standby.leadership.predecessor_quiet
            # While it drains, the old leader forwards to the new one: it still follows the Lease.
            await until(lambda: leader.leadership.leader_url() == f"http://{standby.identity}:8888")
            await asyncio.sleep(3 * FAST.retry_period)
            assert not leader.leadership.leading  # resigned for good
        assert read_lease(fake.objects[LEASE]).transitions >= 1


async def test_the_leader_writes_the_lease_once_per_retry_period() -> None:
    # Its own renewals come back on the watch and wake its loop; each must not set off another write.
    fake = FakeApiServer()
    async with serving(fake) as client:
        a, b = replica(client, "a"), replica(client, "b")
        async with running(a, b):
            await until(lambda: a.leadership.leading or b.leadership.leading)
            before = len(fake.calls("PUT"))
            await asyncio.sleep(10 * FAST.retry_period)
            writes = len(fake.calls("PUT")) - before
        assert 5 <= writes <= 12, writes


async def test_a_killed_leader_is_replaced_after_the_lease_duration_not_before() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        a, b = replica(client, "a"), replica(client, "b")
        async with running(a) as first:
            await until(lambda: a.leadership.leading)
            async with running(b):
                await until(lambda: b.leadership.holder == "a")
                first["a"].cancel()  # kill -9: no release, no more renewals
                killed = time.monotonic()
                await until(lambda: b.leadership.leading, within=4 * FAST.lease_duration)
                waited = time.monotonic() - killed
                assert (
                    FAST.lease_duration - FAST.retry_period
                    <= waited
                    <= FAST.lease_duration + 2 * FAST.retry_period
                )
                assert not a.leadership.leading  # its own fence ended its term (the deadline passed)
                # Taken from a lapsed lease: its holder stopped writing at its deadline, long before.
                assert b.leadership.predecessor_quiet


async def test_a_deposed_leader_steps_down_at_once_and_nobody_takes_a_live_lease() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        a, b = replica(client, "a"), replica(client, "b")
        async with running(a, b):
            await until(lambda: a.leadership.leading or b.leadership.leading)
            leader = a if a.leadership.leading else b
            term = leader.leadership.term
            current = fake.objects[LEASE]
            intruder = LeaseRecord(holder="intruder", lease_duration=30, renew_time=micro_time(time.time()))
            fake.seed(LEASE, lease_object(NAME, NS, intruder, base=current))
            lost = asyncio.get_running_loop().create_task(leader.leadership.wait_lost(term))
            took = await until(lost.done)
            assert took < FAST.renew_deadline, took  # the watch told it; no wait for its deadline
            await asyncio.sleep(3 * FAST.lease_duration)
            assert not a.leadership.leading and not b.leadership.leading
            assert b.leadership.leader_url() is None  # the intruder advertises no extender
            assert read_lease(fake.objects[LEASE]).holder == "intruder"


async def test_a_leader_that_cannot_renew_stops_at_its_deadline_and_its_writes_are_refused() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        a = replica(client, "a")
        async with running(a):
            await until(lambda: a.leadership.leading)
            fake.fail[LEASE] = 500
            deadline = a.leadership.deadline()
            assert deadline is not None
            await until(lambda: not a.leadership.leading, within=2.0)
            assert time.monotonic() >= deadline - 0.01
            try:
                a.leadership.check()
            except NotLeading:
                pass
            else:
                raise AssertionError("a write past the deadline must be refused")
            before = len(fake.requests)
            await asyncio.sleep(1.0)
            tries = len(fake.requests) - before
            assert tries <= 1.0 / FAST.retry_period + 2, (
                tries
            )  # retried every retry period, not in a hot loop
            del fake.fail[LEASE]
            await until(lambda: a.leadership.leading, within=3.0)  # a new term once it can write again
            assert a.leadership.term == 2


async def test_without_watch_rights_the_standby_polls() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        a, b = replica(client, "a"), replica(client, "b")
        async with running(a):
            await until(lambda: a.leadership.leading)
            fake.deny.clear()
            fake.fail[paths.LEASES.collection(NS)] = 403  # the watch is refused
            async with running(b):
                await until(lambda: b.leadership.holder == "a")
                a.resign()
                await a.release()
                took = await until(lambda: b.leadership.leading)
                assert took <= 2 * FAST.retry_period + 0.2, took


async def test_with_leader_election_off_the_process_always_leads() -> None:
    lead = Leadership(identity="solo", timing=FAST, enabled=False)
    assert lead.leading and lead.term == 1 and lead.deadline() is None
    lead.step_down()
    assert lead.leading
    lead.check()


async def test_a_replica_still_listing_does_not_take_a_free_lease() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        synced = [False]
        lead = Leadership(identity="cold", timing=FAST)
        cold = Elector(
            LeaseApi(client, NS, NAME, timeout=1.0), lead, url="http://cold:8888", ready=lambda: synced[0]
        )
        async with running(cold):
            await asyncio.sleep(3 * FAST.retry_period)
            assert not lead.leading and LEASE not in fake.objects
            synced[0] = True
            await until(lambda: lead.leading)
