"""Where the skill moves the teacher: the skill gap of saved SEED trajectories, split by the part
of the response a token is in (the ``<action>`` the env executes, or the reasoning around it), by
the episode's outcome and by iteration. No model runs: it reads what training logged.

    python benchmarks/skill_gap_regions.py runs/long/runs/seed-s0 runs/long/runs/seed-s1
    python benchmarks/skill_gap_regions.py runs/long/runs/seed-*      # pooled over seeds
    python benchmarks/skill_gap_regions.py runs/long/runs/seed-* --decision-after "I append"

Every step of ``RUN/trajectories/iter_*.jsonl`` that has teacher logprobs contributes its tokens:
the gap is ``teacher - sampling`` logprob of the same token (``opd/skill_gap``, nats), a *fork*
is a token the sampling policy was unsure of (NLL > 0.1, ``skill_effect.FORK_NLL``). The control
columns are the same gaps under another task's skill, on the trajectories the run scored so
(``--skill-control``; in the trajectory files since seed-gym 0.4.0, so older runs show none). A skill
that helps raises won episodes' decisions and lowers lost ones'; this table says whether the
tokens the gate sees as forks are those decisions. Iteration 1 is shown apart: its policy is the
Stage-1 model, before any RL update. ``--decision-after PHRASE`` makes a third region of the token
that follows PHRASE in the reasoning (in EZPoints' warm-up format, "I append" precedes the card
or operator the step will play: the choice itself, written before the action copies it).
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from seed_gym.trainer.algorithms.seed.skill_effect import FORK_NLL
from seed_gym.trajlog import read_jsonl, trajectory_files

ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL)


def action_mask(tokens: list[str], response: str) -> list[bool]:
    """Per token: does it overlap the inside of the response's last ``<action>...</action>``?
    Tokens are the response's pieces in order; if they do not spell the response, none is."""
    if "".join(tokens) != response:
        return [False] * len(tokens)
    spans = list(ACTION.finditer(response))
    if not spans:
        return [False] * len(tokens)
    lo, hi = spans[-1].span(1)
    out, pos = [], 0
    for tok in tokens:
        start, pos = pos, pos + len(tok)
        out.append(start < hi and pos > lo and hi > lo)
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def decision_mask(tokens: list[str], phrase: str) -> list[bool]:
    """Per token: is it the first non-blank token after an occurrence of ``phrase``?"""
    out, text, pending = [], "", False
    for tok in tokens:
        hit = pending and bool(tok.strip())
        out.append(hit)
        pending = pending and not hit
        text += tok
        pending = pending or text.rstrip().endswith(phrase)
    return out


@dataclass
class Cell:
    """Tokens of one (iterations, outcome, region) cell: under the trajectory's own skill, and
    under the shuffled control's (another task's skill; the few trajectories the run scored so)."""

    gaps: list[float] = field(default_factory=list)
    nlls: list[float] = field(default_factory=list)
    control_gaps: list[float] = field(default_factory=list)
    control_nlls: list[float] = field(default_factory=list)

    def add(self, gap: float, nll: float) -> None:
        self.gaps.append(gap)
        self.nlls.append(nll)

    def add_control(self, gap: float, nll: float) -> None:
        self.control_gaps.append(gap)
        self.control_nlls.append(nll)

    def row(self) -> tuple[int, float, float, int, float]:
        """(tokens, mean gap, mean NLL, fork tokens, mean gap on forks)."""
        return _stats(self.gaps, self.nlls)

    def control_row(self) -> tuple[int, float, float, int, float]:
        """The same over the control's tokens."""
        return _stats(self.control_gaps, self.control_nlls)


def _stats(gaps: list[float], nlls: list[float]) -> tuple[int, float, float, int, float]:
    forks = [g for g, x in zip(gaps, nlls, strict=True) if x > FORK_NLL]
    return len(gaps), _mean(gaps), _mean(nlls), len(forks), _mean(forks)


def trajectories(run_dirs: Iterable[Path]) -> Iterator[tuple[int, dict]]:
    """(iteration, trajectory record) of every saved training trajectory of the runs (a line a
    killed writer left half-written is skipped with a warning, as ``read_jsonl`` does)."""
    for run in run_dirs:
        paths = [p for p in trajectory_files(run) if p.name.startswith("iter_")]
        if not paths:
            raise SystemExit(f"{run}: no trajectories/iter_*.jsonl (a run saved with them?)")
        for path in paths:
            iteration = int(path.stem.split("_")[-1])
            for record in read_jsonl(path):
                yield iteration, record


def gap_table(
    run_dirs: Iterable[Path], decision_after: str | None = None
) -> dict[tuple[str, str, str], Cell]:
    """(``first``/``later`` iterations, ``won``/``lost``, ``action``/``reasoning``/``decision``)
    -> its tokens; ``decision`` only with ``decision_after`` (see ``decision_mask``)."""
    cells: dict[tuple[str, str, str], Cell] = defaultdict(Cell)
    for iteration, traj in trajectories(run_dirs):
        when = "first" if iteration == 1 else "later"
        outcome = "won" if traj.get("won") else "lost"
        for step in traj["steps"]:
            teacher = step.get("teacher_logprobs")
            if not teacher:
                continue
            in_action = action_mask(step["tokens"], step["response"])
            decision = (
                decision_mask(step["tokens"], decision_after)
                if decision_after
                else [False] * len(in_action)
            )
            control = step.get("control_logprobs") or [None] * len(teacher)
            for lp, tl, cl, act, dec in zip(
                step["logprobs"], teacher, control, in_action, decision, strict=True
            ):
                region = "action" if act else "decision" if dec else "reasoning"
                cell = cells[(when, outcome, region)]
                cell.add(tl - lp, -lp)
                if cl is not None:
                    cell.add_control(cl - lp, -lp)
    return cells


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="SEED run folders (with trajectories/)")
    p.add_argument(
        "--decision-after",
        default=None,
        help="the reasoning phrase before each choice; the token after it is its own region",
    )
    args = p.parse_args(argv)
    cells = gap_table(args.runs, args.decision_after)
    if not cells:
        raise SystemExit("no step with teacher logprobs in these runs (not a SEED run?)")
    head = ("iterations", "outcome", "region", "tokens", "gap", "NLL", "forks", "fork gap")
    head += ("control tokens", "control gap", "control forks", "control fork gap")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for when in ("first", "later"):
        for outcome in ("won", "lost"):
            for region in ("action", "decision", "reasoning"):
                if (when, outcome, region) not in cells:
                    continue
                cell = cells[(when, outcome, region)]
                n, gap, nll, forks, fork_gap = cell.row()
                cn, cgap, _, cforks, cfork_gap = cell.control_row()
                label = "1" if when == "first" else "2+"
                print(
                    f"| {label} | {outcome} | {region} | {n} | {gap:+.4f} | {nll:.4f} | {forks} "
                    f"| {fork_gap:+.3f} | {cn} | {cgap:+.4f} | {cforks} | {cfork_gap:+.3f} |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
