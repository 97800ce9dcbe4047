"""Sokoban rules on flat cell indices, and an exact breadth-first solver (the oracle policy).

A state is ``(player, boxes)``: ``player`` a flat index ``row * width + col`` and ``boxes`` a
sorted tuple of flat indices. The room's border is always wall, so ``index +/- 1`` never wraps
into a neighbouring row. Breadth-first search over these states gives *optimal* (fewest-moves)
solutions; the rooms of the suite have a few hundred to a few thousand reachable states.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

ACTIONS = ("up", "down", "left", "right")

State = tuple[int, tuple[int, ...]]


def offsets(width: int) -> dict[str, int]:
    """The flat-index step of each action in a room ``width`` cells wide."""
    return {"up": -width, "down": width, "left": -1, "right": 1}


def move(floor: frozenset[int], state: State, delta: int) -> tuple[State, int | None, int | None]:
    """One forward move: ``(new_state, box_from, box_to)``; the state is unchanged when blocked.

    The player walks onto floor; a box in the way is pushed one cell if the cell behind it is
    free floor (no chains of boxes, no walls).
    """
    player, boxes = state
    step = player + delta
    if step not in floor:
        return state, None, None
    if step not in boxes:
        return (step, boxes), None, None
    behind = step + delta
    if behind not in floor or behind in boxes:
        return state, None, None
    moved = tuple(sorted(behind if b == step else b for b in boxes))
    return (step, moved), step, behind


def dead_cells(floor: frozenset[int], targets: frozenset[int], width: int) -> frozenset[int]:
    """Non-target cells in a corner (a wall on one vertical and one horizontal side): a box pushed
    there can never move again, so the search skips such states."""
    dead = set()
    for c in floor - targets:
        vertical = (c - width) not in floor or (c + width) not in floor
        horizontal = (c - 1) not in floor or (c + 1) not in floor
        if vertical and horizontal:
            dead.add(c)
    return frozenset(dead)


def solve(
    floor: Iterable[int],
    targets: Iterable[int],
    start: State,
    width: int,
    max_depth: int | None = None,
) -> list[str] | None:
    """The shortest action sequence that puts every box on a target, or None if there is none
    (within ``max_depth`` moves when given). ``[]`` when the start is already solved."""
    floor = frozenset(floor)
    targets = frozenset(targets)
    start = (start[0], tuple(sorted(start[1])))
    if frozenset(start[1]) <= targets:
        return []
    dead = dead_cells(floor, targets, width)
    deltas = offsets(width)
    parent: dict[State, tuple[State, str] | None] = {start: None}
    frontier = deque([(start, 0)])
    while frontier:
        state, depth = frontier.popleft()
        if max_depth is not None and depth >= max_depth:
            continue
        for action in ACTIONS:
            new, _, box_to = move(floor, state, deltas[action])
            if new == state or new in parent or box_to in dead:
                continue
            parent[new] = (state, action)
            if frozenset(new[1]) <= targets:
                plan = []
                node: State = new
                while (link := parent[node]) is not None:
                    node, taken = link
                    plan.append(taken)
                return plan[::-1]
            frontier.append((new, depth + 1))
    return None
