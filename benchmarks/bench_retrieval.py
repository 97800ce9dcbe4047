"""Retrieval speed: index build time and queries/s for BM25 and dense at 10k and 100k passages.

    python benchmarks/bench_retrieval.py                 # BM25 at 10k/100k, dense measured + extrapolated
    python benchmarks/bench_retrieval.py --full-dense    # also encode the whole 10k corpus (minutes)

Corpora: the offline corpus (generated KB + wiki summaries, ~10.7k passages) and a 100k corpus of
generated KB passages. Dense index build time is dominated by MiniLM encoding, which runs ~50-90
passages/s on 2 CPU cores; by default it is measured on ``--encode`` passages and extrapolated
(printed as an estimate), while the FAISS part (add + search) runs at full size on real
embeddings padded with random unit vectors (a flat index's cost does not depend on the values).
Numbers are medians of ``--repeats`` runs after a warm-up; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def corpora():
    from seed_gym.envs.search.build import make_splits
    from seed_gym.envs.search.corpus import Corpus
    from seed_gym.envs.search.kb import generate_kb

    offline, splits = make_splits(0)
    big, _ = generate_kb(
        seed=1, n_countries=200, n_cities=15000, n_orgs=15000, n_people=69800, n_comparisons=0
    )
    queries = [q.question for q in splits["train"][:2000]]
    return {"10k": offline, "100k": Corpus(big, name="kb-100k")}, queries


def bench_bm25(corpus, queries, repeats: int) -> dict:
    from seed_gym.envs.search.retrieval import BM25Retriever

    t = time.perf_counter()
    r = BM25Retriever(corpus, cache=False)
    build = time.perf_counter() - t
    batch = queries[:1000]
    one = _median_time(lambda: [r.search([q], 3) for q in batch[:200]], repeats)
    many = _median_time(lambda: r.search(batch, 3), repeats)
    return {"build_s": build, "qps_single": 200 / one, "qps_batch": len(batch) / many}


def bench_dense(corpora, queries, n_encode: int, repeats: int, full: bool) -> None:
    import faiss

    from seed_gym.envs.search.retrieval import DenseRetriever, TextEncoder

    encoder = TextEncoder()
    sample = list(corpora["10k"])[:n_encode]
    t = time.perf_counter()
    vectors = encoder.encode_passages(sample)
    enc_rate = len(sample) / (time.perf_counter() - t)
    q_enc = _median_time(lambda: encoder.encode_queries(queries[:64]), repeats)
    print(
        f"dense: MiniLM encodes {enc_rate:.1f} passages/s, {64 / q_enc:.1f} queries/s (batch 64), torch threads {__import__('torch').get_num_threads()}"
    )
    for name, corpus in corpora.items():
        n = len(corpus)
        rng = np.random.default_rng(0)
        pad = rng.normal(size=(n - len(vectors), encoder.dim)).astype("float32")
        pad /= np.linalg.norm(pad, axis=1, keepdims=True)
        full_vectors = np.concatenate([vectors, pad])
        t = time.perf_counter()
        index = faiss.IndexFlatIP(encoder.dim)
        index.add(full_vectors)
        add_s = time.perf_counter() - t
        qv = encoder.encode_queries(queries[:256])
        search = _median_time(lambda index=index, qv=qv: index.search(qv, 3), repeats)
        faiss_qps = len(qv) / search
        end_to_end = 1 / (1 / faiss_qps + q_enc / 64)
        print(
            f"dense {name:>4} ({n} passages): build ~{n / enc_rate:.0f} s estimated (encoding) + {add_s:.2f} s FAISS add; "
            f"FAISS search {faiss_qps:.0f} q/s; with query encoding {end_to_end:.0f} q/s"
        )
    if full:
        t = time.perf_counter()
        DenseRetriever(corpora["10k"], encoder=encoder, cache=False)
        print(f"dense 10k measured build: {time.perf_counter() - t:.1f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--encode", type=int, default=512, help="passages encoded to measure dense throughput"
    )
    p.add_argument("--full-dense", action="store_true", help="also build the full 10k dense index")
    p.add_argument("--skip-dense", action="store_true")
    args = p.parse_args(argv)
    os.environ.setdefault("SEED_GYM_CACHE", tempfile.mkdtemp(prefix="bench-retrieval-"))
    t = time.perf_counter()
    cs, queries = corpora()
    print(
        f"corpora: {', '.join(f'{k}={len(v)}' for k, v in cs.items())} passages ({time.perf_counter() - t:.1f} s to make)"
    )
    for name, corpus in cs.items():
        r = bench_bm25(corpus, queries, args.repeats)
        print(
            f"bm25  {name:>4} ({len(corpus)} passages): build {r['build_s']:.2f} s; "
            f"{r['qps_single']:.0f} q/s one at a time, {r['qps_batch']:.0f} q/s in batches of 1000"
        )
    if not args.skip_dense:
        bench_dense(cs, queries, args.encode, args.repeats, args.full_dense)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
