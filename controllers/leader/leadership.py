"""What the rest of the process asks of leader election: :class:`Leadership`.

One object per process, written by the elector alone (:mod:`~controllers.leader.elector`) and read by
everything that acts as the leader: the fence (:mod:`~controllers.leader.fence`), the leader-only tasks'
supervisor (:mod:`~controllers.leader.terms`), the extender's forwarding and ``/readyz``, the metrics.

Invariants:
- :attr:`Leadership.leading` is computed from the clock each time it is read (the fence of
  :func:`~controllers.leader.decide.leads`): it turns false at the renew deadline by itself, even if the
  elector is stuck in a request, so no leader-only write can outlive the deadline;
- a term (:attr:`Leadership.term`) starts with every acquisition and ends at the first moment
  :attr:`leading` is false; it never resumes: leading again is a new term;
- with leader election off (``--leader-elect=false``) the process leads, in one term, for its whole life.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from controllers.leader.decide import Timing, leads


class NotLeading(ConnectionError):
    """A leader-only write refused before it was sent: this process does not lead (any more). A
    ``ConnectionError`` because every caller already reads one as "not done, nothing sent": a reconciler
    retries with backoff, the scheduling writes drop what depended on the write."""


class Leadership:
    def __init__(
        self,
        *,
        identity: str,
        timing: Timing,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.identity = identity
        self.timing = timing
        self.enabled = enabled
        self.clock = clock
        # When this process sent its last successful write of the Lease as holder (None: not leading).
        self._last_renew: float | None = None if enabled else clock()
        self.term = 0 if enabled else 1
        # The holder as last read, its extender URL, and when that record may be taken over (local clock).
        self.holder = ""
        self.holder_url = ""
        self.holder_expires = 0.0
        # Set by the tasks' supervisor once a term's leader-only tasks run (the extender answers locally
        # only then), cleared when they stop.
        self.serving = False
        # Holder changes this replica saw (including to and from itself), for pumice_leader_transitions_total.
        self.transitions = 0
        # Whether the current term was taken from another holder whose lease had lapsed: that holder's
        # fence stopped its writes at its renew deadline, lease_duration - renew_deadline seconds before
        # the takeover at least, so nothing it set in motion is still on its way (see wiring.begin_term).
        self.predecessor_quiet = False
        self._observed = False
        self._changed = asyncio.Event()

    # --- read by everyone -------------------------------------------------------------------------------
    @property
    def leading(self) -> bool:
        if not self.enabled:
            return True
        return leads(self._last_renew, self.clock(), self.timing)

    def check(self) -> None:
        """Raise :class:`NotLeading` unless this process leads now (the fence)."""
        if not self.leading:
            raise NotLeading(f"pumice replica {self.identity} does not lead: leader-only write refused")

    @property
    def last_renew(self) -> float | None:
        """When the last successful write of the Lease as holder was sent (local clock; kept past the
        deadline until the elector steps down), or None."""
        return self._last_renew if self.enabled else None

    def deadline(self) -> float | None:
        """When the current term ends at the latest unless renewed (local clock), or None."""
        if not self.enabled or self._last_renew is None:
            return None
        return self._last_renew + self.timing.renew_deadline

    def leader_url(self) -> str | None:
        """Where to forward the extender verbs: another replica's extender, while its lease is live as
        this replica last saw it; None when this process leads or no leader is known."""
        if self.leading or not self.holder or self.holder == self.identity or not self.holder_url:
            return None
        if self.clock() >= self.holder_expires:
            return None
        return self.holder_url

    async def wait_leading(self) -> None:
        while not self.leading:
            await self._wait_change(None)

    async def wait_lost(self, term: int) -> None:
        """Return once term ``term`` is over: a step-down, the renew deadline passing, or a newer term
        (the deadline passed and the Lease was acquired again before the caller looked)."""
        while self.leading and self.term == term:
            deadline = self.deadline()
            await self._wait_change(None if deadline is None else max(0.0, deadline - self.clock()))

    async def _wait_change(self, within: float | None) -> None:
        event = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await event.wait()

    # --- written by the elector ---------------------------------------------------------------------------
    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def saw(self, holder: str, url: str, expires: float) -> None:
        """The Lease as just read: its holder, the holder's extender and when it may be taken over."""
        if self._observed and holder != self.holder:
            self.transitions += 1
        self._observed = True
        changed = (holder, url) != (self.holder, self.holder_url)
        self.holder, self.holder_url, self.holder_expires = holder, url, expires
        if changed:
            self._notify()

    def renewed(self, sent: float, *, new_term: bool, from_lapsed: bool = False) -> None:
        """A write of the Lease naming this process succeeded; it was sent at ``sent`` (local clock).
        ``from_lapsed``: a new term taken over from another holder whose lease had expired."""
        if new_term:
            self.term += 1
            self.predecessor_quiet = from_lapsed
        self._last_renew = sent
        self._notify()

    def step_down(self) -> None:
        if self._last_renew is not None and self.enabled:
            self._last_renew = None
            self._notify()
