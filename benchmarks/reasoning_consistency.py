"""Does the policy's reasoning still fit what it does and what it sees? Two checks on the saved
EZPoints trajectories of training runs, per run and iteration. No model runs.

    python benchmarks/reasoning_consistency.py runs/long-kl001/runs/*-s3
    python benchmarks/reasoning_consistency.py runs/long-kl001/runs/* --json out.json

The `smollm2-cpu` format warm-up teaches EZPoints' reasoning one template:
``<think>The cards count 10 and 2. The formula so far is '10 +'. I append 2.</think>
<action>2</action>``. It restates the formula and names the token the step plays, so two things
can be checked against the episode without a model:

- **decision**: the token named after "I append" against the executed action. They differ when
  the action no longer copies the choice the reasoning made.
- **state**: the formula the reasoning restates ("so far is '...'", or "is empty") against the
  observation's ``Formula:`` line. They differ when the reasoning describes a state the episode
  is not in, e.g. the final formula written at the first step.

A step whose response lacks the phrase is not counted for that check (the operator step names
a sum instead of the formula). A collapse shows which link broke: the decision (the action
decoupled from the reasoning) or the state (the reasoning copies a remembered answer).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seed_gym.trajlog import read_jsonl, trajectory_files

DECISION = re.compile(r"I append (.+?)\.\s*</think>")
STATED = re.compile(r"formula so far is '([^']*)'")
EMPTY = re.compile(r"formula is empty")
OBSERVED = re.compile(r"^Formula:[ \t]*(.*?)\s*$", re.MULTILINE)


@dataclass
class Counts:
    """Steps checked and steps that disagree, for each check."""

    decisions: int = 0
    decision_mismatches: int = 0
    states: int = 0
    state_mismatches: int = 0

    def add(self, step: dict[str, Any]) -> None:
        response, action = str(step.get("response", "")), step.get("action")
        named = DECISION.search(response)
        if named and action is not None:
            self.decisions += 1
            self.decision_mismatches += _norm(named.group(1)) != _norm(action)
        stated = STATED.search(response)
        said = stated.group(1) if stated else ("" if EMPTY.search(response) else None)
        seen = OBSERVED.findall(str(step.get("observation", "")))
        if said is not None and seen:
            self.states += 1
            self.state_mismatches += _norm(said) != _norm(seen[-1])

    def row(self) -> dict[str, Any]:
        return {
            "decisions": self.decisions,
            "decision_mismatch": _share(self.decision_mismatches, self.decisions),
            "states": self.states,
            "state_mismatch": _share(self.state_mismatches, self.states),
        }


def _norm(text: Any) -> str:
    return " ".join(str(text).split())


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def run_consistency(run: Path) -> dict[int, dict[str, Any]]:
    """iteration -> the two checks over every step of that iteration's rollouts."""
    out: dict[int, dict[str, Any]] = {}
    for path in trajectory_files(run):
        if not path.name.startswith("iter_"):
            continue
        counts = Counts()
        for record in read_jsonl(path):  # a half-written last line is skipped with a warning
            for step in record.get("steps") or []:
                counts.add(step)
        out[int(path.stem[len("iter_") :])] = counts.row()
    return out


def table(results: dict[str, dict[int, dict[str, Any]]]) -> str:
    """One row per run, one cell per iteration: decision / state mismatch shares in percent."""
    iterations = sorted({it for per in results.values() for it in per})
    lines = [
        "| run | " + " | ".join(f"it {it}: decision / state" for it in iterations) + " |",
        "|---|" + "---|" * len(iterations),
    ]

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.0f} %"

    for run, per in results.items():
        cells = [
            f"{pct(per[it]['decision_mismatch'])} / {pct(per[it]['state_mismatch'])}"
            if it in per
            else ""
            for it in iterations
        ]
        lines.append(f"| {run} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_labels(runs: list[Path]) -> list[str]:
    """Each run's folder name, with as many parent folders as it takes to tell the runs apart
    (``replay-s4/skip-sat`` and ``replay-s0/skip-sat``, not two rows named ``skip-sat``)."""
    parts = [run.resolve().parts for run in runs]
    depth = 1
    while depth < max(len(p) for p in parts):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
        depth += 1
    return [str(run) for run in runs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="training run folders (trajectories/)")
    p.add_argument("--json", type=Path, default=None, help="also write the counts here")
    args = p.parse_args(argv)
    runs = list(dict.fromkeys(run.resolve() for run in args.runs))  # one row per folder
    results = {name: run_consistency(run) for name, run in zip(run_labels(runs), runs, strict=True)}
    empty = [name for name, per in results.items() if not per]
    if len(empty) == len(results):
        raise SystemExit("no trajectories/iter_*.jsonl in any of the runs given")
    for name in empty:
        print(f"{name}: no trajectories/iter_*.jsonl (skipped)")
    results = {k: v for k, v in results.items() if v}
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
