"""The certificate contract's runtime half (controllers.tls_secrets): Secrets made once and shared by every
replica, cert-manager's left alone, reloaded when they change, their expiry reported."""

from __future__ import annotations

import asyncio
import base64
import time

from controllers.kube import paths
from controllers.kube.client import KubeClient
from controllers.tls_secrets import Names, TlsMaterial, TlsSecrets, expiry
from extender.process.tls import covers, issue_pem, issued_by, new_ca_pem, not_after
from tests.fakeapi import FakeApiServer, serving

NS = "pumice-system"
NAMES = Names(
    webhook_dns=("pumice", "pumice.pumice-system", "pumice.pumice-system.svc"),
    extender_dns=("pumice.pumice-system.svc",),
)


def keeper(client: KubeClient, **kw: object) -> TlsSecrets:
    return TlsSecrets(client, namespace=NS, prefix="pumice", names=NAMES, poll=0.05, **kw)  # type: ignore[arg-type]


def secret_path(name: str) -> str:
    return paths.SECRETS.item(name, namespace=NS)


def tls_secret(name: str, cert: bytes, key: bytes | None, ca: bytes) -> dict[str, object]:
    data = {"tls.crt": cert, "ca.crt": ca} | ({"tls.key": key} if key else {})
    return {
        "metadata": {"name": name, "namespace": NS},
        "type": "kubernetes.io/tls",
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


async def test_replicas_starting_together_end_up_with_the_same_material() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        a, b, c = await asyncio.gather(*(keeper(client).ensure() for _ in range(3)))
    assert a == b == c
    created = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/secrets")]
    stored = {p.rsplit("/", 1)[1] for p in fake.objects if "/secrets/" in p}
    assert stored == {"pumice-ca", "pumice-webhook-tls", "pumice-extender-tls", "pumice-kube-scheduler-tls"}
    assert len(created) >= 4  # losers were refused (409) and read the winner's
    assert covers(a.webhook.cert, NAMES.webhook_dns) and covers(a.extender.cert, NAMES.extender_dns)
    assert a.webhook.ca == a.ca and a.client.ca == a.ca
    secret = fake.objects[secret_path("pumice-webhook-tls")]
    assert secret["type"] == "kubernetes.io/tls" and set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    # A restart reads them: nothing new is made.
    async with serving(fake) as client:
        again = await keeper(client).ensure()
    assert again == a


async def test_a_ca_without_its_key_means_another_issuer_and_pumice_waits_for_it() -> None:
    fake = FakeApiServer()
    ca, ca_key = new_ca_pem()
    fake.seed(secret_path("pumice-ca"), tls_secret("pumice-ca", ca, None, ca))
    async with serving(fake) as client:
        waiting = asyncio.get_running_loop().create_task(keeper(client).ensure())
        await asyncio.sleep(0.3)
        assert not waiting.done()
        for name, client_cert in (
            ("pumice-webhook-tls", False),
            ("pumice-extender-tls", False),
            ("pumice-kube-scheduler-tls", True),
        ):
            cert, key = issue_pem(ca, ca_key, common_name=name, client=client_cert, dns_names=["x.svc"])
            fake.seed(secret_path(name), tls_secret(name, cert, key, ca))
        material = await asyncio.wait_for(waiting, 5)
    assert material.ca == ca
    assert not [r for r in fake.requests if r.method in ("POST", "PUT")]  # pumice made nothing


async def test_a_certificate_missing_a_name_is_issued_again_from_the_same_ca() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        first = await keeper(client).ensure()
        wider = Names(webhook_dns=(*NAMES.webhook_dns, "pumice.example"), extender_dns=NAMES.extender_dns)
        second = await TlsSecrets(client, namespace=NS, prefix="pumice", names=wider).ensure()
    assert second.ca == first.ca and second.extender == first.extender
    assert covers(second.webhook.cert, ["pumice.example"]) and second.webhook != first.webhook
    assert [r.path for r in fake.requests if r.method == "PUT"] == [secret_path("pumice-webhook-tls")]


async def test_a_certificate_near_its_expiry_is_renewed() -> None:
    fake = FakeApiServer()
    async with serving(fake) as client:
        first = await keeper(client).ensure()
        later = keeper(client, clock=lambda: time.time() + 300 * 86400)  # 65 days left of 365
        second = await later.ensure()
    assert second.ca == first.ca
    assert (
        second.webhook != first.webhook
        and second.extender != first.extender
        and second.client != first.client
    )
    assert not_after(second.webhook.cert) >= not_after(first.webhook.cert)
    assert len([r for r in fake.requests if r.method == "PUT"]) == 3


async def test_a_changed_secret_is_reloaded_without_a_restart() -> None:
    fake = FakeApiServer()
    async with serving(fake, pool=16) as client:  # four watches hold a connection each
        k = keeper(client)
        current = await k.ensure()
        got: list[TlsMaterial] = []
        watching = asyncio.get_running_loop().create_task(k.watch(got.append, current=current))
        await asyncio.sleep(0.3)
        assert got == []  # the watches' first look finds nothing new
        # cert-manager (or an operator) rotates the webhook's certificate.
        ca_obj = fake.objects[secret_path("pumice-ca")]
        ca = base64.b64decode(ca_obj["data"]["tls.crt"])
        ca_key = base64.b64decode(ca_obj["data"]["tls.key"])
        cert, key = issue_pem(ca, ca_key, common_name="pumice", dns_names=list(NAMES.webhook_dns))
        fake.seed(secret_path("pumice-webhook-tls"), tls_secret("pumice-webhook-tls", cert, key, ca))
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.05)
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    assert len(got) == 1 and got[0].webhook.cert == cert and got[0].extender == current.extender
    labels = [name for name, _ in expiry(got[0])]
    assert labels == ["ca", "webhook", "extender", "kube-scheduler-client"]


async def test_a_certificate_from_another_ca_is_issued_again_from_the_ca_secret() -> None:
    """A leaf left from an earlier CA (the CA Secret deleted and made again, a restore) would be refused by
    every client that trusts ``<prefix>-ca``: it is replaced, the others kept."""
    fake = FakeApiServer()
    async with serving(fake) as client:
        first = await keeper(client).ensure()
        other_ca, other_key = new_ca_pem()
        cert, key = issue_pem(other_ca, other_key, common_name="pumice", dns_names=list(NAMES.webhook_dns))
        fake.seed(secret_path("pumice-webhook-tls"), tls_secret("pumice-webhook-tls", cert, key, other_ca))
        second = await keeper(client).ensure()
    assert second.ca == first.ca and second.extender == first.extender and second.client == first.client
    assert second.webhook.cert != cert and issued_by(second.webhook.cert, first.ca)
    assert second.webhook.ca == first.ca
    assert [r.path for r in fake.requests if r.method == "PUT"] == [secret_path("pumice-webhook-tls")]
