"""The store's record of a pod, read straight from the raw metadata, is what it was when it was read through
:func:`~controllers.state.meta.read_meta` (hypothesis): random pods of every metadata shape (odd ones
too: read_meta never raises, nor may the record), lean or kept whole, give equal records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from controllers.state.indexes import owner_key, pod_record
from controllers.state.meta import ObjectMeta, read_meta
from controllers.state.pod_facts import PodFacts, pod_facts
from controllers.state.store import Stored
from extender.api import labels as L
from extender.core.workloads import named_group, owner_group_name, workload_owner

Obj = dict[str, Any]
NAMES = frozenset({"volcano"})


def _reference(obj: Obj) -> Stored:
    """The record as the store made it before (every label and annotation copied, then dropped)."""
    meta = read_meta(obj)
    full = Stored(obj, meta, pod_facts(obj, meta.annotations))
    spec = obj.get("spec")
    owner = workload_owner(meta.raw)
    named = named_group(meta.raw)
    if (
        isinstance(spec, Mapping)
        and spec.get("schedulerName") in NAMES
        and owner is not None
        and (named is None or named == owner_group_name(owner))
    ):
        assert owner_key(meta.namespace or "default", owner)
        return full
    job = meta.labels.get(L.JOB_NAME_KEY)
    lean = ObjectMeta(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        resource_version=meta.resource_version,
        labels={} if job is None else {L.JOB_NAME_KEY: job},
        owner_references=meta.owner_references,
        deletion_timestamp=meta.deletion_timestamp,
        creation_timestamp=meta.creation_timestamp,
    )
    return Stored({}, lean, full.pod)


_ODD = st.sampled_from([None, 7, ["x"], {"x": 1}])
_STAMP = st.sampled_from(["2026-11-27T10:00:00Z", "2026-11-27T10:00:01Z", "2026-11-27T10:00:00", "soon", ""])
_OWNER = st.one_of(
    st.fixed_dictionaries(
        {
            "apiVersion": st.sampled_from(["batch.volcano.sh/v1alpha1", "apps/v1", "batch/v1", "v1"]),
            "kind": st.sampled_from(["Job", "ReplicaSet", "StatefulSet", "Deployment"]),
            "name": st.sampled_from(["job-0", "rs-1", ""]),
            "uid": st.sampled_from(["u-1", "u-2", ""]),
            "controller": st.sampled_from([True, False, "true"]),
        }
    ),
    _ODD,
)


@st.composite
def _meta(draw: st.DrawFn) -> Any:
    meta: Obj = {}
    for key, values in {
        "namespace": st.one_of(st.sampled_from(["", "ns", "default"]), _ODD),
        "name": st.one_of(st.sampled_from(["p-0", "p-1"]), _ODD),
        "uid": st.sampled_from(["u-0", "u-1"]),
        "resourceVersion": st.one_of(st.sampled_from(["1", "22"]), _ODD),
        "generation": st.sampled_from([1, True, "2"]),
        "deletionTimestamp": st.one_of(_STAMP, _ODD),
        "creationTimestamp": st.one_of(_STAMP, _ODD),
        "labels": st.one_of(
            st.dictionaries(
                st.sampled_from([L.JOB_NAME_KEY, "app", L.TASK_SPEC_ANNOTATION]),
                st.one_of(st.sampled_from(["job-0", "job-1"]), _ODD),
            ),
            _ODD,
        ),
        "annotations": st.one_of(
            st.dictionaries(
                st.sampled_from(
                    [L.TASK_SPEC_ANNOTATION, L.GROUP_NAME_ANNOTATION, L.TASK_INDEX_KEY, L.JOB_VERSION_KEY]
                ),
                st.one_of(st.sampled_from(["worker", "podgroup-u-1", "3"]), _ODD),
            ),
            _ODD,
        ),
        "ownerReferences": st.one_of(st.lists(_OWNER, max_size=2), _ODD),
    }.items():
        if draw(st.booleans()):
            meta[key] = draw(values)
    return meta if draw(st.integers(0, 9)) else draw(_ODD)


_DONE = {"terminated": {"exitCode": 1, "finishedAt": "2026-11-27T10:00:09Z"}}
_CONTAINER = st.fixed_dictionaries(
    {"ready": st.booleans(), "restartCount": st.sampled_from([0, 2])},
    optional={
        "state": st.sampled_from([{"running": {}}, _DONE]),
        "lastState": st.sampled_from([{}, {"terminated": {"exitCode": 137}}]),
    },
)  # fmt: skip


@st.composite
def pods(draw: st.DrawFn) -> Obj:
    status: Obj = {}
    if draw(st.booleans()):
        status["phase"] = draw(st.sampled_from(["Running", "Pending", "Succeeded", "Weird"]))
    if draw(st.booleans()):
        status["podIP"] = draw(st.sampled_from(["10.0.0.1", ""]))
    if draw(st.booleans()):
        status["containerStatuses"] = draw(st.lists(_CONTAINER, max_size=2))
    if draw(st.booleans()):
        status["conditions"] = [
            {"type": "DisruptionTarget", "status": draw(st.sampled_from(["True", "False"]))}
        ]
    spec = {"schedulerName": draw(st.sampled_from(["volcano", "default-scheduler"]))}
    return {"metadata": draw(_meta()), "spec": spec, "status": status}


def _facts(f: PodFacts | None) -> Any:
    if f is None:
        return None
    viewed = (type(f.viewed), str(f.viewed)) if isinstance(f.viewed, Exception) else f.viewed
    return viewed, f.ip, f.phase, f.task


_RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-1", "uid": "u-1", "controller": True}


def _owned(**meta: Any) -> Obj:
    base = {"name": "p", "namespace": "ns", "uid": "u", "ownerReferences": [_RS]}
    return {"metadata": {**base, **meta}, "spec": {"schedulerName": "volcano"}, "status": {}}


@settings(max_examples=600, deadline=None)
@given(st.lists(pods(), min_size=1, max_size=6))
# A workload's pod (kept whole), one that names another group (lean) and one in no namespace.
@example([_owned(), _owned(annotations={L.GROUP_NAME_ANNOTATION: "theirs"}), _owned(namespace=None)])
def test_a_pod_is_recorded_as_read_meta_read_it(objs: list[Obj]) -> None:
    record = pod_record(NAMES)
    for obj in objs:
        got, want = record(obj), _reference(obj)
        assert got.obj == want.obj
        assert (got.obj is obj) == (want.obj is obj)  # kept whole, or without its body
        assert got.meta == want.meta
        assert got.meta.raw == want.meta.raw
        assert _facts(got.pod) == _facts(want.pod)
