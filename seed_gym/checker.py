"""``check_env``: the conformance test every seed-gym env passes. Env authors run exactly this.

On top of gymnasium's own checker it verifies the info vocabulary, pinned tasks, determinism under
a seed (byte for byte), garbage actions (never raise, flagged invalid), the reward rules
(unparseable output never pays more than the worst in-format action; nothing is paid or won
after the end, by termination or by truncation), pickling, and split manifests (non-empty, stable,
disjoint by id and by content). What it cannot verify (no ``content_key``, no episode that ends,
no ``TimeLimit``) and a game that charges for unparseable input itself are ``EnvCheckWarning``s,
never silent skips. docs/adding_an_env.md lists every check.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.wrappers import TimeLimit

from seed_gym.core import INFO_KEYS, SeedEnv
from seed_gym.registration import agent_spec
from seed_gym.splits import SPLITS, check_disjoint

GARBAGE_ACTIONS: tuple[Any, ...] = (
    "",
    "   ",
    "\x00\x01\x02",
    "ð̷͎ü🙂 ∑ 中文 \u202e",
    "x" * 20_000,
    "click[" * 100,
    "<action></action>",
    None,
    12345,
    ["up"],
)


class EnvCheckError(AssertionError):
    """An env broke the seed-gym contract."""


class EnvCheckWarning(UserWarning):
    """A check that could not run in full, or a rule the env bends without breaking a check:
    ``check_env`` passes, and says what it could not verify (``seed-gym check`` prints each as
    a ``warn`` line)."""


def _fail(msg: str) -> None:
    raise EnvCheckError(msg)


def _warn(msg: str) -> None:
    warnings.warn(msg, EnvCheckWarning, stacklevel=3)


def _check_info(info: dict, env: SeedEnv, where: str) -> None:
    missing = [k for k in INFO_KEYS if k not in info]
    if missing:
        _fail(f"info after {where} lacks {missing}")
    if info["split"] != env.split:
        _fail(f"info['split']={info['split']!r} after {where}, env split is {env.split!r}")
    if not isinstance(info["won"], bool) or not isinstance(info["action_is_valid"], bool):
        _fail(f"info['won'] and info['action_is_valid'] must be bool after {where}")
    adm = info["admissible_actions"]
    if adm is not None and not (isinstance(adm, list) and all(isinstance(a, str) for a in adm)):
        _fail(f"info['admissible_actions'] must be list[str] or None after {where}")
    if not isinstance(info["task_id"], str) or not isinstance(info["task_type"], str):
        _fail(f"info['task_id'] and info['task_type'] must be str after {where}")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype
    return type(a) is type(b) and a == b


def _rollout(env: gym.Env, seed: int, n_steps: int) -> list[tuple]:
    """Reset with ``seed`` and take ``n_steps`` actions chosen from a seed-derived stream."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    record = [(obs, info)]
    for _ in range(n_steps):
        action = env.unwrapped.sample_action(rng, info["admissible_actions"])
        obs, reward, terminated, truncated, info = env.step(action)
        record.append((action, obs, float(reward), terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset()
            record.append((obs, info))
    return record


def _first_difference(a: list[tuple], b: list[tuple]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if not _equal(x, y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _format_penalty(env: gym.Env) -> float:
    """The format penalty the registered agent spec charges on unparseable output (0 if the env
    is not registered)."""
    env_id = getattr(env.spec, "id", None) or getattr(env.unwrapped, "env_id", "")
    try:
        return float(getattr(agent_spec(env_id), "invalid_penalty", 0.0))
    except gym.error.Error:
        return 0.0


def _probe_actions(env: gym.Env, info: dict, rng: np.random.Generator, n: int) -> list[Any]:
    """The in-format actions to compare at a state: every admissible action (at most ``n``,
    a seeded sample beyond that), or ``n`` draws of the env's sampler when it lists none."""
    adm = info.get("admissible_actions")
    if adm:
        if len(adm) <= n:
            return list(adm)
        return [adm[int(i)] for i in rng.choice(len(adm), size=n, replace=False)]
    return [env.unwrapped.sample_action(rng, None) for _ in range(n)]


def check_invalid_output_never_pays(
    env: gym.Env,
    *,
    penalty: float | None = None,
    seeds: tuple[int, ...] = (0, 1),
    walk: int = 3,
    max_actions: int = 24,
) -> None:
    """At each probed state, unparseable model output (the agent layer steps the game with
    ``None`` and charges ``penalty``) scores no more than the worst in-format admissible action.

    Otherwise garbage is a refuge (a policy learns never to answer) or carries no signal. States:
    the start of each seed's episode and the states of a short random walk from it. Rewards are
    compared net of potential-based shaping (``SeedEnv.reward_potential``). ``penalty``
    defaults to the registered agent spec's ``invalid_penalty``.

    Warns (``EnvCheckWarning``) when the game itself pays less for ``None`` than for its worst
    in-format action: the format penalty is the agent wrapper's alone, and an env that charges
    too makes unparseable output cost both (-0.2 where the spec says 0.1).
    """
    penalty = _format_penalty(env) if penalty is None else float(penalty)
    charged: tuple[int, int, float, float] | None = None  # the first state where the env charges

    def unshaped(action: Any) -> float:
        """The step's reward from a copy of the current state, net of potential-based shaping."""
        probe = copy.deepcopy(env)
        before = probe.unwrapped.reward_potential() or 0.0
        reward = float(probe.step(action)[1])
        return reward - ((probe.unwrapped.reward_potential() or 0.0) - before)

    for seed in seeds:
        rng = np.random.default_rng(seed)
        _, info = env.reset(seed=seed)
        for depth in range(walk + 1):
            noop = unshaped(None)
            garbage = noop - penalty
            worst = None
            for action in _probe_actions(env, info, rng, max_actions):
                reward = unshaped(action)
                worst = reward if worst is None else min(worst, reward)
                if garbage > reward + 1e-9:
                    _fail(
                        f"seed {seed}, step {depth}: unparseable output scores {garbage:+.3f} "
                        f"(no-op {garbage + penalty:+.3f}, format penalty {penalty}) but the "
                        f"in-format action {action!r:.60} scores {reward:+.3f}: garbage must "
                        "never pay more than the worst in-format action"
                    )
            if charged is None and worst is not None and noop < worst - 1e-9:
                charged = (seed, depth, noop, worst)
            if depth == walk:
                break
            action = env.unwrapped.sample_action(rng, info.get("admissible_actions"))
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
    if charged is not None:
        seed, depth, noop, worst = charged
        _warn(
            f"check_invalid_output_never_pays: seed {seed}, step {depth}: step(None) pays "
            f"{noop:+.3f} where the worst in-format action pays {worst:+.3f}: the env charges for "
            f"unparseable input and the agent wrapper's format penalty ({penalty}) comes on "
            "top; pay what a no-op pays and leave the charge to AgentSpec.invalid_penalty"
        )


def _next_action(env: gym.Env, rng: np.random.Generator, info: dict) -> Any:
    """The oracle's action when the env has one, else a seeded sample."""
    try:
        return env.unwrapped.oracle_action()
    except NotImplementedError:
        return env.unwrapped.sample_action(rng, info.get("admissible_actions"))


def _check_after_the_end(
    env: gym.Env, rng: np.random.Generator, info: dict, *, where: str, after: int
) -> None:
    """``after`` steps of the oracle (or sampled actions), then garbage, past an ended episode
    (its last step's ``info`` given) each pay exactly 0 and win nothing the episode had not."""
    won = bool(info["won"])
    actions = [_next_action(env, rng, info) for _ in range(after)]
    actions += [env.unwrapped.sample_action(rng, info.get("admissible_actions")), None, "x"]
    for n, action in enumerate(actions, 1):
        _, reward, _, _, info = env.step(action)
        if reward != 0.0:
            _fail(f"{where}: step({action!r:.40}) after the end paid {reward}; expected 0")
        if info.get("won") is True and not won:
            _fail(f"{where}: step({action!r:.40}) after the end set won=True ({n} steps after)")


def _with_step_limit(env: gym.Env, limit: int) -> gym.Env | None:
    """A copy of ``env`` whose outermost ``TimeLimit`` truncates after ``limit`` steps (the
    first limit to end an episode, so a freeze inside it would miss the end); None when
    ``env`` has no ``TimeLimit`` (nothing is ever truncated)."""
    env = copy.deepcopy(env)
    inner = env
    while isinstance(inner, gym.Wrapper):
        if isinstance(inner, TimeLimit):
            inner._max_episode_steps = min(inner._max_episode_steps, limit)
            return env
        inner = inner.env
    return None


def check_nothing_paid_after_the_end(
    env: gym.Env, *, seeds: tuple[int, ...] = (0, 1), max_steps: int = 60, after: int = 20
) -> None:
    """Once an episode has ended, by termination or by truncation (the step limit), ``after``
    further steps (the oracle's actions, then sampled and garbage ones) each pay exactly 0 and
    never set ``won`` the episode did not have.

    Three ends are checked for each seed. Termination: the episode driven by the oracle (when
    the env has one, else randomly) in ``env`` as given, and in the env class stepped directly
    (``env.unwrapped``: an env's own end is final even without ``make``'s wrappers).
    Truncation: a copy of ``env`` with a step limit of 1 is stepped once with a no-op (garbage
    never ends a game), so the limit ends an episode the game still plays; the oracle's next
    actions would make progress there, and win, if the env kept playing. A made env passes by
    its ``FreezeAtEnd`` (``seed_gym.register`` puts one around the ``TimeLimit``); a
    ``TimeLimit`` outside it is caught here.

    Warns (``EnvCheckWarning``) for what it could not check: no seed's episode terminated
    within ``max_steps`` steps (termination unchecked), or ``env`` has no ``TimeLimit``
    (truncation unchecked).
    """
    raw = env.unwrapped
    ends = [("", env)] if raw is env else [("", env), (", the env class stepped directly", raw)]
    terminated_seeds = []
    short = None
    for seed in seeds:
        for label, target in ends:
            rng = np.random.default_rng(seed)
            _, info = target.reset(seed=seed)
            for _ in range(max_steps):
                _, _, terminated, truncated, info = target.step(_next_action(target, rng, info))
                if terminated:
                    break
                if truncated:
                    _, info = target.reset(seed=seed + 1000)
            else:
                continue  # the episode never terminated: nothing to check for this seed
            terminated_seeds.append(seed)
            where = f"seed {seed}, after termination{label}"
            _check_after_the_end(target, rng, info, where=where, after=after)
        env.reset(seed=seed)  # the wrappers' state, after stepping the class directly

        short = _with_step_limit(env, 1)
        if short is None:
            continue  # no step limit: nothing is ever truncated (warned below)
        rng = np.random.default_rng(seed)
        short.reset(seed=seed)
        _, _, terminated, truncated, info = short.step(None)
        if truncated and not terminated:
            where = f"seed {seed}, after truncation"
            _check_after_the_end(short, rng, info, where=where, after=after)
    if not terminated_seeds:
        driver = "the oracle" if _has_oracle(raw) else "sampled actions (no oracle_action)"
        _warn(
            f"check_nothing_paid_after_the_end: no episode of seeds {list(seeds)} terminated "
            f"within {max_steps} steps of {driver}, so steps after termination were not checked"
        )
    if short is None:
        _warn(
            "check_nothing_paid_after_the_end: the env has no TimeLimit (seed_gym.make adds one "
            "from register's max_episode_steps), so steps after truncation were not checked"
        )


def _has_oracle(raw: Any) -> bool:
    return type(raw).oracle_action is not SeedEnv.oracle_action


def check_splits_disjoint_by_content(env: gym.Env) -> None:
    """No two splits share a task *content* (``SeedEnv.content_key``: a room's start state, a
    question, an instruction), only distinct ids. A held-out task whose content is also a
    training task measures memory, not generalisation. An env that exposes no key is checked
    by id only, with an ``EnvCheckWarning`` saying so."""
    raw = env.unwrapped
    owner: dict[str, tuple[str, str]] = {}
    for split in SPLITS:
        for task_id in raw.manifest(split).task_ids:
            key = raw.content_key(task_id)
            if key is None:
                _warn(
                    f"check_splits_disjoint_by_content: {type(raw).__name__}.content_key"
                    f"({task_id!r}) is None, so splits were checked disjoint by id only; "
                    "return what a task is (its start state, question or goal)"
                )
                return
            first = owner.setdefault(key, (split, task_id))
            if first[0] != split:
                _fail(
                    f"task {task_id!r} ({split}) has the same content as {first[1]!r} "
                    f"({first[0]}): splits must be disjoint by content, not only by id"
                )


def check_env(
    env: gym.Env, *, seeds: tuple[int, ...] = (0, 1), n_steps: int = 12, check_splits: bool = True
) -> None:
    """Raise ``EnvCheckError`` (or gymnasium's assertion) if ``env`` breaks the contract.

    ``env`` is a made env (``seed_gym.make(...)``); it is reset and stepped, not closed.
    """
    raw = env.unwrapped
    # a SeedEnv
    if not isinstance(raw, SeedEnv):
        _fail(f"{type(raw).__name__} must subclass seed_gym.SeedEnv")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gym_check_env(raw, skip_render_check=True, skip_close_check=True)

    # info vocabulary on reset and steps, observations inside the space
    obs, info = env.reset(seed=seeds[0])
    _check_info(info, raw, "reset")
    if not raw.observation_space.contains(obs):
        _fail(f"reset observation is not in {raw.observation_space}")
    if info["task_id"] not in raw.task_ids:
        _fail(f"info['task_id']={info['task_id']!r} is not in the {raw.split!r} manifest")

    # pinned task: every id works and is echoed
    first = raw.task_ids[0]
    _, info = env.reset(seed=seeds[0], options={"task_id": first})
    if info["task_id"] != first:
        _fail(f"reset(options={{'task_id': {first!r}}}) gave task {info['task_id']!r}")
    try:
        env.reset(options={"task_id": "no-such-task \u2603"})
    except ValueError:
        pass
    else:
        _fail("reset with an unknown task_id must raise ValueError")

    # garbage actions never raise and are flagged invalid
    env.reset(seed=seeds[0])
    for action in GARBAGE_ACTIONS:
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as e:  # noqa: BLE001
            _fail(f"step({action!r:.40}) raised {type(e).__name__}: {e}")
        _check_info(info, raw, f"step({action!r:.40})")
        if info["action_is_valid"]:
            _fail(f"step({action!r:.40}) must set action_is_valid=False")
        if not isinstance(obs.get("text"), str) or not np.isfinite(float(reward)):
            _fail(f"step({action!r:.40}) returned a bad observation or reward")
        if terminated or truncated:
            env.reset(seed=seeds[0])

    # reward rules
    check_invalid_output_never_pays(env, seeds=seeds)
    check_nothing_paid_after_the_end(env, seeds=seeds)

    # determinism: two copies, same seed, same action stream, identical bytes
    for seed in seeds:
        a = _rollout(env, seed, n_steps)
        clone = copy.deepcopy(env)
        b = _rollout(clone, seed, n_steps)
        diff = _first_difference(a, b)
        if diff is not None:
            _fail(
                f"seed {seed}: two runs differ at record {diff}: {a[diff]!r:.300} vs {b[diff]!r:.300}"
            )
        for rec in a:
            _check_info(rec[-1], raw, "a step")

    # pickling (for subprocess and Ray workers): the copy replays the same episode
    restored = pickle.loads(pickle.dumps(env))
    diff = _first_difference(
        _rollout(env, seeds[0], n_steps), _rollout(restored, seeds[0], n_steps)
    )
    if diff is not None:
        _fail(f"an unpickled copy replays seed {seeds[0]} differently at record {diff}")
    restored.close()

    # split manifests: disjoint by id, stable between calls, disjoint by content
    if check_splits:
        manifests = [raw.manifest(s) for s in SPLITS]
        check_disjoint(manifests)
        again = [raw.manifest(s) for s in SPLITS]
        if [m.hash for m in manifests] != [m.hash for m in again]:
            _fail("split manifests are not stable between calls")
        check_splits_disjoint_by_content(env)
