"""``seed_gym/SearchQA-v0``: question answering with a search engine, the Search-R1 protocol."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from seed_gym.core import SeedEnv
from seed_gym.envs.search.dataset import QADataset, load_dataset
from seed_gym.envs.search.metrics import exact_match, f1_score, normalize_answer
from seed_gym.envs.search.protocol import MAX_QUERY_CHARS, parse_command
from seed_gym.envs.search.questions import SEARCH_R1_TRAIN, QAItem
from seed_gym.envs.search.retrieval import Hit, Retriever, make_retriever
from seed_gym.splits import SplitManifest

HOW_TO_ACT = "Write <search> query </search> to search, or <answer> answer </answer> to answer."


def format_information(hits: list[Hit]) -> str:
    """The passages as Search-R1 shows them, byte for byte: its ``_passages2string`` writes
    ``Doc {i}(Title: {first line of contents}) {the other lines}\\n`` per passage, and the
    rollout wraps the stripped result as ``<information>…</information>``. On a wiki-18 corpus
    the first line is the quoted title: ``Doc 1(Title: "Evan Morris") Evan L. Morris …``."""
    if not hits:
        return "<information>No documents matched the query.</information>"
    docs = ""
    for i, h in enumerate(hits, 1):
        title, *lines = h.passage.contents.split("\n")
        docs += f"Doc {i}(Title: {title}) " + "\n".join(lines) + "\n"
    return f"<information>{docs.strip()}</information>"


class SearchQAEnv(SeedEnv):
    """Answer a question, searching a corpus for evidence first if needed.

    ## Description
    The Search-R1 task: a question, a search engine over a passage corpus, at most 4 turns
    (registry ``TimeLimit``). Offline data (default ``data="offline"``): a generated knowledge
    base of fictional entities plus ~10k Wikipedia lead summaries; a Search-R1 / FlashRAG data
    folder (``data=PATH``) runs the paper's seven datasets.

    ## Observation
    ``{"text": str}``: the question after ``reset``; after a search the top-``topk`` passages
    exactly as Search-R1 writes them, ``<information>Doc 1(Title: "…") …\\nDoc 2(Title: …
    </information>`` (see ``format_information``); after an invalid action a one-line feedback.

    ## Actions
    Text holding exactly one ``<search> query </search>`` or ``<answer> … </answer>`` (other text,
    such as a ``<think>`` block, is ignored). Neither tag, both tags, a repeated, unclosed or empty
    tag is invalid: a no-op with feedback, reward 0 and ``action_is_valid=False`` (the agent layer
    charges 0.01, see ``wrappers/templates/search.py``).

    ## Rewards
    On ``<answer>``: exact match after SQuAD normalization against any gold answer (1 or 0).
    ``info["search.em"]`` and ``info["search.f1"]`` (token F1) are set on every step (0 before the
    answer); ``won`` is the exact match. Searches earn nothing.

    ## Termination
    ``terminated`` after the answer; ``truncated`` by the 4-turn TimeLimit.

    ## Splits
    ``train`` / ``seen`` / ``unseen`` (see ``build.py`` for the offline data and
    ``loaders.discover_splits`` for Search-R1 data: NQ + HotpotQA seen, the other five unseen).
    ``info["task_type"]`` is the question's dataset (``synth_single``, ``nq``, ...).

    ## Version History
    * v0: initial release.
    """

    env_id = "seed_gym/SearchQA-v0"

    def __init__(
        self,
        split: str = "train",
        modality: str | None = None,
        render_mode: str | None = None,
        *,
        data: str = "offline",
        corpus: str | None = None,
        retriever: str = "bm25",
        topk: int = 3,
        train_datasets: tuple[str, ...] = SEARCH_R1_TRAIN,
        retriever_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(split=split, modality=modality, render_mode=render_mode)
        if topk < 1:
            raise ValueError(f"topk must be >= 1, got {topk}")
        self.data, self.corpus_path, self.retriever_spec = data, corpus, retriever
        self.topk, self.train_datasets = int(topk), tuple(train_datasets)
        self.retriever_kwargs = dict(retriever_kwargs or {})
        self._dataset: QADataset | None = None
        self._retriever: Retriever | None = None
        _ = self.dataset  # fail fast on missing or corrupt data
        self._item: QAItem | None = None
        self._searches: list[str] = []
        self._text = ""
        self._done = False
        self._em = self._f1 = 0.0

    # --- data and retrieval (shared per process, dropped when pickled) --------------------------
    @property
    def dataset(self) -> QADataset:
        if self._dataset is None:
            self._dataset = load_dataset(self.data, self.corpus_path, self.train_datasets)
        return self._dataset

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            remote = self.retriever_spec.startswith(("http://", "https://"))
            corpus = None if remote else self.dataset.corpus
            self._retriever = make_retriever(self.retriever_spec, corpus, **self.retriever_kwargs)
        return self._retriever

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_dataset"] = state["_retriever"] = None
        return state

    def manifest(self, split: str) -> SplitManifest:
        items = self.dataset.splits[split]
        counts = Counter(q.data_source for q in items)
        return SplitManifest(
            self.env_id,
            split,
            tuple(q.id for q in items),
            meta={"data": self.dataset.name, "datasets": dict(sorted(counts.items()))},
        )

    def content_key(self, task_id: str) -> str:
        """The question normalised as answers are for exact match (case, punctuation, articles,
        spaces): "... physics" and "... physics?" are one task (17 real questions were in
        both train and seen under a lowercase-only key)."""
        return normalize_answer(self.dataset.by_id[task_id].question)

    # --- the game -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.task_id = self._choose_task(options)
        self._item = self.dataset.by_id[self.task_id]
        self.task_type = self._item.data_source
        self.task_description = self._item.question
        self._searches, self._done = [], False
        self._em = self._f1 = 0.0
        self._text = self._item.question
        return self._observation(self._text), self._step_info(True)

    def _step_info(self, valid: bool) -> dict[str, Any]:
        return self._info(
            won=self._em == 1.0,
            action_is_valid=valid,
            **{
                "search.em": self._em,
                "search.f1": self._f1,
                "search.n_searches": len(self._searches),
            },
        )

    def step(self, action: Any):
        if self._item is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            self._text = "The question has been answered; reset to start a new one."
            return self._observation(self._text), 0.0, True, False, self._step_info(False)
        command = parse_command(action)
        if not command.valid:
            self._text = f"Invalid action: {command.error}. {HOW_TO_ACT}"
            return self._observation(self._text), 0.0, False, False, self._step_info(False)
        if command.kind == "search":
            self._searches.append(command.content)
            hits = self.retriever.search([command.content], self.topk)[0]
            self._text = format_information(hits[: self.topk])
            return self._observation(self._text), 0.0, False, False, self._step_info(True)
        golds = self._item.golden_answers
        self._em, self._f1 = exact_match(command.content, golds), f1_score(command.content, golds)
        self._done = True
        # echo at most what a query may hold: a 1 MB answer must not become a 1 MB observation
        shown = command.content[:MAX_QUERY_CHARS]
        self._text = f"Your answer: {shown}{'…' if shown != command.content else ''}"
        return self._observation(self._text), float(self._em), True, False, self._step_info(True)

    def render_text(self) -> str:
        return self._text

    # --- policies -------------------------------------------------------------------------------
    def sample_action(self, rng: np.random.Generator, admissible_actions: list[str] | None) -> str:
        """A random policy that exercises every branch: searches of question words, guesses, junk."""
        words = (self._item.question if self._item else "something").split()
        roll = rng.random()
        if roll < 0.45:
            k = int(rng.integers(1, min(4, len(words)) + 1))
            picked = [words[int(i)] for i in rng.choice(len(words), size=k, replace=False)]
            return f"<search> {' '.join(picked)} </search>"
        if roll < 0.7:
            return f"<answer> {words[int(rng.integers(len(words)))]} </answer>"
        return super().sample_action(rng, None)

    def oracle_action(self) -> str:
        """Search each supporting passage in hop order (entity names that retrieve them), then
        answer the first gold answer. Data without hops searches the question itself once."""
        if self._item is None:
            raise RuntimeError("call reset() before oracle_action()")
        hops = self._item.oracle_queries or (self._item.question,)
        if len(self._searches) < len(hops):
            return f"<search> {hops[len(self._searches)]} </search>"
        return f"<answer> {self._item.golden_answers[0]} </answer>"

    def closed_book_action(self) -> str:
        """The closed-book prior baseline: answer at once, without searching, with the most
        frequent gold answer of this dataset in the train split (of all train questions when
        the dataset is not trained on). For a model answering closed-book, use
        ``wrappers.templates.search.CLOSED_BOOK_SPEC``."""
        if self._item is None:
            raise RuntimeError("call reset() before closed_book_action()")
        return f"<answer> {self._prior_answer(self._item.data_source)} </answer>"

    def _prior_answer(self, data_source: str) -> str:
        train = self.dataset.splits["train"]
        pool = [q for q in train if q.data_source == data_source] or train
        counts = Counter(normalize_answer(q.golden_answers[0]) for q in pool)
        # ties break by the answer text so the baseline is the same on every machine
        return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]

    def privileged_info(self) -> dict[str, Any]:
        if self._item is None:
            return {}
        docs = []
        if self.dataset.has_corpus() and self._item.supporting_ids:
            for pid in self._item.supporting_ids:
                p = self.dataset.corpus.get(pid)
                docs.append({"id": pid, "title": p.title, "text": p.text} if p else {"id": pid})
        else:
            docs = [{"id": pid} for pid in self._item.supporting_ids]
        return {
            "golden_answers": list(self._item.golden_answers),
            "supporting_docs": docs,
            "oracle_queries": list(self._item.oracle_queries),
            "style": self._item.style,
            "data_source": self._item.data_source,
        }
