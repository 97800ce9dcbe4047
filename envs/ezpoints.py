"""EZPoints: build a formula equal to 12 from two playing cards, one token per step."""

from __future__ import annotations

import hashlib
import re
from functools import cache
from typing import Any

import numpy as np

from seed_gym.core import SeedEnv
from seed_gym.envs.cards import RANKS, SUITS, Card, table_image
from seed_gym.splits import SplitManifest

ENV_ID = "seed_gym/EZPoints-v0"
TARGET_POINTS = 12
MAX_TOKENS = 5
NUMBER_TOKENS = tuple(str(n) for n in range(1, 11))
TOKENS = (*NUMBER_TOKENS, "+", "*", "=")
IMAGE_SIZE = 300

# The reference's rewards (gym-cards' EZPoints as verl-agent and SEED use it): +10 for a right
# formula, 0 for everything else. A wrong answer ends the episode at 0, an illegal token is a no-op
# at 0; the agent layer adds its format penalty to unparseable output, so garbage scores below
# any in-format action (``seed_gym.check_env`` checks that).
WIN_REWARD = 10.0
LOSS_REWARD = 0.0  # a wrong "=" or a formula grown past MAX_TOKENS; the episode ends
ILLEGAL_REWARD = 0.0  # an illegal token; a no-op

# Unordered card-value pairs the reference generator can deal (always solvable, see _dealable).
# The unseen split holds out one "+" pair and one "*" pair; train and seen never deal them.
UNSEEN_PAIRS = frozenset({(4, 8), (2, 6)})
SEEN_FRACTION = 5  # one task in 5 of the training pairs goes to "seen" (by id hash)
SPLIT_VERSION = "1"
_TASK_RE = re.compile(r"^ezpoints-(A|[2-9]|10|J|Q|K)([HDCS])-(A|[2-9]|10|J|Q|K)([HDCS])$")


