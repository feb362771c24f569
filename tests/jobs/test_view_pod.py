""":func:`~extender.jobs.pods.view_pod`, read for every pod the store takes, reads what it read before it
was made faster (hypothesis): random pods of every status shape, odd ones too (a container that is not an
object, a count that is not a number), give an equal PodView, or the same error, as the definition kept
here (``_before``: the function as it was)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from extender.api import labels as L
from extender.core.model import PodPhase
from extender.core.timestamps import epoch
from extender.jobs.pods import PodView, _int, view_pod

Obj = dict[str, Any]


def _before(obj: Mapping[str, Any]) -> PodView:
    meta = obj.get("metadata") or {}
    ann = meta.get("annotations") or {}
    status = obj.get("status") or {}
    try:
        phase = PodPhase(status.get("phase") or "Pending")
    except ValueError:
        phase = PodPhase.UNKNOWN
    containers = status.get("containerStatuses") or []
    exit_code, finished = None, 0.0
    for c in containers:
        term = (c.get("state") or {}).get("terminated") or (c.get("lastState") or {}).get("terminated")
        if term and term.get("exitCode") is not None:
            exit_code = int(term["exitCode"])
            finished = epoch(str(term.get("finishedAt") or ""))
            break
    conditions = status.get("conditions") or []
    evicted = status.get("reason") == "Evicted" or any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions
    )
    restarts = sum(
        int(c.get("restartCount") or 0) for c in [*containers, *(status.get("initContainerStatuses") or [])]
    )
    return PodView(
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        task=sys.intern(
            str(
                ann.get(L.TASK_SPEC_ANNOTATION)
                or (meta.get("labels") or {}).get(L.TASK_SPEC_ANNOTATION)
                or ""
            )
        ),
        index=_int(ann.get(L.TASK_INDEX_KEY), -1),
        version=_int(ann.get(L.JOB_VERSION_KEY), 0),
        phase=phase,
        deleting=bool(meta.get("deletionTimestamp")),
        created=epoch(str(meta.get("creationTimestamp") or "")),
        exit_code=exit_code,
        evicted=evicted,
        restarts=restarts,
        ready=bool(containers) and all(c.get("ready") for c in containers),
        finished=finished,
    )


_ODD: st.SearchStrategy[Any] = st.sampled_from([None, 0, 7, "x", ["x"], {}, True])
_STAMP = st.sampled_from(["2026-11-27T10:00:00Z", "2026-11-27T10:00:09", "soon", ""])
_TERM = st.fixed_dictionaries(
    {}, optional={"exitCode": st.one_of(st.sampled_from([0, 1, 137, None, "2"]), _ODD), "finishedAt": _STAMP}
)
_STATE = st.one_of(st.fixed_dictionaries({}, optional={"terminated": st.one_of(_TERM, _ODD)}), _ODD)
_CONTAINER = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "ready": st.one_of(st.booleans(), _ODD),
            "restartCount": st.one_of(st.sampled_from([0, 2, "3", None]), _ODD),
            "state": _STATE,
            "lastState": _STATE,
        },
    ),
    _ODD,
)
_CONDITION = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["DisruptionTarget", "Ready", "PodScheduled"]),
            "status": st.sampled_from(["True", "False"]),
        },
    ),
    _ODD,
)


@st.composite
def pods(draw: st.DrawFn) -> Any:
    status: Obj = {}
    for key, values in {
        "phase": st.one_of(st.sampled_from(["Running", "Pending", "Succeeded", "Failed", "Weird", ""]), _ODD),
        "reason": st.sampled_from(["Evicted", "OOMKilled", ""]),
        "containerStatuses": st.one_of(st.lists(_CONTAINER, max_size=3), _ODD),
        "initContainerStatuses": st.one_of(st.lists(_CONTAINER, max_size=2), _ODD),
        "conditions": st.one_of(st.lists(_CONDITION, max_size=4), _ODD),
    }.items():
        if draw(st.booleans()):
            status[key] = draw(values)
    meta: Obj = {}
    for key, values in {
        "name": st.one_of(st.sampled_from(["p-0", ""]), _ODD),
        "uid": st.sampled_from(["u-0", ""]),
        "deletionTimestamp": st.one_of(_STAMP, _ODD),
        "creationTimestamp": st.one_of(_STAMP, _ODD),
        "labels": st.one_of(st.just({L.TASK_SPEC_ANNOTATION: "worker"}), _ODD),
        "annotations": st.one_of(
            st.dictionaries(
                st.sampled_from([L.TASK_SPEC_ANNOTATION, L.TASK_INDEX_KEY, L.JOB_VERSION_KEY]),
                st.one_of(st.sampled_from(["ps", "3", "x", ""]), _ODD),
            ),
            _ODD,
        ),
    }.items():
        if draw(st.booleans()):
            meta[key] = draw(values)
    obj: Obj = {"metadata": meta if draw(st.integers(0, 9)) else draw(_ODD), "status": status}
    return obj if draw(st.integers(0, 19)) else {"status": draw(_ODD)}


def _outcome(fn: Any, obj: Any) -> Any:
    try:
        return fn(obj)
    except Exception as e:  # the same error, or the same view
        return type(e), str(e)


_DONE = {"state": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-27T10:00:09Z"}}, "ready": False}


@settings(max_examples=2000, deadline=None)
@given(pods())
# A finished container after a running one; a DisruptionTarget after an odd condition (the loop stops at
# the first True); an odd container after a ready one (read by restarts and ready alike).
@example({"status": {"containerStatuses": [{"ready": True}, _DONE, "x"]}})
@example({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}, "x"]}})
@example({"status": {"reason": "Evicted", "conditions": "x"}})
@example({"status": {"containerStatuses": [{"ready": False}, {"ready": True, "restartCount": "x"}]}})
def test_view_pod_reads_as_it_did(obj: Any) -> None:
    got, want = _outcome(view_pod, obj), _outcome(_before, obj)
    assert got == want
    if isinstance(want, PodView):
        assert type(got.phase) is type(want.phase)
