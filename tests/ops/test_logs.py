"""Logs a machine can read: logfmt that a logfmt parser splits into the fields that went in, JSON lines,
one line per record, and no INFO line for a cycle that decided nothing new."""

from __future__ import annotations

import io
import json
import logging
import re
from typing import Any

import pytest

from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from extender.plugins.registry import load_conf
from extender.process.logs import configure, logfmt_value
from extender.wiring import Process
from tests.ops.test_metrics_exposition import SETTINGS, node, pod, podgroup, queue

# logfmt as parsers read it (go-logfmt, Loki's logfmt stage): key=bare or key="quoted with \" escapes".
_PAIR = re.compile(r'(\w[\w.]*)=("(?:[^"\\]|\\.)*"|[^ "]*)(?: |$)')


def parse_logfmt(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(line):
        m = _PAIR.match(line, pos)
        assert m, f"not logfmt at {pos}: {line[pos:]!r}"
        raw = m.group(2)
        out[m.group(1)] = json.loads(raw) if raw.startswith('"') else raw
        pos = m.end()
    return out


def emit(fmt: str, **extra: Any) -> str:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure("INFO", fmt, stream)
        logging.getLogger("pumice.test").info("admission denied", extra=extra)
        try:
            raise ValueError("bad\nthing")
        except ValueError:
            logging.getLogger("pumice.test").exception("rule failed")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    return stream.getvalue()


TRICKY = {
    "reason": "spec.queue: queue 'x' does not exist; create it",
    "empty": "",
    "quoted": 'say "hi" \\ there',
    "eq": "a=b",
    "count": 3,
}


def test_text_is_logfmt_that_round_trips() -> None:
    lines = emit("text", **TRICKY).splitlines()
    assert len(lines) == 2  # the traceback stays inside its record's line
    fields = parse_logfmt(lines[0])
    assert fields["level"] == "INFO" and fields["msg"] == "admission denied"
    assert fields["logger"] == "pumice.test"
    assert {k: fields[k] for k in TRICKY} == {k: str(v) for k, v in TRICKY.items()}
    error = parse_logfmt(lines[1])
    assert error["level"] == "ERROR" and "ValueError: bad\nthing" in error["exception"]


def test_json_is_one_object_per_line() -> None:
    lines = emit("json", **TRICKY).splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["msg"] == "admission denied" and first["level"] == "INFO"
    assert {k: first[k] for k in TRICKY} == TRICKY
    assert first["time"].endswith("Z")
    assert "ValueError: bad\nthing" in second["exception"]


@pytest.mark.parametrize(
    ("value", "text"),
    [("plain", "plain"), ("", '""'), ("a b", '"a b"'), ('q"', '"q\\""'), ("x\ty", '"x\\u0009y"')],
)
def test_logfmt_values(value: str, text: str) -> None:
    assert logfmt_value(value) == text


async def test_a_cycle_that_changes_nothing_logs_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    kube = KubeClient(Connection(host="http://localhost"))
    try:
        proc = Process(SETTINGS, load_conf(), kube)
        h = proc.cache.handlers()
        h["nodes"].replace([node("n1", "2")])
        h["queues"].replace([queue("default")])
        h["podgroups"].replace([podgroup("big", "default", "Pending")])
        h["pods"].replace([pod("p1", "big", "", "4")])  # never fits: unschedulable every cycle
        caplog.set_level(logging.DEBUG, logger="controllers.scheduling.loop")
        for _ in range(3):
            proc.scheduler.loop.cycle()
    finally:
        await kube.close()
    cycles = [r for r in caplog.records if r.getMessage() == "cycle"]
    assert [r.levelname for r in cycles] == ["INFO", "DEBUG", "DEBUG"]