def _dealable() -> frozenset[tuple[int, int]]:
    """Value pairs of the reference deal: card 1 in 2..K (capped at 10); card 2 = 12 / card 1
    (when card 1 divides 12, with p = 0.5) else 12 - card 1; order random."""
    pairs = set()
    for first in range(2, 14):
        v = min(first, 10)
        pairs.add(tuple(sorted((v, TARGET_POINTS - v))))
        if TARGET_POINTS % v == 0:
            pairs.add(tuple(sorted((v, TARGET_POINTS // v))))
    return frozenset(pairs)


DEALABLE_PAIRS = _dealable()  # {2,10} {2,6} {3,9} {3,4} {4,8} {5,7} {6,6}


def task_id_of(cards: tuple[Card, Card]) -> str:
    return f"ezpoints-{cards[0].code}-{cards[1].code}"


def parse_task_id(task_id: str) -> tuple[Card, Card]:
    m = _TASK_RE.match(task_id) if isinstance(task_id, str) else None
    if m is None:
        raise ValueError(f"not an EZPoints task id: {task_id!r} (expected e.g. 'ezpoints-5H-KS')")
    r1, s1, r2, s2 = m.groups()
    return Card(r1, s1), Card(r2, s2)


def value_pair(cards: tuple[Card, Card]) -> tuple[int, int]:
    return tuple(sorted(c.value for c in cards))  # type: ignore[return-value]


def _is_seen(task_id: str) -> bool:
    return int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % SEEN_FRACTION == 0


@cache
def ezpoints_manifest(split: str) -> SplitManifest:
    """Every ordered pair of two different cards whose values form a dealable pair, sorted; the
    unseen pairs form ``unseen``, the rest is divided between ``train`` and ``seen`` by id hash."""
    deck = [Card(r, s) for r in RANKS for s in SUITS]
    ids: dict[str, list[str]] = {"train": [], "seen": [], "unseen": []}
    for a in deck:
        for b in deck:
            pair = value_pair((a, b))
            if a == b or pair not in DEALABLE_PAIRS:
                continue
            tid = task_id_of((a, b))
            if pair in UNSEEN_PAIRS:
                ids["unseen"].append(tid)
            else:
                ids["seen" if _is_seen(tid) else "train"].append(tid)
    if split not in ids:
        raise ValueError(f"unknown split {split!r}; choose one of {tuple(ids)}")
    pairs = sorted(UNSEEN_PAIRS if split == "unseen" else DEALABLE_PAIRS - UNSEEN_PAIRS)
    meta = {"value_pairs": [list(p) for p in pairs], "target": TARGET_POINTS}
    return SplitManifest(ENV_ID, split, tuple(sorted(ids[split])), version=SPLIT_VERSION, meta=meta)


def evaluate(tokens: list[str]) -> int | None:
    """The value of ``number (op number)*`` with ``*`` before ``+``; None if malformed."""
    if len(tokens) % 2 == 0:
        return None
    total, product = 0, None
    for i, tok in enumerate(tokens):
        if i % 2 == 0:
            if tok not in NUMBER_TOKENS:
                return None
            product = int(tok) if product is None else product * int(tok)
        elif tok == "+":
            total += product or 0
            product = None
        elif tok != "*":
            return None
    return total + (product or 0)


class EZPointsEnv(SeedEnv):
    """EZPoints (gym-cards' easy 24-point game): make 12 from two cards.

    Description:
        Two playing cards are dealt (A = 1, 2-10 their number, J / Q / K = 10). The agent
        appends one token per step to a formula and ends with ``=``; a correct formula uses
        each card's value exactly once. Every deal is solvable, by ``+`` or ``*``.

    Observation:
        ``image`` (default): a ``(300, 300, 3)`` uint8 picture of the cards on green felt with
        the line ``Formula: ...`` (Pillow shapes and default font, no card art); the text entry
        is that formula line. ``text``: ``Cards: the 5 of Hearts and the King of Spades.`` and
        the formula line. ``text+image``: both. Illegal actions prefix a feedback line.

    Actions:
        One token: ``1`` .. ``10``, ``+``, ``*`` or ``=`` (surrounding spaces ignored). A number
        is legal only if an unused card has that value. ``admissible_actions`` lists all 13.

    Rewards:
        As the reference: ``=`` evaluates the formula (``*`` before ``+``; numbers and operators
        must alternate): +10 if it equals 12 and uses both cards, else 0; the episode ends
        either way. An illegal token (a number not held or already used, or anything outside
        the 13 tokens) gives 0 and changes nothing. A token other than ``=`` when the formula
        already has 5 tokens gives 0 and ends the episode (the reference's length limit). Other
        tokens: 0. Unparseable model output costs the agent layer's format penalty (0.1).

    Termination:
        ``terminated`` after ``=`` or an over-long formula; ``won`` iff the formula made 12.
        The registry's ``TimeLimit`` truncates after 8 steps. Steps after the end pay 0 and
        repeat ``won``.

    Splits:
        Tasks are ordered pairs of two different cards whose values the reference deal can
        produce: {2,10} {3,9} {5,7} {6,6} {3,4} for ``train`` / ``seen`` (seen = one id in five
        by a fixed hash), {4,8} and {2,6} only in ``unseen`` (never dealt in train or seen).

    Version History:
        v0: initial release. Differs from the reference on purpose: seeded deals, formulas are
        parsed, not ``eval``-ed, so juxtaposed numbers do not form a new number. Rewards were
        -1 for a wrong formula and an illegal token before 0.2.0, which paid unparseable output
        better than a wrong answer; now as the reference.
    """

    env_id = ENV_ID
    modalities = ("image", "text", "text+image")
    default_modality = "image"
    image_shape = (IMAGE_SIZE, IMAGE_SIZE)

    def __init__(
        self, split: str = "train", modality: str | None = None, render_mode: str | None = None
    ):
        super().__init__(split=split, modality=modality, render_mode=render_mode)
        self.task_description = f"Build a formula that equals {TARGET_POINTS} using the value of each card exactly once."
        self.task_type = "ezpoints"
        self._cards: tuple[Card, Card] | None = None
        self._formula: list[str] = []
        self._used = [False, False]
        self._done = self._won = False

    def manifest(self, split: str) -> SplitManifest:
        return ezpoints_manifest(split)

    def content_key(self, task_id: str) -> str:
        """The two cards in order: the id names the whole deal."""
        first, second = parse_task_id(task_id)
        return f"{first.code}-{second.code}"

    # --- observation --------------------------------------------------------------------------
    def formula_text(self) -> str:
        return ("Formula: " + " ".join(self._formula)).rstrip()

    def render_text(self) -> str:
        self._require_reset(self._cards is not None)
        a, b = self._cards
        return f"Cards: the {a.name} and the {b.name}.\n{self.formula_text()}"

    def render_image(self) -> np.ndarray:
        self._require_reset(self._cards is not None)
        return table_image(self._cards, self.formula_text(), IMAGE_SIZE)

    def _obs(self, feedback: str = "") -> dict[str, Any]:
        body = self.formula_text() if self.modality == "image" else self.render_text()
        return self._observation((feedback + "\n" if feedback else "") + body)

    def _result(
        self,
        reward: float,
        *,
        terminated: bool = False,
        won: bool = False,
        valid: bool = True,
        feedback: str = "",
    ):
        self._done = self._done or terminated
        self._won = self._won or won
        info = self._info(
            won=won,
            action_is_valid=valid,
            admissible_actions=list(TOKENS),
            **{"ezpoints.formula": " ".join(self._formula)},
        )
        return self._obs(feedback), float(reward), terminated, False, info

    # --- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.task_id = self._choose_task(options)
        self._cards = parse_task_id(self.task_id)
        self._formula = []
        self._used = [False, False]
        self._done = self._won = False
        info = self._info(admissible_actions=list(TOKENS), **{"ezpoints.formula": ""})
        return self._obs(), info

    def step(self, action: Any):
        if self._cards is None:
            raise RuntimeError("call reset() before step()")
        token = self._as_action(action)
        if self._done:  # pays nothing and repeats the outcome
            return self._result(
                0.0, terminated=True, won=self._won, valid=False, feedback="The episode is over."
            )
        if token not in TOKENS:
            shown = f"Illegal token {token[:40]!r}" if token is not None else "No token"
            return self._result(
                ILLEGAL_REWARD, valid=False, feedback=f"{shown}: append one of 1-10, +, *, =."
            )
        if token == "=":
            value = evaluate(self._formula)
            won = value == TARGET_POINTS and all(self._used)
            self._formula.append("=")
            return self._result(WIN_REWARD if won else LOSS_REWARD, terminated=True, won=won)
        if len(self._formula) >= MAX_TOKENS:
            return self._result(
                LOSS_REWARD,
                terminated=True,
                valid=False,
                feedback=f"The formula is already {MAX_TOKENS} tokens long; only '=' was allowed.",
            )
        if token in NUMBER_TOKENS:
            free = [
                i for i, c in enumerate(self._cards) if not self._used[i] and c.value == int(token)
            ]
            if not free:
                return self._result(
                    ILLEGAL_REWARD,
                    valid=False,
                    feedback=f"Illegal token {token}: no unused card is worth {token}.",
                )
            self._used[free[0]] = True
        self._formula.append(token)
        return self._result(0.0)

    # --- policies -----------------------------------------------------------------------------
    def solutions(self) -> list[list[str]]:
        """Every winning token sequence (both orders, ``+`` and ``*``), ``=`` included."""
        self._require_reset(self._cards is not None)
        a, b = (str(c.value) for c in self._cards)
        out = []
        for x, y in ((a, b), (b, a)):
            for op in ("+", "*"):
                if evaluate([x, op, y]) == TARGET_POINTS and [x, op, y, "="] not in out:
                    out.append([x, op, y, "="])
        return out

    def oracle_action(self) -> str:
        """The next token of a winning formula the current one is a prefix of; ``=`` (ending a
        lost episode at once) when there is none."""
        n = len(self._formula)
        for plan in self.solutions():
            if plan[:n] == self._formula and n < len(plan):
                return plan[n]
        return "="

    def privileged_info(self) -> dict[str, Any]:
        self._require_reset(self._cards is not None)
        plans = self.solutions()
        return {
            "solution": " ".join(plans[0]),
            "solutions": [" ".join(p) for p in plans],
            "card_values": [c.value for c in self._cards],
            "cards": [c.name for c in self._cards],
        }
