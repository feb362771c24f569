"""deviceshare's verdicts on a gpushare pod: per node whether its cards fit it and its score there
(:func:`judge`), and the cards it takes on the node it was placed on (:func:`choose`), from the memo's
cards (:class:`~extender.core.gpu_share.ShareCards`) and, under the fragmentation policy, from the
figures kept per row state (:class:`~extender.core.gpu_frag_cache.FragCache`).

Each has a plain path (the cards judged and chosen as for any policy, the fragmentation figures read for
the score and the preferred card) and, with ``fast``, a shorter one for a pod sharing a card under the
fragmentation policy, equal by construction:

- the fit: the figures' rise is finite exactly where some card's room (``avail``: 0 on a card held whole,
  else its memory less the memory used) is at least the amount asked, which is
  :meth:`~extender.core.gpu_share.ShareCards.judge`'s rule for an amount above 0 (not held whole, memory
  less used at least the amount), so the fit is read off the rise instead of judged again;
- the card: where the rise is finite, the card it names has that room, so
  :meth:`~extender.core.gpu_share.ShareCards.choose` would take that preferred card first, scoring 0
  under this policy; and that one row's figures are looked up alone (:meth:`FragCache.figures`) rather
  than bringing every changed row up to date.

A property test (``tests/plugins/test_deviceshare_fast.py``) compares both paths' decisions, fits and
scores over random clusters, pods and cycles.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from extender.core.fit import Mask
from extender.core.gpu_cards import Choice
from extender.core.gpu_frag import Floats, Shape
from extender.core.gpu_memo import CardMemo
from extender.core.gpus import MEMORY, GpuRequest


def judge(
    memo: CardMemo,
    request: GpuRequest,
    policy: str,
    shape_of: Callable[[], Shape],
    *,
    fragmentation: bool,
    fast: bool,
) -> tuple[Mask, Floats]:
    """Per node, whether gpushare ``request`` fits and its score (0..100) by ``policy``;
    ``fragmentation``: scored by the figures of the pod's shape (``shape_of()``, which learns it)."""
    if not fragmentation:
        return memo.share.judge(request, policy)
    shape = shape_of()
    frag = memo.frag()
    if frag is None:
        return memo.share.judge(request, policy)
    rise, _, score = frag.rise(shape)
    if fast and request.kind == MEMORY and request.amount > 0:
        return rise < np.inf, score
    return memo.share.judge(request, policy)[0], score


def choose(
    memo: CardMemo,
    row: int,
    request: GpuRequest,
    policy: str,
    shape_of: Callable[[], Shape],
    *,
    fragmentation: bool,
    fast: bool,
) -> Choice:
    """The cards gpushare ``request`` takes on row ``row`` by ``policy`` (under ``fragmentation``, a
    share goes to the card whose use raises the fragmentation least), or why it cannot."""
    prefer = None
    if fragmentation and request.kind == MEMORY:
        frag = memo.frag()
        if frag is not None:
            shape = shape_of()
            if fast:
                rise, prefer, _ = frag.figures(shape, row)
                if request.amount > 0 and rise < np.inf:
                    return Choice(taken=((prefer, request.amount, 0),))
            else:
                prefer = int(frag.rise(shape)[1][row])
    return memo.share.choose(row, request, policy, prefer)
