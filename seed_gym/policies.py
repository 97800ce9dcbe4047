"""Policies for ``seed-gym eval``: ``random`` and ``oracle`` play the raw game; model policies
(``model:PATH``, ``openai:URL``) register themselves here and play the chat env.

A policy names the env it acts on (``acts_on``): ``"game"`` policies get the raw env and return
game actions (``"up"``, ``"click[Buy Now]"``); ``"agent"`` policies get the agent env of
``seed_gym.make_agent_env`` and return completions, which the env parses. ``make_policy("name")`` or
``make_policy("name:ARG")`` builds one from the registry; ``register_policy`` adds a kind.

Model policies:
- ``model:PATH`` - a local Hugging Face checkpoint folder (e.g. ``RUN_DIR/model`` of a training run),
  or ``model:smollm2`` / ``model:tiny`` for the embedded SmolLM2-135M-Instruct / the random tiny
  Llama. Completions come from the trainer's ``HFEngine``; ``seed-gym eval`` steps many episodes
  at once and sends every live episode's prompt in one batch.
- ``openai:URL`` - any OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, the bundled
  ``seed_gym.tools.openai_server``, a hosted API); ``model_name`` picks the served model (default:
  the first one ``GET /v1/models`` lists). Live episodes are sent as concurrent requests. A request
  that fails (no answer within ``timeout``, a dropped connection, HTTP 429/5xx, an answer that is
  not a completion) is retried; one that still fails raises ``PolicyError`` with one line.

Both sample greedily unless ``temperature > 0``. Each episode samples from its own random stream,
derived from (episode seed, turn), so a completion never depends on which other episodes shared
its batch: a resumed eval samples exactly what an uninterrupted one would have.
"""

from __future__ import annotations

import http.client
import importlib
import inspect
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from seed_gym.images import IMAGE_PLACEHOLDER, png_data_url
from seed_gym.jsonl import clean_text
from seed_gym.seeding import derive_seed


class PolicyError(RuntimeError):
    """A policy's backend failed for good (an ``openai:`` server after its retries): the eval
    stops, keeping the episodes finished so far. The message is one line naming the backend."""


@runtime_checkable
class Policy(Protocol):
    """What ``seed-gym eval`` drives: one episode is ``reset`` then ``act`` until it ends.

    A policy that cannot read image observations sets ``accepts_images = False``; ``seed-gym
    eval`` then refuses image modalities for it before writing anything (``accepts_images()``).
    """

    name: str
    acts_on: Literal["game", "agent"]

    def reset(self, env: gym.Env, *, seed: int) -> None:
        """Start an episode on ``env`` (already reset); ``seed`` seeds the policy's own sampling."""

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        """The next action (game policies) or completion (agent policies)."""

    def close(self) -> None:
        """Release models, connections, processes."""


class RandomPolicy:
    """Uniform over the admissible actions when the env lists them, else the env's own
    ``sample_action`` (``SeedEnv.sample_action``), seeded per episode."""

    name = "random"
    acts_on: Literal["game", "agent"] = "game"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, env: gym.Env, *, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        return env.unwrapped.sample_action(self.rng, info.get("admissible_actions"))

    def close(self) -> None:
        pass


class OraclePolicy:
    """The env's privileged expert (``oracle_action``): a solver or planner that sees the state."""

    name = "oracle"
    acts_on: Literal["game", "agent"] = "game"

    def reset(self, env: gym.Env, *, seed: int) -> None:
        pass

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        return env.unwrapped.oracle_action()

    def close(self) -> None:
        pass


class CallablePolicy:
    """A plain function as an agent policy: ``fn(observation) -> completion``.

    ``observation`` is the agent env's observation, the dict ``{"messages": [...], "images":
    [...]}`` of ``seed_gym.make_agent_env``: ``messages`` is the chat (``{"role", "content"}``
    dicts, ready for a chat template or an OpenAI-style API; the last one holds the current turn),
    ``images`` the frames an image modality shows (empty in text). The completion is what a model
    would write (``"<think>...</think><action>up</action>"``); the agent env parses it, and
    flags and penalizes it like a model's when it does not parse.
    """

    acts_on: Literal["game", "agent"] = "agent"
    accepts_images = True  # the function gets the images; reading them is up to it

    def __init__(self, fn: Callable[[dict[str, Any]], str]):
        self.fn = fn
        module = getattr(fn, "__module__", None)
        qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        self.name = f"callable:{module}.{qualname}" if module else f"callable:{qualname}"

    def reset(self, env: gym.Env, *, seed: int) -> None:
        pass

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        completion = self.fn(obs)
        if not isinstance(completion, str):
            raise TypeError(
                f"{self.name} returned {type(completion).__name__}; a policy function returns "
                "the completion text (str)"
            )
        return completion

    def close(self) -> None:
        pass


