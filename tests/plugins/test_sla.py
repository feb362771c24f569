"""sla: jobs past their waiting time go first; the argument, the annotations and the clock."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.core.parse import parse_podgroup
from extender.core.timestamps import epoch
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.plugins.registry import NOT_YET, PLUGINS, load_conf
from extender.plugins.sla import SlaArgs, SlaPlugin
from tests.core.builders import T0, Raw, conf_of, conf_with, node, pod, podgroup, snapshot
from tests.plugins.helpers import group, session

HOUR = 3600.0


def _sla(raw: Raw, **annotations: str) -> Raw:
    """``raw`` (a PodGroup) with annotations; ``volcano_sh`` stands for the ``volcano.sh/`` key."""
    raw["metadata"]["annotations"] = {
        k.replace("volcano_sh", "volcano.sh/sla-waiting-time").replace("plain", "sla-waiting-time"): v
        for k, v in annotations.items()
    }
    return raw


# --- the argument ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1h2m3s", 3723.0), ("30s", 30.0), ("1.5h", 5400.0), ("1h2m3s4ms", 3723.004), ("90m", 5400.0)],
)
def test_waiting_time_argument(value: str, seconds: float) -> None:
    assert SlaArgs.parse({"sla-waiting-time": value}).waiting_time == pytest.approx(seconds)


def test_no_argument_no_default_sla() -> None:
    assert SlaArgs.parse({}).waiting_time is None


@pytest.mark.parametrize(
    "value",
    ["1", 30, 1.5, "abc", "1x", "0s", "0", "-1s", "", " ", True, None, "1h 2m"],
    ids=lambda v: repr(v),
)
def test_bad_waiting_time_fails_loading(value: Any) -> None:
    """Volcano logs a bad value and runs without a default SLA; pumice refuses the conf, naming it."""
    with pytest.raises(ConfigError, match="sla-waiting-time"):
        SlaPlugin({"sla-waiting-time": value})
    conf = conf_with("sla", arguments={"sla": {"sla-waiting-time": value}})
    with pytest.raises(ConfigError, match="plugin sla: argument sla-waiting-time"):
        load_conf(conf)


def test_unknown_argument_fails_loading() -> None:
    with pytest.raises(ConfigError, match="unknown argument 'waiting-time'"):
        SlaPlugin({"waiting-time": "1h"})


def test_registered() -> None:
    assert PLUGINS["sla"] is SlaPlugin
    assert "sla" not in NOT_YET
    load_conf(conf_with("sla", "gang", arguments={"sla": {"sla-waiting-time": "1h"}}))


# --- the annotations --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "seconds"),
    [
        ({}, None),
        ({"plain": "10m"}, 600.0),
        ({"volcano_sh": "5m"}, 300.0),
        ({"volcano_sh": "5m", "plain": "10m"}, 300.0),  # Volcano reads the volcano.sh key first
        ({"volcano_sh": "soon", "plain": "10m"}, 600.0),  # an unreadable one is skipped
        ({"volcano_sh": "0s", "plain": "-3m"}, None),  # so is a waiting time that is not positive
        ({"plain": "an hour"}, None),
    ],
    ids=["none", "plain", "volcano", "volcano-first", "skip-unreadable", "not-positive", "unreadable"],
)
def test_podgroup_annotation(annotations: dict[str, str], seconds: float | None) -> None:
    """An unreadable annotation never refuses the PodGroup: the job just has no SLA of its own."""
    g = parse_podgroup(_sla(podgroup("g", 1), **annotations))
    assert g.sla_waiting_time == (None if seconds is None else pytest.approx(seconds))


# --- job order and past_sla -------------------------------------------------------------------------

# "job1" has no annotation, "job2" one of 1h (Volcano's sla_test); both created at T0.
_T0 = epoch(T0)


def _order(argument: str | None, now: float) -> tuple[SlaPlugin, Session]:
    sla = SlaPlugin({} if argument is None else {"sla-waiting-time": argument})
    groups = [podgroup("job1", 1), _sla(podgroup("job2", 1), plain="1h")]
    ssn = Session(snapshot([node("n0")], [], groups), build_hooks([[sla]]), now=now)
    return sla, ssn


@pytest.mark.parametrize(
    ("argument", "after", "first", "past"),
    [
        # Volcano's "sla normal placement": job1 takes the 3m default, due long before job2.
        ("3m", 2 * HOUR, "job1", {"job1", "job2"}),
        # Volcano's "none placement": no default, job2 has an SLA and job1 none.
        (None, 2 * HOUR, "job2", {"job2"}),
        # Only job1 is due yet: it goes first, job2 (not due) is left to the next plugins.
        ("3m", 10 * 60, "job1", {"job1"}),
        # Nobody due: sla has no opinion at all.
        (None, 30 * 60, None, set()),
        # Due at exactly the deadline (Volcano permits once waited >= the waiting time).
        (None, HOUR, "job2", {"job2"}),
    ],
    ids=["normal", "none", "one-due", "none-due", "at-deadline"],
)
def test_job_order(argument: str | None, after: float, first: str | None, past: set[str]) -> None:
    sla, ssn = _order(argument, _T0 + after)
    job1, job2 = group(ssn, "job1"), group(ssn, "job2")
    assert {g.name for g in (job1, job2) if sla.past_sla(ssn, g)} == past
    k1, k2 = sla.job_order(ssn, job1), sla.job_order(ssn, job2)
    if first is None:
        assert k1 == k2
    else:
        assert (k1 < k2) == (first == "job1")
        assert (k2 < k1) == (first == "job2")


def test_most_overdue_goes_first() -> None:
    """Among jobs past their SLA, the earliest deadline first, however old each job is."""
    sla = SlaPlugin({})
    groups = [
        _sla(podgroup("old-patient", 1, created="2024-01-01T00:00:00Z"), plain="10h"),  # due 10:00
        _sla(podgroup("young-urgent", 1, created="2024-01-01T05:00:00Z"), plain="1h"),  # due 06:00
        podgroup("no-sla", 1, created="2023-01-01T00:00:00Z"),
    ]
    ssn = Session(snapshot([node("n0")], [], groups), build_hooks([[sla]]), now=epoch("2024-01-01T12:00:00Z"))
    order = sorted(ssn.snapshot.groups.values(), key=ssn.job_key)
    assert [g.name for g in order] == ["young-urgent", "old-patient", "no-sla"]


def test_unknown_creation_time_is_never_past() -> None:
    sla = SlaPlugin({"sla-waiting-time": "1s"})
    raw = podgroup("g", 1)
    del raw["metadata"]["creationTimestamp"]
    ssn = session([sla], [node("n0")], [], [raw])
    assert not sla.past_sla(ssn, group(ssn, "g"))
    assert sla.job_order(ssn, group(ssn, "g")) == (1, 0.0)


# --- a cycle --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plugins", "winner"), [(("sla", "gang"), "young-0"), (("gang",), "old-0")], ids=["sla", "age"]
)
def test_overdue_job_takes_the_last_cpu(plugins: tuple[str, ...], winner: str) -> None:
    """One cpu free. ``old`` was created first and has no SLA; ``young`` (5m SLA) has waited 10m. Without
    sla the older goes first; with it the overdue one."""
    groups = [
        podgroup("old", 1, created="2024-01-01T00:00:00Z"),
        _sla(podgroup("young", 1, created="2024-01-01T00:10:00Z"), volcano_sh="5m"),
    ]
    pods = [pod("old-0", group="old"), pod("young-0", group="young")]
    snap = snapshot([node("n0", cpu="1", memory="8Gi")], pods, groups)
    result = run_cycle(snap, conf_of(conf_with(*plugins)), epoch("2024-01-01T00:20:00Z"))
    assert set(result.placements) == {winner}


# --- admission past the SLA (Volcano's Permit vote) ------------------------------------------------------
def test_a_job_past_its_sla_is_admitted_though_a_later_tier_refuses() -> None:
    from tests.core.builders import NOW, T0, gang, node, queue, run

    conf = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 30m}
  - name: gang
- plugins:
  - name: proportion
"""
    pg, pods = gang("big", 2, phase="Pending", cpu="1")
    pg["spec"]["minResources"] = {"cpu": "2"}
    queues = [queue("default", capability={"cpu": "1"})]
    late = run([node("n0")], pods, [pg], queues, conf=conf, now=NOW)  # an hour after creation: past
    assert "default/big" in late.admitted
    from extender.core.timestamps import epoch

    early = run([node("n0")], pods, [pg], queues, conf=conf, now=epoch(T0) + 60)
    assert "default/big" not in early.admitted
    assert early.retry_at == epoch(T0) + 1800  # a cycle when the SLA runs out
