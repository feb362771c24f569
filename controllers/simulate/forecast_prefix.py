"""Groups a forecast's cycle leaves out because the room is gone before their turn, checked after the cycle.

Each step of a forecast frees a few nodes, and a cycle starts the few groups near the head of each queue's
line that fit; the hundreds behind them, which pass every test made before the cycle (each alone would fit
the free room), then fail one by one at their turn, because the groups ahead took the room first. So a
cycle looks only at the first ``keep`` gangs of each queue's line (the *prefix*, in the forecast's
``order``); the rest, the *tail*, is left out as settled groups are, weighing on its queue by what it
weighed when a cycle last left it waiting, and the cycle's outcome is then checked.

Why the check makes it exact. The gangs of a queue that are not whole take their turns in job order, which
is the forecast's ``order`` where alike groups may be cut at all (:mod:`controllers.simulate.forecast_alike`
says when; the gangs here are those with a kind, so not whole); no action evicts (the prefilter is on), so
between two turns the free room only shrinks. A cycle over every group takes the same turns as the cycle
over the prefix until the first turn of a tail group, and that turn comes after the first turn of every
gang of its queue ahead of it that the cycle looked at. So the room a tail group finds at its turn is at
most the free room as the cycle opened less what the cycle had placed by the end of the last of those
turns (``CycleResult.turns`` says how many placements there were then; the placements are recorded in the
order they were committed). A tail group that cannot fit that room (fewer copies of its pod fit node by
node than its gang needs) fails at its turn and changes nothing: no placement, no share moves, its queue
keeps its key, and the turns of the other queues go on as they did; the next tail group finds still less
room. So when no tail group of any queue could fit the room bound of its queue, the cycle over the prefix
placed what the cycle over every group would have; otherwise it is run again with the prefix doubled for
the queues that failed the check (at worst every group: the cycle over every group). Tail groups keep the
reason a cycle last gave them, as every group the prefilter leaves out does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from controllers.simulate.forecast_alike import Alike
from controllers.simulate.forecast_room import Room
from extender.core.model import GroupKey, PodUID

# Off: a cycle looks at every group the other cuts leave in (tests/simulate/test_forecast_prefix.py
# compares the two).
PREFIX_CUT = True
FIRST_KEEP = 16  # the prefix a queue starts with; doubled for a queue whose tail could have fit

Free = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prefix:
    """A cycle's cut: per queue, the tail groups left out (in line order) and the gangs before the first of
    them."""

    tail: Mapping[str, Sequence[GroupKey]]
    ahead: Mapping[str, Sequence[GroupKey]]

    def left_out(self) -> frozenset[GroupKey]:
        return frozenset(k for line in self.tail.values() for k in line)


def lines(
    alike: Mapping[GroupKey, Alike], queue: Callable[[GroupKey], str], order: Mapping[GroupKey, int]
) -> dict[str, list[GroupKey]]:
    """The gangs with a kind (so not whole), by queue in line order."""
    out: dict[str, list[GroupKey]] = {}
    for key in alike:
        out.setdefault(queue(key), []).append(key)
    for line in out.values():
        line.sort(key=order.__getitem__)
    return out


def cut(
    lines: Mapping[str, Sequence[GroupKey]], keep: Mapping[str, int], candidates: Collection[GroupKey]
) -> Prefix:
    """Per queue, its line past the first ``keep`` gangs: those among ``candidates`` (groups that may be
    left out) form the tail, from the first of them on; the others stay in."""
    tail: dict[str, list[GroupKey]] = {}
    ahead: dict[str, list[GroupKey]] = {}
    for q, line in lines.items():
        first = next((i for i in range(keep.get(q, FIRST_KEEP), len(line)) if line[i] in candidates), None)
        if first is not None:
            ahead[q] = list(line[:first])
            tail[q] = [k for k in line[first:] if k in candidates]
    return Prefix(tail=tail, ahead=ahead)


def room_bounds(
    prefix: Prefix,
    looked_at: Collection[GroupKey],
    turns: Sequence[tuple[GroupKey, int]],
    placements: Sequence[tuple[PodUID, str]],
    free: Free,
    vector: Callable[[PodUID], npt.NDArray[np.int64]],
    node_pos: Mapping[str, int],
) -> dict[str, Free | None]:
    """Per queue with a tail, the most room its tail groups can find at their turns: ``free`` as the cycle
    opened less what was placed by the end of the last first turn of a gang ahead that the cycle looked at
    (``looked_at``); None when one of those had no turn (nothing bounds the room then)."""
    first: dict[GroupKey, int] = {}
    for key, placed in turns:
        first.setdefault(key, placed)
    out: dict[str, Free | None] = {}
    for q, line in prefix.ahead.items():
        counts = [first.get(k) for k in line if k in looked_at]
        if any(c is None for c in counts):
            out[q] = None
            continue
        n = max((c for c in counts if c is not None), default=0)
        room = free.copy()
        for uid, node in placements[:n]:
            room[node_pos[node]] -= vector(uid)
        out[q] = room
    return out


def short(
    prefix: Prefix,
    alike: Mapping[GroupKey, Alike],
    rooms: Mapping[str, Free | None],
    copies: Callable[[Room, Mapping[str, int]], int],
) -> list[str]:
    """The queues with a tail group that could fit its room bound: as many copies of its pod fit the room,
    node by node, as its gang needs (asked once per kind: groups of one kind need the same)."""
    out: list[str] = []
    for q, room in rooms.items():
        if room is None:
            out.append(q)
            continue
        # (the last of each kind: any one serves, and a comprehension is what a tail of hundreds costs)
        kinds = {a.kind: a for a in map(alike.__getitem__, prefix.tail[q])}
        rows = Room(room)
        if any(copies(rows, a.requests) >= a.need for a in kinds.values()):
            out.append(q)
    return out
