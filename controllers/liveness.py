"""Liveness that tells the truth: which root tasks are alive, which loops still tick.

``/healthz`` answers from :meth:`Liveness.problems`: a root task that has ended (crashed, or returned when
it should run forever) or a loop whose heartbeat is older than it promised makes the process unhealthy, so
a kubelet liveness probe restarts it instead of trusting a process that serves a stale cache. When a root
task dies, :meth:`on_death` fires once, so the composition root can end the process within seconds even
if some other task does not honour its cancellation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class Liveness:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._beats: dict[str, tuple[float, float]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._paused: set[str] = set()
        self._stopping = False
        self.died: list[str] = []
        self.on_death: Callable[[str], None] = lambda _name: None

    def expect(self, name: str, max_age: float) -> Callable[[], None]:
        """Register a loop that beats at least every ``max_age`` seconds; returns its beat function."""
        self._beats[name] = (self.clock(), max_age)

        def beat() -> None:
            self._beats[name] = (self.clock(), max_age)

        return beat

    def pause(self, name: str) -> None:
        """A loop that stops on purpose (a leader-only loop while this replica stands by): not checked
        until :meth:`resume`."""
        self._paused.add(name)

    def resume(self, name: str) -> None:
        """Check ``name`` again, counting its age from now."""
        self._paused.discard(name)
        if name in self._beats:
            self._beats[name] = (self.clock(), self._beats[name][1])

    def watch(self, task: asyncio.Task[None]) -> None:
        name = task.get_name()
        self._tasks[name] = task
        task.add_done_callback(self._ended)

    def stopping(self) -> None:
        """A requested shutdown: tasks ending now are not deaths."""
        self._stopping = True

    def _ended(self, task: asyncio.Task[None]) -> None:
        if self._stopping:
            return
        name = task.get_name()
        self.died.append(name)
        self.on_death(name)

    def problems(self) -> list[str]:
        out = [f"root task {name} has ended" for name in self.died]
        now = self.clock()
        for name, (last, max_age) in sorted(self._beats.items()):
            if name not in self._paused and now - last > max_age:
                out.append(f"{name} has not made progress for {now - last:.0f}s (limit {max_age:g}s)")
        return out
