"""Stage 1 annotators: who writes the hindsight skill a trajectory is labelled with.

``Annotator`` is the protocol: ``annotate(trajectories, privileged) -> list[Skill | None]``.

- ``OpenAIAnnotator``: a stronger model behind an OpenAI-compatible ``/v1/chat/completions``
  endpoint (vLLM, ``seed_gym.tools.openai_server``, a hosted API), temperature 0, the same
  analyzer prompt, lenient parsing and one retry as the policy-as-analyzer (``analyzer.analyze``).
  Plain HTTP (``urllib``), a few concurrent requests.
- ``PrivilegedAnnotator``: no model at all. It writes the skill from what the agent never saw,
  ``env.unwrapped.privileged_info()`` taken at reset (ALFWorld expert plan, Sokoban solver solution,
  EZPoints solution, WebShop goal attributes, search gold answers and supporting documents), and
  from the trajectory itself (its actions, invalid outputs, loops). A generic template is keyed on
  the privileged fields; each env's own clause is its agent spec's ``hindsight`` hook.
  This makes Stage 1 runnable offline (SEED.md: "beyond the paper"), and its skills can serve
  as the privileged teacher context of the ``opsd`` baseline.
- ``StaticSkillAnnotator``: a fixed skill bank per task type (the ``static-skills`` baseline).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from seed_gym.registration import agent_spec, list_envs
from seed_gym.trainer.algorithms.seed.analyzer import (
    Skill,
    SkillParseError,
    analyze,
    approx_tokens,
    parse_skill_json,
)
from seed_gym.trainer.trajectory import Trajectory
from seed_gym.wrappers.phrasing import clip, listing
from seed_gym.wrappers.spec import Hindsight


class Annotator(Protocol):
    name: str

    def annotate(
        self, trajectories: Sequence[Trajectory], privileged: Sequence[dict[str, Any]] | None = None
    ) -> list[Skill | None]:
        """One skill (or None when annotation failed) per trajectory, in order."""
        ...


# --- OpenAI-compatible endpoint -----------------------------------------------------------------
class OpenAIAnnotator:
    """Annotate with a chat model behind ``base_url`` (``http://host:port`` or ``.../v1``).

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (sent only if set). Transient failures
    (connection errors, HTTP 429/5xx) are retried ``http_retries`` times with backoff; a request
    that still fails yields an empty answer, which the analyzer's parse-and-retry turns into None.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 300.0,
        workers: int = 4,
        http_retries: int = 2,
        max_prompt_tokens: int | None = 6144,
        count_tokens: Callable[[str], int] = approx_tokens,
        name: str | None = None,
    ):
        base = base_url.rstrip("/")
        self.url = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.workers = max(1, workers)
        self.http_retries = http_retries
        self.max_prompt_tokens = max_prompt_tokens
        self.count_tokens = count_tokens
        self.name = name or f"openai:{model}"
        self.failures = 0  # requests that failed after all retries
        self.stats: dict[str, float] = {}

    def chat(self, messages: list[dict[str, str]]) -> str:
        """One completion; raises ``RuntimeError`` after the retries are spent."""
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode()
        last: Exception | None = None
        for attempt in range(self.http_retries + 1):
            if attempt:
                time.sleep(min(8.0, 0.5 * 2**attempt))
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read())
                return str(payload["choices"][0]["message"]["content"] or "")
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")[:300]
                last = RuntimeError(f"HTTP {e.code} from {self.url}: {detail}")
                if e.code != 429 and e.code < 500:
                    break  # the request itself is wrong: retrying will not help
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = RuntimeError(f"cannot reach {self.url}: {e}")
            except (KeyError, IndexError, TypeError, json.JSONDecodeError) as e:
                last = RuntimeError(f"malformed response from {self.url}: {e!r}")
                break
        raise last or RuntimeError("unreachable")

    def generate(self, chats: list[list[dict[str, str]]]) -> list[str]:
        """A ``generate_fn`` for ``analyzer.analyze``: concurrent requests, failures as ""."""

        def one(chat: list[dict[str, str]]) -> str:
            try:
                return self.chat(chat)
            except RuntimeError:
                self.failures += 1
                return ""

        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(one, chats))

    def annotate(
        self, trajectories: Sequence[Trajectory], privileged: Sequence[dict[str, Any]] | None = None
    ) -> list[Skill | None]:
        self.stats = {}
        return analyze(
            trajectories,
            self.generate,
            max_prompt_tokens=self.max_prompt_tokens,
            count_tokens=self.count_tokens,
            stats=self.stats,
        )


# --- privileged hindsight annotator -------------------------------------------------------------
def _task_phrase(task: str) -> str:
    """ "Push every box onto a target." -> "push every box onto a target" (to follow "To ")."""
    text = clip(task, 100).rstrip(" .!")
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        text = text[0].lower() + text[1:]
    return text


def _generic(info: dict[str, Any], traj: Trajectory) -> str | None:
    """Any env: the first plan-like field, else a compact list of the privileged fields."""
    for key in ("expert_plan", "plan", "solution", "solutions", "golden_answers", "answer"):
        value = info.get(key)
        if value:
            shown = listing(value, 12) if isinstance(value, (list, tuple)) else clip(value)
            return f"the reference {key.replace('_', ' ')} is: {shown}"
    fields = [f"{k}: {clip(json.dumps(v, default=str), 60)}" for k, v in info.items() if v]
    return ("the hidden facts are " + "; ".join(fields[:4])) if fields else None


