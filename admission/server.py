"""The aiohttp face of admission: one POST route per served row of :data:`admission.webhooks.WEBHOOKS`.

Handlers are thin: read the body, decode it, ask the pure :func:`admission.dispatch.admit` (with the
server's :class:`Limits`), encode. A body above :data:`THREAD_DECODE` is decoded in a worker thread, so a
large object does not stall the event loop that also serves kube-scheduler. Status codes, by design: 200
for every answer (allowed, denied, patched, and a wrongly typed object is a denial naming its field); 400
with a plain-text reason only for a body that is not a v1 AdmissionReview (its envelope malformed); 413
for a body beyond any real object; 503 while the cluster view cannot answer (:class:`LookupUnavailable`)
and 500 if a rule fails unexpectedly, so that kube-apiserver applies the webhook's failurePolicy (pods:
admitted; queues, PodGroups: refused) rather than our guess.
Counters per path live in :class:`AdmissionMetrics` on the app, under :data:`METRICS_KEY`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

from admission.dispatch import admit
from admission.lookup import Lookup, LookupUnavailable
from admission.review import AdmissionRequest, MalformedReview, decode_review, encode
from admission.webhooks import Webhook, served_webhooks
from extender.api.limits import DEFAULT_LIMITS, Limits

log = logging.getLogger(__name__)

LookupProvider = Callable[[], Lookup]
# Told each answered review's resource, operation and handling time in seconds (the metrics' histogram).
Observe = Callable[[str, str, float], None]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Two copies of the largest object etcd stores (object and oldObject) plus the review around them.
MAX_BODY: Final = 8 * 1024 * 1024
# Decoding takes about a millisecond per 256 KiB: below this, a thread hop costs more than it saves.
THREAD_DECODE: Final = 256 * 1024


@dataclass(slots=True)
class AdmissionMetrics:
    """Counts by webhook path, for the process's metrics endpoint."""

    requests: Counter[str] = field(default_factory=Counter)
    denied: Counter[str] = field(default_factory=Counter)
    patched: Counter[str] = field(default_factory=Counter)
    malformed: Counter[str] = field(default_factory=Counter)
    unavailable: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)


METRICS_KEY: Final = web.AppKey("pumice_admission_metrics", AdmissionMetrics)


async def _read_body(request: web.Request) -> bytes | None:
    """The body, or None beyond :data:`MAX_BODY` (read here, as a sub-app's client_max_size is ignored)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        return None
    buf = bytearray()
    async for chunk in request.content.iter_chunked(64 * 1024):
        buf += chunk
        if len(buf) > MAX_BODY:
            return None
    return bytes(buf)


async def _decode(body: bytes) -> AdmissionRequest:
    if len(body) > THREAD_DECODE:
        return await asyncio.to_thread(decode_review, body)
    return decode_review(body)


def _handler(
    w: Webhook,
    lookup_provider: LookupProvider,
    metrics: AdmissionMetrics,
    limits: Limits,
    observe: Observe | None = None,
) -> Handler:
    async def timed(request: web.Request) -> web.StreamResponse:
        operation: list[str] = []  # the decoded review's, for the histogram's label
        if observe is None:
            return await handle(request, operation)
        t0 = time.perf_counter()
        try:
            return await handle(request, operation)
        finally:
            observe(w.resource, operation[0] if operation else "", time.perf_counter() - t0)

    async def handle(request: web.Request, operation: list[str]) -> web.StreamResponse:
        metrics.requests[w.path] += 1
        body = await _read_body(request)
        if body is None:
            metrics.malformed[w.path] += 1
            return web.Response(status=413, text=f"AdmissionReview larger than {MAX_BODY} bytes")
        try:
            req = await _decode(body)
        except MalformedReview as e:
            metrics.malformed[w.path] += 1
            log.warning("malformed admission request", extra={"path": w.path, "reason": str(e)})
            return web.Response(status=400, text=f"malformed AdmissionReview: {e}")
        operation.append(req.operation)
        try:
            review = admit(w, req, lookup_provider(), limits)
        except LookupUnavailable as e:
            metrics.unavailable[w.path] += 1
            return web.Response(status=503, text=f"pumice cannot answer yet: {e}")
        except Exception:
            metrics.failed[w.path] += 1
            log.exception("admission rule failed", extra={"path": w.path, "uid": req.uid})
            return web.Response(status=500, text="pumice admission failed; see the pumice log")
        response = review["response"]
        if not response["allowed"]:
            metrics.denied[w.path] += 1
            log.info(
                "admission denied",
                extra={
                    "path": w.path,
                    "uid": req.uid,
                    "operation": req.operation,
                    "namespace": req.namespace,
                    "object": req.name,
                    "reason": response.get("status", {}).get("message", ""),
                },
            )
        elif "patch" in response:
            metrics.patched[w.path] += 1
        return web.Response(body=encode(review), content_type="application/json")

    return timed


def make_admission_app(
    lookup_provider: LookupProvider, limits: Limits = DEFAULT_LIMITS, *, observe: Observe | None = None
) -> web.Application:
    """An app serving every served webhook at its table path (mount it at the ``path_prefix`` given to
    :func:`admission.webhooks.webhook_configurations`). ``lookup_provider`` is called once per request and
    may raise :class:`LookupUnavailable`; every object is checked against ``limits``; ``observe`` is told
    each request's resource, operation (empty for a malformed review) and handling time."""
    app = web.Application()
    metrics = AdmissionMetrics()
    app[METRICS_KEY] = metrics
    for w in served_webhooks():
        app.router.add_post(w.path, _handler(w, lookup_provider, metrics, limits, observe))
    return app
