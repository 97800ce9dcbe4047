"""Hindsight skills: the policy (or an annotator) reads a finished trajectory and writes a skill.

SEED's analyzer step (SEED.md, Stage 2 step 3). A trajectory is rendered into the analyzer prompt
(``analyzer_messages``), a generation callable answers it greedily, the answer is parsed leniently
into ``{"episode_summary", "episode_skill"}`` (``parse_skill_json``) and validated; a failed answer
gets one retry that quotes the error. A trajectory whose analysis still fails gets ``None``: no
distillation signal.

``generate_fn`` is any callable ``list[messages] -> list[str]`` (one chat per trajectory, greedy), so
the HF engine, a vLLM engine or an OpenAI-compatible endpoint all fit.

Truncation (``render_steps`` with a token budget): a long trajectory keeps the task header, the
last ``keep_last`` steps, the first step, and the *decisive* steps (steps with a positive reward,
invalid outputs, the first repeat of an already-tried action), then fills what budget is left with
the steps closest to the end. Omitted runs show as ``... (n steps omitted) ...``; step numbers stay
the original ones. If even the mandatory steps do not fit, their observation and response texts are
clipped in the middle.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from seed_gym.trainer.trajectory import StepSample, Trajectory

MIN_SKILL_WORDS = 5
ANALYZER_PROMPT_VERSION = 2  # 2: the instruction is chosen by the outcome; the return is not shown

ANALYZER_INTRO = """\
Analyze the following agent episode and return ONLY valid JSON with exactly two string fields:
{"episode_summary": "...", "episode_skill": "..."}
- "episode_summary": one or two sentences on what the agent did and how the episode ended."""
# the reference asks by outcome; the model never has to decide which kind of skill to write
SKILL_INSTRUCTIONS = {
    True: '- "episode_skill": the episode succeeded, so give the reusable workflow: the steps '
    "that worked, in order, and the observations that decided them, as an instruction for the "
    "agent (at least 5 words).",
    False: '- "episode_skill": the episode failed, so give a failure-avoidance rule: the core '
    "mistake, the warning signs that show it happening, and what to do instead, as an "
    "instruction for the agent (at least 5 words).",
}
ANALYZER_OUTRO = "Write nothing before or after the JSON object."


def analyzer_instruction(won: bool) -> str:
    """The analyzer's instruction for an episode that was won (a reusable workflow) or lost (a
    failure-avoidance rule), as the reference picks it by outcome."""
    return f"{ANALYZER_INTRO}\n{SKILL_INSTRUCTIONS[bool(won)]}\n{ANALYZER_OUTRO}"


RETRY_INSTRUCTION = """\
Your answer could not be used: {error}
Return ONLY a valid JSON object with the two string fields "episode_summary" and "episode_skill" \
("episode_skill" at least 5 words), and nothing else."""


@dataclass(frozen=True)
class Skill:
    """A parsed analysis of one trajectory."""

    summary: str  # episode_summary
    skill: str  # episode_skill: the text inserted into prompts
    traj_id: str = ""
    raw: str = ""  # the generated text it was parsed from
    retried: bool = False  # True when the first answer failed and the retry succeeded

    def to_json(self) -> str:
        """The canonical answer text (what Stage 1 SFT trains the analyzer to write)."""
        return json.dumps(
            {"episode_summary": self.summary, "episode_skill": self.skill}, ensure_ascii=False
        )


# words that mark a failure-avoidance rule (the other kind is a reusable workflow)
_AVOIDANCE = re.compile(r"\b(avoid\w*|mistakes?|instead|warning|never|do not|don't)\b", re.I)


def skill_kind(text: str) -> str:
    """``"avoidance"`` for a failure-avoidance rule (it names a mistake to avoid, a warning sign
    or what to do instead), else ``"workflow"``: what the ``analyzer/*_share`` metrics count."""
    return "avoidance" if _AVOIDANCE.search(text or "") else "workflow"


class SkillParseError(ValueError):
    """The answer is not a usable ``{"episode_summary", "episode_skill"}`` object."""


# --- rendering ----------------------------------------------------------------------------------
def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (~4 characters per token) used when no counter is given."""
    return (len(text) + 3) // 4


def render_header(traj: Trajectory) -> str:
    """The instruction chosen by the outcome, the task and ``episode_success: success|failure``
    (SEED.md; the reward value is not shown)."""
    outcome = "success" if traj.won else "failure"
    return (
        f"{analyzer_instruction(traj.won)}\n\nTask description: {traj.task}\n"
        f"episode_success: {outcome}"
    )


def render_step(i: int, step: StepSample, *, clip_chars: int | None = None) -> str:
    obs, resp = step.observation, step.response_text
    if clip_chars is not None:
        obs, resp = _clip_middle(obs, clip_chars), _clip_middle(resp, clip_chars)
    valid = "true" if step.valid else "false"
    return f"Step {i}\nObservation: {obs}\nResponse: {resp}\nAction valid: {valid}"


def _clip_middle(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    half = max(1, (max_chars - 20) // 2)
    return f"{text[:half]} ...[truncated]... {text[-half:]}"


def decisive_steps(traj: Trajectory) -> list[int]:
    """0-based indices of steps that explain the outcome: rewarded steps, invalid outputs, and the
    first repeat of an action already tried (the typical sign of a loop)."""
    out: list[int] = []
    tries: dict[str, int] = {}
    for i, step in enumerate(traj.steps):
        if step.action is not None:
            tries[step.action] = tries.get(step.action, 0) + 1
        first_repeat = step.action is not None and tries[step.action] == 2
        if step.reward > 0 or not step.valid or first_repeat:
            out.append(i)
    return out


def render_steps(
    traj: Trajectory,
    *,
    budget: int | None,
    count_tokens: Callable[[str], int] = approx_tokens,
    keep_last: int = 3,
) -> str:
    """The step section of the analyzer prompt within ``budget`` tokens (None: everything)."""
    steps = traj.steps
    if not steps:
        return "(the episode has no steps)"
    full = [render_step(i + 1, s) for i, s in enumerate(steps)]
    if budget is None or count_tokens("\n\n".join(full)) <= budget:
        return "\n\n".join(full)

    n = len(steps)
    mandatory = list(range(max(0, n - keep_last), n))
    priority = mandatory[::-1] + [0] + decisive_steps(traj)[::-1] + list(range(n - 1, -1, -1))
    kept: set[int] = set()
    cost = {i: count_tokens(full[i]) + 2 for i in range(n)}
    used = 0
    for i in priority:
        if i in kept:
            continue
        if used + cost[i] <= budget or (i in mandatory and i == n - 1):
            kept.add(i)
            used += cost[i]
    texts = dict(enumerate(full))
    if used > budget:  # even the last step alone overflows: clip its long fields
        over = max(64, (budget * 4) // (2 * max(1, len(kept))))
        for i in kept:
            texts[i] = render_step(i + 1, steps[i], clip_chars=over)
    parts, gap = [], 0
    for i in range(n):
        if i in kept:
            if gap:
                parts.append(f"... ({gap} steps omitted) ...")
                gap = 0
            parts.append(texts[i])
        else:
            gap += 1
    return "\n\n".join(parts)


def analyzer_prompt(
    traj: Trajectory,
    *,
    max_prompt_tokens: int | None = 3072,
    count_tokens: Callable[[str], int] = approx_tokens,
    keep_last: int = 3,
) -> str:
    header = render_header(traj)
    budget = None
    if max_prompt_tokens is not None:
        budget = max(1, max_prompt_tokens - count_tokens(header) - 2)
    body = render_steps(traj, budget=budget, count_tokens=count_tokens, keep_last=keep_last)
    return f"{header}\n\n{body}"


def analyzer_messages(traj: Trajectory, **kwargs: Any) -> list[dict[str, str]]:
    """The analyzer chat: one user message (``analyzer_prompt`` keywords pass through)."""
    return [{"role": "user", "content": analyzer_prompt(traj, **kwargs)}]


# --- parsing ------------------------------------------------------------------------------------
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_SMART = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def _outer_object(text: str) -> str | None:
    """The first balanced ``{...}`` in text, honouring quoted strings."""
    start = text.find("{")
    while start != -1:
        depth, quote, escape = 0, None, False
        for j in range(start, len(text)):
            c = text[j]
            if quote:
                if escape:
                    escape = False
                elif c == "\\":
                    escape = True
                elif c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[start : j + 1]
        start = text.find("{", start + 1)
    return None


def _escape_newlines_in_strings(text: str) -> str:
    out, quote, escape = [], False, False
    for c in text:
        if quote:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                quote = False
            elif c == "\n":
                c = "\\n"
        elif c == '"':
            quote = True
        out.append(c)
    return "".join(out)


def _loads_lenient(candidate: str) -> Any:
    attempts = [candidate]
    fixed = _TRAILING_COMMA.sub(r"\1", candidate.translate(_SMART))
    attempts.append(fixed)
    attempts.append(_escape_newlines_in_strings(fixed))
    last: Exception | None = None
    for text in attempts:
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            last = e
    # single quotes: a Python-literal dict is safe to read with literal_eval (no code runs)
    try:
        value = ast.literal_eval(fixed)
        if isinstance(value, dict):
            return value
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    raise SkillParseError(f"invalid JSON ({last})")


def parse_skill_json(text: str) -> dict[str, str]:
    """Parse an analyzer answer leniently: code fences, prose around the object, trailing commas,
    curly quotes, raw newlines inside strings, single-quoted (Python-literal) objects. Validates
    both fields (strings; ``episode_skill`` at least ``MIN_SKILL_WORDS`` words).

    Raises ``SkillParseError`` with a message meant to be quoted back to the model.
    """
    if not isinstance(text, str) or not text.strip():
        raise SkillParseError("the answer is empty")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    obj: Any = None
    error: SkillParseError | None = None
    for cand in candidates:
        inner = _outer_object(cand)
        if inner is None:
            continue
        try:
            obj = _loads_lenient(inner)
            break
        except SkillParseError as e:
            error = error or e
    if obj is None:
        raise error or SkillParseError("no JSON object found in the answer")
    if not isinstance(obj, dict):
        raise SkillParseError("the answer is not a JSON object")
    fields = {}
    for key in ("episode_summary", "episode_skill"):
        if key not in obj:
            raise SkillParseError(f'missing field "{key}"')
        if not isinstance(obj[key], str):
            raise SkillParseError(f'field "{key}" must be a string, got {type(obj[key]).__name__}')
        fields[key] = " ".join(obj[key].split())
    words = len(fields["episode_skill"].split())
    if words < MIN_SKILL_WORDS:
        raise SkillParseError(
            f'"episode_skill" has {words} words; it needs at least {MIN_SKILL_WORDS}'
        )
    return fields


# --- structured decoding ------------------------------------------------------------------------
SKILL_FIELDS = ("episode_summary", "episode_skill")


def skill_schema(max_chars: int = 600) -> dict[str, Any]:
    """The analyzer's answer as a JSON schema (vLLM's structured outputs decode under it); each
    field at most ``max_chars`` characters."""
    field = {"type": "string", "minLength": 1, "maxLength": max_chars}
    return {
        "type": "object",
        "properties": dict.fromkeys(SKILL_FIELDS, field),
        "required": list(SKILL_FIELDS),
        "additionalProperties": False,
    }


def trim_repetition(text: str, *, max_copies: int = 2, max_words: int = 8) -> str:
    """``text`` cut where it degenerates into a loop: the first run of 1..``max_words`` words
    repeated more than ``max_copies`` times in a row keeps ``max_copies`` copies and ends the
    text ("go up, go up, go up, go up" -> "go up, go up,").

    Small models answering greedily often loop until the token limit; the loop carries nothing.
    """
    words = text.split()
    for i in range(len(words)):
        for n in range(1, max_words + 1):
            unit = words[i : i + n]
            if len(unit) < n:
                break
            copies = 1
            while words[i + copies * n : i + (copies + 1) * n] == unit:
                copies += 1
            if copies > max_copies:
                return " ".join(words[: i + max_copies * n])
    return text


def skeleton_pieces() -> list[str]:
    """The answer's fixed text around its fields, exactly as ``Skill.to_json`` writes it
    (``json.dumps``): ``{"episode_summary": "`` · ``", "episode_skill": "`` · ``"}``."""
    marker = "\x00"
    text = json.dumps(dict.fromkeys(SKILL_FIELDS, marker))
    return text.split(json.dumps(marker)[1:-1])  # 3 pieces; each field sits between two


FIELD_MIN_WORDS = {"episode_summary": 1, "episode_skill": MIN_SKILL_WORDS}
"""Words a field must hold before structured decoding lets it close (``parse_skill_json``'s
rules), so the assembled answer always parses when the budget fits them."""


def word_count(text: str) -> int:
    """Words of a field as the answer will hold it (whitespace collapsed, loops trimmed)."""
    return len(trim_repetition(" ".join(text.split())).split())


def vocabulary_roles(tokenizer: Any) -> dict[str, list[int]]:
    """Token ids by what they do to a JSON string field (computed once per tokenizer):
    ``closing`` (the text holds a double quote: it would close the field), ``blank`` (the text is
    empty or whitespace: it adds no word) and ``not_word_start`` (every id but those whose text is
    whitespace and then a character other than a quote: the ones that add a word)."""
    cached = getattr(tokenizer, "_seed_gym_roles", None)
    if cached is None:
        cached = {"closing": [], "blank": [], "not_word_start": []}
        for i in range(len(tokenizer)):
            text = tokenizer.decode([i])
            if '"' in text:
                cached["closing"].append(i)
            if not text.strip():
                cached["blank"].append(i)
            if '"' in text or not re.match(r"\s+\S", text):
                cached["not_word_start"].append(i)
        with contextlib.suppress(AttributeError):  # one that takes no attribute: next time again
            tokenizer._seed_gym_roles = cached
    return cached


def loop_starts(ids: Sequence[int], max_unit: int = 16) -> list[int]:
    """The tokens that would start a third copy in a row of a unit of up to ``max_unit`` tokens
    ``ids`` ends with twice (``... u u``: the first token of ``u``)."""
    return [ids[-n] for n in range(1, min(max_unit, len(ids) // 2) + 1)
            if ids[-n:] == ids[-2 * n : -n]]  # fmt: skip


def structured_generate_fn(
    engine: Any, *, max_new_tokens: int, no_repeat_ngram: int = 6
) -> Callable[[list[list[dict[str, str]]]], list[str]]:
    """The analyzer's ``generate_fn`` under its schema: greedy, and always a well-formed answer.

    - an engine with ``generate_json`` (``VLLMEngine``: vLLM's structured outputs) decodes under
      ``skill_schema`` (fields of at most ``4 * max_new_tokens`` characters);
    - any other engine (``HFEngine``) is prefilled field by field: the prompt is the chat plus the
      answer's fixed text up to the field's opening quote, generation stops at the closing quote
      (``max_new_tokens`` per field, n-gram repeats banned), the next piece of fixed text follows.
      A field may not close (no quote, no end of text) nor add blanks before it holds
      ``FIELD_MIN_WORDS`` words, and when the budget left is no more than the words missing only
      tokens that start a new word may follow; no token may start a third copy in a row of what
      the field ends with twice (``loop_starts``: ``trim_repetition`` would cut the loop). So any
      model, a random one included, writes an answer that parses whenever the budget holds the
      words.

    Either way each field is cut at a degenerate loop (``trim_repetition``) and the answer is
    assembled with ``json.dumps``, so it parses whenever the fields are non-empty; the word-count
    rule of ``parse_skill_json`` still applies.
    """

    def clean(field: str) -> str:
        return trim_repetition(" ".join(field.split()))

    def assemble(fields: list[str]) -> str:
        cleaned = [clean(f) for f in fields]
        return json.dumps(dict(zip(SKILL_FIELDS, cleaned, strict=True)), ensure_ascii=False)

    def generate(chats: list[list[dict[str, str]]]) -> list[str]:
        if getattr(engine, "supports_json_schema", False):
            # a field of 4 chars per token on average; an ASCII token is >= 1 char and the answer
            # has no free whitespace, so it closes within as many tokens as it has characters
            # (a non-ASCII character can take several byte tokens: then parse_skill_json retries)
            chars = 4 * max_new_tokens
            longest = len(json.dumps(dict.fromkeys(SKILL_FIELDS, "x" * chars)))
            answers = engine.generate_json(chats, skill_schema(chars), max_new_tokens=longest)
            out = []
            for answer in answers:
                try:
                    obj = json.loads(answer)
                    out.append(assemble([str(obj.get(k, "")) for k in SKILL_FIELDS]))
                except (json.JSONDecodeError, AttributeError):
                    out.append(answer)  # left to parse_skill_json (and its retry)
            return out
        tokenizer = engine.tokenizer
        roles = vocabulary_roles(tokenizer)
        eos = list(getattr(engine, "eos_ids", []))
        open_ban = roles["closing"] + roles["blank"] + eos  # below its words: no end, no blank
        last_ban = roles["not_word_start"] + eos  # and when the budget is short: new words only
        texts = [
            tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
            for c in chats
        ]
        pieces = skeleton_pieces()
        fields: list[list[str]] = [[] for _ in chats]
        # an engine that keeps prompt KV caches prefills the chat once: each later field's prompt
        # (the chat, the answer so far) runs only what it adds to the previous field's prompt
        reuse = getattr(engine, "supports_prompt_kv", False)
        past = None
        for k, name in enumerate(SKILL_FIELDS):
            texts = [t + pieces[k] for t in texts]
            ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
            more = reuse and k + 1 < len(SKILL_FIELDS)
            need = FIELD_MIN_WORDS[name]

            def banned(row: list[int], need: int = need) -> list[int]:
                missing = need - word_count(tokenizer.decode(row))
                if missing <= 0:
                    return loop_starts(row)
                short = max_new_tokens - len(row) <= missing
                return (last_ban if short else open_ban) + loop_starts(row)

            gens = engine.generate(
                ids,
                max_new_tokens=max_new_tokens,
                temperature=0.0,
                stop=('"',),
                seed=0,
                no_repeat_ngram=no_repeat_ngram,
                **({"keep_prompt_kv": True} if more else {}),
                **({"past": past} if past else {}),
                **({"banned": banned} if getattr(engine, "supports_banned", False) else {}),
            )
            past = [g.prompt_kv for g in gens] if more else None
            for i, g in enumerate(gens):
                value = g.text[: g.text.index('"')] if '"' in g.text else g.text
                value = clean(value.rstrip("\\"))  # (an escape cut in half by the stop)
                fields[i].append(value)
                texts[i] += value
        return [assemble(f) for f in fields]

    return generate


def analyzer_kwargs(budget: int | None, tokenizer: Any) -> dict[str, Any]:
    """Truncation settings of the analyzer prompt (``budget`` tokens: ``--analyzer-budget``),
    shared by Stage 1 rows, the warm-up's analyzer rows and Stage 2 analyses (the SFT rows must
    look exactly like what the policy reads later)."""
    return {
        "max_prompt_tokens": budget,
        "count_tokens": lambda s: len(tokenizer(s, add_special_tokens=False)["input_ids"]),
    }


def analyzer_generate_fn(cfg: Any, engine: Any) -> Callable[[list], list[str]]:
    """The analyzer's ``generate_fn`` in training: the current policy, greedy, batched through
    the rollout engine; under the answer's JSON schema unless ``--no-analyzer-structured``."""
    if cfg.opd.analyzer_structured:
        return structured_generate_fn(engine, max_new_tokens=cfg.opd.analyzer_max_new_tokens)

    def generate(chats: list[list[dict[str, str]]]) -> list[str]:
        gens = engine.generate(
            chats, max_new_tokens=cfg.opd.analyzer_max_new_tokens, temperature=0.0, seed=0
        )
        return [g.text for g in gens]

    return generate


# --- the analyzer -------------------------------------------------------------------------------
GenerateFn = Callable[[list[list[dict[str, str]]]], list[str]]


def _try_parse(text: str) -> tuple[dict[str, str] | None, str | None]:
    try:
        return parse_skill_json(text), None
    except SkillParseError as e:
        return None, str(e)


def analyze(
    trajectories: Sequence[Trajectory],
    generate_fn: GenerateFn,
    *,
    retry: bool = True,
    max_prompt_tokens: int | None = 3072,
    count_tokens: Callable[[str], int] = approx_tokens,
    keep_last: int = 3,
    stats: dict[str, float] | None = None,
    failures: dict[str, dict[str, str]] | None = None,
) -> list[Skill | None]:
    """One skill (or None) per trajectory, in order. Generation is batched: one ``generate_fn``
    call for all first answers and one for all retries. ``stats``, if given, receives
    ``analyzer/parse_rate``, ``analyzer/first_try_rate``, ``analyzer/retries``, ``analyzer/n``.
    ``failures``, if given, receives ``{traj_id: {"answer": ..., "error": ...}}`` (the last answer
    tried) for every analysis that failed, so a run's logs show why.
    """
    trajectories = list(trajectories)
    chats = [
        analyzer_messages(
            t, max_prompt_tokens=max_prompt_tokens, count_tokens=count_tokens, keep_last=keep_last
        )
        for t in trajectories
    ]
    results: list[Skill | None] = [None] * len(trajectories)
    failed: list[tuple[int, str, str]] = []  # (index, answer, error)
    if chats:
        answers = _generate(generate_fn, chats)
        for i, (t, answer) in enumerate(zip(trajectories, answers, strict=True)):
            fields, error = _try_parse(answer)
            if fields is None:
                failed.append((i, answer, error or "unparseable"))
            else:
                results[i] = Skill(
                    fields["episode_summary"], fields["episode_skill"], t.traj_id, answer
                )
    first_ok = len(trajectories) - len(failed)
    if retry and failed:
        retry_chats = [
            chats[i]
            + [
                {"role": "assistant", "content": answer},
                {"role": "user", "content": RETRY_INSTRUCTION.format(error=error)},
            ]
            for i, answer, error in failed
        ]
        answers = _generate(generate_fn, retry_chats)
        for k, answer in enumerate(answers):
            i = failed[k][0]
            fields, error = _try_parse(answer)
            failed[k] = (i, answer, error or "unparseable")
            if fields is not None:
                t = trajectories[i]
                results[i] = Skill(
                    fields["episode_summary"],
                    fields["episode_skill"],
                    t.traj_id,
                    answer,
                    retried=True,
                )
    if failures is not None:
        for i, answer, error in failed:
            if results[i] is None:
                failures[trajectories[i].traj_id] = {"answer": answer, "error": error}
    if stats is not None:
        n = len(trajectories)
        stats.update(
            {
                "analyzer/n": float(n),
                "analyzer/parse_rate": parse_rate(results),
                "analyzer/first_try_rate": first_ok / n if n else 0.0,
                "analyzer/retries": float(len(failed) if retry else 0),
                **kind_shares(trajectories, results),
            }
        )
    return results


def kind_shares(
    trajectories: Sequence[Trajectory], skills: Sequence[Skill | None]
) -> dict[str, float]:
    """``analyzer/avoidance_share_lost``: the share of lost episodes' skills that are avoidance
    rules; ``analyzer/workflow_share_won``: of won episodes' skills that are workflows
    (``skill_kind``; a metric is left out when no such skill parsed)."""
    out = {}
    for won, kind, name in ((False, "avoidance", "avoidance_share_lost"),
                            (True, "workflow", "workflow_share_won")):  # fmt: skip
        kinds = [skill_kind(s.skill) for t, s in zip(trajectories, skills, strict=True)
                 if s is not None and t.won == won]  # fmt: skip
        if kinds:
            out[f"analyzer/{name}"] = kinds.count(kind) / len(kinds)
    return out


def _generate(generate_fn: GenerateFn, chats: list[list[dict[str, str]]]) -> list[str]:
    answers = list(generate_fn(chats))
    if len(answers) != len(chats):
        raise ValueError(f"generate_fn returned {len(answers)} answers for {len(chats)} chats")
    return [a if isinstance(a, str) else "" for a in answers]


def parse_rate(skills: Sequence[Skill | None]) -> float:
    """Fraction of trajectories with a usable skill (0.0 for an empty batch)."""
    return sum(s is not None for s in skills) / len(skills) if skills else 0.0
