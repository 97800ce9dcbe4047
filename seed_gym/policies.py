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
  the first one ``GET /v1/models`` lists). Live episodes are sent as concurrent requests.

Both sample greedily unless ``temperature > 0``. Each episode samples from its own random stream,
derived from (episode seed, turn), so a completion never depends on which other episodes shared
its batch: a resumed eval samples exactly what an uninterrupted one would have.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from seed_gym.images import IMAGE_PLACEHOLDER, png_data_url
from seed_gym.jsonl import clean_text
from seed_gym.seeding import derive_seed


@runtime_checkable
class Policy(Protocol):
    """What ``seed-gym eval`` drives: one episode is ``reset`` then ``act`` until it ends."""

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

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (sent only if set). Connection errors and HTTP
    429/5xx are retried ``retries`` times with backoff; a request that still fails stops the eval
    with the error (finished episodes are kept; rerun with the same ``--out`` to continue).
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
        timeout: float = 300.0,
        retries: int = 2,
        seed: int = 0,
    ):
        if not url:
            raise ValueError("openai:URL needs the endpoint, e.g. openai:http://127.0.0.1:8000/v1")
        base = url.rstrip("/")
        self.base = base if base.endswith("/v1") else base + "/v1"
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout, self.retries = timeout, retries
        self.temperature, self.top_p = float(temperature), float(top_p)
        self.max_new_tokens, self.batch_size = int(max_new_tokens), batch_size
        self.model_name = model_name or self._first_model()
        self.name = f"openai:{url}"
        self.streams = _EpisodeStreams()

    def _request(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode()
        url = self.base + path
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(8.0, 0.5 * 2**attempt))
            req = urllib.request.Request(
                url, data=data, headers=headers, method="GET" if body is None else "POST"
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")[:300]
                last = RuntimeError(f"HTTP {e.code} from {url}: {detail}")
                if e.code != 429 and e.code < 500:
                    break  # the request itself is wrong
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = RuntimeError(f"cannot reach {url}: {e}")
            except json.JSONDecodeError as e:
                last = RuntimeError(f"malformed response from {url}: {e}")
                break
        raise last or RuntimeError("unreachable")

    def _first_model(self) -> str:
        data = self._request("/models").get("data") or []
        if not data:
            raise RuntimeError(f"{self.base}/models lists no model: pass --model-name")
        return str(data[0]["id"])

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
        payload = self._request("/chat/completions", body)
        try:
            text = str(payload["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError) as e:
            raise RuntimeError(f"malformed completion from {self.base}: {payload!r:.300}") from e
        text = clean_text(text)  # a JSON "\\ud800" decodes to a lone surrogate: unwritable
        # OpenAI servers drop the matched stop string; the agent parser needs it back
        finish = payload["choices"][0].get("finish_reason")
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
        "seed",
    },
}


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
