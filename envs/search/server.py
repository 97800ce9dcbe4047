"""A retrieval server on loopback that many env workers share, so a large index is loaded once.

It speaks Search-R1's API, so ``RemoteRetriever`` works against this server or against
Search-R1's own ``retrieval_server.py``::

    POST /retrieve  {"queries": ["..."], "topk": 3, "return_scores": true}
        -> {"result": [[{"document": {"id": "...", "contents": "\\"Title\\"\\ntext"}, "score": 1.2}, ...]]}
    GET  /health    -> {"status": "ok", "retriever": "bm25", "passages": 10689}

Run it with ``python -m seed_gym.envs.search.server --retriever bm25 --port 8000`` and make envs
with ``retriever="http://127.0.0.1:8000"``. Standard library only (``http.server``, one thread per
request); it binds 127.0.0.1 unless told otherwise.

Under load and abuse it answers, never resets or hangs: a listen backlog of ``LISTEN_BACKLOG``
(the default 5 reset 43 of 150 requests from 50 parallel clients), 400 for a malformed, negative
or missing ``Content-Length`` and for JSON nested too deep to parse, 413 for a body over
``MAX_BODY``, queries cut to ``MAX_QUERY_CHARS`` (as the env cuts them), 500 when the retriever
fails (the client retries those).
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from seed_gym.envs.search.dataset import load_dataset
from seed_gym.envs.search.loaders import load_corpus
from seed_gym.envs.search.protocol import MAX_QUERY_CHARS
from seed_gym.envs.search.retrieval import Retriever, make_retriever

MAX_TOPK = 100
MAX_QUERIES = 1024
MAX_BODY = 8 << 20
LISTEN_BACKLOG = 1024  # WebShop's server uses 128; the kernel caps it at net.core.somaxconn


class _BadRequest(ValueError):
    def __init__(self, message: str, code: int = 400):
        super().__init__(message)
        self.code = code


class _Handler(BaseHTTPRequestHandler):
    server: RetrievalServer

    def log_message(self, format, *args):  # noqa: A002  keep test and worker logs quiet
        pass

    def _send(self, code: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.rstrip("/") in ("", "/health"):
            r = self.server.retriever
            self._send(
                200,
                {"status": "ok", "retriever": r.name, "passages": len(getattr(r, "corpus", ()))},
            )
        else:
            self._send(404, {"error": f"no route {self.path}; use POST /retrieve or GET /health"})

    def do_POST(self):
        if self.path.rstrip("/") != "/retrieve":
            self._send(404, {"error": f"no route {self.path}; use POST /retrieve"})
            return
        try:
            request = json.loads(self._body())
            queries, topk = _validate(request, self.server.default_topk)
        except _BadRequest as e:
            self._send(e.code, {"error": str(e)})
            return
        except RecursionError:
            self._send(400, {"error": "the body is JSON nested too deeply"})
            return
        except (ValueError, TypeError) as e:
            self._send(400, {"error": str(e)})
            return
        try:
            results = self.server.retriever.search(queries, topk)
        except Exception as e:  # noqa: BLE001 - the client gets an answer, not a reset
            self._send(500, {"error": f"the retriever failed: {type(e).__name__}: {e}"[:500]})
            return
        with_scores = bool(request.get("return_scores", False))
        rows = [
            [
                {"document": h.passage.to_row(), "score": h.score}
                if with_scores
                else h.passage.to_row()
                for h in hits
            ]
            for hits in results
        ]
        self._send(200, {"result": rows})

    def _body(self) -> bytes:
        """The request body, read to exactly ``Content-Length`` bytes; a negative length would
        make ``read`` run to EOF (past the size cap), so it is refused like a malformed one."""
        raw = self.headers.get("Content-Length")
        if raw is None:
            raise _BadRequest("a POST /retrieve needs a Content-Length header")
        try:
            length = int(raw)
        except ValueError:
            raise _BadRequest(f"bad Content-Length {raw[:40]!r}") from None
        if length < 0:
            raise _BadRequest(f"bad Content-Length {length}")
        if length > MAX_BODY:
            raise _BadRequest(f"request body over {MAX_BODY} bytes", 413)
        return self.rfile.read(length) or b"null"


def _validate(request: object, default_topk: int) -> tuple[list[str], int]:
    if not isinstance(request, dict):
        raise ValueError('the body must be a JSON object {"queries": [...], "topk": k}')
    queries = request.get("queries")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise ValueError("'queries' must be a list of strings")
    if len(queries) > MAX_QUERIES:
        raise ValueError(f"at most {MAX_QUERIES} queries per request")
    topk = request.get("topk")
    topk = default_topk if topk is None else topk
    if not isinstance(topk, int) or not 1 <= topk <= MAX_TOPK:
        raise ValueError(f"'topk' must be an integer in 1..{MAX_TOPK}")
    # a 7 MB query took 3.7 s to score; nothing past the env's own cap changes the ranking much
    return [q[:MAX_QUERY_CHARS] for q in queries], topk


class RetrievalServer(ThreadingHTTPServer):
    """``RetrievalServer(retriever, port=0)``; ``.url`` once bound; ``start()`` serves in a
    daemon thread, ``close()`` stops it."""

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG  # socketserver's default of 5 resets bursts of clients

    def __init__(
        self, retriever: Retriever, host: str = "127.0.0.1", port: int = 0, default_topk: int = 3
    ):
        super().__init__((host, port), _Handler)
        self.retriever, self.default_topk = retriever, default_topk
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> RetrievalServer:
        self._thread = threading.Thread(
            target=self.serve_forever, name="retrieval-server", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m seed_gym.envs.search.server", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--data",
        default="offline",
        help="'offline' or a Search-R1 data folder (its corpus.jsonl is served)",
    )
    p.add_argument("--corpus", help="a corpus jsonl to serve instead of the data folder's")
    p.add_argument("--retriever", default="bm25", choices=["bm25", "dense"])
    p.add_argument("--index", help="prebuilt FAISS index (dense), rows in corpus order")
    p.add_argument(
        "--encoder", help="encoder folder for dense retrieval (default: bundled all-MiniLM-L6-v2)"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--topk", type=int, default=3)
    args = p.parse_args(argv)
    corpus = load_corpus(args.corpus) if args.corpus else load_dataset(args.data).corpus
    kwargs = {}
    if args.retriever == "dense":
        kwargs = {k: v for k, v in (("index_path", args.index), ("encoder", args.encoder)) if v}
    retriever = make_retriever(args.retriever, corpus, **kwargs)
    server = RetrievalServer(retriever, args.host, args.port, args.topk)
    print(f"serving {retriever.name} over {len(corpus)} passages at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
