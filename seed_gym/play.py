"""``seed-gym play ENV_ID``: play an env yourself in the terminal.

Each turn prints the observation (images are saved as PNG files and their paths printed) and the
admissible actions; type an action and press Enter. ``hint`` asks the env's oracle, ``quit`` (or
end of input, Ctrl-D) stops. A finished episode starts the next one with the next seed. With
``--agent`` you see exactly the prompt an LLM sees and type completions
(``<think>...</think><action>...</action>``), which are parsed like a model's.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

import seed_gym
from seed_gym.evaluate import add_import_argument
from seed_gym.usage import (
    OneLineParser,
    add_env_kwarg_argument,
    check_env_args,
    env_kwargs_or_exit,
    import_modules_or_exit,
)
from seed_gym.wrappers.vision import to_pil

QUIT = {"quit", "exit", ":q"}


def _save_images(images: list[Any], folder: Path, episode: int, step: int) -> list[Path]:
    paths = []
    for i, image in enumerate(images):
        path = folder / f"ep{episode:03d}_step{step:03d}_{i}.png"
        to_pil(image).save(path)
        paths.append(path)
    return paths


def _show(
    obs: dict, info: dict, *, agent: bool, folder: Path, episode: int, step: int, out: TextIO
):
    if agent:
        for message in obs["messages"]:
            print(f"--- {message['role']} ---\n{message['content']}", file=out)
        images = obs["images"]
    else:
        print(obs["text"], file=out)
        images = [obs["image"]] if "image" in obs else []
    for path in _save_images(images, folder, episode, step):
        print(f"[image saved to {path}]", file=out)
    admissible = info.get("admissible_actions")
    if admissible and not agent:
        print("Admissible actions: " + ", ".join(admissible), file=out)


def play(
    env_id: str,
    *,
    split: str = "seen",
    seed: int = 0,
    modality: str | None = None,
    agent: bool = False,
    image_dir: str | Path | None = None,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> int:
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    make = seed_gym.make_agent_env if agent else seed_gym.make
    env = make(env_id, split=split, modality=modality, **(env_kwargs or {}))
    folder = Path(image_dir) if image_dir else Path(tempfile.mkdtemp(prefix="seed-gym-play-"))
    folder.mkdir(parents=True, exist_ok=True)
    episode, step, total = 0, 0, 0.0
    obs, info = env.reset(seed=seed)
    print(f"{env_id} split={split} seed={seed} task={info['task_id']}", file=out)
    task = getattr(env.unwrapped, "task_description", "")
    if task and not agent:
        print(f"Task: {task}", file=out)
    show = True
    try:
        while True:
            if show:
                _show(obs, info, agent=agent, folder=folder, episode=episode, step=step, out=out)
            show = True
            print("> ", end="", file=out, flush=True)
            line = stdin.readline()
            if not line:  # end of input
                print("\n(end of input)", file=out)
                return 0
            action = line.rstrip("\n")
            if action.strip().lower() in QUIT:
                return 0
            if action.strip().lower() == "hint":
                try:
                    print(f"oracle: {env.unwrapped.oracle_action()}", file=out)
                except NotImplementedError:
                    print("this env has no oracle", file=out)
                show = False
                continue
            obs, reward, terminated, truncated, info = env.step(action)
            step += 1
            total += float(reward)
            valid = "" if info.get("action_is_valid", True) else " (invalid action)"
            print(f"reward {float(reward):+.2f}{valid}", file=out)
            if terminated or truncated:
                result = "won" if info.get("won") else ("out of steps" if truncated else "lost")
                print(f"Episode over: {result}, return {total:+.2f} in {step} steps.", file=out)
                episode, step, total = episode + 1, 0, 0.0
                obs, info = env.reset(seed=seed + episode)
                print(f"\nNew episode (seed {seed + episode}), task={info['task_id']}", file=out)
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    prog = "seed-gym play"
    p = OneLineParser(prog=prog, description=__doc__.splitlines()[0])
    p.add_argument("env_id", nargs="?", help="e.g. seed_gym/Sokoban-v0 (or --env, as elsewhere)")
    p.add_argument("--env", dest="env_flag", default=None, help="the env id, as in eval and train")
    p.add_argument("--split", default="seen", help="train | seen | unseen (default: seen)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--modality", default=None, help="text | image | text+image (env default)")
    p.add_argument("--agent", action="store_true", help="see the LLM prompt, type completions")
    p.add_argument("--image-dir", default=None, help="where PNGs go (default: a temp folder)")
    add_env_kwarg_argument(p)
    add_import_argument(p)
    args = p.parse_args(argv)
    if (args.env_id is None) == (args.env_flag is None):
        p.error("name the env once: seed-gym play ENV_ID or seed-gym play --env ENV_ID")
    args.env_id = args.env_id or args.env_flag
    import_modules_or_exit(prog, args.imports)
    env_kwargs = env_kwargs_or_exit(prog, args.env_kwargs)
    check_env_args(
        prog, args.env_id, split=args.split, modality=args.modality, env_kwargs=env_kwargs
    )
    return play(
        args.env_id,
        split=args.split,
        seed=args.seed,
        modality=args.modality,
        agent=args.agent,
        image_dir=args.image_dir,
        env_kwargs=env_kwargs,
    )


if __name__ == "__main__":
    raise SystemExit(main())