def _loop(traj: Trajectory) -> tuple[str, int] | None:
    counts: dict[str, int] = {}
    for s in traj.steps:
        if s.action is not None:
            counts[s.action] = counts.get(s.action, 0) + 1
    if not counts:
        return None
    action, n = max(counts.items(), key=lambda kv: kv[1])
    return (action, n) if n >= 3 else None


class PrivilegedAnnotator:
    """Skills written from privileged env info; deterministic, no model, always parseable.

    The env's own clause comes from its agent spec (``AgentSpec.hindsight``); ``phrasing``
    overrides it; envs without one get a generic clause built from the privileged fields.
    ``privileged[i]`` is ``env.unwrapped.privileged_info()`` captured at the *reset* of trajectory
    i (a solver run later would describe the final state instead).
    """

    def __init__(
        self, env_id: str = "", *, phrasing: Hindsight | None = None, name: str = "privileged"
    ):
        self.env_id = env_id
        self.name = name
        if phrasing is None and env_id in list_envs():
            phrasing = agent_spec(env_id).hindsight
            if phrasing is None:
                warnings.warn(
                    f"{env_id} has no AgentSpec.hindsight: the privileged annotator phrases its "
                    "privileged_info() with a generic clause (docs/adding_an_env.md, section 5)",
                    stacklevel=2,
                )
        self.phrasing = phrasing or _generic

    def annotate(
        self, trajectories: Sequence[Trajectory], privileged: Sequence[dict[str, Any]] | None = None
    ) -> list[Skill | None]:
        if privileged is None:
            raise ValueError("PrivilegedAnnotator needs privileged_info() of every trajectory")
        if len(privileged) != len(trajectories):
            raise ValueError(
                f"{len(trajectories)} trajectories but {len(privileged)} privileged infos"
            )
        return [self.annotate_one(t, p) for t, p in zip(trajectories, privileged, strict=True)]

    def annotate_one(self, traj: Trajectory, info: dict[str, Any]) -> Skill | None:
        if not info:
            warnings.warn(
                f"{self.env_id or 'the env'}'s privileged_info() is empty: the privileged "
                "annotator's skills carry no env knowledge, only the outcome and the actions "
                "(docs/adding_an_env.md, section 5)",
                stacklevel=2,
            )
        how = (self.phrasing(info or {}, traj) if info else None) or _generic(info or {}, traj)
        n, invalid = len(traj.steps), traj.invalid_steps
        actions = [s.action for s in traj.steps if s.action is not None]
        summary = (
            f"The agent {'completed' if traj.won else 'failed'} the task '{clip(traj.task, 120)}' "
            f"in {n} steps with {invalid} invalid outputs"
            + (" and ran out of steps." if traj.truncated and not traj.won else ".")
        )
        if traj.won:
            skill = f"To {_task_phrase(traj.task)}, repeat the workflow that worked: {listing(actions, 12)}."
            if how:
                skill += f" In general, {how}."
            if invalid:
                skill += " Always write one well-formed action in the required format."
        else:
            loop = _loop(traj)
            if n and invalid * 2 >= n:
                mistake = "most outputs were not valid actions in the required format"
                sign = "an output without exactly one well-formed action"
            elif loop:
                mistake = (
                    f"the agent repeated '{clip(loop[0], 60)}' {loop[1]} times without progress"
                )
                sign = "the same observation coming back after an action"
            elif not actions:
                mistake = "the agent never took an action"
                sign = "ending a step without an action"
            else:
                mistake = "the actions taken did not reach the goal"
                sign = "steps that do not bring the goal closer"
            skill = f"Avoid this mistake: {mistake}; warning sign: {sign}."
            if how:
                skill += f" Instead, {how}."
        try:
            fields = parse_skill_json(Skill(summary, skill).to_json())
        except SkillParseError:  # defensive: a degenerate template must not crash Stage 1
            return None
        return Skill(fields["episode_summary"], fields["episode_skill"], traj.traj_id)


# --- a fixed skill bank (the static-skills baseline) --------------------------------------------
class StaticSkillAnnotator:
    """The ``static-skills`` baseline (as in SDAR): skills come from a fixed bank keyed by task
    type (``"*"`` is the fallback key), not from the trajectories. A JSON file
    ``{"pick_and_place": "...", "*": "..."}`` loads with ``from_json``."""

    def __init__(self, bank: dict[str, str], *, name: str = "static"):
        for text in bank.values():
            parse_skill_json(Skill("static skill bank entry", text).to_json())  # >= 5 words
        self.bank = dict(bank)
        self.name = name

    @classmethod
    def from_json(cls, path: str) -> StaticSkillAnnotator:
        with open(path, encoding="utf-8") as f:
            bank = json.load(f)
        if not isinstance(bank, dict) or not all(isinstance(v, str) for v in bank.values()):
            raise ValueError(f"{path}: a skill bank is a JSON object of task type -> skill text")
        return cls(bank)

    def annotate(
        self, trajectories: Sequence[Trajectory], privileged: Sequence[dict[str, Any]] | None = None
    ) -> list[Skill | None]:
        out: list[Skill | None] = []
        for t in trajectories:
            text = self.bank.get(t.task_type, self.bank.get("*"))
            out.append(
                None if text is None else Skill(f"static skill for {t.task_type}", text, t.traj_id)
            )
        return out
