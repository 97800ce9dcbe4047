"""Stage 1 annotators: who writes the hindsight skill a trajectory is labelled with.

``Annotator`` is the protocol: ``annotate(trajectories, privileged) -> list[Skill | None]``.

- ``OpenAIAnnotator``: a stronger model behind an OpenAI-compatible ``/v1/chat/completions``
  endpoint (vLLM, ``seed_gym.trainer.openai_server``, a hosted API), temperature 0, the same
  analyzer prompt, lenient parsing and one retry as the policy-as-analyzer (``analyzer.analyze``).
  Plain HTTP (``urllib``), a few concurrent requests.
- ``PrivilegedAnnotator``: no model at all. It writes the skill from what the agent never saw,
  ``env.unwrapped.privileged_info()`` taken at reset (ALFWorld expert plan, Sokoban solver solution,
  EZPoints solution, WebShop goal attributes, search gold answers and supporting documents), and
  from the trajectory itself (its actions, invalid outputs, loops). A generic template is keyed on
  the privileged fields; ``PHRASINGS`` holds one phrasing hook per env (``register_phrasing``).
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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from seed_gym.trainer.analyzer import (
    Skill,
    SkillParseError,
    analyze,
    approx_tokens,
    parse_skill_json,
)
from seed_gym.trainer.trajectory import Trajectory


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
Phrasing = Callable[[dict[str, Any], Trajectory], str | None]
"""privileged info + trajectory -> the env-specific "how to do it" sentence (or None)."""

PHRASINGS: dict[str, Phrasing] = {}


def register_phrasing(env_key: str, fn: Phrasing) -> None:
    """Use ``fn`` for env ids containing ``env_key`` (case-insensitive), e.g. ``"Sokoban"``."""
    PHRASINGS[env_key.lower()] = fn


def _seq(items: Sequence[Any], limit: int) -> str:
    items = [str(x) for x in items]
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f", ... ({more} more)" if more > 0 else "")


def _quote(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _task_phrase(task: str) -> str:
    """ "Push every box onto a target." -> "push every box onto a target" (to follow "To ")."""
    text = _quote(task, 100).rstrip(" .!")
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        text = text[0].lower() + text[1:]
    return text


def _alfworld(info: dict[str, Any], traj: Trajectory) -> str | None:
    plan = info.get("expert_plan") or info.get("plan")
    if not plan:
        return None
    return f"the expert order of actions is: {_seq(plan, 12)}"


def _sokoban(info: dict[str, Any], traj: Trajectory) -> str | None:
    plan = info.get("solution")
    if not plan:
        return None
    return (
        f"a shortest solution from the start is {len(plan)} moves: {_seq(plan, 20)}; plan each push "
        "so the box never ends against a wall away from the target"
    )


def _ezpoints(info: dict[str, Any], traj: Trajectory) -> str | None:
    solution = info.get("solution")
    if not solution:
        return None
    cards = info.get("cards")
    values = info.get("card_values")
    held = (
        f"with {' and '.join(map(str, cards))} (values {_seq(values, 4)}) "
        if cards and values
        else ""
    )
    end = "" if str(solution).rstrip().endswith("=") else ", then '='"
    return f"{held}append '{solution}' one token per step{end}, using each card value exactly once"


def _webshop(info: dict[str, Any], traj: Trajectory) -> str | None:
    parts = []
    if info.get("query"):
        parts.append(f"search for '{_quote(info['query'], 80)}'")
    if info.get("attributes"):
        parts.append(f"open an item whose page shows {_seq(info['attributes'], 6)}")
    options = info.get("options")
    if options:
        opts = options.items() if isinstance(options, dict) else [(None, o) for o in options]
        parts.append(
            "click the options " + _seq([v if k is None else f"{k}: {v}" for k, v in opts], 6)
        )
    if info.get("price_upper"):
        parts.append(f"check the price is below {info['price_upper']}")
    if not parts:
        return None
    return ", ".join(parts) + ", then click buy now"


def _search(info: dict[str, Any], traj: Trajectory) -> str | None:
    answers = [str(a) for a in info.get("golden_answers") or info.get("answers") or []]
    docs = info.get("supporting_docs") or []
    queries = info.get("oracle_queries") or []
    seen = " ".join(s.observation for s in traj.steps).lower()
    parts = []
    if queries:
        parts.append(f"search for '{_quote(queries[0], 80)}'")
    titles = [d.get("title") for d in docs if isinstance(d, dict) and d.get("title")]
    if titles:
        parts.append(f"the document titled '{_quote(titles[0], 80)}' holds the answer")
    # name the answer only when the agent's own retrievals showed it, so the skill stays something
    # an analyzer could have read off the trajectory
    shown = [a for a in answers if a and a.lower() in seen]
    if shown:
        parts.append(f"answer '{_quote(shown[0], 60)}' as soon as a document states it")
    elif answers:
        parts.append("answer only with the exact entity a retrieved document states")
    return ", ".join(parts) or None


for _key, _fn in (
    ("alfworld", _alfworld),
    ("sokoban", _sokoban),
    ("ezpoints", _ezpoints),
    ("webshop", _webshop),
    ("search", _search),
):
    register_phrasing(_key, _fn)


def _generic(info: dict[str, Any], traj: Trajectory) -> str | None:
    """Any env: the first plan-like field, else a compact list of the privileged fields."""
    for key in ("expert_plan", "plan", "solution", "solutions", "golden_answers", "answer"):
        value = info.get(key)
        if value:
            shown = _seq(value, 12) if isinstance(value, (list, tuple)) else _quote(value)
            return f"the reference {key.replace('_', ' ')} is: {shown}"
    fields = [f"{k}: {_quote(json.dumps(v, default=str), 60)}" for k, v in info.items() if v]
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

    ``env_id`` picks the phrasing hook (by substring, case-insensitive); ``phrasing`` overrides it.
    ``privileged[i]`` is ``env.unwrapped.privileged_info()`` captured at the *reset* of trajectory
    i (a solver run later would describe the final state instead).
    """

    def __init__(
        self, env_id: str = "", *, phrasing: Phrasing | None = None, name: str = "privileged"
    ):
        self.env_id = env_id
        self.name = name
        self.phrasing = phrasing or next(
            (fn for key, fn in PHRASINGS.items() if key in env_id.lower()), _generic
        )

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
        how = (self.phrasing(info or {}, traj) if info else None) or _generic(info or {}, traj)
        n, invalid = len(traj.steps), traj.invalid_steps
        actions = [s.action for s in traj.steps if s.action is not None]
        summary = (
            f"The agent {'completed' if traj.won else 'failed'} the task '{_quote(traj.task, 120)}' "
            f"in {n} steps with {invalid} invalid outputs"
            + (" and ran out of steps." if traj.truncated and not traj.won else ".")
        )
        if traj.won:
            skill = f"To {_task_phrase(traj.task)}, repeat the workflow that worked: {_seq(actions, 12)}."
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
                    f"the agent repeated '{_quote(loop[0], 60)}' {loop[1]} times without progress"
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
