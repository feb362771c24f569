"""write_plots draws real (non-blank) PNGs for a tiny simulated trace, under two confs side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers.simulate.engine import TraceRun
from controllers.simulate.metrics import TraceResult
from controllers.simulate.plots import write_plots
from controllers.simulate.trace import parse_trace
from extender.plugins.registry import load_conf

pytest.importorskip("matplotlib")

NODE = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"}
GPU_JOB = {"name": "w", "replicas": 2, "requests": {"nvidia.com/gpu": "2", "cpu": "2"}}
TRACE = {
    "nodes": [{"name": "gpu", "count": 2, "allocatable": NODE}],
    "queues": [{"name": "team-a", "weight": 2}, {"name": "team-b", "weight": 1}],
    "jobs": [
        {"name": "a1", "submit": 0, "queue": "team-a", "duration": "1h", "tasks": [GPU_JOB]},
        {
            "name": "b1",
            "submit": "5m",
            "queue": "team-b",
            "duration": "2h",
            "tasks": [{"name": "w", "replicas": 1, "requests": {"nvidia.com/gpu": "4"}}],
        },
        {"name": "a2", "submit": "10m", "queue": "team-a", "duration": "30m", "tasks": [GPU_JOB]},
        {
            "name": "b2",
            "submit": "20m",
            "queue": "team-b",
            "duration": "1h",
            "tasks": [{"name": "w", "replicas": 1, "requests": {"nvidia.com/gpu": "3"}}],
        },
    ],
}


@pytest.fixture(scope="module")
def result() -> TraceResult:
    return TraceRun(parse_trace(TRACE), load_conf(None)).run()


def _check(paths: list[Path], directory: Path) -> None:
    from matplotlib.image import imread

    assert [p.name for p in paths] == ["utilization.png", "shares.png", "waits.png"]
    for p in paths:
        assert p.parent == directory and p.is_file()
        data = p.read_bytes()
        assert data[:4] == b"\x89PNG" and len(data) > 10_000, p
        assert imread(p).std() > 0, f"{p.name} is blank"


def test_two_confs_side_by_side(result: TraceResult, tmp_path: Path) -> None:
    assert result.key_resource == "nvidia.com/gpu" and len(result.jobs) == 4
    directory = tmp_path / "nested" / "plots"
    _check(write_plots([("default", result), ("again", result)], directory), directory)


def test_one_conf_draws_queues_too(result: TraceResult, tmp_path: Path) -> None:
    _check(write_plots([("default", result)], tmp_path), tmp_path)