POLICY_TYPES = (
    "a policy spec (str: 'random', 'oracle', 'model:PATH', 'openai:URL' or a registered kind), "
    "a Policy object (acts_on, reset, act, close) or a function observation -> completion"
)


def as_policy(policy: Any, options: dict[str, Any] | None = None) -> tuple[Policy, str, bool]:
    """``(policy object, its name, whether the caller owns it)`` for what ``evaluate`` accepts:
    a spec string (built by ``make_policy``; evaluate closes it), a ``Policy`` object (used as
    is; the caller closes it) or a function ``observation -> completion`` (``CallablePolicy``).
    Anything else raises one ``TypeError`` naming what is accepted."""
    if isinstance(policy, str):
        return make_policy(policy, options), policy, False
    if isinstance(policy, type):  # the class has the methods, but they want an instance
        raise TypeError(f"policy must be {POLICY_TYPES}, not the class {policy.__name__}")
    if isinstance(policy, Policy):
        return policy, str(getattr(policy, "name", None) or type(policy).__name__), True
    if callable(policy):
        wrapped = CallablePolicy(policy)
        return wrapped, wrapped.name, False
    raise TypeError(f"policy must be {POLICY_TYPES}, not {type(policy).__name__}")


class _EpisodeStreams:
    """Per-episode (seed, turn) bookkeeping shared by the model policies."""

    def __init__(self) -> None:
        self.state: dict[int, list[int]] = {}
        self.last: dict[int, dict[str, Any]] = {}

    def reset(self, env: gym.Env, seed: int) -> None:
        self.state[id(env)] = [int(seed), 0]
        self.last.pop(id(env), None)

    def next_seed(self, env: gym.Env) -> int:
        seed, turn = self.state.setdefault(id(env), [0, 0])
        self.state[id(env)][1] = turn + 1
        return derive_seed(seed, turn)


def openai_url_problem(url: str | None) -> str | None:
    """Why ``url`` cannot be an ``openai:`` endpoint (one line), or None."""
    parts = urllib.parse.urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"openai:{url or ''} needs an http(s) endpoint, e.g. openai:http://127.0.0.1:8000/v1"
    return None


def openai_content(messages: Sequence[dict[str, Any]], images: Sequence[Any]) -> list[dict]:
    """Chat messages for an OpenAI-compatible API; with images, the user text's ``<image>``
    placeholders become ``image_url`` parts (PNG data URLs), in order."""
    if not images:
        return [{"role": m["role"], "content": m["content"]} for m in messages]
    queue = list(images)
    out = []
    for m in messages:
        text = m["content"]
        if m["role"] != "user" or IMAGE_PLACEHOLDER not in text:
            out.append({"role": m["role"], "content": text})
            continue
        parts: list[dict[str, Any]] = []
        pieces = text.split(IMAGE_PLACEHOLDER)
        for j, piece in enumerate(pieces):
            if piece:
                parts.append({"type": "text", "text": piece})
            if j < len(pieces) - 1 and queue:
                parts.append(
                    {"type": "image_url", "image_url": {"url": png_data_url(queue.pop(0))}}
                )
        out.append({"role": m["role"], "content": parts})
    return out


