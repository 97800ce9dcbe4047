"""Data-parallel training with torchrun (2 CPU processes, gloo) against one process.

Each case launches ``seed_gym.trainer.train.train`` through a small worker script: once as a plain
process and once under ``torchrun --nproc_per_node 2``. With ``--dist-rollout rank0`` the two runs
see the same episodes, so what differs is only the sharded update (each rank's share of every
mini-batch, gradients summed by all-reduce): the loss trajectory, every logged update metric and
the final parameters must agree within float tolerance.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
if not torch.distributed.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from conftest import run_metrics  # noqa: E402

from seed_gym.trainer.backends.distributed import DistContext, init_distributed  # noqa: E402
from seed_gym.trainer.config import TrainConfig, tiny  # noqa: E402

# A one-turn env where a random tiny model wins about half the time (GRPO gets a signal), and a
# hook that keeps each rank's final parameters (only rank 0 writes the run directory).
WORKER = textwrap.dedent(
    """
    import json, os, sys

    import torch

    import seed_gym
    from seed_gym.splits import SplitManifest
    from seed_gym.trainer.config import TrainConfig
    from seed_gym.trainer.train import train
    from seed_gym.wrappers.spec import AgentSpec, ParsedAction


    class LetterE(seed_gym.SeedEnv):
        env_id = "test/DistLetterE-v0"

        def manifest(self, split):
            return SplitManifest(self.env_id, split, tuple(f"{split}-{i}" for i in range(6)))

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.task_id = self._choose_task(options)
            self.task_description = "say something with the letter e"
            return self._observation("Speak."), self._info()

        def step(self, action):
            won = "e" in (self._as_action(action) or "")
            return self._observation("Done."), float(won), True, False, self._info(won=won)


    seed_gym.register(
        "test/DistLetterE-v0",
        LetterE,
        max_episode_steps=2,
        agent_spec=AgentSpec(
            render=lambda ctx: f"Your task is to: {ctx.task}",
            parse=lambda text: ParsedAction(text, True),
            history=0,
        ),
    )

    last = {}
    step = torch.optim.AdamW.step

    def keep(self, *args, **kwargs):
        last["opt"] = self
        return step(self, *args, **kwargs)

    torch.optim.AdamW.step = keep
    cfg = TrainConfig.from_dict(json.loads(open(sys.argv[1]).read()))
    train(cfg)
    rank = os.environ.get("RANK", "0")
    local = lambda t: t.to_local() if hasattr(t, "to_local") else t  # an FSDP shard
    params = [local(p).detach().clone() for g in last["opt"].param_groups for p in g["params"]]
    torch.save(params, os.path.join(cfg.out, f"params_rank{rank}.pt"))
    size = lambda t: local(t).numel() * local(t).element_size()
    held = {
        "parameters": sum(size(p) for p in params),
        "optimizer": sum(size(v) for st in last["opt"].state.values() for v in st.values()
                         if hasattr(v, "dim") and v.dim() > 0),
    }
    print(f"rank {rank} holds {held}", file=sys.stderr)
    open(os.path.join(cfg.out, f"bytes_rank{rank}.json"), "w").write(json.dumps(held))
    """
)


def _config(tmp_path, name: str, **kw) -> TrainConfig:
    base = tiny().to_dict()
    base.update(
        env="test/DistLetterE-v0",
        out=str(tmp_path / name),
        progress=False,
        tensorboard=False,
        save_hf=False,
        iterations=3,
        tasks_per_iter=2,
        group_size=4,
        max_new_tokens=6,
        mini_batches=2,
        micro_batch=1,
        kl_coef=0.05,
        ent_coef=0.01,
        eval_splits=("seen",),
        eval_tasks=1,
    )
    base.update(kw)
    return TrainConfig.from_dict(base)


def _launch(tmp_path, cfg: TrainConfig, nproc: int) -> str:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cfg_path = tmp_path / f"{os.path.basename(cfg.out)}.json"
    cfg.save(cfg_path)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    if nproc == 1:
        cmd = [sys.executable, str(script), str(cfg_path)]
    else:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={nproc}",
            str(script),
            str(cfg_path),
        ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if nproc > 1 and not cfg.resume and "(SIGABRT)" in proc.stderr and "[rank" not in proc.stderr:
        # about 1 launch in 10 on the 2-core CI machine, a rank is aborted by a signal with no
        # Python traceback (not reproduced in 6 reruns; tracked in docs/scaling.md): rerun once
        print(f"torchrun rank aborted without a traceback; rerunning once:\n{proc.stderr[-3000:]}")
        shutil.rmtree(cfg.out, ignore_errors=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:  # show what the ranks printed, not only torchrun's summary
        pytest.fail(proc.stdout[-2000:] + proc.stderr[-20000:])
    return proc.stderr


UPDATE_KEYS = (
    "train/loss",
    "train/grad_norm",
    "train/entropy",
    "train/clip_frac",
    "train/approx_kl",
)


def test_two_processes_match_one_process(tmp_path):
    _launch(tmp_path, _config(tmp_path, "one"), 1)
    _launch(tmp_path, _config(tmp_path, "two", dist_rollout="rank0"), 2)
    one, two = run_metrics(tmp_path / "one"), run_metrics(tmp_path / "two")
    assert [m["iteration"] for m in two] == [1, 2, 3]  # rank 0 alone logs
    for a, b in zip(one, two, strict=True):
        # the same episodes: rollout metrics are equal, not just close
        for k in ("rollout/return", "rollout/success", "train/samples", "train/adv_abs_mean"):
            assert a[k] == b[k], k
        for k in UPDATE_KEYS:
            assert b[k] == pytest.approx(a[k], rel=1e-4, abs=1e-6), k
    assert one[-1]["train/adv_abs_mean"] > 0 and one[-1]["train/grad_norm"] > 0  # real signal
    p1 = torch.load(tmp_path / "one" / "params_rank0.pt")
    for rank in (0, 1):
        p2 = torch.load(tmp_path / "two" / f"params_rank{rank}.pt")
        assert len(p1) == len(p2)
        for x, y in zip(p1, p2, strict=True):
            torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-6)
    ckpt = torch.load(tmp_path / "two" / "checkpoint.pt", weights_only=False)
    assert ckpt["iteration"] == 3


def _weights(folder) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_fsdp_matches_one_process_shards_the_state_and_resumes_exactly(tmp_path):
    """FSDP2 over 2 gloo processes against one process: the same losses and final weights within
    float tolerance, each rank holding about half of the parameter and AdamW bytes; a sharded
    checkpoint resumes exactly; the exported Hugging Face folder reloads."""
    kw = dict(save_hf=True, dist_rollout="rank0")
    _launch(tmp_path, _config(tmp_path, "one", save_hf=True), 1)
    _launch(tmp_path, _config(tmp_path, "fsdp", fsdp=True, **kw), 2)
    one, two = run_metrics(tmp_path / "one"), run_metrics(tmp_path / "fsdp")
    for a, b in zip(one, two, strict=True):
        assert a["rollout/return"] == b["rollout/return"]
        for k in UPDATE_KEYS:
            assert b[k] == pytest.approx(a[k], rel=1e-4, abs=1e-6), k
    w1, w2 = _weights(tmp_path / "one" / "model"), _weights(tmp_path / "fsdp" / "model")
    assert w1.keys() == w2.keys()
    for k in w1:
        torch.testing.assert_close(w2[k], w1[k], rtol=1e-5, atol=1e-6)
    whole = json.loads((tmp_path / "one" / "bytes_rank0.json").read_text())
    for rank in (0, 1):
        held = json.loads((tmp_path / "fsdp" / f"bytes_rank{rank}.json").read_text())
        for item in ("parameters", "optimizer"):
            print(f"rank {rank} {item}: {held[item]} bytes of {whole[item]} in one process")
            assert 0.4 < held[item] / whole[item] < 0.6, (item, held[item], whole[item])
    # resume: 2 iterations, then on to 3 from the sharded checkpoint, under torchrun again
    _launch(tmp_path, _config(tmp_path, "part", fsdp=True, iterations=2, **kw), 2)
    assert (tmp_path / "part" / "checkpoint.dcp" / "iter_000002").is_dir()
    _launch(tmp_path, _config(tmp_path, "part", fsdp=True, resume=True, **kw), 2)
    assert [m["iteration"] for m in run_metrics(tmp_path / "part")] == [1, 2, 3]
    wp = _weights(tmp_path / "part" / "model")
    assert all(torch.equal(wp[k], w2[k]) for k in w2)
    from seed_gym.trainer.backends.models import load_policy

    assert load_policy(str(tmp_path / "fsdp" / "model")).model.num_parameters() > 0


def test_the_line_search_measures_and_halves_alike_in_one_process_and_two(tmp_path):
    """``--max-update-kl``: the update's KL is summed over the ranks' samples (FSDP's ranks run the
    same number of forwards), so data-parallel and FSDP runs measure what one process does, halve
    by the same decisions and end with the same weights."""
    kw = dict(iterations=2, lr=0.05, max_update_kl=float("inf"))
    _launch(tmp_path, _config(tmp_path, "one", **kw), 1)
    measured = [m["train/update_kl"] for m in run_metrics(tmp_path / "one")]
    assert all(kl > 0 for kl in measured)
    # a limit just below the first update's KL: halved at least once there, by every layout
    kw["max_update_kl"] = 0.9 * measured[0]
    _launch(tmp_path, _config(tmp_path, "one-ls", **kw), 1)
    _launch(tmp_path, _config(tmp_path, "two-ls", dist_rollout="rank0", **kw), 2)
    _launch(tmp_path, _config(tmp_path, "fsdp-ls", fsdp=True, save_hf=True, dist_rollout="rank0",
                              **kw), 2)  # fmt: skip
    one = run_metrics(tmp_path / "one-ls")
    assert one[0]["train/update_scale"] < 1.0
    for name in ("two-ls", "fsdp-ls"):
        for a, b in zip(one, run_metrics(tmp_path / name), strict=True):
            assert b["train/update_scale"] == a["train/update_scale"], name
            for k in ("train/update_kl", "train/update_kl_kept"):
                assert b[k] == pytest.approx(a[k], rel=1e-4, abs=1e-7), (name, k)
    p1 = torch.load(tmp_path / "one-ls" / "params_rank0.pt")
    # lr 0.05 over two updates: the ranks' summation order shows in the fifth digit
    for x, y in zip(p1, torch.load(tmp_path / "two-ls" / "params_rank1.pt"), strict=True):
        torch.testing.assert_close(y, x, rtol=1e-4, atol=5e-5)


def test_fsdp_shards_lora_adapters_like_one_process(tmp_path):
    """LoRA under FSDP2: the adapters (and the frozen base) are sharded; losses match one process
    and the exported adapter folder holds the same adapter weights."""
    pytest.importorskip("peft")
    kw = dict(lora_r=4, lora_alpha=8, lr=1e-3, iterations=2, save_hf=True)
    _launch(tmp_path, _config(tmp_path, "lora1", **kw), 1)
    _launch(tmp_path, _config(tmp_path, "lora2", fsdp=True, dist_rollout="rank0", **kw), 2)
    for a, b in zip(run_metrics(tmp_path / "lora1"), run_metrics(tmp_path / "lora2"), strict=True):
        for k in UPDATE_KEYS:
            assert b[k] == pytest.approx(a[k], rel=1e-4, abs=1e-6), k
    from safetensors.torch import load_file

    one = load_file(str(tmp_path / "lora1" / "model" / "adapter_model.safetensors"))
    two = load_file(str(tmp_path / "lora2" / "model" / "adapter_model.safetensors"))
    assert one.keys() == two.keys() and len(one) > 0
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=1e-5, atol=1e-6)
    held = json.loads((tmp_path / "lora2" / "bytes_rank1.json").read_text())
    whole = json.loads((tmp_path / "lora1" / "bytes_rank0.json").read_text())
    assert 0.4 < held["optimizer"] / whole["optimizer"] < 0.6  # the adapters' AdamW state


def test_sharded_rollouts_keep_ranks_identical(tmp_path):
    # B=1 task, G=2, 2 mini-batches: each mini-batch holds one sample, so rank 1 has no share of
    # it and sends zero gradients; B=1 also leaves rank 1 without rollouts
    cfg = _config(tmp_path, "shard", tasks_per_iter=1, group_size=2, iterations=2)
    _launch(tmp_path, cfg, 2)
    m = run_metrics(tmp_path / "shard")
    assert [x["iteration"] for x in m] == [1, 2]
    assert m[-1]["rollout/episodes"] == 2.0 and m[-1]["train/samples"] == 2.0
    p0 = torch.load(tmp_path / "shard" / "params_rank0.pt")
    p1 = torch.load(tmp_path / "shard" / "params_rank1.pt")
    assert all(torch.equal(x, y) for x, y in zip(p0, p1, strict=True))  # bit-identical replicas
    # a wider run: both ranks collect (one task each) and the gathered ids are the global ones
    _launch(tmp_path, _config(tmp_path, "wide", iterations=1), 2)
    wide = run_metrics(tmp_path / "wide")[-1]
    assert wide["rollout/episodes"] == 8.0 and wide["train/samples"] == 8.0


def test_stage1_runs_once_under_torchrun(tmp_path):
    """Rank 0 runs SEED's Stage 1 into RUN_DIR/stage1 while rank 1 waits, then both start from it
    (before, every rank ran Stage 1 into the same folder at once)."""
    cfg = _config(
        tmp_path,
        "seed",
        algo="seed",
        iterations=1,
        kl_coef=0.0,
        dist_rollout="rank0",
        sft_cache=False,  # built here, not reused from an earlier run's model cache
    )
    stderr = _launch(tmp_path, cfg, 2)
    assert stderr.count("[stage1] SFT:") == 1, stderr[-3000:]
    assert (tmp_path / "seed" / "stage1" / "stage1.json").exists()
    p0 = torch.load(tmp_path / "seed" / "params_rank0.pt")
    p1 = torch.load(tmp_path / "seed" / "params_rank1.pt")
    assert all(torch.equal(x, y) for x, y in zip(p0, p1, strict=True))


def test_one_process_context_is_the_identity(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    ctx = init_distributed()
    assert not ctx.enabled and ctx.is_main
    assert ctx.rollout_groups(3) == [0, 1, 2] and ctx.shard([5, 6, 7]) == [5, 6, 7]
    assert ctx.rollout_seed(123) == 123
    stats = {"loss": [1.0]}
    assert ctx.gather_stats(stats) is stats
    with pytest.raises(ValueError, match="dist rollout"):
        init_distributed(rollout="bogus")


def test_sharding_arithmetic():
    ranks = [DistContext(rank=r, world_size=3) for r in range(3)]
    assert [c.rollout_groups(7) for c in ranks] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [c.shard(list(range(7))) for c in ranks] == [[0, 3, 6], [1, 4], [2, 5]]
    assert len({c.rollout_seed(5) for c in ranks}) == 3  # independent streams per rank
    rank0 = [DistContext(rank=r, world_size=3, rollout="rank0") for r in range(3)]
    assert [c.rollout_groups(2) for c in rank0] == [[0, 1], [], []]
    assert rank0[1].rollout_seed(5) == 5  # the one-process seed


def test_world_size_without_torchrun_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    for k in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(RuntimeError, match="torchrun"):
        init_distributed()


def test_config_rejects_unknown_rollout_mode():
    with pytest.raises(ValueError, match="--dist-rollout"):
        TrainConfig().replace(dist_rollout="everyone")
