"""``pumice --version``, shell completion, the ``kubectl pumice`` plugin form, ``--dry-run=client|server`` on
the commands that create something, and kubectl's ``-l/--selector`` on every list (issue 27)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from extender.main import build_parser, kubectl_main, main
from tests.cli.conftest import Cli, FakeApiServer, parse

ROOT = Path(__file__).resolve().parents[2]
BATCH = "/apis/batch.volcano.sh/v1alpha1"
BUS = "/apis/bus.volcano.sh/v1alpha1"
SCHED = "/apis/scheduling.volcano.sh/v1beta1"


# -- --version --------------------------------------------------------------------------------------


def test_version_flag_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"pumice {metadata.version('pumice')}\n"
    assert main(["version"]) == 0
    assert capsys.readouterr().out == f"{metadata.version('pumice')}\n"


# -- completion -------------------------------------------------------------------------------------


def completion(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_completion_completes_commands_and_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = tmp_path / "pumice.bash"
    script.write_text(completion("bash", capsys))

    def complete(*words: str) -> set[str]:
        line = " ".join(words)
        run = subprocess.run(
            ["bash", "-c", f'source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
             'COMP_LINE="$COMP_WORDS"; _shtab_pumice; printf "%s\\n" "${COMPREPLY[@]}"'],
            capture_output=True,
            text=True,
            check=True,
        )  # fmt: skip
        return {w.strip() for w in run.stdout.splitlines() if w.strip()}

    assert {"job", "queue", "serve", "simulate", "manifests", "completion"} <= complete("pumice", "")
    assert {"run", "create", "list", "why"} <= complete("pumice", "job", "")
    assert "--dry-run" in complete("pumice", "queue", "create", "--")


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_name_every_command(
    shell: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = completion(shell, capsys)
    for word in ("job", "queue", "hypernode", "simulate", "dry-run", "all-namespaces"):
        assert word in text, word
    if shutil.which(shell):  # the shell itself checks the syntax where it is installed
        script = tmp_path / f"pumice.{shell}"
        script.write_text(text)
        assert subprocess.run([shell, "-n", str(script)], capture_output=True).returncode == 0


def test_completion_needs_a_known_shell() -> None:
    with pytest.raises(SystemExit) as e:
        main(["completion", "powershell"])
    assert e.value.code == 2


# -- kubectl pumice ---------------------------------------------------------------------------------


def test_kubectl_plugin_entry_point(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-pumice"] == "extender.main:kubectl_main"
    monkeypatch.setattr(sys, "argv", ["kubectl-pumice", "job", "--help"])
    with pytest.raises(SystemExit) as e:
        kubectl_main()
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: kubectl pumice job")


def test_kubectl_plugin_is_installed_beside_pumice() -> None:
    bindir = Path(sys.executable).parent
    if not (bindir / "pumice").exists():
        pytest.skip("pumice is not installed as a console script here")
    run = subprocess.run([str(bindir / "kubectl-pumice"), "--version"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("kubectl pumice "), run.stderr


# -- --dry-run --------------------------------------------------------------------------------------


def test_dry_run_flag_values() -> None:
    assert parse("job", "run", "demo").dry_run == "none"
    assert parse("job", "run", "demo", "--dry-run").dry_run == "client"  # kubectl's old bare spelling
    assert parse("job", "create", "demo", "--dry-run=server").dry_run == "server"
    with pytest.raises(SystemExit):
        parse("queue", "create", "q", "--dry-run=maybe")


async def test_job_run_client_dry_run_prints_the_job_and_sends_nothing(
    cli: Cli, fake_api: FakeApiServer
) -> None:
    r = await cli("job", "run", "demo", "--replicas", "2", "--min", "2", "--dry-run=client")
    assert r.code == 0, r.err
    job = yaml.safe_load(r.out)
    assert (job["kind"], job["metadata"]["name"], job["spec"]["minAvailable"]) == ("Job", "demo", 2)
    assert fake_api.calls("POST") == []


async def test_job_create_server_dry_run_sends_dry_run_all(cli: Cli, fake_api: FakeApiServer) -> None:
    r = await cli("job", "create", "demo", "--dry-run=server")
    assert (r.code, r.out) == (0, "job.batch.volcano.sh/demo created (server dry run)\n"), r.err
    [post] = fake_api.calls("POST")
    assert post.path.endswith("/jobs") and post.query.get("dryRun") == "All"


async def test_queue_create_dry_runs(cli: Cli, fake_api: FakeApiServer) -> None:
    r = await cli("queue", "create", "q1", "-w", "3", "--state", "Closed", "--dry-run=client")
    assert r.code == 0, r.err
    assert yaml.safe_load(r.out)["spec"]["weight"] == 3 and fake_api.requests == []
    r = await cli("queue", "create", "q1", "--state", "Closed", "--dry-run=server")
    assert r.out == "queue.scheduling.volcano.sh/q1 created (server dry run)\n", r.err
    # The /status patch that sets the state is not sent: a dry run created nothing to patch.
    assert [(c.method, c.query.get("dryRun")) for c in fake_api.requests] == [("POST", "All")]


async def test_job_suspend_dry_runs(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(
        BATCH,
        "jobs",
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "demo", "namespace": "team-a"},
        },
    )
    r = await cli("job", "suspend", "demo", "--dry-run=client")
    assert r.code == 0, r.err
    assert yaml.safe_load(r.out)["action"] == "AbortJob" and fake_api.calls("POST") == []
    r = await cli("job", "suspend", "demo", "--dry-run=server")
    assert r.out.endswith("created (server dry run)\n"), r.err
    assert fake_api.calls("POST")[-1].query.get("dryRun") == "All"


# -- kubectl's flags on every list ------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("jobflow", "list"),
        ("jobtemplate", "list"),
        ("cronjob", "list"),
        ("hypernode", "list"),
        ("job", "list"),
        ("queue", "list"),
    ],
)
async def test_every_list_takes_a_selector(argv: tuple[str, ...], cli: Cli, fake_api: FakeApiServer) -> None:
    await cli(*argv, "-l", "team=a", "-o", "name")
    lists = [c for c in fake_api.calls("GET") if "labelSelector" in c.query]
    assert lists and lists[0].query["labelSelector"] == "team=a"


def test_kubectls_flags_where_the_meaning_is_the_same() -> None:
    """Every command that reads the cluster takes --kubeconfig and --context; namespaced ones -n; lists -o,
    -l and (namespaced) -A; creates --dry-run."""
    for argv in (
        ("job", "list"),
        ("jobflow", "list"),
        ("cronjob", "list"),
        ("jobtemplate", "list"),
    ):
        args = parse(*argv, "-n", "x", "-A", "-o", "yaml", "-l", "a=b", "--kubeconfig", "k", "--context", "c")
        assert (args.namespace, args.all_namespaces, args.selector, args.context) == ("x", True, "a=b", "c")
    for argv in (("queue", "list"), ("hypernode", "list")):
        args = parse(*argv, "-o", "json", "-l", "a=b", "--context", "c")
        assert (args.output, args.selector) == ("json", "a=b")
    assert parse("job", "list", "-w").watch and parse("queue", "list", "--watch").watch
    assert build_parser().prog == "pumice"
