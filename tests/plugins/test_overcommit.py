"""overcommit: admission against allocatable × overcommit-factor."""

from __future__ import annotations

import pytest

from extender.core.errors import ConfigError
from extender.core.model import GroupKey
from extender.framework.reasons import NOT_ADMITTED
from extender.plugins.registry import load_conf
from tests.core.builders import conf_with, node, pod, podgroup, run

NODES = [node("n0", cpu="4", memory="8Gi"), node("n1", cpu="4", memory="8Gi")]  # 8 cpu, 16Gi


def conf(factor: object | None) -> str:
    args = {} if factor is None else {"overcommit": {"overcommit-factor": factor}}
    return conf_with("overcommit", actions="enqueue", arguments=args)


# (id, factor, minResources cpu, admitted)
FACTORS = [
    ("default-1.2-in", None, "9600m", True),
    ("default-1.2-out", None, "9700m", False),
    ("factor-1-exact", 1.0, "8", True),
    ("factor-1-over", 1.0, "8001m", False),
    ("factor-2", 2.0, "16", True),
    ("factor-int", 3, "24", True),
    ("factor-string-number", "1.5", "12", True),
]


@pytest.mark.parametrize(("factor", "cpu", "admitted"), [r[1:] for r in FACTORS], ids=[r[0] for r in FACTORS])
def test_factor(factor: object | None, cpu: str, admitted: bool) -> None:
    pg = podgroup("g", 1, min_resources={"cpu": cpu})
    result = run(NODES, [], [pg], conf=conf(factor))
    assert ("default/g" in result.admitted) is admitted
    if not admitted:
        assert result.unschedulable[GroupKey("default/g")].reason == NOT_ADMITTED
        assert result.unschedulable[GroupKey("default/g")].message.startswith(
            "cluster over-committed: minResources cpu"
        )


def test_every_resource_is_checked() -> None:
    pg = podgroup("g", 1, min_resources={"cpu": "1", "memory": "20Gi"})
    result = run(NODES, [], [pg], conf=conf(None))
    assert result.unschedulable[GroupKey("default/g")].message == (
        "cluster over-committed: minResources memory 20Gi > idle memory 19.2Gi"
        " (memory: allocatable 16Gi × overcommit 1.2 − used 0 − promised 0)"
    )


def test_message_spells_out_the_factors_of_idle() -> None:
    """idle = allocatable × factor − used − promised, each figure named (issue 9: a bare 7.6 hid the 1.2)."""
    running = pod("r", cpu="2", node="n0", phase="Running", scheduler="default-scheduler")
    groups = [
        podgroup("b", 1, min_resources={"cpu": "1"}, phase="Inqueue"),
        podgroup("g", 1, min_resources={"cpu": "10"}),
    ]
    result = run(NODES, [running], groups, conf=conf(1.5))
    assert result.unschedulable[GroupKey("default/g")].message == (
        "cluster over-committed: minResources cpu 10 > idle cpu 9"
        " (cpu: allocatable 8 × overcommit 1.5 − used 2 − promised 1)"
    )


@pytest.mark.parametrize(
    ("factor", "fragment"),
    [
        (0.5, "overcommit-factor 0.5 must be >= 1.0"),
        ("lots", "overcommit-factor='lots' must be a float"),
        ([1], "must be a float"),
        (float("nan"), "overcommit-factor"),
        (float("inf"), "overcommit-factor"),
    ],
    ids=["below-one", "not-a-number", "list", "nan", "inf"],
)
def test_bad_factor_fails_loading(factor: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match="overcommit") as e:
        load_conf(conf(factor))
    assert fragment in str(e.value)


def test_unknown_argument() -> None:
    with pytest.raises(ConfigError, match=r"plugin overcommit: unknown argument 'overcommit\.factor'"):
        load_conf(conf_with("overcommit", arguments={"overcommit": {"overcommit.factor": 2}}))
