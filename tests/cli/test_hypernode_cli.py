"""``pumice hypernode list|get``: HyperNodes resolved over the live nodes by the scheduler's code, with
their problems; -o yaml|json|name|jsonpath; an unreadable object and missing node access are shown, not
fatal."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cli.hypernodes import describe, list_table, resolve_rows
from extender.main import main
from tests.cli.conftest import Cli, FakeApiServer
from tests.core.test_hypernodes import by_labels, exact, hn, regex

TOPO = "/apis/topology.volcano.sh/v1alpha1"
CORE = "/api/v1"


def seed(api: FakeApiServer) -> None:
    for name, labels in (("n1", {"rack": "r1"}), ("n2", {"rack": "r1"}), ("n3", {})):
        api.put(CORE, "nodes", {"metadata": {"name": name, "labels": labels}})
    api.put(TOPO, "hypernodes", hn("leaf-a", 1, by_labels(rack="r1"), tier_name="leaf"))
    api.put(TOPO, "hypernodes", hn("leaf-b", 1, exact("n2"), exact("n3"), regex("(bad")))
    api.put(TOPO, "hypernodes", hn("spine", 2, regex("^leaf-", "HyperNode"), exact("gone", "HyperNode")))


async def test_list_counts_members_nodes_and_problems(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    listed = await cli("hypernode", "list")
    assert listed.code == 0, listed.err
    rows = [line.split() for line in listed.out.splitlines()]
    assert rows[0] == ["NAME", "TIER", "MEMBERS", "NODES", "PROBLEMS", "AGE"]
    # leaf-b: n2 and n3 (the bad regex left out) and n2 is in leaf-a too; spine: both leaves, gone missing.
    assert [r[:5] for r in rows[1:]] == [
        ["leaf-a", "1", "1", "2", "0"],
        ["leaf-b", "1", "3", "2", "2"],
        ["spine", "2", "2", "3", "1"],
    ]
    named = await cli("hypernode", "list", "-o", "name")
    assert named.out.splitlines() == [
        f"hypernode.topology.volcano.sh/{n}" for n in ("leaf-a", "leaf-b", "spine")
    ]
    doc = json.loads((await cli("hypernode", "list", "-o", "json")).out)
    assert doc["kind"] == "List" and [i["metadata"]["name"] for i in doc["items"]] == [
        "leaf-a",
        "leaf-b",
        "spine",
    ]
    assert doc["resolved"]["spine"]["nodes"] == ["n1", "n2", "n3"]
    assert [p["reason"] for p in doc["resolved"]["leaf-b"]["problems"]] == [
        "InvalidMember",
        "OverlappingMember",
    ]
    tpl = await cli("hypernode", "list", "-o", "jsonpath={.resolved.leaf-a.nodes}")
    assert tpl.code == 0 and "n1" in tpl.out and "n2" in tpl.out


async def test_get_shows_members_nodes_and_what_to_fix(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    got = await cli("hypernode", "get", "leaf-b")
    assert got.code == 0, got.err
    out = got.out
    assert "Tier:      1\n" in out
    assert "  Node n2\n  Node n3\n  Node matching /(bad/\n" in out
    assert "Nodes:     n2, n3 (2)" in out
    assert "InvalidMember: hypernode leaf-b: regexMatch '(bad' is not a valid pattern" in out
    assert "OverlappingMember: node n2 is in both leaf-a and leaf-b at tier 1" in out
    leaf_a = (await cli("hypernode", "get", "leaf-a")).out
    assert "Tier:      1 (leaf)" in leaf_a and "Nodes with labels rack=r1" in leaf_a
    assert "Problems:  <none>" in leaf_a
    doc: dict[str, Any] = yaml.safe_load((await cli("hypernode", "get", "spine", "-o", "yaml")).out)
    assert doc["metadata"]["name"] == "spine" and doc["spec"]["tier"] == 2
    assert doc["resolved"]["nodes"] == ["n1", "n2", "n3"]
    (problem,) = doc["resolved"]["problems"]
    assert problem["reason"] == "InvalidMember" and "gone does not exist" in problem["message"]
    assert (
        await cli("hypernode", "get", "spine", "-o", "name")
    ).out == "hypernode.topology.volcano.sh/spine\n"
    missing = await cli("hypernode", "get", "nope")
    assert missing.code == 1 and "not found" in missing.err


async def test_unreadable_objects_and_no_node_access(cli: Cli, fake_api: FakeApiServer) -> None:
    seed(fake_api)
    fake_api.put(TOPO, "hypernodes", {"metadata": {"name": "odd"}, "spec": {"tier": "x", "members": []}})
    fake_api.deny[("GET", f"{CORE}/nodes")] = "forbidden"  # a 400 is not "no access": an error
    failed = await cli("hypernode", "list")
    assert failed.code == 1 and "forbidden" in failed.err
    del fake_api.deny[("GET", f"{CORE}/nodes")]
    listed = await cli("hypernode", "list")
    assert listed.code == 0, listed.err
    assert [r.split()[:5] for r in listed.out.splitlines()][3] == ["odd", "?", "?", "0", "1"]
    odd = await cli("hypernode", "get", "odd")
    assert "Unreadable: hypernode odd: the scheduler cannot read it (spec.tier" in odd.out
    as_json = await cli("hypernode", "list", "-o", "json")
    assert json.loads(as_json.out)["resolved"]["odd"]["nodes"] == []


def test_without_node_access_nodes_show_as_unknown() -> None:
    objs = [hn("leaf-a", 1, exact("n1"))]
    (row,) = resolve_rows(objs, None)
    assert row.nodes is None and row.problems == ()
    assert list_table([row], datetime.now(UTC)).splitlines()[1].split()[:5] == ["leaf-a", "1", "1", "?", "0"]
    assert "Nodes:     ? (cannot list nodes)" in describe(row, datetime.now(UTC))


@pytest.mark.parametrize("command", ["hypernode", "jobflow", "cronjob"])
def test_pumice_runs_these_commands_itself(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `pumice <command> list` once went to serve's settings parser (AttributeError: extender_bind).
    assert main([command, "list", "--kubeconfig", str(tmp_path / "none")]) == 1
    assert "does not exist" in capsys.readouterr().err
