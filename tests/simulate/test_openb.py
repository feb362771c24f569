"""The openb trace as the simulator's input, on rows made in the published format (the real trace is not
needed): the files read with every problem placed, the arrivals topped up or thinned to the share asked,
and a replay end to end through the CLI (model constraints honoured, pods that fit nowhere dropped, the
arrival figures reported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controllers.simulate.openb import arrivals, frequent_shapes, openb_trace, read_nodes, read_pods
from controllers.simulate.trace import TraceError
from extender.core.gpu_frag import Shape
from extender.main import main

NODES = """sn,cpu_milli,memory_mib,gpu,model
openb-node-0001,32000,262144,2,V100M32
openb-node-0002,32000,262144,2,V100M32
openb-node-0003,64000,524288,4,T4
openb-node-0004,96000,786432,0,
"""
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,"
    "qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    """openb-pod-0001,4000,8192,1,500,,LS,Running,0,100,1
openb-pod-0002,4000,8192,1,250,,LS,Running,0,100,1
openb-pod-0003,8000,16384,1,1000,,LS,Running,0,100,1
openb-pod-0004,8000,16384,2,1000,V100M32,BE,Running,0,100,1
openb-pod-0005,2000,4096,0,0,,BE,Running,0,100,1
openb-pod-0006,4000,8192,1,500,T4,LS,Running,0,100,1
openb-pod-0007,16000,16384,4,1000,T4,LS,Running,0,100,1
openb-pod-0008,4000,8192,1,500,,LS,Running,0,100,1
"""
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def test_the_files_read_as_published(files: tuple[Path, Path]) -> None:
    nodes, pods = read_nodes(files[0]), read_pods(files[1])
    assert [(n.name, n.gpus, n.model) for n in nodes][-2:] == [
        ("openb-node-0003", 4, "T4"),
        ("openb-node-0004", 0, ""),
    ]
    by_name = {p.name: p for p in pods}
    assert by_name["openb-pod-0001"].shape.share == 500 and by_name["openb-pod-0001"].shape.cards == 0
    assert by_name["openb-pod-0003"].shape.cards == 1  # a whole card: gpu-number, not memory
    assert by_name["openb-pod-0004"].models == ("V100M32",) and by_name["openb-pod-0004"].asked == 2000
    shapes = frequent_shapes(
        pods
    )  # 8 pods of 7 shapes: 6 make up 7/8 < 95 %, so all 7, the most frequent first
    assert len(shapes) == 7 and sum(w for _, w in shapes) == pytest.approx(1)
    assert shapes[0] == (Shape(share=500, cpu=4000), 2 / 8)  # pods 1 and 8 (memory is not part of a shape)


@pytest.mark.parametrize(
    ("which", "text", "message"),
    [
        (0, "sn,cpu_milli,memory_mib,gpu\nn1,1,1,1\n", "no column 'model'"),
        (
            0,
            "sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,2,\n",
            "nodes.csv:2: a node with 2 GPUs names no model",
        ),
        (1, PODS.replace("0002,4000,8192,1,250", "0002,4000,8192,1,0"), "pods.csv:3: gpu_milli 0"),
        (1, PODS.replace("0005,2000", "0005,lots"), "pods.csv:6: cpu_milli 'lots' is not a whole number"),
    ],
)
def test_a_bad_row_says_file_and_row(files: tuple[Path, Path], which: int, text: str, message: str) -> None:
    files[which].write_text(text)
    with pytest.raises(TraceError) as e:
        openb_trace(*files, seed=1, arrive=1.3)
    assert message in str(e.value)


def test_arrivals_ask_the_share_given_without_passing_it(files: tuple[Path, Path]) -> None:
    pods = read_pods(files[1])
    listed = sum(p.asked for p in pods)  # 8 750 thousandths: 8 GPUs at 1.3 need a top-up, at 0.5 a thinning
    for arrive in (0.5, 1.3, 3.0):
        got = arrivals(pods, 8, seed=7, arrive=arrive)
        asked = sum(p.asked for p in got)
        assert asked <= arrive * 8000
        if arrive * 8000 > listed:  # topped up with pods drawn again until the next one would pass it
            assert len(got) > len(pods) and asked > arrive * 8000 - 4000
        else:
            assert len(got) < len(pods)
    assert [p.name for p in arrivals(pods, 8, seed=7, arrive=1.3)] == [
        p.name for p in arrivals(pods, 8, seed=7, arrive=1.3)
    ]


def test_a_replay_end_to_end(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    trace = openb_trace(*files, seed=3, arrive=1.3)
    assert trace.drop_unplaced and all(j.duration is None for j in trace.jobs)
    nodes, pods = files
    argv = ["simulate", "--openb-nodes", str(nodes), "--openb-pods", str(pods), "--seed", "3", "-o", "json"]
    assert main([*argv, "--no-progress"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    figures = run["arrivals"]
    assert figures["pods"] == len(trace.jobs) == figures["placed"] + figures["dropped"]
    assert figures["dropped"] > 0  # 130 % of the GPUs cannot all fit
    assert 1.0 < figures["arrived"] <= 1.3
    end = figures["curve"][-1]
    assert 0 < end["allocation"] <= 1 and 0 <= end["fragmentation"] <= 1
    model = {f"openb-node-000{i}": m for i, m in ((1, "V100M32"), (2, "V100M32"), (3, "T4"), (4, ""))}
    for job in run["jobs"]:
        spec = {"openb-pod-0004": "V100M32", "openb-pod-0006": "T4", "openb-pod-0007": "T4"}
        want = next((m for p, m in spec.items() if job["name"].split("/")[1].startswith(p)), None)
        for p in job["placements"]:
            assert want is None or model[p["node"]] == want, (job["name"], p)
        assert job["dropped"] == (not job["placements"])
    # Both files or neither.
    assert main(["simulate", "--openb-nodes", str(nodes)]) == 2
