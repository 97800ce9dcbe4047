"""Seeded Sokoban rooms: a random-walk floor plan, then reverse playing from the solved position.

A task id such as ``sokoban-6x6-b1-000123`` names the room size, the number of boxes and a
generation seed; ``room_for_task`` turns it into the same room on every machine. All randomness
comes from a ``numpy.random.Generator`` seeded by ``(seed, height, width, boxes)``; the global
RNGs (``random``, ``np.random``) are never touched.

Reverse playing: with every box on its target, a breadth-first search over *pull* moves (the
inverse of pushes) from every solved position finds each state that can reach a solved one, with
its exact distance (fewest forward moves). The room's start is drawn from the states whose
distance lies in the upper half of what the room offers, capped at ``max_solution`` moves, with
no box on a target. So every generated room is solvable within the env's step limit by
construction, and the solver (``sokoban_solver.solve``) confirms it.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from seed_gym.envs.sokoban_solver import State, offsets, solve

# gym-sokoban's cell codes, kept so rooms can be compared with it cell for cell.
WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER = 0, 1, 2, 3, 4, 5

# Floor stamps carved around the walker (row, col offsets); each contains the walker's cell,
# which keeps the floor connected.
_STAMPS = (
    ((0, 0),),
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((0, 0), (0, 1), (1, 0)),
    ((0, 0), (0, 1), (1, 0), (1, 1)),
    ((0, -1), (0, 0), (1, 0)),
)
_DIRECTIONS = ((-1, 0), (1, 0), (0, -1), (0, 1))
_TURN_PROBABILITY = 0.35
_TASK_RE = re.compile(r"^sokoban-(\d+)x(\d+)-b(\d+)-(\d+)$")


@dataclass(frozen=True)
class RoomConfig:
    """A room distribution: size, boxes, how much floor the walker carves, solution length."""

    height: int
    width: int
    boxes: int
    walk_steps: int
    max_solution: int = 15  # the registered step limit: the oracle always finishes in time
    min_solution: int = 2

    def __post_init__(self):
        if min(self.height, self.width) < 4 or self.boxes < 1:
            raise ValueError(f"a room needs at least 4x4 cells and one box, got {self}")
        if not 1 <= self.min_solution <= self.max_solution:
            raise ValueError(f"need 1 <= min_solution <= max_solution, got {self}")

    @property
    def key(self) -> str:
        return f"{self.height}x{self.width}-b{self.boxes}"

    def task_id(self, seed: int) -> str:
        return f"sokoban-{self.key}-{seed:06d}"


CONFIGS: dict[str, RoomConfig] = {
    # train / seen: gym-sokoban's default task in verl-agent (about 10 floor cells, 3-15 moves)
    "6x6-b1": RoomConfig(6, 6, 1, walk_steps=16, min_solution=3),
    # unseen: a bigger room with two boxes (about 15 floor cells, 4-15 moves)
    "7x7-b2": RoomConfig(7, 7, 2, walk_steps=22, min_solution=4),
}


@dataclass(frozen=True)
class Room:
    """A room: fixed layer (wall / floor / target) and the start state, as flat cell indices."""

    height: int
    width: int
    floor: frozenset[int]  # every non-wall cell, targets included
    targets: frozenset[int]
    player: int
    boxes: tuple[int, ...]
    solution_length: int  # fewest moves from the start to a solved room (-1: unsolvable)

    def fixed(self) -> np.ndarray:
        """``(H, W)`` int8: 0 wall, 1 floor, 2 target (gym-sokoban's ``room_fixed``)."""
        grid = np.full(self.height * self.width, WALL, dtype=np.int8)
        grid[list(self.floor)] = FLOOR
        grid[list(self.targets)] = TARGET
        return grid.reshape(self.height, self.width)

    @property
    def start(self) -> State:
        return self.player, self.boxes

    def content_key(self) -> str:
        """The start state as a string: two rooms with the same key are the same puzzle."""
        cells = ",".join(str(c) for c in sorted(self.floor))
        goals = ",".join(str(c) for c in sorted(self.targets))
        boxes = ",".join(str(c) for c in self.boxes)
        return f"{self.height}x{self.width}|{cells}|{goals}|{self.player}|{boxes}"


def parse_task_id(task_id: str) -> tuple[RoomConfig, int]:
    """``(config, seed)`` of a task id like ``sokoban-6x6-b1-000123``."""
    m = _TASK_RE.match(task_id) if isinstance(task_id, str) else None
    if m is None:
        raise ValueError(
            f"not a Sokoban task id: {task_id!r} (expected e.g. 'sokoban-6x6-b1-000123')"
        )
    height, width, boxes, seed = (int(g) for g in m.groups())
    key = f"{height}x{width}-b{boxes}"
    config = CONFIGS.get(key) or RoomConfig(height, width, boxes, walk_steps=height * width // 2)
    return config, seed


def room_from_text(text: str) -> Room:
    """A room from a grid in the text observation's symbols (cells may be space-separated):
    ``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``√`` box on target, ``P`` player,
    ``S`` player on target. For tests and hand-made levels."""
    rows = [line.replace(" ", "") for line in text.strip().splitlines() if line.strip()]
    height, width = len(rows), max(len(r) for r in rows)
    floor, targets, boxes, players = set(), set(), [], []
    for r, row in enumerate(rows):
        for c, ch in enumerate(row.ljust(width, "#")):
            i = r * width + c
            if ch == "#":
                continue
            if ch not in "_OX√PS":
                raise ValueError(f"unknown Sokoban symbol {ch!r} at row {r}, column {c}")
            if r in (0, height - 1) or c in (0, width - 1):
                raise ValueError("the outer ring of a room must be wall")
            floor.add(i)
            if ch in "O√S":
                targets.add(i)
            if ch in "X√":
                boxes.append(i)
            if ch in "PS":
                players.append(i)
    if len(players) != 1 or not boxes or len(boxes) != len(targets):
        raise ValueError("a room needs one player and as many boxes as targets")
    start = (players[0], tuple(sorted(boxes)))
    plan = solve(floor, targets, start, width)
    return Room(
        height,
        width,
        frozenset(floor),
        frozenset(targets),
        players[0],
        start[1],
        solution_length=-1 if plan is None else len(plan),
    )


@lru_cache(maxsize=4096)
def room_for_task(task_id: str) -> Room:
    """The room a task id names (cached: generating one takes milliseconds)."""
    config, seed = parse_task_id(task_id)
    return generate_room(config, seed)


def generate_room(config: RoomConfig, seed: int, max_attempts: int = 500) -> Room:
    """A room of ``config`` from ``seed``; floor plans that offer no good start are redrawn from
    the same generator, so the result depends on ``(config, seed)`` only."""
    rng = np.random.default_rng([seed, config.height, config.width, config.boxes])
    for _ in range(max_attempts):
        floor = _carve(rng, config)
        if len(floor) < config.boxes + 3:
            continue
        cells = sorted(floor)
        targets = frozenset(int(c) for c in rng.choice(cells, size=config.boxes, replace=False))
        room = _reverse_play(rng, config, floor, targets)
        if room is not None:
            return room
    raise RuntimeError(f"no {config.key} room for seed {seed} after {max_attempts} floor plans")


def _carve(rng: np.random.Generator, config: RoomConfig) -> frozenset[int]:
    """Floor cells carved by a walker that turns with probability 0.35 and stamps a small shape
    at each step; the outer ring stays wall."""
    h, w = config.height, config.width
    r = int(rng.integers(1, h - 1))
    c = int(rng.integers(1, w - 1))
    direction = _DIRECTIONS[int(rng.integers(4))]
    floor: set[int] = set()
    for _ in range(config.walk_steps):
        if rng.random() < _TURN_PROBABILITY:
            direction = _DIRECTIONS[int(rng.integers(4))]
        r = min(max(r + direction[0], 1), h - 2)
        c = min(max(c + direction[1], 1), w - 2)
        for dr, dc in _STAMPS[int(rng.integers(len(_STAMPS)))]:
            rr, cc = r + dr, c + dc
            if 1 <= rr <= h - 2 and 1 <= cc <= w - 2:
                floor.add(rr * w + cc)
    return frozenset(floor)


def _reverse_play(
    rng: np.random.Generator, config: RoomConfig, floor: frozenset[int], targets: frozenset[int]
) -> Room | None:
    """Breadth-first pulls from every solved position; draw a hard-enough start, or None."""
    deltas = tuple(offsets(config.width).values())
    solved = tuple(sorted(targets))
    distance: dict[State, int] = {}
    frontier: deque[State] = deque()
    for p in sorted(floor - targets):
        distance[(p, solved)] = 0
        frontier.append((p, solved))
    while frontier:
        state = frontier.popleft()
        d = distance[state]
        if d >= config.max_solution:
            continue
        player, boxes = state
        for e in deltas:
            step = player + e
            if step not in floor or step in boxes:
                continue
            # the inverse of a plain walk, and, if a box sits on the far side, of a push
            successors = [(step, boxes)]
            if player - e in boxes:
                pulled = tuple(sorted(player if b == player - e else b for b in boxes))
                successors.append((step, pulled))
            for new in successors:
                if new not in distance:
                    distance[new] = d + 1
                    frontier.append(new)
    candidates = [
        (d, s)
        for s, d in distance.items()
        if d >= config.min_solution and not (set(s[1]) & targets)
    ]
    if not candidates:
        return None
    top = max(d for d, _ in candidates)
    low = max(config.min_solution, (top + 1) // 2)
    levels = sorted({d for d, _ in candidates if d >= low})
    level = levels[int(rng.integers(len(levels)))]
    pool = sorted(s for d, s in candidates if d == level)
    player, boxes = pool[int(rng.integers(len(pool)))]
    return Room(
        height=config.height,
        width=config.width,
        floor=floor,
        targets=targets,
        player=player,
        boxes=boxes,
        solution_length=level,
    )
