"""How the cluster cache parses the objects it holds many of, so that each costs little: pods with their
labels shared among pods with equal ones (a gang's, a ReplicaSet's: :mod:`controllers.state.shared`) and
their spec read once for pods with equal ones (:mod:`extender.core.pod_spec`), and
PodGroups parsed and packed page by page (:mod:`controllers.state.packed`), so that 11 000 raw PodGroups
are never all held decoded at once.

Invariant: what is parsed equals what :func:`~extender.core.parse.parse_pod` and
:func:`~extender.core.parse.parse_podgroup` give; only which equal objects are shared differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controllers.state.packed import pack
from controllers.state.shared import Shared
from controllers.state.staged import Staged
from controllers.state.unreadable import Failure
from extender.core.model import Pod, PodGroup
from extender.core.parse import parse_pod, parse_podgroup
from extender.core.pod_spec import SpecMemo

Obj = dict[str, Any]
ListedGroup = tuple[PodGroup, bytes | Obj]  # the model and the raw object packed


def pod_parser() -> Callable[[Obj], Pod]:
    """:func:`parse_pod`, the labels of each pod shared with a recent pod that had equal ones, and what
    its spec alone decides read once per distinct spec (:class:`~extender.core.pod_spec.SpecMemo`)."""
    labels: Shared[Mapping[str, str]] = Shared()
    specs = SpecMemo()

    def share(read: dict[str, str]) -> Mapping[str, str]:
        return labels.share(tuple(read.items()), lambda: read)

    def parse(obj: Obj) -> Pod:
        # (the labels shared before the Pod is made: replacing them in a made Pod cost a second Pod)
        return parse_pod(obj, specs, share)

    return parse


def podgroups_listing(
    default_queue: str,
    apply: Callable[[list[ListedGroup], list[Failure]], None],
    packer: Callable[[Obj], bytes | Obj] = pack,
) -> Staged[ListedGroup]:
    """A PodGroup LIST, each parsed and packed (by ``packer``) as its page arrives, handed to ``apply`` at
    its end."""

    def parse(obj: Obj) -> ListedGroup:
        return parse_podgroup(obj, default_queue), packer(obj)

    return Staged("PodGroup", parse, apply)
