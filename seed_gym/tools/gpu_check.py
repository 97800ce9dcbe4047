"""The acceptance check for a GPU machine: ``scripts/gpu_check.sh`` (docs/scaling.md).

    bash scripts/gpu_check.sh                                 # one GPU, SmolLM2 from the wheel
    bash scripts/gpu_check.sh --device cpu --model tiny       # the CPU-possible parts (a test)

Every check is a row of one table: pass / FAIL / skip, seconds, throughput, and what it saw.

- ``logprobs fp32`` and ``logprobs bf16``: the rollout sampler (vLLM when it imports, else the HF
  engine) samples; the trainer recomputes the same tokens teacher-forced on the device. The gap of
  the sampled tokens' logprobs must be small: max < 0.05 in fp32, mean < 0.05 in bf16 (bf16 rounds
  differently in the two kernels; a wrong temperature or a shifted token is off by > 0.5).
- ``grpo alfworld`` and ``seed alfworld``: one training iteration each on ALFWorld (the real
  TextWorld engine), with vLLM colocated when it imports (sleeping during the update) and bf16 on
  CUDA; SEED runs its analyzer, rescoring and gated OPD (Stage 1 off). Throughput: sampled tokens
  per rollout second, trained tokens per update second, seconds per phase.
- ``fsdp N proc``: the GRPO iteration under ``torchrun --nproc_per_node N --fsdp`` (sharded
  parameters, gradients and optimizer state, a sharded checkpoint, the HF export); N = 1, and 2
  when two GPUs are there (or ``--procs 2``). With several processes the HF engine samples:
  one vLLM engine per rank is not set up by the trainer yet (docs/scaling.md).

Exit status 0 when nothing failed. Nothing is downloaded: SmolLM2 is converted from its wheel.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seed_gym.trainer.backends.models import autocast, build_smollm2, load_policy

ALFWORLD = "seed_gym/ALFWorld-v0"
PROMPTS = [
    [{"role": "user", "content": "You are in a kitchen. Your task is to: put a clean mug on the table."}],
    [{"role": "user", "content": "Name three colours and one animal."}],
    [{"role": "system", "content": "You are an expert agent."}, {"role": "user", "content": "3 + 9 = ?"}],
    [{"role": "user", "content": "search[red shoes under 50 dollars]"}],
]  # fmt: skip


@dataclass
class Row:
    check: str
    status: str  # "pass", "FAIL" or "skip"
    seconds: float = 0.0
    sample_tps: float | None = None  # sampled tokens per second
    train_tps: float | None = None  # trained response tokens per second of update
    detail: str = ""


def have_vllm() -> bool:
    return importlib.util.find_spec("vllm") is not None


def check_logprobs(model_name: str, device: str, bf16: bool) -> Row:
    """Sample with the rollout engine, recompute teacher-forced, compare token by token."""
    import torch

    from seed_gym.trainer.backends.engines import HFEngine  # torch; gpu_check imports without it
    from seed_gym.trainer.backends.logprobs import response_logprobs  # torch

    name = f"logprobs {'bf16' if bf16 else 'fp32'}"
    if bf16 and device == "cpu":
        return Row(name, "skip", detail="bf16 is checked on CUDA")
    t0 = time.perf_counter()
    policy = load_policy(model_name, device=device)
    model = policy.model.eval()
    folder = build_smollm2() if model_name == "smollm2" else Path(model_name)
    if have_vllm() and (folder / "config.json").exists():  # the tiny model has no folder
        from seed_gym.trainer.backends.vllm_engine import VLLMEngine  # the vllm extra

        engine = VLLMEngine(folder, tokenizer=policy.tokenizer, max_model_len=1024,
                            dtype="bfloat16" if bf16 else "float32")  # fmt: skip
        sampler = "vLLM"
    else:
        engine = HFEngine(model, policy.tokenizer, autocast_bf16=bf16)
        sampler = "HF engine"
    t1 = time.perf_counter()
    gens = engine.generate(PROMPTS * 2, max_new_tokens=64, temperature=1.0, seed=0)
    sample_s = time.perf_counter() - t1
    with torch.no_grad(), autocast(bf16, "cuda" if device.startswith("cuda") else device):
        lps, _ = response_logprobs(
            model, [g.prompt_ids for g in gens], [g.ids for g in gens], micro_batch=8,
            pad_id=policy.pad_id,
        )  # fmt: skip
    gaps = torch.cat(
        [
            (torch.tensor(g.logprobs) - lp.float().cpu()).abs()
            for g, lp in zip(gens, lps, strict=True)
        ]
    )
    if hasattr(engine, "close"):
        engine.close()
    mean, most = float(gaps.mean()), float(gaps.max())
    ok = mean < 0.05 if bf16 else most < 0.05
    return Row(
        name, "pass" if ok else "FAIL", time.perf_counter() - t0,
        sample_tps=len(gaps) / sample_s,
        detail=f"{sampler} vs HF recompute: mean |gap| {mean:.1e}, max {most:.1e} ({len(gaps)} tokens)",
    )  # fmt: skip


def train_flags(args: argparse.Namespace, algo: str, out: Path, engine: str) -> list[str]:
    """One iteration on ALFWorld: 2 tasks x 4 episodes, 8 turns, a 2-task greedy eval."""
    cuda = args.device != "cpu"
    return [
        "--model", args.model, "--env", ALFWORLD, "--algo", algo, "--out", str(out),
        "--device", "auto" if cuda else "cpu", "--engine", engine,
        *(["--bf16"] if cuda else []),
        "--iterations", "1", "--tasks-per-iter", "2", "--group-size", "4", "--max-turns", "8",
        "--max-new-tokens", str(args.max_new_tokens), "--micro-batch", "8", "--no-sft",
        "--eval-tasks", "2", "--eval-splits", "seen", "--no-progress", "--no-tensorboard",
        "--kl-coef", "0.01", "--lr", "1e-6",
    ]  # fmt: skip


def check_train(args: argparse.Namespace, algo: str, procs: int = 0, fsdp: bool = False) -> Row:
    """``seed-gym train`` in a subprocess (``procs`` > 0: under torchrun); reads its metrics."""
    name = f"fsdp {procs} proc" if fsdp else f"{algo} alfworld"
    out = Path(args.out) / name.replace(" ", "-")
    engine = "vllm" if have_vllm() and procs <= 1 else "hf"
    flags = train_flags(args, algo, out, engine) + (["--fsdp"] if fsdp else [])
    if procs:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    f"--nproc_per_node={procs}", "-m", "seed_gym.trainer.train"]  # fmt: skip
    else:
        launcher = [sys.executable, "-m", "seed_gym.trainer.train"]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    if args.device == "cpu":
        env["OMP_NUM_THREADS"] = "1"
    t0 = time.perf_counter()
    proc = subprocess.run(launcher + flags, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    log = out / "gpu_check.log"
    out.mkdir(parents=True, exist_ok=True)
    log.write_text(proc.stdout + proc.stderr)
    metrics_file = out / "metrics.jsonl"
    if proc.returncode != 0 or not metrics_file.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Row(name, "FAIL", seconds, detail=f"exit {proc.returncode}: {last[:120]} ({log})")
    m = [json.loads(line) for line in metrics_file.read_text().splitlines()][-1]
    if not (out / "model" / "config.json").exists():
        return Row(name, "FAIL", seconds, detail="no HF export in model/")
    tokens = m.get("train/response_tokens", 0.0)
    phases = " ".join(
        f"{k[5:]} {v:.0f}s" for k, v in m.items() if k.startswith("time/") and v >= 0.5
    )
    detail = f"{engine}, {phases}"
    if algo == "seed":
        detail += f", parsed {m.get('analyzer/parse_rate', 0):.2f}, opd active {m.get('opd/active_ratio', 0):.2f}"
    return Row(
        name, "pass", seconds,
        sample_tps=tokens / m["time/rollout"] if m.get("time/rollout") else None,
        train_tps=tokens / m["time/update"] if m.get("time/update") else None,
        detail=detail,
    )  # fmt: skip


def table(rows: list[Row]) -> str:
    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:,.0f}"

    lines = [
        "| check | result | seconds | sample tok/s | train tok/s | detail |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r.check} | {r.status} | {r.seconds:.0f} | {num(r.sample_tps)} | "
                     f"{num(r.train_tps)} | {r.detail} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--model", default="smollm2", help="smollm2 (from the wheel), tiny, or a folder")
    p.add_argument("--out", default="runs/gpu-check", help="where the check runs write")
    p.add_argument("--procs", type=int, default=None,
                   help="processes of the multi-process FSDP check (default: the GPU count)")  # fmt: skip
    p.add_argument("--max-new-tokens", type=int, default=128)
    args = p.parse_args(argv)

    import torch

    if args.device != "cpu" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device here; run with --device cpu for the CPU part")
    procs = args.procs if args.procs is not None else torch.cuda.device_count()
    checks: list[tuple[str, Callable[[], Row]]] = [
        ("logprobs fp32", lambda: check_logprobs(args.model, args.device, bf16=False)),
        ("logprobs bf16", lambda: check_logprobs(args.model, args.device, bf16=True)),
        ("grpo alfworld", lambda: check_train(args, "grpo")),
        ("seed alfworld", lambda: check_train(args, "seed")),
        ("fsdp 1 proc", lambda: check_train(args, "grpo", procs=1, fsdp=True)),
        ("fsdp 2 proc", lambda: check_train(args, "grpo", procs=2, fsdp=True)),
    ]
    rows = []
    for name, check in checks:
        if name == "fsdp 2 proc" and procs < 2:
            rows.append(Row(name, "skip", detail="one device"))
            continue
        print(f"gpu_check: {name} ...", file=sys.stderr, flush=True)
        try:
            rows.append(check())
        except Exception as e:  # noqa: BLE001 - a check that raises is a failed row, not a stop
            rows.append(Row(name, "FAIL", detail=f"{type(e).__name__}: {str(e)[:160]}"))
    where = torch.cuda.get_device_name() if args.device != "cpu" else "CPU"
    print(f"\nseed-gym GPU check on {where} (torch {torch.__version__}, vLLM: {have_vllm()})")
    print(table(rows))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "gpu_check.md").write_text(table(rows) + "\n")
    return 1 if any(r.status == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
