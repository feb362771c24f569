"""HyperNode problems end to end: a HyperNode whose members cannot be resolved gets one Warning Event per
problem from the running pumice (what ``kubectl describe hypernode`` shows), and ``pumice hypernode get``
reads the live objects and names the same problems.

Runs on the network-topology test's pumice (same conf: no restart when the two files run together).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.e2e import kube, test_network_topology
from tests.e2e.controlplane import ControlPlane
from tests.e2e.test_events import pumice_cli
from tests.e2e.test_network_topology import TOPOLOGY, create_hypernode

pytestmark = pytest.mark.e2e

# The network-topology test's fixtures (its pumice and conf; HyperNodes deleted after the test).
topology_pumice = test_network_topology.topology_pumice
hypernodes = test_network_topology.hypernodes


async def test_unresolvable_members_become_events_and_show_in_the_cli(
    topology_pumice: None,
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    hypernodes: list[str],
    test_id: str,
) -> None:
    name = f"{test_id}-spine"[:63]
    await create_hypernode(
        kube_api,
        hypernodes,
        name,
        2,
        [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": f"{test_id}-missing"}}},
            {"type": "Node", "selector": {"regexMatch": {"pattern": "(unclosed"}}},
        ],
    )
    obj = await kube.request(kube_api, "GET", f"{kube.collection_path(TOPOLOGY, 'hypernodes')}/{name}")
    uid = obj["metadata"]["uid"]

    async def warned() -> list[Mapping[str, Any]] | None:
        listing = await kube.list_objects(
            kube_api, kube.collection_path("events.k8s.io/v1", "events", "default")
        )
        mine = [e for e in listing.get("items") or [] if (e.get("regarding") or {}).get("uid") == uid]
        return mine if len(mine) >= 2 else None

    events = await kube.wait_for(warned, 20.0, message="two Warning Events on the HyperNode")
    assert sorted((e["type"], e["reason"], e["regarding"]["kind"]) for e in events) == [
        ("Warning", "InvalidMember", "HyperNode"),
        ("Warning", "InvalidMember", "HyperNode"),
    ]
    notes = " | ".join(e["note"] for e in events)
    assert f"{test_id}-missing does not exist" in notes and "'(unclosed' is not a valid pattern" in notes

    code, out, err = await asyncio.to_thread(pumice_cli, control_plane, "hypernode", "get", name)
    assert code == 0, err
    assert "Tier:      2" in out and "Nodes:     <none> (0)" in out
    assert out.count("InvalidMember: ") == 2