class OpenAIPolicy:
    """A chat model behind an OpenAI-compatible endpoint (``http://host:port`` or ``.../v1``).

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (sent only if set). A request that gets no answer
    within ``timeout`` seconds, loses its connection, gets HTTP 408/429/5xx or an answer that is
    not a completion (not JSON, an HTML page, no choices) is retried ``retries`` times, waiting
    ``backoff``, 2 x ``backoff``, ... (at most 8 s) between tries; other HTTP 4xx mean the request
    itself is wrong and are not retried. A request that still fails raises ``PolicyError`` (one
    line: the URL and the last error); ``seed-gym eval`` then stops, keeping finished episodes.
    """

    acts_on: Literal["game", "agent"] = "agent"

    def __init__(
        self,
        url: str | None,
        *,
        model_name: str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_new_tokens: int = 256,
        batch_size: int = 8,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 1.0,
        seed: int = 0,
    ):
        problem = openai_url_problem(url)
        if problem:
            raise ValueError(problem)
        base = url.rstrip("/")
        self.base = base if base.endswith("/v1") else base + "/v1"
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout, self.retries, self.backoff = float(timeout), int(retries), float(backoff)
        self.temperature, self.top_p = float(temperature), float(top_p)
        self.max_new_tokens, self.batch_size = int(max_new_tokens), batch_size
        self.model_name = model_name or self._first_model()
        self.name = f"openai:{url}"
        self.streams = _EpisodeStreams()

    def _attempt(self, req: urllib.request.Request, read: Callable[[Any], Any], what: str) -> Any:
        """One try: ``read(the JSON answer)``; raises ``_Retry`` or ``_GiveUp`` with the reason."""
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            reason = f"HTTP {e.code} {e.reason}: {_one_line(_error_body(e))}"
            # other 4xx: the request itself is wrong, and asking again gets the same answer
            raise (_Retry if e.code in (408, 429) or e.code >= 500 else _GiveUp)(reason) from None
        except (OSError, http.client.HTTPException) as e:  # refused, reset, cut short, timed out
            # urlopen wraps what goes wrong before the answer starts (connecting) in URLError
            connecting = isinstance(e, urllib.error.URLError)
            cause = e.reason if connecting else e
            if isinstance(cause, TimeoutError):
                raise _Retry(f"no answer within {self.timeout:g} s (--request-timeout)") from None
            what = "cannot connect" if connecting else "connection lost"
            raise _Retry(f"{what}: {type(cause).__name__}: {cause}") from None
        try:
            return read(json.loads(raw))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _Retry(f"the answer is not JSON: {_one_line(raw)}") from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise _Retry(f"the answer holds no {what}: {_one_line(raw)}") from None

    def _request(
        self,
        path: str,
        body: dict[str, Any] | None = None,
        read: Callable[[Any], Any] = lambda payload: payload,
        what: str = "answer",
    ) -> Any:
        """``read`` of the JSON answer to ``GET`` (or ``POST body``) ``path``, with retries;
        ``what`` names what ``read`` looks for, for the message when it is missing."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode()
        url = self.base + path
        reason, attempt = "", 0
        for attempt in range(1, self.retries + 2):
            if attempt > 1:
                time.sleep(min(8.0, self.backoff * 2 ** (attempt - 2)))
            req = urllib.request.Request(
                url, data=data, headers=headers, method="GET" if body is None else "POST"
            )
            try:
                return self._attempt(req, read, what)
            except _Retry as e:
                reason = str(e)
            except _GiveUp as e:
                reason = str(e)
                break
        tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
        raise PolicyError(f"{url}: {reason} ({tries})")

    def _first_model(self) -> str:
        models = self._request("/models", read=lambda answer: answer["data"], what="model list")
        if not models or not isinstance(models[0], dict) or "id" not in models[0]:
            raise PolicyError(f"{self.base}/models lists no model: pass --model-name")
        return str(models[0]["id"])

    def describe(self) -> dict[str, Any]:
        return {
            "endpoint": self.base,
            "model": self.model_name,
            "model_sha256": None,
            "model_hash_of": "unavailable: weights behind a remote endpoint",
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
            "batch_size": self.batch_size,
        }

    def reset(self, env: gym.Env, *, seed: int) -> None:
        self.streams.reset(env, seed)

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        return self.act_batch([env], [obs], [info])[0]

    def _complete(self, messages: list[dict], stop: list[str], seed: int) -> str:
        body = {
            "model": self.model_name,
            "messages": messages,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_new_tokens,
            "stop": stop,
            "seed": seed % 2**31,
        }
        # an answer without a completion (no choices, an error object) is retried like a 500
        text, finish = self._request("/chat/completions", body, _completion, "completion")
        text = clean_text(text)  # a JSON "\\ud800" decodes to a lone surrogate: unwritable
        # OpenAI servers drop the matched stop string; the agent parser needs it back
        if finish == "stop" and stop and not any(text.endswith(s) for s in stop):
            text += stop[0]
        return text

    def act_batch(
        self, envs: Sequence[gym.Env], obs: Sequence[Any], infos: Sequence[dict[str, Any]]
    ) -> list[str]:
        stop = list(envs[0].agent_spec.stop)
        jobs = [
            (openai_content(o["messages"], o.get("images") or []), self.streams.next_seed(env))
            for env, o in zip(envs, obs, strict=True)
        ]
        with ThreadPoolExecutor(max(1, min(self.batch_size, len(jobs)))) as pool:
            return list(pool.map(lambda j: self._complete(j[0], stop, j[1]), jobs))

    def close(self) -> None:
        pass


class _Retry(Exception):
    """A failed try worth repeating (the server may answer next time)."""


class _GiveUp(Exception):
    """A failed try that would fail again (HTTP 4xx other than 408 and 429)."""


def _error_body(error: urllib.error.HTTPError) -> bytes:
    """The body of an HTTP error answer, or nothing when the connection drops while reading it."""
    try:
        return error.read()
    except (OSError, http.client.HTTPException):
        return b""


def _one_line(raw: bytes | str, limit: int = 160) -> str:
    """An answer's text for a one-line message: whitespace runs (an HTML page's lines) joined."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...") if text else "(empty)"


