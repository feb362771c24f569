"""Lifecycle policies of a vcjob (``spec.policies`` and each task's ``policies``), as Volcano's
``util.go`` validatePolicies checks them: each policy names events or an exit code (not both), known events
and actions, no event or exit code twice in one list, ``*`` alone, a non-zero int32 exit code, and a
timeout that parses as a duration. Never raises; reports every problem of the list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from extender.core.durations import parse_duration
from extender.core.validation import INT32_MAX, FieldError, Obj, as_int, shown
from extender.jobs.model import POLICY_ACTIONS, Event

VALID_EVENTS: Final = tuple(e.value for e in Event)
VALID_ACTIONS: Final = tuple(sorted(a.value for a in POLICY_ACTIONS))


def policy_errors(raw: object, where: str) -> list[FieldError]:
    """Volcano's validatePolicies, for ``spec.policies`` or one task's ``policies``: each policy names
    events or an exit code (not both), known events and actions, no event or exit code twice, ``*`` alone."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [FieldError(field=where, message="must be a list of policies")]
    errors: list[FieldError] = []
    event_owner: dict[str, str] = {}
    code_owner: dict[int, str] = {}
    for j, p in enumerate(raw):
        at = f"{where}[{j}]"
        if not isinstance(p, Mapping):
            errors.append(FieldError(field=at, message="must be an object"))
            continue
        events, e = _policy_events(p, at)
        errors += e
        raw_code = p.get("exitCode")
        code = as_int(raw_code)
        if raw_code is not None and code is None:
            errors.append(
                FieldError(field=f"{at}.exitCode", message=f"must be an integer, got {shown(raw_code)}")
            )
        elif code is not None and not -INT32_MAX - 1 <= code <= INT32_MAX:
            errors.append(
                FieldError(
                    field=f"{at}.exitCode",
                    message=f"must be an integer from {-INT32_MAX - 1} to {INT32_MAX}, got {shown(code)}",
                )
            )
            code = None
        if events and raw_code is not None:
            errors.append(FieldError(field=at, message="set either event/events or exitCode, not both"))
        elif not events and raw_code is None and not e:
            errors.append(
                FieldError(field=at, message="set event, events or exitCode to say when the policy applies")
            )
        for path, event in events:
            if event not in VALID_EVENTS:
                errors.append(
                    FieldError(
                        field=path,
                        message=f"unknown event {shown(event)}; valid events are {', '.join(VALID_EVENTS)}",
                    )
                )
            elif event_owner.setdefault(event, at) != at:
                errors.append(
                    FieldError(
                        field=path,
                        message=f"event {event!r} is already handled by {event_owner[event]}; "
                        "each event may appear in one policy only",
                    )
                )
        if code is not None and not events:
            if code == 0:
                errors.append(
                    FieldError(
                        field=f"{at}.exitCode", message="0 means success; a policy needs a non-zero exit code"
                    )
                )
            elif code_owner.setdefault(code, at) != at:
                errors.append(
                    FieldError(
                        field=f"{at}.exitCode",
                        message=f"exit code {code} is already handled by {code_owner[code]}; "
                        "each exit code may appear in one policy only",
                    )
                )
        errors += _action_errors(p.get("action"), f"{at}.action")
        errors += _timeout_errors(p.get("timeout"), f"{at}.timeout")
    if Event.ANY.value in event_owner and len(event_owner) > 1:
        others = ", ".join(e for e in VALID_EVENTS if e in event_owner and e != Event.ANY.value)
        errors.append(
            FieldError(
                field=event_owner[Event.ANY.value],
                message=f"event '*' already matches every event, so no policy of {where} may name another "
                f"(found {others}); remove them or the '*'",
            )
        )
    return errors


def _policy_events(p: Obj, at: str) -> tuple[list[tuple[str, str]], list[FieldError]]:
    """(field path, event) of a policy's ``event`` and ``events``, each event once."""
    out: list[tuple[str, str]] = []
    errors: list[FieldError] = []
    event = p.get("event")
    if isinstance(event, str) and event:
        out.append((f"{at}.event", event))
    elif event not in (None, ""):
        errors.append(FieldError(field=f"{at}.event", message=f"must be an event name, got {shown(event)}"))
    events = p.get("events")
    if events is not None and not isinstance(events, list):
        errors.append(FieldError(field=f"{at}.events", message="must be a list of event names"))
    elif events is not None:
        seen = {e for _, e in out}
        for k, e in enumerate(events):
            if not isinstance(e, str) or not e:
                errors.append(
                    FieldError(field=f"{at}.events[{k}]", message=f"must be an event name, got {shown(e)}")
                )
            elif e not in seen:
                seen.add(e)
                out.append((f"{at}.events[{k}]", e))
    return out, errors


def _action_errors(action: object, at: str) -> list[FieldError]:
    if isinstance(action, str) and action in VALID_ACTIONS:
        return []
    valid = ", ".join(VALID_ACTIONS)
    if action is None or action == "":
        return [FieldError(field=at, message=f"required; valid actions are {valid}")]
    return [FieldError(field=at, message=f"unknown action {shown(action)}; valid actions are {valid}")]


def _timeout_errors(timeout: object, at: str) -> list[FieldError]:
    if timeout is None:
        return []
    if not isinstance(timeout, str):
        return [
            FieldError(field=at, message=f"must be a duration such as 30s, 5m or 1h30m, got {shown(timeout)}")
        ]
    try:
        parse_duration(timeout)
    except ValueError as e:
        return [FieldError(field=at, message=str(e))]
    return []
