"""The structured analyzer on the HF engine: the chat prefilled once (its KV cache kept for the
second field) vs prefilled again for every field, measured side by side.

    python benchmarks/bench_analyzer.py                   # smollm2-cpu preset, EZPoints, 1 thread
    python benchmarks/bench_analyzer.py --preset tiny     # seconds, a smoke check

It collects one real iteration of rollouts (B tasks x G episodes) with the preset's starting policy
(the format-warmed model when the preset has a warm-up), then writes the analysis of every episode
(``analyzer.structured_generate_fn``: greedy, field by field) both ways, in alternation,
``--repeats`` times. Printed: the median seconds of each, the speed-up, and how many of the answers
are identical (greedy decoding; a cached and a fresh prefill round differently, which can flip a
near-tie).

Measured (2026-12-04 at d77a91d, the 2-core AMD EPYC AVX512-BF16 machine, smollm2-cpu's warm-up
model as it was then (64 + 16 episodes), bf16, 1 thread, the test suite running on the other
core): 32 analyses, prefill once 102.6 s (87.7, 117.6), every field 150.7 s (140.5, 160.9): 1.47x;
identical answers 32 of 32.
"""

from __future__ import annotations

import argparse
import statistics
import time


class PerField:
    """The engine without its prompt KV caches: ``structured_generate_fn`` prefills every field."""

    def __init__(self, engine):
        self.tokenizer = engine.tokenizer
        self.generate = engine.generate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="smollm2-cpu")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()

    from preset_rollouts import preset_rollouts

    from seed_gym.trainer.algorithms.seed.analyzer import analyzer_kwargs, analyzer_messages
    from seed_gym.trainer.algorithms.seed.analyzer import structured_generate_fn as structured

    cfg, policy, engine, trajs = preset_rollouts(a.preset, a.threads)
    kwargs = analyzer_kwargs(cfg.opd.analyzer_budget, policy.tokenizer)
    chats = [analyzer_messages(t, **kwargs) for t in trajs]
    n_tokens = cfg.opd.analyzer_max_new_tokens
    variants = {
        "prefill once": structured(engine, max_new_tokens=n_tokens),
        "every field": structured(PerField(engine), max_new_tokens=n_tokens),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    answers = {}
    for _ in range(a.repeats):
        for name, generate in variants.items():
            t0 = time.perf_counter()
            answers[name] = generate(chats)
            times[name].append(time.perf_counter() - t0)
    once, every = (statistics.median(times[k]) for k in variants)
    same = sum(x == y for x, y in zip(*answers.values(), strict=True))
    print(f"{len(chats)} analyses ({a.preset}, {a.threads} thread(s), {a.repeats} repeats, up to "
          f"{n_tokens} tokens a field)")  # fmt: skip
    for name in variants:
        print(f"  {name:12s}: median {statistics.median(times[name]):7.2f} s "
              f"{[round(t, 2) for t in times[name]]}")  # fmt: skip
    print(f"  speed-up {every / once:.2f}x; identical answers {same} of {len(chats)}")


if __name__ == "__main__":
    main()
