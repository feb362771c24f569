"""What a user sees of pumice's decisions, end to end (issue 9): why a gang waits, on the vcjob itself
(``kubectl describe vcjob``: its status and its Events; ``pumice job view NAME``), and the Event on a
preempted pod that names its preemptor.

Both scenarios run on Volcano's CI conf (as tests/e2e/test_sharing.py) on their own labelled fake nodes,
so other tests' nodes do not change the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from kubernetes_asyncio import client

from controllers.cli.parser import add_cli_parsers
from tests.e2e import kube, test_sharing
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.test_manifests_apply import _kubectl
from tests.e2e.test_sharing import (
    BATCH,
    PodHistory,
    create_job,
    create_priority_class,
    create_queue,
    job_spec,
    short_id,
    wait_split,
)

pytestmark = pytest.mark.e2e

# The fixtures of test_sharing's scenarios (pumice on the CI conf; Queues and PriorityClasses deleted after
# the test), under the names the tests below take them by.
ci_pumice = test_sharing.ci_pumice
cluster_objects = test_sharing.cluster_objects


async def job_state(api: client.ApiClient, ns: str, name: str) -> Mapping[str, Any]:
    job = await kube.request(api, "GET", f"{kube.collection_path(BATCH, 'jobs', ns)}/{name}")
    return dict((job.get("status") or {}).get("state") or {})


async def events_about(api: client.ApiClient, ns: str, uid: str) -> list[Mapping[str, Any]]:
    listing = await kube.list_objects(api, kube.collection_path("events.k8s.io/v1", "events", ns))
    return [e for e in listing.get("items") or [] if (e.get("regarding") or {}).get("uid") == uid]


def pumice_cli(control_plane: ControlPlane, *argv: str) -> tuple[int, str, str]:
    """``pumice <argv>`` parsed by the real parser, run in this (worker) thread; exit code, out, err."""
    parser = argparse.ArgumentParser(prog="pumice")
    add_cli_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([*argv, "--kubeconfig", str(control_plane.kubeconfig_path)])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = int(args.func(args))
    return code, out.getvalue(), err.getvalue()


async def test_a_waiting_gang_says_why_on_its_vcjob(
    ci_pumice: None,
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    cluster_objects: list[str],
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="2", labels=sel)
    q = f"why-{short_id()}"
    await create_queue(kube_api, cluster_objects, q, {"weight": 1})
    # A gang of 3 pods of 1 cpu on the 2 cpu that this test's node has: it can never start.
    await create_job(kube_api, namespace, "big", job_spec(queue=q, replicas=3, min_available=3, selector=sel))

    seen: list[Mapping[str, Any]] = []

    async def blocked() -> Mapping[str, Any] | None:
        seen.append(await job_state(kube_api, namespace, "big"))
        # While the controller still creates the pods the gang waits for them (NotEnoughTasks); then for
        # the cpu that no node has.
        why = str(seen[-1].get("message") or "").split(":", 1)[0]
        pending = seen[-1].get("reason") == "PodGroupPending"
        return seen[-1] if pending and why in ("NotEnoughResources", "NotEnqueued") else None

    state = await kube.wait_for(
        blocked, 30, interval=0.3, message=lambda: f"the vcjob's state to say why it waits: {seen[-1:]}"
    )
    assert state["phase"] == "Pending"
    message = str(state.get("message") or "")

    job = await kube.request(kube_api, "GET", f"{kube.collection_path(BATCH, 'jobs', namespace)}/big")

    async def warned() -> list[Mapping[str, Any]] | None:
        found = await events_about(kube_api, namespace, job["metadata"]["uid"])
        return found if any(e.get("reason") == "PodGroupPending" for e in found) else None

    await kube.wait_for(warned, 15, interval=0.3, message="a PodGroupPending Event on the vcjob")

    described = await asyncio.to_thread(
        subprocess.run,
        [
            _kubectl(),
            "--kubeconfig",
            str(control_plane.kubeconfig_path),
            "describe",
            "vcjob",
            "big",
            "-n",
            namespace,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert described.returncode == 0, described.stderr
    text = described.stdout
    status, _, events = text.partition("\nEvents:")
    assert "PodGroupPending" in status and message.split(":", 1)[0] in status, text  # status.state
    assert "PodGroupPending" in events and "pumice" in events, text  # and the Event, from pumice

    code, out, err = await asyncio.to_thread(pumice_cli, control_plane, "job", "view", "big", "-n", namespace)
    assert code == 0, err
    assert "Reason:" in out and "PodGroupPending" in out and message.split(":", 1)[0] in out, out


async def test_a_preempted_pod_has_an_event_naming_its_preemptor(
    ci_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    cluster_objects: list[str],
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="2", labels=sel)
    sid = short_id()
    q, high, low = f"ev-{sid}", f"evhigh-{sid}", f"evlow-{sid}"
    await create_queue(kube_api, cluster_objects, q, {"weight": 1})
    await create_priority_class(kube_api, cluster_objects, low, 10)
    await create_priority_class(kube_api, cluster_objects, high, 1000)
    async with PodHistory(kube_api, namespace) as history:
        spec = job_spec(queue=q, replicas=2, min_available=2, selector=sel, priority_class=low)
        await create_job(kube_api, namespace, "low", spec)
        await wait_split(kube_api, namespace, ("low", "high"), (2, 0), 30, history)
        victims = history.uids_of("low")
        spec = job_spec(queue=q, replicas=2, min_available=2, selector=sel, priority_class=high)
        await create_job(kube_api, namespace, "high", spec)
        await wait_split(kube_api, namespace, ("low", "high"), (0, 2), 45, history)

    for uid in victims:

        async def preempted(uid: str = uid) -> list[str] | None:
            found = await events_about(kube_api, namespace, uid)
            return [str(e.get("note")) for e in found if e.get("reason") == "Preempted"] or None

        # Events are written in the background, so one may come a moment after the preemptor runs.
        message = f"a Preempted Event on victim {history.names[uid]}"
        notes = await kube.wait_for(preempted, 15, interval=0.3, message=message)
        # The preemptor is the high job's PodGroup (<job>-<uid>), with its priority and what it needs.
        assert any(f"preempted by {namespace}/high-" in n and "priority 1000" in n for n in notes), notes


async def test_job_list_watch_prints_changes_from_the_api_server(
    ci_pumice: None,  # the conf of the tests above: pumice is not restarted in between
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
) -> None:
    """``pumice job list -w`` from the real entry point, on a real watch: a job created after the list shows
    up (ADDED, before any status), then its status, and Ctrl-C ends it without a traceback.

    The test follows the output as it comes instead of sleeping: a job created before the command marks the
    end of the list (its row), and the watch runs until the status shows. (A fixed 4 s window was once too
    short on a loaded CI machine.)"""
    spec = {
        "schedulerName": "volcano",
        "minAvailable": 1,
        "tasks": [
            {
                "name": "w",
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
            }
        ],
    }
    await create_job(kube_api, namespace, "listed", spec)
    template = 'jsonpath={.metadata.name}={.status.state.phase}{"\\n"}'
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        # SIGINT as in a terminal: a background job of a shell (CI's runner may be one) inherits it ignored.
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from extender.main import main; sys.exit(main())",
        *("job", "list", "-n", namespace, "-w", "-o", template),
        *("--kubeconfig", str(control_plane.kubeconfig_path)),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None
    lines: list[str] = []

    async def read_until(done: Callable[[str], bool]) -> None:
        while True:
            raw = await stdout.readline()
            assert raw, f"the command ended: {lines} {(await stderr.read()).decode()}"
            lines.append(raw.decode().rstrip("\n"))
            if done(lines[-1]):
                return

    try:
        async with asyncio.timeout(60):
            await read_until(lambda line: line.startswith("listed="))  # the list, flushed before the watch
            await create_job(kube_api, namespace, "watched", spec)
            await read_until(lambda line: line == "watched=Pending")  # the controller's first status write
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        try:
            code = await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            raise
    err = (await stderr.read()).decode()
    assert code == 130 and "Traceback" not in err, err  # Ctrl-C: the usual end of a watch
    watched = [line for line in lines if line.startswith("watched=")]
    assert watched[0] == "watched=", lines  # ADDED, before any status
