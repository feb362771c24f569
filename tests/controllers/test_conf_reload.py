"""Live reload of the scheduler conf: a kubelet-style ``..data`` symlink swap is picked up, a broken edit
keeps the running conf and is reported once, a fix after it is picked up, a half-written file is never
loaded; and the scheduler's next cycle uses the swapped-in conf."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, cast

from controllers.events import EventRecorder, Ref
from controllers.reconcilers.conf_reload import ConfWatcher
from extender.core.model import PodUID
from extender.plugins.registry import SchedulerConf, load_conf
from tests.controllers.test_scheduler import node, pod, scheduler

BASE = """actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: overcommit
    arguments: {overcommit-factor: %s}
"""
GOOD_1, GOOD_2 = BASE % "1.0", BASE % "2.0"
BROKEN = GOOD_2.replace("overcommit-factor", "overcommit-fctor")
POD = Ref(api_version="v1", kind="Pod", namespace="volcano-system", name="pumice-0", uid="")


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def record(self, ref: Ref, *, type_: str, reason: str, note: str, action: str) -> None:
        assert ref == POD and action == "Reload"
        self.seen.append((type_, reason, note))


class Kubelet:
    """A ConfigMap volume as the kubelet's atomic writer lays it out: ``key -> ..data/key``,
    ``..data -> ..<timestamp>``, each update a new directory and a swap of the ``..data`` symlink."""

    def __init__(self, root: Path, text: str) -> None:
        self.root, self.n = root, 0
        self._write(text)
        (root / "volcano-scheduler.conf").symlink_to("..data/volcano-scheduler.conf")

    def _write(self, text: str) -> None:
        self.n += 1
        version = self.root / f"..2026_11_23_{self.n:02d}"
        version.mkdir()
        (version / "volcano-scheduler.conf").write_text(text)
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(version.name)
        os.replace(tmp, self.root / "..data")

    update = _write

    @property
    def path(self) -> Path:
        return self.root / "volcano-scheduler.conf"


def watcher(path: Path, initial: str) -> tuple[ConfWatcher, list[SchedulerConf], Events]:
    applied: list[SchedulerConf] = []
    events = Events()
    w = ConfWatcher(
        str(path), initial=initial.encode(), apply=applied.append, events=cast(EventRecorder, events), pod=POD
    )
    return w, applied, events


def poll(w: ConfWatcher, path: Path) -> bool | None:
    try:
        data: bytes | OSError = path.read_bytes()
    except OSError as e:
        data = e
    return w.poll(data)


def test_a_kubelet_symlink_swap_is_loaded(tmp_path: Path) -> None:
    kubelet = Kubelet(tmp_path, GOOD_1)
    w, applied, events = watcher(kubelet.path, GOOD_1)
    assert poll(w, kubelet.path) is None and applied == []
    kubelet.update(GOOD_2)
    # Read twice the same before it is acted on.
    assert poll(w, kubelet.path) is None
    assert poll(w, kubelet.path) is True
    assert len(applied) == 1 and applied[0].tiers() is not None
    assert w.generation == 2 and w.stats.ok == 1 and w.stats.error == 0
    assert [e[:2] for e in events.seen] == [("Normal", "SchedulerConfReloaded")]
    assert poll(w, kubelet.path) is None and len(applied) == 1


def test_a_broken_edit_keeps_the_running_conf_then_a_fix_is_loaded(tmp_path: Path) -> None:
    kubelet = Kubelet(tmp_path, GOOD_1)
    w, applied, events = watcher(kubelet.path, GOOD_1)
    kubelet.update(BROKEN)
    assert poll(w, kubelet.path) is None
    assert poll(w, kubelet.path) is False
    assert applied == [] and w.generation == 1 and w.stats.error == 1
    assert "overcommit-fctor" in w.last_error
    assert events.seen[-1][:2] == ("Warning", "SchedulerConfRejected")
    assert "keeping generation 1" in events.seen[-1][2]
    # Reported once, not on every poll.
    for _ in range(3):
        assert poll(w, kubelet.path) is None
    assert w.stats.error == 1 and len(events.seen) == 1
    kubelet.update(GOOD_2)
    poll(w, kubelet.path)
    assert poll(w, kubelet.path) is True
    assert len(applied) == 1 and w.generation == 2 and w.last_error == ""


def test_going_back_to_the_running_version_clears_the_error(tmp_path: Path) -> None:
    kubelet = Kubelet(tmp_path, GOOD_1)
    w, applied, _ = watcher(kubelet.path, GOOD_1)
    kubelet.update(BROKEN)
    poll(w, kubelet.path)
    poll(w, kubelet.path)
    kubelet.update(GOOD_1)
    assert poll(w, kubelet.path) is None and w.last_error == "" and applied == []
    # The same broken version again is a new mistake, reported again.
    kubelet.update(BROKEN)
    poll(w, kubelet.path)
    assert poll(w, kubelet.path) is False and w.stats.error == 2


def test_a_half_written_file_is_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "conf"
    path.write_text(GOOD_1)
    w, applied, _ = watcher(path, GOOD_1)
    for partial in (GOOD_2[:20], GOOD_2[:40]):  # an editor still writing: never the same twice
        path.write_text(partial)
        assert poll(w, path) is None
    path.write_text(GOOD_2)
    assert poll(w, path) is None
    assert poll(w, path) is True and w.stats.error == 0 and len(applied) == 1


def test_a_missing_file_is_reported_once_and_nothing_changes(tmp_path: Path) -> None:
    path = tmp_path / "conf"
    path.write_text(GOOD_1)
    w, applied, events = watcher(path, GOOD_1)
    path.unlink()
    assert poll(w, path) is False and poll(w, path) is None
    assert "cannot read" in w.last_error and w.stats.error == 1 and len(events.seen) == 1
    path.write_text(GOOD_1)
    assert poll(w, path) is None and w.last_error == "" and applied == []


def test_a_failing_apply_or_loader_is_a_rejection_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "conf"
    path.write_text(GOOD_1)

    def boom(_: Any) -> None:
        raise RuntimeError("nope")

    w = ConfWatcher(str(path), initial=GOOD_1.encode(), apply=boom)
    path.write_text(GOOD_2)
    poll(w, path)
    assert poll(w, path) is False and "RuntimeError: nope" in w.last_error and w.generation == 1

    def bad_loader(_: str) -> SchedulerConf:
        raise KeyError("bug")

    w = ConfWatcher(str(path), initial=GOOD_1.encode(), apply=lambda _c: None, load=bad_loader)
    poll(w, path)
    assert poll(w, path) is False and "internal error: KeyError" in w.last_error


async def test_run_picks_up_an_edit_within_a_few_intervals(tmp_path: Path) -> None:
    kubelet = Kubelet(tmp_path, GOOD_1)
    applied: list[SchedulerConf] = []
    w = ConfWatcher(str(kubelet.path), initial=GOOD_1.encode(), apply=applied.append, interval=0.02)
    task = asyncio.create_task(w.run())
    try:
        kubelet.update(GOOD_2)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if applied:
                break
    finally:
        task.cancel()
    assert len(applied) == 1 and w.generation == 2


def test_the_scheduler_uses_the_swapped_conf_on_its_next_cycle() -> None:
    s, _ = scheduler(node("n0", "4"))
    s.loop.use_conf(load_conf(GOOD_1))
    s.shared.cache.upsert_podgroup(
        {
            "metadata": {"name": "g", "namespace": "ns", "uid": "g"},
            "spec": {"minMember": 1, "minResources": {"cpu": "6"}},
        }
    )
    s.shared.cache.upsert_pod(pod("p0", group="g"))
    s.loop.cycle()
    # 6 cpu of minResources > 4 x 1.0: not admitted, nothing planned.
    assert s.shared.ledger.planned_node(PodUID("p0")) is None
    s.loop.cycle()
    assert s.shared.ledger.planned_node(PodUID("p0")) is None
    s.loop.use_conf(load_conf(GOOD_2))  # 4 x 2.0 >= 6
    s.loop.cycle()
    assert s.shared.ledger.planned_node(PodUID("p0")) == "n0"
