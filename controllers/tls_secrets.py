"""The certificate contract's Secrets, kept: made once, shared by every replica and restart, watched.

Four ``kubernetes.io/tls`` Secrets in pumice's namespace (keys ``tls.crt``, ``tls.key``, ``ca.crt``, as
cert-manager writes them, so a cert-manager ``Certificate`` can make the same ones instead):
``<prefix>-ca`` (the CA itself), ``<prefix>-webhook-tls`` (the admission webhooks' serving certificate),
``<prefix>-extender-tls`` (the extender's) and ``<prefix>-kube-scheduler-tls`` (the client certificate
kube-scheduler presents to the extender, and a standby replica when it forwards to the leader).

:meth:`TlsSecrets.ensure` reads them and creates what is missing, the CA first; a create refused with 409
(another replica made it first) reads the winner's, so every replica ends up with the same material. A CA
Secret without ``tls.key`` means someone else issues the certificates (cert-manager): pumice then creates
nothing and waits for the others to appear. A certificate that does not chain to ``<prefix>-ca``, a serving
certificate that lacks a name it must carry now, or one near its expiry, is issued again from the same CA
(an update onto the version read: of two replicas, one wins and the other reads its result).
:meth:`TlsSecrets.watch` follows the four Secrets (one watch per name, a field selector on it, which is what
name-limited RBAC allows) and reports new material, so the listeners reload without a restart.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, Obj
from extender.api import labels as L
from extender.process.tls import (
    EXTENDER_CLIENT_COMMON_NAME,
    covers,
    issue_pem,
    issued_by,
    new_ca_pem,
    not_after,
)

log = logging.getLogger(__name__)

CERT: Final = "tls.crt"
KEY: Final = "tls.key"
CA: Final = "ca.crt"
# A certificate pumice issued is issued again when less than this part of its validity is left.
RENEW_WHEN_LEFT: Final = 1 / 3
RECHECK: Final = 12 * 3600.0


@dataclass(frozen=True, slots=True)
class Pair:
    cert: bytes
    key: bytes
    ca: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsMaterial:
    """What the listeners serve with: the CA (for the webhooks' caBundle and the extender's client check),
    the two serving pairs and the client pair."""

    ca: bytes
    webhook: Pair
    extender: Pair
    client: Pair


@dataclass(frozen=True, slots=True, kw_only=True)
class Names:
    """What each serving certificate must name."""

    webhook_dns: tuple[str, ...] = ()
    webhook_ips: tuple[str, ...] = ()
    extender_dns: tuple[str, ...] = ()
    extender_ips: tuple[str, ...] = ()


def _data(obj: Obj | None) -> dict[str, bytes]:
    raw = (obj or {}).get("data") or {}
    out: dict[str, bytes] = {}
    for k, v in raw.items() if isinstance(raw, dict) else ():
        with contextlib.suppress(ValueError, TypeError):
            out[str(k)] = base64.b64decode(str(v), validate=True)
    return out


def _secret(name: str, namespace: str, data: dict[str, bytes], *, rv: str = "") -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "annotations": {L.ISSUED_BY_ANNOTATION: "pumice"}}
    if rv:
        meta["resourceVersion"] = rv
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": meta,
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def _due(cert: bytes, now: float) -> bool:
    """Whether a certificate has less than :data:`RENEW_WHEN_LEFT` of a year's validity left (or is
    unreadable)."""
    try:
        return not_after(cert) - now < RENEW_WHEN_LEFT * 365 * 86400
    except ValueError:
        return True


class TlsSecrets:
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        prefix: str,
        names: Names,
        poll: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.prefix = prefix
        self.names = names
        self.poll = poll
        self.clock = clock

    @property
    def secret_names(self) -> tuple[str, str, str, str]:
        p = self.prefix
        return (f"{p}-ca", f"{p}-webhook-tls", f"{p}-extender-tls", f"{p}-kube-scheduler-tls")

    async def _get(self, name: str) -> Obj | None:
        try:
            return await self.client.get(paths.SECRETS.item(name, namespace=self.namespace))
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    async def _create(self, name: str, data: dict[str, bytes]) -> dict[str, bytes]:
        """Create the Secret; if another replica did first (409), what it holds."""
        try:
            await self.client.post(
                paths.SECRETS.collection(self.namespace), _secret(name, self.namespace, data)
            )
            log.info("created TLS secret", extra={"secret": f"{self.namespace}/{name}"})
            return data
        except ApiError as e:
            if e.status != 409:
                raise
        return _data(await self._get(name))

    async def ensure(self) -> TlsMaterial:
        """The material, every Secret created or renewed as needed (see the module docstring); waits while
        another issuer (cert-manager) has not made them all yet."""
        announced = False
        while True:
            material = await self._ensure_once()
            if material is not None:
                return material
            if not announced:
                log.info(
                    "waiting for the TLS secrets another issuer makes",
                    extra={"secrets": ",".join(self.secret_names), "namespace": self.namespace},
                )
                announced = True
            await asyncio.sleep(self.poll)

    async def _ensure_once(self) -> TlsMaterial | None:
        ca_name, webhook_name, extender_name, client_name = self.secret_names
        ca = _data(await self._get(ca_name))
        if CERT not in ca:
            ca_cert, ca_key = new_ca_pem()
            ca = await self._create(ca_name, {CERT: ca_cert, KEY: ca_key, CA: ca_cert})
        issuing = KEY in ca  # without the CA's key someone else issues the rest
        pairs: list[Pair] = []
        for name, dns, ips, client in (
            (webhook_name, self.names.webhook_dns, self.names.webhook_ips, False),
            (extender_name, self.names.extender_dns, self.names.extender_ips, False),
            (client_name, (), (), True),
        ):
            obj = await self._get(name)
            data = _data(obj)
            if issuing and self._stale(data, ca[CERT], dns, ips, client):
                data = await self._issue(name, obj, ca, dns, ips, client)
            if CERT not in data or KEY not in data:
                return None
            pairs.append(Pair(data[CERT], data[KEY], data.get(CA) or ca.get(CA) or ca[CERT]))
        return TlsMaterial(ca=ca.get(CA) or ca[CERT], webhook=pairs[0], extender=pairs[1], client=pairs[2])

    def _stale(
        self, data: dict[str, bytes], ca_cert: bytes, dns: Sequence[str], ips: Sequence[str], client: bool
    ) -> bool:
        if CERT not in data or KEY not in data:
            return True
        if not issued_by(data[CERT], ca_cert):
            # From another CA (the CA Secret made again, a leaf left from an earlier install): no client
            # trusting <prefix>-ca would accept it.
            return True
        if not client and (dns or ips) and not covers(data[CERT], dns, ips):
            return True
        return _due(data[CERT], self.clock())

    async def _issue(
        self,
        name: str,
        current: Obj | None,
        ca: dict[str, bytes],
        dns: Sequence[str],
        ips: Sequence[str],
        client: bool,
    ) -> dict[str, bytes]:
        """A new certificate from the CA: created, or replaced onto the version read. Another replica's
        write in between wins (409): its certificate is read and used."""
        if client:
            cert, key = issue_pem(ca[CERT], ca[KEY], common_name=EXTENDER_CLIENT_COMMON_NAME, client=True)
        else:
            names = list(dns) or ["localhost"]
            cert, key = issue_pem(ca[CERT], ca[KEY], common_name=names[0], dns_names=names, ip_addresses=ips)
        data = {CERT: cert, KEY: key, CA: ca.get(CA) or ca[CERT]}
        if current is None:
            return await self._create(name, data)
        rv = str((current.get("metadata") or {}).get("resourceVersion") or "")
        try:
            await self.client.request(
                "PUT",
                paths.SECRETS.item(name, namespace=self.namespace),
                body=_secret(name, self.namespace, data, rv=rv),
            )
            log.info("issued TLS certificate again", extra={"secret": f"{self.namespace}/{name}"})
            return data
        except ApiError as e:
            if e.status != 409:
                raise
        return _data(await self._get(name))

    async def watch(self, changed: Callable[[TlsMaterial], None], *, current: TlsMaterial) -> None:
        """Until cancelled: whenever one of the four Secrets changes, read the material again and, if it
        differs from what is served, hand it to ``changed``."""
        wake = asyncio.Event()
        tasks = [
            asyncio.get_running_loop().create_task(self._follow(name, wake), name=f"tls-watch-{name}")
            for name in self.secret_names
        ]
        try:
            while True:
                # Also twice a day without a change: a certificate pumice issued is renewed in time.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(RECHECK):
                        await wake.wait()
                wake.clear()
                await asyncio.sleep(0.2)  # several Secrets updated together (a rotation): one reload
                try:
                    material = await self._ensure_once()
                except (ApiError, OSError, TimeoutError, ValueError) as e:
                    log.warning("reading the TLS secrets failed", extra={"error": str(e)[:300]})
                    await asyncio.sleep(self.poll)
                    wake.set()
                    continue
                if material is not None and material != current:
                    current = material
                    changed(material)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _follow(self, name: str, wake: asyncio.Event) -> None:
        query = [("fieldSelector", f"metadata.name={name}"), ("timeoutSeconds", "300")]
        backoff = 0.5
        while True:
            try:
                # A watch from no version starts with the Secret as it is: one read that finds nothing new.
                async for _ in self.client.watch(paths.SECRETS.collection(self.namespace), query):
                    wake.set()
                    backoff = 0.5
            except (ApiError, OSError, TimeoutError, ValueError) as e:
                log.debug("TLS secret watch broke", extra={"secret": name, "error": str(e)[:200]})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                wake.set()  # what happened meanwhile is read again


def expiry(material: TlsMaterial) -> list[tuple[str, float]]:
    """Each certificate's expiry (epoch seconds), by the name the metric gives it."""
    out: list[tuple[str, float]] = []
    for label, cert in (
        ("ca", material.ca),
        ("webhook", material.webhook.cert),
        ("extender", material.extender.cert),
        ("kube-scheduler-client", material.client.cert),
    ):
        with contextlib.suppress(ValueError):
            out.append((label, not_after(cert)))
    return out
