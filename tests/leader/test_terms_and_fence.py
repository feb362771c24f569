"""The leader-only tasks run exactly while a term lasts (controllers.leader.terms), and every write of a
replica that does not lead is refused before it is sent (controllers.leader.fence)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controllers.leader.decide import Timing
from controllers.leader.fence import FencedExecutor, fenced_client
from controllers.leader.leadership import Leadership, NotLeading
from controllers.leader.terms import Duty, DutyEnded, Terms
from controllers.scheduling.executor import BindError
from tests.fakeapi import FakeApiServer, serving

T = Timing(lease_duration=1.0, renew_deadline=0.7, retry_period=0.2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def leadership(clock: Clock | None = None) -> Leadership:
    return Leadership(identity="me", timing=T, clock=clock or Clock())


class Journal:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.running = 0

    def duty(self, name: str) -> Duty:
        async def run() -> None:
            self.running += 1
            self.lines.append(f"start {name}")
            try:
                await asyncio.Event().wait()
            finally:
                self.running -= 1
                self.lines.append(f"stop {name}")

        return Duty(name, run)

    async def begin(self) -> None:
        self.lines.append("begin")

    async def end(self) -> None:
        self.lines.append(f"end (running {self.running})")


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


async def test_duties_run_only_during_terms_and_the_term_ends_before_the_next_begins() -> None:
    lead, journal = leadership(), Journal()
    terms = Terms(lead, [journal.duty("loop"), journal.duty("jobs")], begin=journal.begin, end=journal.end)
    task = asyncio.get_running_loop().create_task(terms.run())
    await settle()
    assert journal.lines == [] and terms.idle.is_set()
    lead.renewed(lead.clock(), new_term=True)
    await settle()
    assert journal.lines == ["begin", "start loop", "start jobs"]
    assert lead.serving and not terms.idle.is_set()
    lead.step_down()
    await settle()
    assert journal.lines[3:] == ["stop loop", "stop jobs", "end (running 0)"]
    assert not lead.serving and terms.idle.is_set()
    lead.renewed(lead.clock(), new_term=True)
    await settle()
    assert journal.lines[6:] == ["begin", "start loop", "start jobs"] and terms.terms == 2
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert journal.running == 0


async def test_a_term_ends_at_the_renew_deadline_without_any_step_down() -> None:
    lead, journal = Leadership(identity="me", timing=T), Journal()
    terms = Terms(lead, [journal.duty("loop")], begin=journal.begin, end=journal.end)
    task = asyncio.get_running_loop().create_task(terms.run())
    lead.renewed(lead.clock(), new_term=True)
    await settle()
    assert journal.running == 1
    await asyncio.sleep(T.renew_deadline + 0.1)  # nobody renewed: the fence ends the term by itself
    assert journal.running == 0 and not lead.serving
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_new_term_right_after_a_missed_deadline_is_still_a_new_term() -> None:
    clock = Clock()
    lead, journal = leadership(clock), Journal()
    terms = Terms(lead, [journal.duty("loop")], begin=journal.begin, end=journal.end)
    task = asyncio.get_running_loop().create_task(terms.run())
    lead.renewed(clock(), new_term=True)
    await settle()
    clock.now += 10  # the deadline passed ... and the Lease was acquired again before anyone looked
    lead.renewed(clock(), new_term=True)
    await settle()
    assert journal.lines == ["begin", "start loop", "stop loop", "end (running 0)", "begin", "start loop"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_duty_that_fails_or_ends_is_a_death() -> None:
    for body in ("raise", "return"):
        lead = leadership()

        async def broken(body: str = body) -> None:
            await asyncio.sleep(0)
            if body == "raise":
                raise RuntimeError("boom")

        journal = Journal()
        terms = Terms(
            lead, [journal.duty("ok"), Duty("broken", broken)], begin=journal.begin, end=journal.end
        )
        lead.renewed(lead.clock(), new_term=True)
        with pytest.raises((RuntimeError, DutyEnded)):
            await asyncio.wait_for(terms.run(), 2.0)
        assert journal.running == 0 and journal.lines[-1] == "end (running 0)"


async def test_duties_that_will_not_stop_end_the_supervisor() -> None:
    lead, journal = leadership(), Journal()

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue

    terms = Terms(lead, [Duty("stubborn", stubborn)], begin=journal.begin, end=journal.end, stop_timeout=0.1)
    task = asyncio.get_running_loop().create_task(terms.run())
    lead.renewed(lead.clock(), new_term=True)
    await settle()
    lead.step_down()
    with pytest.raises(RuntimeError, match="did not stop"):
        await asyncio.wait_for(task, 2.0)
    for t in asyncio.all_tasks():
        if t.get_name() == "stubborn":
            t.get_coro().close()  # the test's own runaway task


async def test_with_leader_election_off_one_term_runs_for_the_whole_life() -> None:
    lead, journal = Leadership(identity="solo", timing=T, enabled=False), Journal()
    terms = Terms(lead, [journal.duty("loop")], begin=journal.begin, end=journal.end)
    task = asyncio.get_running_loop().create_task(terms.run())
    await asyncio.sleep(T.lease_duration)
    assert journal.lines == ["begin", "start loop"] and lead.serving
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


class Recording:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> None:
            self.calls.append(name)

        return call


async def test_the_fenced_executor_refuses_every_write_of_a_replica_that_does_not_lead() -> None:
    clock = Clock()
    lead, inner = leadership(clock), Recording()
    ex = FencedExecutor(inner, lead)
    with pytest.raises(BindError, match="no longer leads"):
        await ex.bind("ns", "p", "uid", "n1")
    with pytest.raises(BindError):
        await ex.annotate("ns", "p", {"a": "b"})
    for call in (
        ex.touch_planned("ns", "p", "n1"),
        ex.lift_gate("ns", "p"),
        ex.evict("ns", "p", "uid"),
        ex.mark_disrupted("ns", "p", "Preempted", "m", "now"),
        ex.patch_status("/x", {}, subresource=True),
    ):
        with pytest.raises(NotLeading):
            await call
    assert inner.calls == [] and ex.refused == 7
    lead.renewed(clock(), new_term=True)
    await ex.bind("ns", "p", "uid", "n1")
    await ex.patch_status("/x", {}, subresource=True)
    assert inner.calls == ["bind", "patch_status"]
    clock.now += T.renew_deadline  # the deadline: refused again, without any step-down
    with pytest.raises(BindError):
        await ex.bind("ns", "p", "uid", "n1")


async def test_the_fenced_client_reads_freely_and_writes_only_while_leading() -> None:
    fake = FakeApiServer()
    fake.seed("/api/v1/namespaces/ns/configmaps/c", {"metadata": {"name": "c"}, "data": {}})
    clock = Clock()
    lead = leadership(clock)
    async with serving(fake) as client:
        writer = fenced_client(client, lead)
        assert (await writer.get("/api/v1/namespaces/ns/configmaps/c"))["metadata"]["name"] == "c"
        with pytest.raises(NotLeading):
            await writer.merge_patch("/api/v1/namespaces/ns/configmaps/c", {"data": {"a": "b"}})
        # An OSError: what every reconciler reads as "not done, try again later".
        with pytest.raises(OSError, match="does not lead"):
            await writer.delete("/api/v1/namespaces/ns/configmaps/c")
        assert [r.method for r in fake.requests] == ["GET"]
        lead.renewed(clock(), new_term=True)
        await writer.merge_patch("/api/v1/namespaces/ns/configmaps/c", {"data": {"a": "b"}})
        assert fake.objects["/api/v1/namespaces/ns/configmaps/c"]["data"] == {"a": "b"}
        await writer.close()  # closes nothing: the original owns the connections
        assert (await client.get("/api/v1/namespaces/ns/configmaps/c"))["data"] == {"a": "b"}
