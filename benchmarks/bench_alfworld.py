"""ALFWorld speed: seed-gym's env next to the bare textworld engine, on the same games.

    python benchmarks/bench_alfworld.py [--games 8] [--split unseen] [--repeats 3] [--data-dir D]

For each game it times, with the same command sequence (the expert's walkthrough):

- **bare**: what ``AlfredTWEnv`` runs, ``AlfredDemangler(textworld PddlEnv)`` with won +
  admissible commands; ``reset`` re-translates the PDDL problem every time;
- **engine**: seed-gym's ``Engine`` (the same stack under ``accel.accelerated``);
- **seed-gym**: ``ALFWorldEnv`` (engine + info vocabulary, validity, rewards, pooling).

It prints medians of reset (cold = first reset of a game in this process, warm = again) and step,
the speed-up over bare, and the wrapper's step overhead (seed-gym step / engine step). Nothing is
asserted; timings on shared machines are noisy, so compare ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def _median_ms(xs: list[float]) -> float:
    return 1000 * statistics.median(xs) if xs else float("nan")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=8)
    p.add_argument("--split", default="unseen")
    p.add_argument("--repeats", type=int, default=3, help="resets per game")
    p.add_argument("--data-dir", default=None, help="official-layout games (default: the suite)")
    args = p.parse_args(argv)

    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs import PddlEnv

    from seed_gym.envs.alfworld import ALFWorldEnv
    from seed_gym.envs.alfworld.engine import Engine

    env = ALFWorldEnv(split=args.split, pool_size=1, data_dir=args.data_dir)
    games = list(env._split_games(args.split).values())
    step = max(1, len(games) // args.games)
    games = games[::step][: args.games]
    walks = [json.loads(g.path.read_text())["walkthrough"] for g in games]

    t: dict[str, list[float]] = {
        k: [] for k in ("bare_reset", "bare_step", "eng_step", "cold", "warm", "sg_step")
    }
    for game, walk in zip(games, walks, strict=True):
        # bare textworld, as AlfredTWEnv builds it
        bare = AlfredDemangler(
            PddlEnv(textworld.EnvInfos(won=True, admissible_commands=True)), shuffle=False
        )
        bare.load(str(game.path))
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            bare.reset()
            t["bare_reset"].append(time.perf_counter() - t0)
        for command in walk:
            t0 = time.perf_counter()
            bare.step(command)
            t["bare_step"].append(time.perf_counter() - t0)

        # seed-gym's engine alone
        engine = Engine()
        engine.load(game)
        engine.reset()
        for command in walk:
            t0 = time.perf_counter()
            engine.step(command)
            t["eng_step"].append(time.perf_counter() - t0)
        engine.close()

        # the env: first reset of the game (load + reset), then warm resets from the pool
        for r in range(args.repeats):
            t0 = time.perf_counter()
            env.reset(seed=r, options={"task_id": game.task_id})
            t["cold" if r == 0 else "warm"].append(time.perf_counter() - t0)
        for command in walk:
            t0 = time.perf_counter()
            env.step(command)
            t["sg_step"].append(time.perf_counter() - t0)
    env.close()

    m = {k: _median_ms(v) for k, v in t.items()}
    print(
        f"ALFWorld {args.split}: {len(games)} games, {len(t['sg_step'])} steps per stack (medians, ms)"
    )
    print(f"{'':24}{'bare textworld':>16}{'seed-gym':>12}{'speed-up':>10}")
    print(
        f"{'reset (first of a game)':24}{m['bare_reset']:16.1f}{m['cold']:12.1f}{m['bare_reset'] / m['cold']:9.1f}x"
    )
    print(
        f"{'reset (again)':24}{m['bare_reset']:16.1f}{m['warm']:12.1f}{m['bare_reset'] / m['warm']:9.1f}x"
    )
    print(
        f"{'step':24}{m['bare_step']:16.1f}{m['sg_step']:12.1f}{m['bare_step'] / m['sg_step']:9.1f}x"
    )
    print(
        f"wrapper step overhead: seed-gym step / engine step = {m['sg_step'] / m['eng_step']:.3f} "
        f"(engine step {m['eng_step']:.1f} ms)"
    )


if __name__ == "__main__":
    main()