def _completion(payload: Any) -> tuple[str, str | None]:
    """(text, finish_reason) of a chat completion; raises on anything else."""
    choice = payload["choices"][0]
    content = choice["message"]["content"]
    if content is not None and not isinstance(content, str):
        raise TypeError(f"content is {type(content).__name__}")
    return content or "", choice.get("finish_reason")


MODEL_POLICY = "seed_gym.tools.model_policy:ModelPolicy"


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


PolicyFactory = Callable[..., Policy]
POLICIES: dict[str, PolicyFactory] = {
    "random": lambda arg, **options: RandomPolicy(),
    "oracle": lambda arg, **options: OraclePolicy(),
    # the trainer's engine samples model:PATH; loaded on use, so the registry stays in the core
    "model": lambda arg, **options: _load(MODEL_POLICY)(arg, **options),
    "openai": lambda arg, **options: OpenAIPolicy(arg, **options),
}

# options each built-in model kind understands (others are dropped, e.g. --model-name for model:)
_OPTIONS = {
    "model": {"temperature", "top_p", "max_new_tokens", "batch_size", "bf16", "seed"},
    "openai": {
        "temperature",
        "top_p",
        "max_new_tokens",
        "batch_size",
        "model_name",
        "api_key",
        "timeout",
        "retries",
        "backoff",
        "seed",
    },
}

# Kinds whose policies read text only: ``model:PATH`` samples with the trainer's text engine,
# which refuses image observations on the first turn (VLM folders included). Known from the
# spec, so ``seed-gym eval`` refuses an image modality before a model loads or a file is written.
TEXT_ONLY_KINDS = frozenset({"model"})


def accepts_images(policy_spec: str, policy: Any = None) -> bool:
    """Whether the policy of ``policy_spec`` can act on image observations: the policy's own
    ``accepts_images`` attribute when it has one, else False for ``TEXT_ONLY_KINDS``. Game
    policies (``random``, ``oracle``) never read the observation, so they accept any."""
    if policy is not None and hasattr(policy, "accepts_images"):
        return bool(policy.accepts_images)
    return policy_spec.partition(":")[0] not in TEXT_ONLY_KINDS


def register_policy(kind: str, factory: PolicyFactory) -> None:
    """Make ``kind`` or ``kind:ARG`` buildable by ``make_policy``; ``factory(ARG or None)``, or
    ``factory(ARG or None, **options)`` when it accepts keyword options (temperature, ...)."""
    if not kind or ":" in kind:
        raise ValueError(f"policy kind must be a plain name, got {kind!r}")
    POLICIES[kind] = factory


def _accepts_options(factory: PolicyFactory) -> bool:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def make_policy(spec: str, options: dict[str, Any] | None = None) -> Policy:
    """``"random"``, ``"oracle"``, ``"model:PATH"``, ``"openai:URL"`` or ``"kind:ARG"`` for a
    registered kind. ``options`` (temperature, max_new_tokens, model_name, ...) go to factories
    that take keyword options; a kind ignores the ones it does not use."""
    kind, sep, arg = spec.partition(":")
    if kind not in POLICIES:
        raise ValueError(f"unknown policy {spec!r}; known kinds: {', '.join(sorted(POLICIES))}")
    factory = POLICIES[kind]
    options = {k: v for k, v in (options or {}).items() if v is not None}
    if kind in _OPTIONS:
        options = {k: v for k, v in options.items() if k in _OPTIONS[kind]}
    if options and _accepts_options(factory):
        return factory(arg if sep else None, **options)
    return factory(arg if sep else None)
