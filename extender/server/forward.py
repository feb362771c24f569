"""Forwarding the extender verbs from a standby replica to the leader.

kube-scheduler reaches pumice through one Service, which sends to every ready replica; readiness is per
pod, not per port, so a standby cannot leave the extender's endpoints without leaving the webhooks' too
(and admission must go on through every replica). So a standby answers what it can answer as well as the
leader and forwards the rest, byte for byte, to the leader's extender (the address the leader advertises on
its Lease):

- ``filter`` and ``prioritize`` of another scheduler's pod, and ``preempt``, read only the watched
  cluster, which a standby holds as warm as the leader: answered locally;
- ``filter`` and ``prioritize`` of pumice's own pods and every ``bind`` read or take the leader's
  reservations: forwarded. When no leader is known (none elected yet, or the one known cannot be reached),
  they answer as for a cache not synced: ``Error`` for filter (kube-scheduler tries the pod again), no
  opinion for prioritize, an error for bind.

A forwarded request carries :data:`FORWARDED_HEADER`; a replica that receives one and does not lead answers
"no leader" rather than forward it again, so two replicas that each think the other leads cannot bounce a
request between them. With mutual TLS, the forwarding replica presents a client certificate the leader's
extender accepts (see :mod:`extender.serve_tls`).
"""

from __future__ import annotations

import logging
import ssl
from typing import Final, Protocol

import aiohttp

log = logging.getLogger(__name__)

FORWARDED_HEADER: Final = "X-Pumice-Forwarded-By"
NO_LEADER: Final = "pumice: no leader known yet (leader election in progress); try again"


class LeaderView(Protocol):
    """What the extender listener asks of leader election."""

    @property
    def serving(self) -> bool:
        """This process leads and its leader-only tasks run: answer locally."""
        ...

    @property
    def identity(self) -> str: ...

    def leader_url(self) -> str | None:
        """The leader's extender (``scheme://host:port``) when another replica leads, else None."""
        ...


class Forwarder:
    """One HTTP client session to the leader's extender (created on first use, on the running loop)."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        timeout: float = 20.0,
        connect_timeout: float = 2.0,
    ) -> None:
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout)
        self._session: aiohttp.ClientSession | None = None
        self.forwarded = 0
        self.failed = 0

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # No proxy from the environment: this is pod-to-pod traffic.
            self._session = aiohttp.ClientSession(timeout=self.timeout, trust_env=False)
        return self._session

    async def forward(self, url: str, path: str, body: bytes, *, by: str) -> tuple[int, bytes] | None:
        """POST ``body`` to ``url`` + ``path``; the leader's status and body, or None when it could not be
        reached (the caller answers "no leader")."""
        kwargs: dict[str, object] = {}
        if url.startswith("https:"):
            kwargs["ssl"] = self.ssl_context if self.ssl_context is not None else True
            if self.server_hostname:
                kwargs["server_hostname"] = self.server_hostname
        try:
            async with self._client().post(
                url.rstrip("/") + path,
                data=body,
                headers={"Content-Type": "application/json", FORWARDED_HEADER: by},
                **kwargs,  # type: ignore[arg-type]  # ssl and server_hostname, typed per aiohttp's overloads
            ) as resp:
                data = await resp.read()
                self.forwarded += 1
                return resp.status, data
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            self.failed += 1
            log.warning("forwarding to the leader failed", extra={"leader": url, "error": repr(e)[:300]})
            return None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
