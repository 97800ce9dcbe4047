"""WebShop catalog build and BM25 search latency at 1k, 10k and 100k products.

    python benchmarks/bench_webshop_search.py [--sizes 1000 10000 100000] [--queries 200]

For each size: generate + write the catalog (``build``, skipped when cached unless ``--force``),
load it (``load``), index it with bm25s (``index``), then the median and p95 latency of one
query over ``--queries`` queries (half product titles, half short goal-style queries such as
"men's running shoes black"), after a warm-up. It also reports how often a product is in the top
10 for its own title. Ratios are against the 1k catalog, measured in this one run.
"""

from __future__ import annotations

import argparse
import statistics
import time


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1e3


def _p95_ms(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))] * 1e3


def bench(size: int, n_queries: int, force: bool) -> dict:
    import numpy as np

    from seed_gym.envs.webshop.build import build_catalog, catalog_dir, is_built
    from seed_gym.envs.webshop.goals import synthetic_goals
    from seed_gym.envs.webshop.loader import find_files, load_products
    from seed_gym.envs.webshop.search import SearchIndex

    cached = is_built(catalog_dir(size)) and not force
    t = time.perf_counter()
    folder = build_catalog(force=force, n_products=size)
    build_s = time.perf_counter() - t

    t = time.perf_counter()
    files = find_files(folder)
    products = load_products(files["items"], files["attributes"], files["reviews"])
    goals = synthetic_goals(products)
    load_s = time.perf_counter() - t

    t = time.perf_counter()
    index = SearchIndex(products)
    index_s = time.perf_counter() - t

    rng = np.random.default_rng(0)
    picks = rng.choice(len(products), size=n_queries, replace=len(products) < n_queries)
    queries = []
    for k, i in enumerate(picks.tolist()):
        p = products[i]
        if k % 2 == 0:
            queries.append((p.title, p.asin))
        else:
            g = goals[i % len(goals)]
            queries.append((f"{g.query} {' '.join(g.option_values()[:1])}", None))
    for q, _ in queries[:20]:  # warm-up
        index.search(q)
    latencies, found, titles = [], 0, 0
    for q, asin in queries:
        t = time.perf_counter()
        hits = index.search(q)
        latencies.append(time.perf_counter() - t)
        if asin is not None:
            titles += 1
            found += asin in {products[h].asin for h in hits[:10]}
    return {
        "size": size,
        "build_s": build_s,
        "cached": cached,
        "load_s": load_s,
        "index_s": index_s,
        "median_ms": _median_ms(latencies),
        "p95_ms": _p95_ms(latencies),
        "title_top10": found / max(titles, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--force", action="store_true", help="rebuild cached catalogs (times the build)"
    )
    args = parser.parse_args(argv)

    rows = [bench(size, args.queries, args.force) for size in args.sizes]
    base = rows[0]["median_ms"]
    print(
        f"{'products':>9} {'build s':>8} {'load s':>7} {'index s':>8} {'query ms (median)':>18} "
        f"{'p95 ms':>7} {'x 1st':>6} {'title@10':>8}"
    )
    for r in rows:
        build = f"{r['build_s']:.2f}" + ("*" if r["cached"] else "")
        print(
            f"{r['size']:>9} {build:>8} {r['load_s']:>7.2f} {r['index_s']:>8.2f} {r['median_ms']:>18.2f} "
            f"{r['p95_ms']:>7.2f} {r['median_ms'] / base:>6.1f} {r['title_top10']:>8.1%}"
        )
    if any(r["cached"] for r in rows):
        print("* cached catalog reused (check only); --force times generation and writing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
