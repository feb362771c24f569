"""``pumice serve``'s leader-election, drain and TLS-from-Secrets flags: kube-scheduler's spellings and
meanings, defaults that work in a pod and outside one, and usage errors for what does not go together."""

from __future__ import annotations

import argparse

import pytest

from extender.serve_args import add_serve_parser, serve_settings


def settings(*argv: str, **env: str) -> object:
    parser = argparse.ArgumentParser(prog="pumice")
    add_serve_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve", *argv])
    return serve_settings(args, parser)


@pytest.fixture(autouse=True)
def outside_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("POD_NAMESPACE", "POD_NAME", "POD_IP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("extender.serve_args.SERVICE_ACCOUNT_NAMESPACE", "/nonexistent/namespace")


def test_defaults_lead_by_election_with_kube_scheduler_s_meanings() -> None:
    s = settings()
    le = s.leader  # type: ignore[attr-defined]
    assert le.enabled and (le.lease_duration, le.renew_deadline, le.retry_period) == (10.0, 7.0, 2.0)
    assert (le.resource_name, le.resource_namespace) == ("pumice", "kube-system")  # outside a pod
    assert le.lease_duration <= 10
    # Several replicas on one host: the identity is the host name and a random part.
    other = settings().leader  # type: ignore[attr-defined]
    assert le.identity != other.identity and le.identity.split("_")[0] == other.identity.split("_")[0]
    assert s.shutdown_delay == 5.0 and s.tls_secrets is None  # type: ignore[attr-defined]


def test_in_a_pod_the_lease_and_the_secrets_are_in_its_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "batch-system")
    monkeypatch.setenv("POD_IP", "10.1.2.3")
    s = settings("--tls-secrets-prefix=pumice", "--extender-service=batch-system/pumice")
    assert s.leader.resource_namespace == "batch-system"  # type: ignore[attr-defined]
    assert s.tls_secrets.namespace == "batch-system" and s.tls_secrets.prefix == "pumice"  # type: ignore[attr-defined]
    # The extender is mutual TLS there: standbys forward to https://POD_IP:PORT.
    assert s.leader.advertise_url == "https://10.1.2.3:8888"  # type: ignore[attr-defined]
    assert s.extender.service == ("batch-system", "pumice")  # type: ignore[attr-defined]


def test_kube_scheduler_s_spellings() -> None:
    s = settings(
        "--leader-elect=false",
        "--leader-elect-lease-duration=15s",
        "--leader-elect-renew-deadline=10s",
        "--leader-elect-retry-period=2s",
        "--leader-elect-resource-name=other",
        "--leader-elect-resource-namespace=ops",
        "--shutdown-delay=1.5",
        "--extender-bind=127.0.0.1:9999",
    )
    le = s.leader  # type: ignore[attr-defined]
    assert not le.enabled and (le.lease_duration, le.renew_deadline) == (15.0, 10.0)
    assert (le.resource_name, le.resource_namespace) == ("other", "ops")
    assert le.advertise_url == "http://127.0.0.1:9999" and s.shutdown_delay == 1.5  # type: ignore[attr-defined]
    assert settings("--leader-elect").leader.enabled  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--leader-elect-renew-deadline=10s"], "lease duration must be greater"),
        (["--leader-elect-retry-period=9s"], "renew deadline must be greater"),
        (["--leader-elect=maybe"], "not a boolean"),
        (["--tls-secrets-prefix=p"], "POD_NAMESPACE"),
        (["--extender-service=ns/svc"], "needs --tls-secrets-prefix"),
        (["--extender-client-cert-file=c"], "go together"),
        (["--shutdown-delay=-1"], "invalid duration"),
    ],
)
def test_what_does_not_go_together_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        settings(*argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
