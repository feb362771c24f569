"""Log lines a machine can read: ``--log-format text`` (logfmt) or ``json`` (one object per line).

Both carry the same fields: ``time`` (RFC 3339, UTC, milliseconds), ``level``, ``logger``, ``msg`` (the
constant message of the call) and every structured field the call passed in ``extra=``; an exception, when
there is one, as ``exception``. One record is one line in both formats: a traceback is escaped into its
field, so a line-based shipper never splits a record.

text is logfmt: ``key=value`` pairs, a value quoted (with ``\\"``, ``\\\\``, ``\\n`` escapes) when it is
empty or holds a space, ``=``, a quote or a control character, so
``reason=spec.queue: queue 'x' does not exist`` comes out as
``reason="spec.queue: queue 'x' does not exist"`` and logfmt parsers keep it whole.

json uses python-json-logger (maintained, a stdlib ``logging.Formatter``): the call sites keep stdlib
logging with ``extra=`` (the conventions' habit), where structlog would have meant rewriting every call site
for the same output.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

from pythonjsonlogger.json import JsonFormatter

FORMATS: Final = ("text", "json")
LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# Attributes every LogRecord has: anything else on a record came from ``extra=``.
_STANDARD: Final = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
_NEEDS_QUOTES: Final = frozenset(' ="\\')


def _time(record: logging.LogRecord) -> str:
    return (
        datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def logfmt_value(value: object) -> str:
    """``value`` as a logfmt value: bare when that is unambiguous, else double-quoted and escaped."""
    text = value if isinstance(value, str) else str(value)
    if text and not any(c in _NEEDS_QUOTES or c < " " or c == "\x7f" for c in text):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    escaped = "".join(c if c >= " " and c != "\x7f" else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a call passed in ``extra=``."""
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD}


class LogfmtFormatter(logging.Formatter):
    """``time=... level=INFO logger=... msg=... key=value ...`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, object] = {
            "time": _time(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for k, v in extras(record).items():
            fields[k if k not in fields else f"field.{k}"] = v
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            fields["stack"] = record.stack_info
        return " ".join(f"{k}={logfmt_value(v)}" for k, v in fields.items())


class _Json(JsonFormatter):
    def add_fields(
        self, log_record: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        log_record["time"] = _time(record)
        log_record["level"] = record.levelname
        log_record["logger"] = record.name
        super().add_fields(log_record, record, message_dict)


def formatter(fmt: str) -> logging.Formatter:
    if fmt == "json":
        # "message" renamed "msg", as in the text format; non-JSON values (enums, paths) as str().
        return _Json(
            "%(message)s", rename_fields={"message": "msg", "exc_info": "exception"}, json_default=str
        )
    if fmt == "text":
        return LogfmtFormatter()
    raise ValueError(f"log format {fmt!r}: choose one of {', '.join(FORMATS)}")


def configure(level: str, fmt: str, stream: TextIO | None = None) -> None:
    """Route every logger to one handler on ``stream`` (stderr) in ``fmt`` at ``level``."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter(fmt))
    logging.basicConfig(level=level, handlers=[handler], force=True)
