"""A small OpenAI-compatible chat server for a local HF model (standard library HTTP only).

    python -m seed_gym.tools.openai_server --model PATH|smollm2|tiny --port 8000

Serves ``POST /v1/chat/completions`` (``messages``, ``temperature`` (0 = greedy), ``top_p``,
``max_tokens`` / ``max_completion_tokens``, ``stop``, ``seed``; ``n`` must be 1, no streaming),
``GET /v1/models`` and ``GET /health``. Requests are answered one at a time (one model, one lock):
it exists so Stage 1 annotation and ``openai:URL`` eval policies run against a real endpoint
offline, not to be fast; point them at vLLM for speed. ``--port 0`` picks a free port; the first
line on stdout is ``listening on http://HOST:PORT``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from seed_gym.trainer.backends.models import load_policy


class ChatBackend:
    """Model + tokenizer + a lock; ``complete`` answers one chat request body."""

    def __init__(self, model: Any, tokenizer: Any, name: str, *, max_tokens_limit: int = 4096):
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.max_tokens_limit = max_tokens_limit
        self.lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        from seed_gym.tools.chat_generate import chat_complete  # torch; not at import time

        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list")
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("content"), str) or "role" not in m:
                raise BadRequest("each message needs a 'role' and a string 'content'")
        if body.get("stream"):
            raise BadRequest("streaming is not supported")
        if int(body.get("n", 1) or 1) != 1:
            raise BadRequest("only n=1 is supported")
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 256
        try:
            max_tokens = int(max_tokens)
            # OpenAI's defaults: temperature 1, top_p 1 (annotators send temperature 0)
            temperature = float(1.0 if body.get("temperature") is None else body["temperature"])
            top_p = float(1.0 if body.get("top_p") is None else body["top_p"])
        except (TypeError, ValueError) as e:
            raise BadRequest(f"bad sampling parameter: {e}") from e
        if not 1 <= max_tokens <= self.max_tokens_limit:
            raise BadRequest(f"max_tokens must be in [1, {self.max_tokens_limit}]")
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        if not all(isinstance(s, str) for s in stop):
            raise BadRequest("'stop' must be a string or a list of strings")
        seed = body.get("seed")
        with self.lock:
            (c,) = chat_complete(
                self.model,
                self.tokenizer,
                [[{"role": m["role"], "content": m["content"]} for m in messages]],
                max_new_tokens=max_tokens,
                temperature=temperature,
                top_p=top_p,
                stop=stop,
                batch_size=1,
                seed=None if seed is None else int(seed),
            )
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": c.text},
                    "finish_reason": c.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "total_tokens": c.prompt_tokens + c.completion_tokens,
            },
        }


class BadRequest(ValueError):
    pass


def make_handler(backend: ChatBackend) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: one line per error only
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, kind: str) -> None:
            self._send(status, {"error": {"message": message, "type": kind, "code": status}})

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path = self.path.split("?")[0].rstrip("/")
            if path in ("/health", ""):
                self._send(200, {"status": "ok"})
            elif path == "/v1/models":
                model = {"id": backend.name, "object": "model", "owned_by": "seed-gym"}
                self._send(200, {"object": "list", "data": [model]})
            else:
                self._error(404, f"no route {self.path}", "not_found")

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?")[0].rstrip("/")
            if path != "/v1/chat/completions":
                self._error(404, f"no route {self.path}", "not_found")
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                if not isinstance(body, dict):
                    raise BadRequest("the request body must be a JSON object")
                self._send(200, backend.complete(body))
            except (BadRequest, json.JSONDecodeError) as e:
                self._error(400, str(e), "invalid_request_error")
            except Exception as e:  # the server must keep serving
                print(f"openai_server: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                self._error(500, f"{type(e).__name__}: {e}", "server_error")

    return Handler


def serve(backend: ChatBackend, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A started server (daemon thread); ``server.server_address`` has the bound port."""
    server = ThreadingHTTPServer((host, port), make_handler(backend))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="'tiny', 'smollm2' or a local HF folder")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--served-model-name", default=None)
    parser.add_argument("--max-tokens-limit", type=int, default=4096)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (1 is fastest on a busy 2-core box)",
    )
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    policy = load_policy(args.model)
    backend = ChatBackend(
        policy.model,
        policy.tokenizer,
        args.served_model_name or args.model,
        max_tokens_limit=args.max_tokens_limit,
    )
    server = ThreadingHTTPServer((args.host, args.port), make_handler(backend))
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
