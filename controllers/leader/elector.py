"""The elector: the thin async loop around :func:`~controllers.leader.decide.decide`, and the Lease's I/O.

Every ``retry_period`` (sooner when the Lease's watch shows a change, or when a held lease reaches its renew
deadline) it reads the Lease, decides, and writes what the decision says: itself as the holder (a create
when there is no Lease, else an update onto the version read, so of two replicas racing only one wins),
a renewal, or nothing. What it learns goes into :class:`~controllers.leader.leadership.Leadership`.

A replica contends only once its informers have listed (a warm standby, not a replica still starting, takes
a free Lease). A standby watches the one Lease (a field selector on its name) to react at once to a release
or a change of holder; where RBAC allows no watch, it polls every ``retry_period``. Requests are bounded by
the retry period, so a hung one cannot keep the loop past a deadline (the fence does not need the loop
anyway: it reads the clock). A failed read or write is retried; a leader whose renewals keep failing steps
down at its renew deadline. :meth:`Elector.release` lets the Lease go at shutdown (client-go's
ReleaseOnCancel), so a standby takes over at once instead of after the lease duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, Obj
from controllers.leader.decide import (
    Action,
    Observed,
    Timing,
    decide,
    expires_at,
    next_record,
    observe,
    released,
)
from controllers.leader.leadership import Leadership
from controllers.leader.record import LeaseRecord, lease_object, micro_time, read_lease

log = logging.getLogger(__name__)


class LeaseApi:
    """One Lease object: read, create, update, watch."""

    def __init__(self, client: KubeClient, namespace: str, name: str, *, timeout: float) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.timeout = timeout

    @property
    def where(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> Obj | None:
        try:
            return await self.client.request(
                "GET", paths.LEASES.item(self.name, namespace=self.namespace), time_limit=self.timeout
            )
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    async def write(self, current: Obj | None, record: LeaseRecord) -> Obj:
        """Create the Lease (``current`` None) or replace it, only onto the version read (409 otherwise)."""
        if current is None:
            body = lease_object(self.name, self.namespace, record)
            return await self.client.request(
                "POST", paths.LEASES.collection(self.namespace), body=body, time_limit=self.timeout
            )
        rv = str((current.get("metadata") or {}).get("resourceVersion") or "")
        body = lease_object(self.name, self.namespace, record, resource_version=rv, base=current)
        return await self.client.request(
            "PUT", paths.LEASES.item(self.name, namespace=self.namespace), body=body, time_limit=self.timeout
        )

    async def changes(self, changed: Callable[[], None]) -> None:
        """Call ``changed`` on every event of the Lease's watch, until cancelled; without the right to
        watch (403) or with a server that cannot (405), return: the elector polls."""
        backoff = 0.5
        query = [("fieldSelector", f"metadata.name={self.name}"), ("timeoutSeconds", "300")]
        while True:
            try:
                async for _ in self.client.watch(paths.LEASES.collection(self.namespace), query):
                    changed()
                    backoff = 0.5
            except ApiError as e:
                if e.status in (403, 405):
                    log.info(
                        "cannot watch the leader-election Lease; polling it",
                        extra={"lease": self.where, "error": f"HTTP {e.status}"},
                    )
                    return
                await asyncio.sleep(backoff)
            except (OSError, TimeoutError, ValueError):
                await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 8.0)


class Elector:
    def __init__(
        self,
        api: LeaseApi,
        leadership: Leadership,
        *,
        url: str,
        wall: Callable[[], float] = time.time,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.api = api
        # Whether this replica could lead at once (its informers have listed): one that could not does not
        # take a free Lease from a warm standby, which would then wait on its sync.
        self.ready = ready
        self.leadership = leadership
        self.timing: Timing = leadership.timing
        # This replica's extender, advertised on the Lease while it leads.
        self.url = url
        self.wall = wall
        self._seen: Observed | None = None
        self._wake = asyncio.Event()
        self._resigned = False
        self.errors = 0

    @property
    def identity(self) -> str:
        return self.leadership.identity

    def _clock(self) -> float:
        return self.leadership.clock()

    async def run(self) -> None:
        """Until cancelled (a root task of ``pumice serve``)."""
        watch = asyncio.get_running_loop().create_task(self.api.changes(self._wake.set), name="lease-watch")
        try:
            while True:
                wait = await self.step()
                deadline = self.leadership.deadline()
                if deadline is not None and deadline > self._clock():
                    wait = min(wait, deadline - self._clock())  # wake at the deadline, to step down on time
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                self._wake.clear()
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch

    async def step(self) -> float:
        """One read, decision and write; the seconds until the next one."""
        lead = self.leadership
        if self._resigned:
            lead.step_down()
        elif lead.last_renew is not None and not lead.leading:
            # The renew deadline passed (renewals failed, or this loop could not run): the term is over,
            # whatever the next read would say.
            log.warning(
                "renew deadline passed; standing by", extra={"lease": self.api.where, "term": lead.term}
            )
            lead.step_down()
        try:
            current = await self.api.get()
        except (ApiError, OSError, TimeoutError, ValueError) as e:
            return self._failed("read", e)
        now = self._clock()
        record = read_lease(current) if current is not None else None
        self._seen = observe(self._seen, record, now)
        lead.saw(
            record.holder if record else "",
            record.leader_url if record else "",
            expires_at(self._seen, self.timing),
        )
        if self._resigned:
            # Shutting down: never lead again, but keep following the Lease, so that while this replica
            # drains it forwards the extender verbs to whoever leads now.
            return self.timing.retry_period
        decision = decide(
            self._seen, identity=self.identity, now=now, last_renew=lead.last_renew, timing=self.timing
        )
        if decision.action is Action.STEP_DOWN:
            log.warning(
                "lost leadership; standing by",
                extra={"lease": self.api.where, "holder": record.holder if record else "", "term": lead.term},
            )
            lead.step_down()
            return 0.0
        if decision.action in (Action.STAND_BY, Action.HOLD):
            return decision.wait
        if decision.action is Action.ACQUIRE and not self.ready():
            return min(self.timing.retry_period, 0.5)
        sent = self._clock()
        new = next_record(
            decision.action,
            record,
            identity=self.identity,
            wall=micro_time(self.wall()),
            url=self.url,
            timing=self.timing,
        )
        try:
            written = await self.api.write(current, new)
        except (ApiError, OSError, TimeoutError, ValueError) as e:
            return self._failed(decision.action.value, e)
        self._seen = observe(self._seen, read_lease(written), self._clock())
        lead.saw(self.identity, self.url, expires_at(self._seen, self.timing))
        if self._resigned:  # resigned while the write was on its way: the term does not go on
            return self.timing.retry_period
        lead.renewed(
            sent,
            new_term=decision.action is Action.ACQUIRE,
            # decide() takes another holder's record only once it has expired (a free one at once).
            from_lapsed=record is not None and record.holder not in ("", self.identity),
        )
        if decision.action is Action.ACQUIRE:
            log.info(
                "acquired leadership",
                extra={"lease": self.api.where, "identity": self.identity, "term": lead.term},
            )
        return decision.wait

    def _failed(self, what: str, error: BaseException) -> float:
        """A read or write that failed: a conflict is a lost race (read again now); anything else is
        retried after the retry period. A leader past its deadline is stepped down by the next step."""
        self.errors += 1
        if isinstance(error, ApiError) and error.status == 409:
            log.debug("leader election lost a race; reading again", extra={"lease": self.api.where})
            return 0.0
        log.warning(
            "leader election request failed",
            extra={"lease": self.api.where, "request": what, "error": str(error)[:300]},
        )
        if self.leadership.leading:
            deadline = self.leadership.deadline()
            if deadline is not None:
                return max(0.0, min(self.timing.retry_period, deadline - self._clock()))
        return self.timing.retry_period

    def resign(self) -> None:
        """Stop leading now and never lead again (shutdown): the term ends at once; :meth:`release`
        then lets the Lease go. The Lease is still followed (who leads, where to forward)."""
        self._resigned = True
        self.leadership.step_down()
        self._wake.set()

    async def release(self) -> bool:
        """Write the Lease free if it still names this replica (after :meth:`resign`, once the leader-only
        tasks have stopped), so a standby takes over at once. Whether it was released. A conflict (a
        renewal of ours that was already on its way) reads again and retries."""
        for _ in range(3):
            try:
                current = await self.api.get()
                record = read_lease(current) if current is not None else None
                if current is None or record is None or record.holder != self.identity:
                    return False
                await self.api.write(current, released(record, wall=micro_time(self.wall())))
            except ApiError as e:
                if e.status == 409:
                    continue
                return self._not_released(e)
            except (OSError, TimeoutError, ValueError) as e:
                return self._not_released(e)
            log.info("released leadership", extra={"lease": self.api.where, "identity": self.identity})
            return True
        return False

    def _not_released(self, error: BaseException) -> bool:
        log.warning("could not release the Lease", extra={"lease": self.api.where, "error": str(error)[:300]})
        return False
