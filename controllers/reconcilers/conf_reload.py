"""Live reload of ``--scheduler-conf`` (Volcano's "configuration hot update").

The conf file is typically a ConfigMap key mounted as a volume: the kubelet updates it by writing a new
timestamped directory and swapping the ``..data`` symlink, so the file's own inode and mtime may say nothing
while its content changes. The watcher therefore polls the *content*: every ``interval`` seconds it reads the
path (following symlinks) and hashes it. A new digest is acted on once it has been read the same on two
polls in a row, so an editor's half-written file is never loaded (a kubelet swap is atomic and costs one
extra poll).

A new version is validated completely by :func:`extender.plugins.registry.load_conf` (every plugin built
with its arguments, every action resolved) before anything changes. Then:

- valid: ``apply(conf)`` swaps it in (the scheduler takes it between cycles: a cycle already running
  finishes with the conf it started with, see :meth:`controllers.scheduling.loop.Loop.use_conf`), the
  generation goes up, an INFO line and a Normal ``SchedulerConfReloaded`` Event say so;
- invalid, unreadable or gone: the running conf stays; a WARNING line, a Warning ``SchedulerConfRejected``
  Event on pumice's own Pod (when ``POD_NAME``/``POD_NAMESPACE`` are known) and
  ``pumice_conf_reloads_total{result="error"}`` say why. The same bad version is reported once, not every
  poll; fixing it (or going back to the running version) is picked up as any other change.

Nothing here raises out of :meth:`ConfWatcher.run`: a reload that fails for any reason is a rejected
version, never a dead process.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from controllers.events import EventRecorder, Ref
from extender.core.errors import ConfigError
from extender.plugins.registry import SchedulerConf, load_conf

log = logging.getLogger(__name__)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(slots=True)
class ReloadStats:
    ok: int = 0
    error: int = 0


class ConfWatcher:
    def __init__(
        self,
        path: str,
        *,
        initial: bytes,
        apply: Callable[[SchedulerConf], None],
        events: EventRecorder | None = None,
        pod: Ref | None = None,
        interval: float = 1.0,
        load: Callable[[str], SchedulerConf] = load_conf,
    ) -> None:
        self.path = path
        self.apply = apply
        self.events = events
        self.pod = pod
        self.interval = interval
        self.load = load
        # The running conf's digest and generation (1: the one loaded at start).
        self.digest = digest(initial)
        self.generation = 1
        self.stats = ReloadStats()
        self.last_error = ""
        # A digest read once, waiting to be read again before it is acted on.
        self._candidate: str | None = None
        # The last version (digest, or the read error) reported as rejected: reported once.
        self._rejected: str | None = None

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                data: bytes | OSError = await asyncio.to_thread(Path(self.path).read_bytes)
            except OSError as e:
                data = e
            self.poll(data)

    def poll(self, data: bytes | OSError) -> bool | None:
        """One look at the file's content (or why it could not be read): True when a new conf was swapped
        in, False when a new version was rejected now, None when nothing happened."""
        if isinstance(data, OSError):
            why = f"cannot read {self.path}: {data.strerror or data}"
            self._candidate = None
            return self._reject(why, why)
        d = digest(data)
        if d == self.digest:
            self._candidate, self._rejected, self.last_error = None, None, ""
            return None
        if d == self._rejected:
            return None
        if d != self._candidate:
            self._candidate = d
            return None  # read it once more before acting: it may be half written
        self._candidate = None
        try:
            conf = self.load(data.decode())
        except (ConfigError, UnicodeDecodeError) as e:
            return self._reject(d, f"{self.path}: {e}")
        except Exception as e:  # a loader bug must not kill the process either
            log.exception("scheduler conf loader raised", extra={"path": self.path})
            return self._reject(d, f"{self.path}: internal error: {type(e).__name__}: {e}")
        try:
            self.apply(conf)
        except Exception as e:
            log.exception("applying the scheduler conf raised", extra={"path": self.path})
            return self._reject(d, f"{self.path}: could not be applied: {type(e).__name__}: {e}")
        self.digest, self._rejected, self.last_error = d, None, ""
        self.generation += 1
        self.stats.ok += 1
        note = f"loaded {self.path} (generation {self.generation}, sha256 {d[:12]})"
        log.info(
            "scheduler conf reloaded",
            extra={"path": self.path, "generation": self.generation, "sha256": d[:12]},
        )
        self._event("Normal", "SchedulerConfReloaded", note)
        return True

    def _reject(self, version: str, why: str) -> bool | None:
        if version == self._rejected:
            return None
        self._rejected = version
        self.stats.error += 1
        self.last_error = why
        log.warning(
            "scheduler conf rejected; keeping the running one",
            extra={"error": why, "generation": self.generation, "sha256": self.digest[:12]},
        )
        self._event("Warning", "SchedulerConfRejected", f"{why[:600]}; keeping generation {self.generation}")
        return False

    def _event(self, type_: str, reason: str, note: str) -> None:
        if self.events is not None and self.pod is not None:
            self.events.record(self.pod, type_=type_, reason=reason, note=note, action="Reload")
