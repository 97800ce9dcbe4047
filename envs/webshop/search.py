"""BM25 product search (``bm25s``), standing in for WebShop's Lucene index.

Each product is indexed as WebShop's ``convert_product_file_format.py`` does: title, description,
first bullet point and "name: values" option text, lowercased. Queries are stemmed with the same
English stemmer and stop words. Ties are broken by catalog order so results are deterministic;
products with score 0 (no query word in common) are not results. At most ``top_k`` (WebShop's
``SEARCH_RETURN_N`` = 50) come back.
"""

from __future__ import annotations

import numpy as np

from seed_gym.envs.webshop.records import Product

SEARCH_RETURN_N = 50


def document_text(p: Product) -> str:
    option_text = ", and ".join(
        f"{name}: {', '.join(values)}" for name, values in p.options.items()
    )
    first_bullet = p.bullet_points[0] if p.bullet_points else ""
    return " ".join([p.title, p.description, first_bullet, option_text]).lower()


class SearchIndex:
    """BM25 over a product list; ``search(query)`` returns product positions, best first."""

    def __init__(self, products: list[Product]):
        try:
            import bm25s
            import Stemmer
            from bm25s.tokenization import Tokenizer
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "WebShop search needs bm25s and PyStemmer: pip install 'seed-gym[webshop]'"
            ) from e
        self.n_docs = len(products)
        self._tokenizer = Tokenizer(stemmer=Stemmer.Stemmer("english"), stopwords="en")
        corpus = [document_text(p) for p in products]
        ids = self._tokenizer.tokenize(corpus, return_as="ids", show_progress=False)
        self._bm25 = bm25s.BM25()
        self._bm25.index(ids, show_progress=False)

    def search(self, query: str, top_k: int = SEARCH_RETURN_N) -> list[int]:
        tokens = self._tokenizer.tokenize(
            [query.lower()], update_vocab=False, return_as="ids", show_progress=False
        )[0]
        if not tokens:
            return []
        scores = self._bm25.get_scores(tokens)  # [n_docs]
        k = min(top_k, self.n_docs)
        if k < self.n_docs:
            candidates = np.argpartition(-scores, k - 1)[:k]
            # argpartition picks arbitrarily among ties at the cut: take every doc tied with the k-th
            cut = scores[candidates].min()
            candidates = np.flatnonzero(scores >= cut)
        else:
            candidates = np.arange(self.n_docs)
        order = np.lexsort((candidates, -scores[candidates]))  # score desc, then catalog order
        ranked = candidates[order][:k]
        return [int(i) for i in ranked if scores[i] > 0]
