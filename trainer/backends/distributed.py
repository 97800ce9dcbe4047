"""Data-parallel training across processes with ``torch.distributed`` (torchrun; gloo or NCCL).

    torchrun --nproc_per_node 2 -m seed_gym.trainer.train --env ... --out RUN_DIR   # 2 processes
    seed-gym train ...                                                              # 1 process

``train.py`` calls into this module at a few points; with one process every helper is the
identity, so a plain run does exactly what it did before.

Description:
    Every rank holds a full copy of the policy (same seed, then a broadcast from rank 0 makes it
    bit-identical). Each iteration:

    1. **Rollout.** ``--dist-rollout shard`` (default): rank r collects a contiguous block of the
       B tasks (all G copies of each) with its own sampling seed, then the trajectories are
       gathered so every rank holds all B·G of them, in task order, with the ids a one-process
       run would give them. ``--dist-rollout rank0``: rank 0 collects all B tasks with the
       one-process seed and broadcasts them, so the run is the same as a one-process run (the
       reproducibility mode; the other ranks idle during rollouts).
    2. **Update.** Advantages are computed on the full set (identical on every rank). Each
       mini-batch is split across ranks (strided over the length-sorted samples, which balances
       tokens); every rank runs forward/backward on its share with the token-mean denominator of
       the *whole* mini-batch, so summing the gradients over ranks (one ``all_reduce`` of a flat
       buffer per optimizer step) gives the one-process gradient exactly, up to float summation
       order. Clipping and the AdamW step then run identically on every rank.
    3. **Metrics** of the update are gathered from all ranks; rank 0 alone writes the run
       directory (config, metrics, TensorBoard, checkpoints, the final model) and runs the eval.

Why not ``DistributedDataParallel``: ranks may get different numbers of micro-batches (uneven
shards, or none at all when a mini-batch has fewer samples than ranks), which DDP's per-backward
hooks cannot handle without padding work, and the loss is normalised by the token count of the
global mini-batch rather than averaged per rank. A single summed all-reduce after gradient
accumulation is what DDP does with ``no_sync`` and is simple to verify.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from seed_gym.seeding import derive_seed

ROLLOUT_MODES = ("shard", "rank0")


@dataclass
class DistContext:
    """Where this process sits in the job. ``world_size == 1`` means not distributed."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    rollout: str = "shard"  # "shard" | "rank0"
    backend: str | None = None  # "gloo" | "nccl" when initialised here
    fsdp: bool = False  # parameters, gradients and optimizer state sharded (``shard_model``)
    _owns_group: bool = field(default=False, repr=False)

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # --- sharding --------------------------------------------------------------------------------
    def rollout_groups(self, n_groups: int) -> list[int]:
        """Indices of the B task groups this rank collects (contiguous, so gathering in rank order
        restores task order)."""
        if not self.enabled:
            return list(range(n_groups))
        if self.rollout == "rank0":
            return list(range(n_groups)) if self.is_main else []
        return [int(i) for i in np.array_split(np.arange(n_groups), self.world_size)[self.rank]]

    def rollout_seed(self, seed: int) -> int:
        """The sampling seed of this rank's rollouts: the one-process seed unless ranks sample
        different tasks in parallel (then an independent stream per rank)."""
        if not self.enabled or self.rollout == "rank0":
            return seed
        return derive_seed(seed, self.rank)

    def shard(self, items: Sequence[Any]) -> list[Any]:
        """This rank's share of a (length-sorted) mini-batch: every world_size-th item."""
        if not self.enabled:
            return list(items)
        return list(items)[self.rank :: self.world_size]

    # --- rollouts --------------------------------------------------------------------------------
    def make_pool(
        self,
        make_group_pool: Callable[..., Any],
        env_id: str,
        tasks: Sequence[str],
        group_size: int,
        **kwargs: Any,
    ) -> Any:
        """``make_group_pool`` for this rank's share of the B task groups (``_NoPool`` when it has
        none); with one process, exactly ``make_group_pool(env_id, tasks, group_size, **kwargs)``."""
        n = len(self.rollout_groups(len(tasks)))
        if n == 0:
            return _NoPool(group_size)
        return make_group_pool(env_id, list(tasks)[:n], group_size, **kwargs)

    def collect(
        self,
        collect_fn: Callable[..., list],
        pool: Any,
        engine: Any,
        task_ids: Sequence[str],
        env_seeds: Sequence[int],
        **kwargs: Any,
    ) -> list:
        """``collect_fn(pool, engine, task_ids, env_seeds, **kwargs)`` on this rank's share of the
        groups (per-group ``skills`` are sharded too), then every rank gets all trajectories (see
        the module docstring). One process: a plain call."""
        if not self.enabled:
            return collect_fn(pool, engine, task_ids, env_seeds, **kwargs)
        groups = self.rollout_groups(len(task_ids))
        trajs: list = []
        if groups:
            kw = dict(kwargs)
            if kw.get("skills") is not None:
                kw["skills"] = [kw["skills"][b] for b in groups]
            if "seed" in kw:
                kw["seed"] = self.rollout_seed(kw["seed"])
            trajs = collect_fn(
                pool, engine, [task_ids[b] for b in groups], [env_seeds[b] for b in groups], **kw
            )
        g_size = int(getattr(pool, "group_size", 1))
        return self.gather_trajectories(trajs, groups, g_size, kwargs.get("prefix", ""))

    # --- collectives -----------------------------------------------------------------------------
    def gather_trajectories(
        self, trajs: list, groups: list[int], group_size: int, prefix: str
    ) -> list:
        """All ranks' trajectories in task order, renamed to the one-process ids
        (``{prefix}b{b}-g{g}``, group ``{prefix}b{b}``)."""
        if not self.enabled:
            return trajs
        # local ids count groups from 0 on every rank: make them global
        for k, traj in enumerate(trajs):
            b, g = groups[k // group_size], k % group_size
            traj.traj_id, traj.group_id = f"{prefix}b{b}-g{g}", f"{prefix}b{b}"
        import torch.distributed as dist

        if self.rollout == "rank0":
            box = [trajs if self.is_main else None]
            dist.broadcast_object_list(box, src=0)
            return box[0]
        parts: list[Any] = [None] * self.world_size
        dist.all_gather_object(parts, trajs)
        return [t for part in parts for t in part]

    def micro_batches(self, share: Sequence[Any], global_size: int, size: int) -> list[Any]:
        """This rank's micro-batches of a mini-batch share. Under FSDP every forward and
        backward is a collective, so every rank runs the same number: a rank with fewer gets
        ``None`` entries, which the update runs as zero-weighted dummies."""
        chunks: list[Any] = [list(share[i : i + size]) for i in range(0, len(share), size)]
        if self.fsdp and self.enabled:
            most = math.ceil(math.ceil(global_size / self.world_size) / size)
            chunks += [None] * (most - len(chunks))
        return chunks

    def backward(self, loss: Any, *, dummy: bool = False) -> None:
        """``loss.backward()`` for a micro-batch (a dummy one contributes zero). Each rank's loss
        already divides by the whole mini-batch's token count, so the ranks' gradients must be
        summed; FSDP averages them, hence the world-size factor (gloo has no pre-multiplied sum,
        which ``set_gradient_divide_factor(1)`` would need)."""
        scale = 0.0 if dummy else float(self.world_size if self.fsdp else 1)
        (loss * scale).backward()

    def all_reduce_gradients(self, params: Sequence[Any]) -> None:
        """Sum gradients over ranks in one collective (a rank without samples sends zeros).
        Under FSDP the backward pass has already reduce-scattered them."""
        if not self.enabled or self.fsdp:
            return
        import torch
        import torch.distributed as dist

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])  # [sum of numel]
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n

    def broadcast_parameters(self, model: Any) -> None:
        """Make every rank's weights (and buffers) rank 0's (before sharding)."""
        if not self.enabled or self.fsdp:
            return
        import torch.distributed as dist

        for t in list(model.parameters()) + list(model.buffers()):
            dist.broadcast(t.data, src=0)

    def gather_stats(
        self, stats: dict[str, list[float]], replicated: Sequence[str] = ("grad_norm",)
    ) -> dict[str, list[float]]:
        """Concatenate per-micro-batch statistics of all ranks (keys in ``replicated`` are the
        same on every rank after the gradient all-reduce and are kept as they are)."""
        if not self.enabled:
            return stats
        import torch.distributed as dist

        parts: list[Any] = [None] * self.world_size
        dist.all_gather_object(parts, stats)
        out: dict[str, list[float]] = {}
        for part in parts:
            for k, v in part.items():
                if k not in replicated:
                    out.setdefault(k, []).extend(v)
        for k in replicated:
            if k in stats:
                out[k] = stats[k]
        return out

    def sum(self, value: float) -> float:
        """``value`` summed over the ranks (itself with one process)."""
        if not self.enabled:
            return value
        import torch
        import torch.distributed as dist

        device = f"cuda:{self.local_rank}" if self.backend == "nccl" else "cpu"
        t = torch.tensor([float(value)], dtype=torch.float64, device=device)
        dist.all_reduce(t)
        return float(t.item())

    def barrier(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def shutdown(self) -> None:
        """Destroy the process group if this context created it."""
        if self._owns_group:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
            self._owns_group = False


def _one_process_group(rollout: str, backend: str | None) -> DistContext:
    """A process group of this process alone (a free local port when torchrun set none)."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return DistContext(rollout=rollout, backend=dist.get_backend())
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if all(k in os.environ for k in ("RANK", "MASTER_ADDR", "MASTER_PORT")):  # torchrun's
        dist.init_process_group(backend)
    else:
        with socket.socket() as sock:  # a free local port
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        dist.init_process_group(
            backend, init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1
        )
    return DistContext(rollout=rollout, backend=backend, _owns_group=True)


def env_world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def env_rank() -> int:
    """This process's rank in the job torchrun started (0 without torchrun), known before the
    process group is joined."""
    return int(os.environ.get("RANK", "0"))


def init_distributed(
    *,
    rollout: str = "shard",
    backend: str | None = None,
    timeout_s: float = 7200.0,
    group: bool = False,
) -> DistContext:
    """Join the job torchrun started (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
    ``MASTER_PORT``), or return a one-process context when there is none.

    ``backend``: ``gloo`` on CPU, ``nccl`` when CUDA is there (default: chosen that way).
    ``timeout_s`` bounds how long ranks wait for each other; rank 0 alone runs evals, so it must
    cover an eval. ``group``: also start a one-process group when torchrun did not (FSDP
    shards over a process group, even a group of one).
    """
    if rollout not in ROLLOUT_MODES:
        raise ValueError(f"dist rollout must be one of {ROLLOUT_MODES}, got {rollout!r}")
    world = env_world_size()
    if world <= 1:
        return _one_process_group(rollout, backend) if group else DistContext(rollout=rollout)
    missing = [k for k in ("RANK", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise RuntimeError(
            f"WORLD_SIZE={world} but {', '.join(missing)} unset: launch with torchrun "
            "(torchrun --nproc_per_node N -m seed_gym.trainer.train ...)"
        )
    import torch
    import torch.distributed as dist

    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    owns = False
    if not dist.is_initialized():
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=backend, timeout=timedelta(seconds=timeout_s))
        owns = True
    return DistContext(
        rank=rank,
        world_size=world,
        local_rank=local_rank,
        rollout=rollout,
        backend=backend,
        _owns_group=owns,
    )


def resolve_device(requested: str, ctx: DistContext) -> str:
    """``auto``: this rank's GPU (``cuda:LOCAL_RANK``) when CUDA is there, else ``cpu``."""
    if requested != "auto":
        return requested
    import torch

    if torch.cuda.is_available():
        return f"cuda:{ctx.local_rank % torch.cuda.device_count()}"
    return "cpu"


class NullLogger:
    """What ranks other than 0 log to: nothing."""

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


class _NoPool:
    """The env pool of a rank that collects nothing this run (``--dist-rollout rank0``)."""

    def __init__(self, group_size: int):
        self.group_size = group_size

    def __len__(self) -> int:
        return 0

    def close(self) -> None:
        pass


# --- FSDP2 ------------------------------------------------------------------------------------------
def decoder_layers(model: Any) -> list[Any]:
    """The repeated blocks to shard one by one: the children of every ``ModuleList`` named
    ``layers`` (the decoder's; a vision tower's too)."""
    import torch

    return [
        block
        for name, module in model.named_modules()
        if name.endswith("layers") and isinstance(module, torch.nn.ModuleList)
        for block in module
    ]


def shard_model(model: Any, ctx: DistContext, *, device: str, bf16: bool) -> Any:
    """Shard ``model`` over the ranks with FSDP2: ``fully_shard`` on every decoder layer, then on
    the root. On CUDA with ``bf16`` the layers compute in bf16 and reduce gradients in fp32
    (``MixedPrecisionPolicy``); on CPU parameters stay fp32 (bf16 comes from autocast).
    FSDP averages gradients over the ranks; ``DistContext.backward`` turns that into the sum the
    losses need. LoRA adapters are sharded like every parameter."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    mesh = init_device_mesh(kind, (ctx.world_size,))
    mp = MixedPrecisionPolicy()
    if bf16 and kind == "cuda":
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in decoder_layers(model):
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    ctx.fsdp = True
    return model


def is_sharded(model: Any) -> bool:
    return any(type(p).__name__ == "DTensor" for p in model.parameters())


def full_state_dict(model: Any) -> dict[str, Any]:
    """The whole state dict on every rank (gathered from the shards under FSDP)."""
    if not is_sharded(model):
        return model.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))


def state_bytes(model: Any, optimizer: Any) -> dict[str, int]:
    """Bytes this rank holds of the parameters and of the optimizer state (local shards)."""

    def local(t: Any) -> Any:
        return t.to_local() if hasattr(t, "to_local") else t

    params = sum(local(p).numel() * local(p).element_size() for p in model.parameters())
    optim = 0
    for state in optimizer.state.values() if optimizer is not None else ():
        for v in state.values():
            if hasattr(v, "numel") and v.dim() > 0:
                optim += local(v).numel() * local(v).element_size()
    return {"parameters": int(params), "optimizer": int(optim)}
