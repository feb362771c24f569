"""A forecast in a worker process: :class:`ForecastProcess`, so the forecast uses another core.

A forecast is seconds of pure Python (a whole simulation). Run in a thread it shares the GIL with the
event loop: every few milliseconds the loop waits for the forecast thread to let go (CPython's switch
interval), and a filter that kube-scheduler is waiting on waits with it. In a process of its own it
holds a GIL of its own; what the serving process still pays is pickling its input and unpickling the
answer, done in a worker thread of this process, never on the event loop. The input is mostly frozen
slotted dataclasses (a Pod per pod), which the standard library pickles through ``dataclasses.fields``
object by object (about 12 us a pod: 1.3 s of the GIL at 110 000 pods); :class:`_Shipper` writes the
same pickle stream with one C ``attrgetter`` call per object instead (:func:`dumps`).

Invariants:

- one worker process at a time, started on first use with ``forkserver`` (or ``spawn``): never ``fork``,
  which would copy a process that runs threads and an event loop;
- the worker runs at a lower CPU priority (``nice`` +10 by default): it takes a core nobody else wants,
  and when the machine is busy the kernel gives the CPU to the extender and the cycle first. Without it,
  on a loaded machine the worker is one more runnable thread beside the event loop's, which a forecast
  thread, parked on the GIL, was not;
- a worker that dies (killed, out of memory, crashed in C) fails that one forecast with
  :class:`WorkerCrashed`; the next call starts a new worker, so the forecaster retries at its next turn
  and the serving process never ends because of it. A forecast that raises in the worker is that
  forecast's error (:class:`ForecastFailed`), and the worker stays;
- a call cancelled mid-forecast (the process stops) kills the worker: its answer would be for nobody;
- :meth:`ForecastProcess.close` ends the worker (SIGTERM, then SIGKILL); a worker whose parent is gone
  sees its pipe closed and exits by itself, so an ``os._exit`` of the parent leaves no orphan busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import copyreg
import dataclasses
import io
import logging
import multiprocessing
import operator
import os
import pickle
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

from controllers.simulate.forecast import ForecastInput, ForecastSettings, forecast
from extender.forecast.model import Forecast
from extender.plugins.registry import SchedulerConf

log = logging.getLogger(__name__)

START_METHODS = ("forkserver", "spawn")
NICENESS = 10  # added to the worker's nice value: see the module docstring


class WorkerCrashed(Exception):
    """The worker process ended before it answered (it is replaced at the next call)."""


class ForecastFailed(Exception):
    """The forecast raised in the worker (the worker's traceback is the message)."""


StateGetters = dict[type, Callable[[Any], Any] | None]


class _Shipper(pickle.Pickler):
    """A pickler that reduces frozen slotted dataclasses as the standard library does (``copyreg.__newobj__``
    and the list of field values, restored by their own ``__setstate__``), only faster: the values taken by
    an ``attrgetter`` built once per class, not by ``dataclasses.fields`` for every object."""

    def __init__(self, out: io.BytesIO, getters: StateGetters) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self._getters = getters

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        try:
            get = self._getters[cls]
        except KeyError:
            get = self._getters[cls] = _state_getter(cls)
        if get is None:
            return NotImplemented
        return copyreg.__newobj__, (cls,), get(obj)  # type: ignore[attr-defined]  # exists, untyped


def _state_getter(cls: type) -> Callable[[Any], Any] | None:
    """For a class whose state is dataclasses' own (a frozen slotted dataclass): its field values as a
    list, as ``dataclasses`` returns them; None for any other class (pickled as usual)."""
    getstate = getattr(cls, "__getstate__", None)
    if (
        not dataclasses.is_dataclass(cls)
        or getattr(getstate, "__module__", None) != "dataclasses"
        or getattr(getstate, "__name__", None) != "_dataclass_getstate"
    ):
        return None
    names = [f.name for f in dataclasses.fields(cls)]
    if not names:
        return None
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: [one(obj)]
    many = operator.attrgetter(*names)
    return lambda obj: list(many(obj))


def dumps(obj: object, getters: StateGetters) -> bytes:
    """``obj`` pickled as ``pickle.dumps`` would (``pickle.loads`` reads it), faster (:class:`_Shipper`)."""
    out = io.BytesIO()
    _Shipper(out, getters).dump(obj)
    return out.getvalue()


def _serve(conn: Connection, niceness: int) -> None:
    """The worker's main: forecast each input received, until the pipe closes."""
    # Ctrl-C in a terminal reaches the whole process group: the parent decides when the worker ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):  # a lower priority is a preference, not a condition
        os.nice(niceness)
    while True:
        try:
            job = conn.recv_bytes()
        except (EOFError, OSError):  # the parent closed the pipe, or is gone
            return
        answer = _answer(job)
        del job  # an idle worker holds no input
        try:
            conn.send(answer)
        except (BrokenPipeError, OSError):
            return
        del answer


def _answer(job: bytes) -> tuple[str, Any]:
    """("ok", the forecast) or ("error", the traceback); the input unpickled here dies with this frame."""
    try:
        inp, conf, settings = pickle.loads(job)
        return "ok", forecast(inp, conf, settings)
    except Exception:
        return "error", traceback.format_exc()


class ForecastProcess:
    """Runs :func:`~controllers.simulate.forecast.forecast` in one worker process (see the module
    docstring); an awaitable callable, one forecast at a time."""

    def __init__(self, start_method: str = "forkserver", *, niceness: int = NICENESS) -> None:
        if start_method not in START_METHODS:
            raise ValueError(f"start method {start_method!r}: one of {', '.join(START_METHODS)}")
        self._ctx: ForkServerContext | SpawnContext = (
            multiprocessing.get_context("forkserver")
            if start_method == "forkserver"
            else multiprocessing.get_context("spawn")
        )
        self._worker: tuple[BaseProcess, Connection] | None = None
        self._lock = asyncio.Lock()
        self.started = 0  # workers started: 1, plus one per replacement
        self.crashes = 0
        self.closed = False
        self._getters: StateGetters = {}  # see _Shipper: kept across forecasts, one per class
        self.niceness = niceness

    @property
    def pid(self) -> int | None:
        """The running worker's process id (None before the first forecast or after a crash)."""
        return self._worker[0].pid if self._worker is not None else None

    def _ensure(self) -> tuple[BaseProcess, Connection]:
        if self._worker is None:
            here, there = self._ctx.Pipe()
            proc = self._ctx.Process(
                target=_serve, args=(there, self.niceness), name="pumice-forecast", daemon=True
            )
            proc.start()
            there.close()  # only the worker holds its end: its exit is EOF here
            self._worker = (proc, here)
            self.started += 1
            log.info("forecast worker started", extra={"pid": proc.pid, "workers_started": self.started})
        return self._worker

    def _exchange(self, job: tuple[ForecastInput, SchedulerConf, ForecastSettings]) -> Any:
        """In a worker thread: the worker started if need be (the first start also starts the fork
        server, a new interpreter), the input pickled and sent, the answer read."""
        _, conn = self._ensure()
        conn.send_bytes(dumps(job, self._getters))
        return conn.recv()

    async def __call__(self, inp: ForecastInput, conf: SchedulerConf, settings: ForecastSettings) -> Forecast:
        async with self._lock:
            if self.closed:
                raise WorkerCrashed("the forecast worker is closed")
            try:
                kind, value = await asyncio.to_thread(self._exchange, (inp, conf, settings))
            except (EOFError, OSError) as e:  # it died (or could not start)
                self.crashes += 1
                proc = self._worker[0] if self._worker is not None else None
                self._stop()
                pid, code = (proc.pid, proc.exitcode) if proc is not None else (None, None)
                log.warning(
                    "forecast worker died; a new one starts with the next forecast",
                    extra={"pid": pid, "exitcode": code, "crashes": self.crashes},
                )
                raise WorkerCrashed(f"forecast worker {pid} ended (exit code {code})") from e
            except asyncio.CancelledError:
                self._stop(busy=True)  # mid-forecast: its answer would be for nobody
                raise
        if kind != "ok":
            raise ForecastFailed(str(value))
        if not isinstance(value, Forecast):
            raise ForecastFailed(f"the worker answered a {type(value).__name__}")
        return value

    def _stop(self, *, busy: bool = False) -> None:
        if self._worker is None:
            return
        proc, conn = self._worker
        self._worker = None
        if busy:  # a thread still waits on the pipe: end the worker first, so that thread sees EOF
            proc.terminate()
        else:
            conn.close()  # an idle worker exits on EOF
        proc.join(timeout=1.0)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=2.0)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=2.0)
        conn.close()

    def close(self) -> None:
        """End the worker (the process is stopping); later calls fail with :class:`WorkerCrashed`."""
        self.closed = True
        self._stop()
